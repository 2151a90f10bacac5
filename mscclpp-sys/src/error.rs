//! The one error type of `mscclpp-sys`.

use std::path::PathBuf;

/// Result alias used throughout `mscclpp-sys`.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong at the CUDA / NVRTC edge.
///
/// Every message says what happened and what to try next.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// `libcuda.so` could not be loaded.
    #[error(
        "the CUDA driver library (libcuda.so.1) could not be loaded: no NVIDIA driver on this machine? \
         Install the NVIDIA driver, or run on a GPU host"
    )]
    NoDriver,
    /// The driver is there but reports no GPU.
    #[error("no CUDA GPU is visible (cuDeviceGetCount = 0); check CUDA_VISIBLE_DEVICES and `nvidia-smi`")]
    NoDevice,
    /// A device ordinal was asked for that does not exist.
    #[error(
        "GPU {ordinal} was asked for but only {count} GPU(s) are visible; start at most {count} local rank(s) \
         per host, or fix CUDA_VISIBLE_DEVICES / LOCAL_RANK"
    )]
    DeviceOutOfRange {
        /// The ordinal asked for.
        ordinal: usize,
        /// How many devices are visible.
        count: usize,
    },
    /// NVRTC could not be found.
    #[error(
        "NVRTC (libnvrtc.so.13) could not be loaded (searched: {searched}); install it \
         (`pip install nvidia-cuda-nvrtc==13.0.*` — the Python package finds it in its own environment —, or the \
         CUDA toolkit) and put its lib folder on LD_LIBRARY_PATH, or point MSCCLPP_NVRTC_PATH at the file"
    )]
    NoNvrtc {
        /// Where we looked.
        searched: String,
    },
    /// A library was loaded but lacks a function we call (too old a driver or NVRTC).
    #[error("{library} has no symbol `{symbol}`: the installed version is too old; CUDA 13.0 or newer is needed")]
    MissingSymbol {
        /// Library name.
        library: &'static str,
        /// The missing symbol.
        symbol: String,
    },
    /// A CUDA driver call failed.
    #[error("CUDA driver call {call} failed: {name} ({message})")]
    Cuda {
        /// The driver function.
        call: &'static str,
        /// The error code's name, e.g. `CUDA_ERROR_OUT_OF_MEMORY`.
        name: String,
        /// The driver's description.
        message: String,
        /// Raw `CUresult` value.
        code: u32,
    },
    /// An NVRTC call failed (not a compile error).
    #[error("NVRTC call {call} failed: {message}")]
    Nvrtc {
        /// The NVRTC function.
        call: &'static str,
        /// NVRTC's description.
        message: String,
    },
    /// Device code did not compile.
    #[error("NVRTC could not compile {name} for {arch}:\n{log}")]
    Compile {
        /// Name of the source.
        name: String,
        /// Target architecture, e.g. `sm_90`.
        arch: String,
        /// The compiler log.
        log: String,
    },
    /// Two GPUs cannot reach each other's memory.
    #[error(
        "GPU {from} cannot access GPU {to} directly (no peer access): CUDA IPC between them is impossible. Put \
         these ranks on GPUs linked by NVLink or PCIe P2P, or give each rank its own MSCCLPP_HOSTID so port \
         channels go through the Ethernet (or InfiniBand) transport; memory channels need peer access"
    )]
    NoPeerAccess {
        /// Accessing device.
        from: usize,
        /// Accessed device.
        to: usize,
    },
    /// NVLink multicast was requested although it is disabled.
    #[error(
        "NVLink multicast (NVLS) is disabled by {variable}={value}; a real SwitchChannel cannot be set up. \
         Unset it on hosts where NVLS is safe to use, or use memory channels instead"
    )]
    NvlsDisabled {
        /// Which variable disabled it.
        variable: &'static str,
        /// Its value.
        value: String,
    },
    /// A wait on the host side ran past its deadline.
    #[error("timed out after {millis} ms waiting for {what}; raise MSCCLPP_WAIT_TIMEOUT_MS if the work is just slow")]
    Timeout {
        /// What we waited for.
        what: String,
        /// The bound.
        millis: u64,
    },
    /// A device-side wait ran past `MSCCLPP_WAIT_TIMEOUT_MS`; the kernel stopped itself.
    #[error("{0}")]
    DeviceWait(crate::device_wait::DeviceWaitReport),
    /// Bad argument from the caller.
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// File-system trouble (kernel cache, fd passing).
    #[error("I/O error on {path}: {source}; check that the folder exists and is writable (MSCCLPP_CACHE_DIR)")]
    Io {
        /// The path involved.
        path: PathBuf,
        /// Underlying error.
        #[source]
        source: std::io::Error,
    },
    /// The InfiniBand layer is unavailable.
    #[error("InfiniBand: {0}")]
    Ib(String),
}

impl Error {
    /// Build an [`Error::Io`].
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io { path: path.into(), source }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_peer_access_names_both_gpus_and_the_way_out() {
        let msg = Error::NoPeerAccess { from: 0, to: 3 }.to_string();
        assert!(msg.starts_with("GPU 0 cannot access GPU 3 directly"), "{msg}");
        assert!(msg.contains("MSCCLPP_HOSTID") && msg.contains("memory channels need peer access"), "{msg}");
    }
}
