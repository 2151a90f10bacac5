//! InfiniBand verbs, loaded at run time from `libibverbs.so.1` (or `MSCCLPP_IBV_SO`), so the binary never links
//! rdma-core and runs on machines without it.
//!
//! Three layers, as for the CUDA driver:
//! - [`ffi`]: `#[repr(C)]` mirrors of the verbs structs (checked against `<infiniband/verbs.h>` by
//!   `tests/ib_layout.rs` through [`layout`]) and the C signatures of the functions resolved with `dlsym`.
//! - [`Verbs`]: the loaded library and its function table; device discovery.
//! - Safe owners of verbs objects: [`Context`] (an opened HCA port), [`ProtectionDomain`], [`MemoryRegion`],
//!   [`CompletionQueue`] and [`QueuePair`] (reliable connected, RDMA WRITE). Each keeps what it was created from
//!   alive (`Arc`), so destruction runs in the order verbs requires.
//!
//! `ibv_post_send` and `ibv_poll_cq` are `static inline` in verbs.h: they are called here through
//! `context->ops`, exactly as the header does. A missing library, an empty device list, a port that is down or
//! a failed call is an [`Error::Ib`] that says what to install or check.
//!
//! ```no_run
//! use mscclpp_sys::ib::{Context, CompletionQueue, ProtectionDomain, QueuePair};
//! # fn main() -> mscclpp_sys::Result<()> {
//! let ctx = Context::open_for_local_rank(0)?; // MSCCLPP_HCA_DEVICES, MSCCLPP_IB_GID_INDEX
//! let pd = ProtectionDomain::new(&ctx)?;
//! let cq = CompletionQueue::new(&ctx, 1024)?;
//! let qp = QueuePair::new_rc(&pd, &cq, 1024)?;
//! qp.to_init()?;
//! // ... exchange qp.qp_num(), a PSN, ctx.port().lid and .gid with the peer, then to_rtr / to_rts.
//! # Ok(()) }
//! ```

mod device;
pub mod ffi;
pub mod layout;
mod resources;

pub use device::{Context, HcaChoice, LinkLayer, Mtu, PortInfo, choose_hca, gid_index_from_env, random_psn};
pub use resources::{
    ACCESS_LOCAL, ACCESS_RDMA, Completion, CompletionQueue, MemoryRegion, ProtectionDomain, QueuePair, RemoteQp,
};

use std::ffi::{CStr, c_int};
use std::sync::OnceLock;

use crate::error::{Error, Result};

/// The loaded verbs library and the functions this crate calls.
pub struct Verbs {
    name: String,
    pub(crate) f: Functions,
    // Dropped last: the function pointers above point into it.
    _lib: libloading::Library,
}

/// Function pointers resolved from the library (valid while it stays loaded).
pub(crate) struct Functions {
    pub(crate) get_device_list: ffi::GetDeviceList,
    pub(crate) free_device_list: ffi::FreeDeviceList,
    pub(crate) get_device_name: ffi::GetDeviceName,
    pub(crate) open_device: ffi::OpenDevice,
    pub(crate) close_device: ffi::CloseDevice,
    pub(crate) query_port: ffi::QueryPort,
    pub(crate) query_gid: ffi::QueryGid,
    pub(crate) alloc_pd: ffi::AllocPd,
    pub(crate) dealloc_pd: ffi::DeallocPd,
    pub(crate) reg_mr: ffi::RegMr,
    /// Absent before rdma-core 34.
    pub(crate) reg_dmabuf_mr: Option<ffi::RegDmabufMr>,
    pub(crate) dereg_mr: ffi::DeregMr,
    pub(crate) create_cq: ffi::CreateCq,
    pub(crate) destroy_cq: ffi::DestroyCq,
    pub(crate) create_qp: ffi::CreateQp,
    pub(crate) modify_qp: ffi::ModifyQp,
    pub(crate) destroy_qp: ffi::DestroyQp,
    pub(crate) wc_status_str: ffi::WcStatusStr,
}

impl std::fmt::Debug for Verbs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Verbs").field("library", &self.name).finish()
    }
}

