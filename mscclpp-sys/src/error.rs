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
    /// A CUDA driver call failed with an error that leaves this process's CUDA context unusable (a kernel trapped
    /// or faulted, e.g. a device wait of ours that ran past its bound): every later CUDA call fails too.
    #[error(
        "the CUDA context of this process is lost: {call} failed with {name} ({message}), which means a kernel \
         trapped or faulted (a device wait that timed out stops its kernel this way; an earlier error says which). \
         No CUDA work can run in this process any more: restart it"
    )]
    ContextLost {
        /// The driver function that reported it.
        call: &'static str,
        /// The error code's name, e.g. `CUDA_ERROR_LAUNCH_FAILED`.
        name: String,
        /// The driver's description.
        message: String,
        /// Raw `CUresult` value.
        code: u32,
    },
    /// A lock was poisoned: a thread panicked while holding it, so the state it guards may be half updated.
    #[error(
        "{what} is unusable: a thread panicked while updating it (an earlier panic message says where); restart the process"
    )]
    Poisoned {
        /// What the lock guards.
        what: &'static str,
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

    /// What kind of failure this is, for callers that answer each kind differently (the NCCL-ABI library's result
    /// codes, the Python module's exception classes) without reading the message.
    pub fn kind(&self) -> ErrorKind {
        match self {
            Error::NoDriver | Error::NoDevice | Error::DeviceOutOfRange { .. } => ErrorKind::NoGpu,
            Error::NoNvrtc { .. } | Error::MissingSymbol { .. } | Error::NvlsDisabled { .. } | Error::Ib(_) => {
                ErrorKind::Unsupported
            }
            Error::NoPeerAccess { .. } => ErrorKind::Unsupported,
            Error::Cuda { .. } | Error::Nvrtc { .. } | Error::Compile { .. } => ErrorKind::Cuda,
            Error::ContextLost { .. } => ErrorKind::ContextLost,
            Error::Poisoned { .. } => ErrorKind::Poisoned,
            Error::Timeout { .. } => ErrorKind::Timeout,
            Error::DeviceWait(_) => ErrorKind::DeviceTimeout,
            Error::InvalidArgument(_) => ErrorKind::InvalidArgument,
            Error::Io { .. } => ErrorKind::Io,
        }
    }
}

/// The kinds of failure every library crate reports (`mscclpp_sys::Error::kind`, `mscclpp_exec::Error::kind`):
/// what a caller can act on, with the details in the error's fields.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ErrorKind {
    /// No GPU, no driver, or a GPU index out of range.
    NoGpu,
    /// Something this build or machine does not provide (NVRTC, peer access, multicast, InfiniBand), or a request
    /// a plan or program does not take.
    Unsupported,
    /// The caller passed something wrong (a size, a pointer, a stream of another GPU, a plan for other ranks).
    InvalidArgument,
    /// A host-side wait ran past its bound (a stream, a bootstrap message, ranks that never arrived).
    Timeout,
    /// A device-side wait ran past `MSCCLPP_WAIT_TIMEOUT_MS`: a peer stopped taking part; the report names the
    /// rank, peer, channel and operation.
    DeviceTimeout,
    /// A peer's process left (its connection closed) while this rank still needed it.
    PeerLeft,
    /// The CUDA context of this process is lost after a kernel fault.
    ContextLost,
    /// State guarded by a lock that a panicking thread left behind.
    Poisoned,
    /// Another CUDA or NVRTC failure.
    Cuda,
    /// The job's configuration (launcher variables, addresses) is incomplete or inconsistent.
    Config,
    /// File or socket trouble.
    Io,
    /// A peer sent something this rank cannot decode (mismatched versions).
    Protocol,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_error_has_its_kind() {
        let lost = Error::ContextLost {
            call: "cuStreamSynchronize",
            name: "CUDA_ERROR_LAUNCH_FAILED".into(),
            message: "unspecified launch failure".into(),
            code: 719,
        };
        assert_eq!(lost.kind(), ErrorKind::ContextLost);
        assert!(lost.to_string().contains("restart it"), "{lost}");
        assert_eq!(Error::Poisoned { what: "the context table" }.kind(), ErrorKind::Poisoned);
        assert_eq!(Error::Timeout { what: "a stream".into(), millis: 5 }.kind(), ErrorKind::Timeout);
        assert_eq!(Error::NoDevice.kind(), ErrorKind::NoGpu);
        assert_eq!(Error::InvalidArgument("x".into()).kind(), ErrorKind::InvalidArgument);
        let cuda =
            Error::Cuda { call: "cuMemAlloc", name: "CUDA_ERROR_OUT_OF_MEMORY".into(), message: "".into(), code: 2 };
        assert_eq!(cuda.kind(), ErrorKind::Cuda);
    }

    #[test]
    fn no_peer_access_names_both_gpus_and_the_way_out() {
        let msg = Error::NoPeerAccess { from: 0, to: 3 }.to_string();
        assert!(msg.starts_with("GPU 0 cannot access GPU 3 directly"), "{msg}");
        assert!(msg.contains("MSCCLPP_HOSTID") && msg.contains("memory channels need peer access"), "{msg}");
    }
}
