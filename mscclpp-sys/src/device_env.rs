//! The host side of `mscclppDeviceEnv`: the wait bound and the error slot every module reports into.

use std::time::Duration;

use crate::driver::{Device, Module, PinnedHostMemory};
use crate::error::{Error, Result};
use crate::handles::{DeviceEnv, DeviceErrorRecord, DeviceWaitReport};

/// Default bound of device and host waits.
pub const DEFAULT_WAIT_TIMEOUT: Duration = mscclpp_config::WAIT_TIMEOUT_MS.default;

/// `MSCCLPP_WAIT_TIMEOUT_MS`, or 10 s.
pub fn wait_timeout() -> Duration {
    mscclpp_config::WAIT_TIMEOUT_MS.get_or_default()
}

/// A [`DeviceErrorRecord`] in mapped pinned host memory, shared by the modules of one process and GPU.
#[derive(Debug)]
pub struct ErrorSlot {
    mem: PinnedHostMemory,
}

impl ErrorSlot {
    /// Allocate an empty slot.
    pub fn new(device: &Device) -> Result<Self> {
        let mem = PinnedHostMemory::zeroed(device, std::mem::size_of::<DeviceErrorRecord>().max(64))?;
        Ok(ErrorSlot { mem })
    }

    /// Device address for [`DeviceEnv::error_slot`].
    pub fn device_ptr(&self) -> u64 {
        self.mem.device_ptr()
    }

    /// The report, once a kernel has written one completely.
    pub fn report(&self) -> Option<DeviceWaitReport> {
        let state = self.mem.atomic_u32(0).ok()?;
        if state.load(std::sync::atomic::Ordering::Acquire) != 2 {
            return None;
        }
        // SAFETY: the slot holds a complete DeviceErrorRecord (state == 2 was published after the fields with a
        // system fence) and the memory is at least that large and page-aligned.
        let record = unsafe { std::ptr::read_volatile(self.mem.host_ptr() as *const DeviceErrorRecord) };
        Some(DeviceWaitReport::from(&record))
    }

    /// `Err(Error::DeviceWait)` if a kernel reported an expired wait.
    pub fn check(&self) -> Result<()> {
        match self.report() {
            Some(r) => Err(Error::DeviceWait(r)),
            None => Ok(()),
        }
    }

    /// Clear the slot (only when no kernel runs).
    pub fn clear(&self) -> Result<()> {
        self.mem.atomic_u32(0)?.store(0, std::sync::atomic::Ordering::Release);
        Ok(())
    }
}

/// Fill `mscclppDeviceEnv` of `module` (if the module uses it).
pub fn configure_module(module: &Module, slot: &ErrorSlot, rank: u32, timeout: Duration) -> Result<()> {
    let Some((ptr, size)) = module.global("mscclppDeviceEnv")? else {
        return Ok(());
    };
    if size != std::mem::size_of::<DeviceEnv>() {
        return Err(Error::InvalidArgument(format!(
            "mscclppDeviceEnv has {size} bytes in the module but {} in Rust: the headers and the library differ",
            std::mem::size_of::<DeviceEnv>()
        )));
    }
    let env = DeviceEnv {
        error_slot: slot.device_ptr(),
        wait_timeout_ns: timeout.as_nanos().min(u64::MAX as u128) as u64,
        rank,
        flags: 0,
    };
    // SAFETY: DeviceEnv is repr(C) plain data; we view its bytes to copy them.
    let bytes = unsafe {
        std::slice::from_raw_parts((&env as *const DeviceEnv).cast::<u8>(), std::mem::size_of::<DeviceEnv>())
    };
    crate::driver::copy_to_device(module.device(), ptr, size, bytes)
}