fn sym<T: Copy>(lib: &libloading::Library, lib_name: &str, name: &str) -> Result<T> {
    // SAFETY: every caller names a verbs function whose C signature is the function-pointer type `T` (the
    // signatures in `ffi` are copied from verbs.h); the pointer is only used while the library stays loaded.
    unsafe { lib.get::<T>(name.as_bytes()) }.map(|s| *s).map_err(|e| {
        Error::Ib(format!(
            "{lib_name} has no {name} ({e}): this rdma-core is too old or not libibverbs; install rdma-core 28 or \
             newer (libibverbs1) or point MSCCLPP_IBV_SO at the right library"
        ))
    })
}

impl Verbs {
    /// Load `MSCCLPP_IBV_SO` or `libibverbs.so.1` and resolve every function this crate calls.
    pub fn load() -> Result<Self> {
        let name = mscclpp_config::IBV_SO.get_or_default();
        // SAFETY: loading rdma-core runs its initialisers, which have no preconditions.
        let lib = unsafe { libloading::Library::new(&name) }.map_err(|e| {
            Error::Ib(format!("cannot load {name} ({e}); install rdma-core (libibverbs1) or set MSCCLPP_IBV_SO"))
        })?;
        let f = Functions {
            get_device_list: sym(&lib, &name, "ibv_get_device_list")?,
            free_device_list: sym(&lib, &name, "ibv_free_device_list")?,
            get_device_name: sym(&lib, &name, "ibv_get_device_name")?,
            open_device: sym(&lib, &name, "ibv_open_device")?,
            close_device: sym(&lib, &name, "ibv_close_device")?,
            query_port: sym(&lib, &name, "ibv_query_port")?,
            query_gid: sym(&lib, &name, "ibv_query_gid")?,
            alloc_pd: sym(&lib, &name, "ibv_alloc_pd")?,
            dealloc_pd: sym(&lib, &name, "ibv_dealloc_pd")?,
            reg_mr: sym(&lib, &name, "ibv_reg_mr")?,
            reg_dmabuf_mr: sym(&lib, &name, "ibv_reg_dmabuf_mr").ok(),
            dereg_mr: sym(&lib, &name, "ibv_dereg_mr")?,
            create_cq: sym(&lib, &name, "ibv_create_cq")?,
            destroy_cq: sym(&lib, &name, "ibv_destroy_cq")?,
            create_qp: sym(&lib, &name, "ibv_create_qp")?,
            modify_qp: sym(&lib, &name, "ibv_modify_qp")?,
            destroy_qp: sym(&lib, &name, "ibv_destroy_qp")?,
            wc_status_str: sym(&lib, &name, "ibv_wc_status_str")?,
        };
        Ok(Verbs { name, f, _lib: lib })
    }

    /// The process-wide library, loaded on first use and kept loaded (verbs objects point into it). A failure is
    /// remembered: later calls return the same error.
    pub fn global() -> Result<&'static Verbs> {
        static GLOBAL: OnceLock<std::result::Result<Verbs, std::sync::Arc<Error>>> = OnceLock::new();
        match GLOBAL.get_or_init(|| Verbs::load().map_err(std::sync::Arc::new)) {
            Ok(v) => Ok(v),
            Err(e) => Err(Error::Ib(match &**e {
                Error::Ib(m) => m.clone(),
                other => other.to_string(),
            })),
        }
    }

    /// The file name or path the library was loaded from.
    pub fn library_name(&self) -> &str {
        &self.name
    }

    /// Names of the RDMA devices (e.g. `mlx5_0`). An empty list is an error.
    pub fn device_names(&self) -> Result<Vec<String>> {
        let mut n: c_int = 0;
        // SAFETY: valid out-pointer; the list is freed below.
        let list = unsafe { (self.f.get_device_list)(&mut n) };
        if list.is_null() {
            return Err(Error::Ib(format!(
                "ibv_get_device_list failed ({}): no RDMA subsystem on this machine (no /sys/class/infiniband); \
                 use the CudaIpc or Ethernet transport",
                std::io::Error::last_os_error()
            )));
        }
        let mut out = Vec::new();
        for i in 0..n.max(0) as usize {
            // SAFETY: `list` has `n` valid device pointers.
            let dev = unsafe { *list.add(i) };
            // SAFETY: `dev` is a live device; its name is a NUL-terminated string owned by it.
            let name = unsafe { (self.f.get_device_name)(dev) };
            if !name.is_null() {
                // SAFETY: non-null, NUL-terminated, alive until the list is freed.
                out.push(unsafe { CStr::from_ptr(name) }.to_string_lossy().into_owned());
            }
        }
        // SAFETY: `list` came from ibv_get_device_list and is freed once.
        unsafe { (self.f.free_device_list)(list) };
        if out.is_empty() {
            return Err(Error::Ib(
                "no InfiniBand device found; use the CudaIpc or Ethernet transport, or check MSCCLPP_HCA_DEVICES"
                    .into(),
            ));
        }
        Ok(out)
    }

    /// The library's text for a work-completion status (`ibv_wc_status_str`).
    pub fn wc_status_str(&self, status: ffi::ibv_wc_status) -> String {
        // SAFETY: ibv_wc_status_str accepts any value and returns a static string ("unknown" for values it does
        // not know).
        let p = unsafe { (self.f.wc_status_str)(status) };
        if p.is_null() {
            return wc_status_name(status).to_string();
        }
        // SAFETY: non-null pointer to a static NUL-terminated string.
        unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
    }
}

