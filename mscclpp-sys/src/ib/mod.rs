//! InfiniBand verbs, loaded at run time from `libibverbs.so.1` (or `MSCCLPP_IBV_SO`), so the binary never links
//! rdma-core and runs on machines without it.
//!
//! This layer covers device discovery; a missing library or an empty device list is an [`Error::Ib`] that says
//! what to install or check.

use std::ffi::{CStr, c_char, c_int, c_void};

use crate::error::{Error, Result};

type GetDeviceList = unsafe extern "C" fn(*mut c_int) -> *mut *mut c_void;
type FreeDeviceList = unsafe extern "C" fn(*mut *mut c_void);
type GetDeviceName = unsafe extern "C" fn(*mut c_void) -> *const c_char;

/// The loaded verbs library.
pub struct Verbs {
    lib: libloading::Library,
}

impl Verbs {
    /// Load `MSCCLPP_IBV_SO` or `libibverbs.so.1`.
    pub fn load() -> Result<Self> {
        let name = std::env::var("MSCCLPP_IBV_SO").unwrap_or_else(|_| "libibverbs.so.1".to_string());
        // SAFETY: loading rdma-core runs its initialisers, which have no preconditions.
        let lib = unsafe { libloading::Library::new(&name) }.map_err(|e| {
            Error::Ib(format!("cannot load {name} ({e}); install rdma-core (libibverbs1) or set MSCCLPP_IBV_SO"))
        })?;
        Ok(Verbs { lib })
    }

    fn sym<T: Copy>(&self, name: &str) -> Result<T> {
        // SAFETY: the caller names a verbs function whose C signature matches `T`.
        unsafe { self.lib.get::<T>(name.as_bytes()) }
            .map(|s| *s)
            .map_err(|e| Error::Ib(format!("libibverbs has no {name}: {e}; rdma-core is too old")))
    }

    /// Names of the RDMA devices (e.g. `mlx5_0`). An empty list is an error.
    pub fn device_names(&self) -> Result<Vec<String>> {
        let get: GetDeviceList = self.sym("ibv_get_device_list")?;
        let free: FreeDeviceList = self.sym("ibv_free_device_list")?;
        let name: GetDeviceName = self.sym("ibv_get_device_name")?;
        let mut n: c_int = 0;
        // SAFETY: valid out-pointer; the list is freed below.
        let list = unsafe { get(&mut n) };
        if list.is_null() {
            return Err(Error::Ib(
                "ibv_get_device_list failed: no RDMA subsystem on this machine (no /sys/class/infiniband); use \
                 the CudaIpc or Ethernet transport"
                    .into(),
            ));
        }
        let mut out = Vec::new();
        for i in 0..n.max(0) as usize {
            // SAFETY: `list` has `n` valid device pointers.
            let dev = unsafe { *list.add(i) };
            // SAFETY: `dev` is a live device; the name is a NUL-terminated string owned by it.
            let s = unsafe { CStr::from_ptr(name(dev)) }.to_string_lossy().into_owned();
            out.push(s);
        }
        // SAFETY: `list` came from ibv_get_device_list and is freed once.
        unsafe { free(list) };
        if out.is_empty() {
            return Err(Error::Ib(
                "no InfiniBand device found; use the CudaIpc or Ethernet transport, or check MSCCLPP_HCA_DEVICES"
                    .into(),
            ));
        }
        Ok(out)
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
}
