//! Channels: the device handles kernels use to talk to a peer.

use std::sync::Arc;

use mscclpp_sys::driver::DevicePtr;
use mscclpp_sys::handles::{MemoryChannelDeviceHandle, SwitchChannelDeviceHandle};

use crate::error::{Error, Result};
use crate::memory::{RegisteredMemory, RemoteMemory};
use crate::semaphore::MemoryDevice2DeviceSemaphore;

/// A memory channel: direct loads/stores into a peer's buffer plus a GPU-to-GPU semaphore.
#[derive(Debug)]
pub struct MemoryChannel {
    semaphore: Arc<MemoryDevice2DeviceSemaphore>,
    dst: Option<Arc<RemoteMemory>>,
    src: DevicePtr,
    packet_buffer: DevicePtr,
}

impl MemoryChannel {
    /// A channel writing into the peer's `dst` from local `src`, receiving packets in local `packet_buffer`.
    pub fn new(
        semaphore: Arc<MemoryDevice2DeviceSemaphore>,
        dst: Arc<RemoteMemory>,
        src: &RegisteredMemory,
        packet_buffer: Option<DevicePtr>,
    ) -> Result<Self> {
        if !dst.is_mapped() {
            return Err(Error::Unsupported(format!(
                "rank {}'s memory is not mapped here: memory channels need CUDA IPC (same host); use a port channel",
                dst.desc().rank
            )));
        }
        Ok(MemoryChannel { semaphore, dst: Some(dst), src: src.ptr(), packet_buffer: packet_buffer.unwrap_or(0) })
    }

    /// A semaphore-only channel (signal/wait; no data pointers).
    pub fn semaphore_only(semaphore: Arc<MemoryDevice2DeviceSemaphore>) -> Self {
        MemoryChannel { semaphore, dst: None, src: 0, packet_buffer: 0 }
    }

    /// The device handle to pass to kernels.
    pub fn device_handle(&self) -> MemoryChannelDeviceHandle {
        MemoryChannelDeviceHandle {
            semaphore: self.semaphore.device_handle(),
            dst: self.dst.as_ref().map(|d| d.ptr()).unwrap_or(0),
            src: self.src,
            packet_buffer: self.packet_buffer,
        }
    }
}

/// NVLink multicast (NVLS) switch channel.
#[derive(Debug)]
pub struct SwitchChannel {
    handle: SwitchChannelDeviceHandle,
}

impl SwitchChannel {
    /// Set up a real switch channel over `ranks` for a buffer of `bytes`.
    ///
    /// Checks the environment first: when `NCCL_NVLS_ENABLE=0` or `MSCCLPP_DISABLE_NVLS=1` is set this returns
    /// the error naming the variable without calling any multicast API. Multicast object creation itself is not
    /// part of this build, so an allowed request is refused as unsupported; plans fall back to memory channels.
    pub fn nvls(ranks: &[usize], bytes: usize) -> Result<Self> {
        mscclpp_sys::driver::nvls_allowed()?;
        Err(Error::Unsupported(format!(
            "NVLink multicast switch channels (ranks {ranks:?}, {bytes} bytes) are not implemented in this build; \
             use memory channels (emulated switch channels)"
        )))
    }

    /// The device handle.
    pub fn device_handle(&self) -> SwitchChannelDeviceHandle {
        self.handle
    }
}