/// `ibv_wc_status_str`'s wording (rdma-core 44), for when the library is not at hand.
pub fn wc_status_name(status: ffi::ibv_wc_status) -> &'static str {
    const NAMES: [&str; 24] = [
        "success",
        "local length error",
        "local QP operation error",
        "local EE context operation error",
        "local protection error",
        "Work Request Flushed Error",
        "memory management operation error",
        "bad response error",
        "local access error",
        "remote invalid request error",
        "remote access error",
        "remote operation error",
        "transport retry counter exceeded",
        "RNR retry counter exceeded",
        "local RDD violation error",
        "remote invalid RD request",
        "aborted error",
        "invalid EE context number",
        "invalid EE context state",
        "fatal error",
        "response timeout error",
        "general error",
        "TM error",
        "TM software rendezvous",
    ];
    NAMES.get(status as usize).copied().unwrap_or("unknown")
}

/// What to check for a failed work completion, by status.
pub fn wc_status_hint(status: ffi::ibv_wc_status) -> &'static str {
    match status {
        ffi::IBV_WC_REM_ACCESS_ERR | 9 => {
            "the remote address or key is wrong: the peer's memory is not registered with its HCA (GPU memory \
             needs nvidia-peermem on that host), was freed, or the write overruns it"
        }
        ffi::IBV_WC_RETRY_EXC_ERR | 13 | 20 => {
            "the peer does not answer: check that its process is alive, the link is up (`ibstat`), and on RoCE \
             that both sides use a routable GID (MSCCLPP_IB_GID_INDEX)"
        }
        4 | 8 => {
            "the local buffer is not covered by a registration: register it (GPU memory needs the nvidia-peermem \
             module) and keep it alive until the flush"
        }
        ffi::IBV_WC_WR_FLUSH_ERR => "an earlier work request failed and put the queue pair in the error state",
        _ => "check `ibstat`, the kernel log (dmesg) and that both ranks run the same mscclpp build",
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn no_ib_is_a_clear_error() {
        match super::Verbs::load().and_then(|v| v.device_names()) {
            Ok(names) => eprintln!("RDMA devices: {names:?}"),
            Err(e) => {
                let msg = e.to_string();
                assert!(msg.contains("InfiniBand"), "{msg}");
            }
        }
    }

    #[test]
    fn completion_status_wording() {
        assert_eq!(super::wc_status_name(0), "success");
        assert_eq!(super::wc_status_name(super::ffi::IBV_WC_REM_ACCESS_ERR), "remote access error");
        assert_eq!(super::wc_status_name(super::ffi::IBV_WC_GENERAL_ERR), "general error");
        assert_eq!(super::wc_status_name(999), "unknown");
        assert!(super::wc_status_hint(super::ffi::IBV_WC_REM_ACCESS_ERR).contains("nvidia-peermem"));
        if let Ok(v) = super::Verbs::global() {
            // The library agrees with our table wherever both know the status.
            for s in 0..22 {
                assert_eq!(v.wc_status_str(s), super::wc_status_name(s), "status {s}");
            }
        }
    }
}
