//! Semaphores: GPU-to-GPU (memory channels) and host-to-GPU (port channels).
//!
//! Tokens are `u64` counters in device memory, carved out of a per-communicator [`TokenPool`].

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use mscclpp_sys::driver::DevicePtr;
use mscclpp_sys::handles::{Host2DeviceSemaphoreDeviceHandle, MemoryDevice2DeviceSemaphoreDeviceHandle};

use crate::connection::Connection;
use crate::error::{Error, Result};
use crate::memory::{GpuBuffer, RegisteredMemory, RemoteMemory};

/// A device allocation split into 8-byte token slots (zeroed).
#[derive(Debug)]
pub struct TokenPool {
    buf: GpuBuffer,
    reg: RegisteredMemory,
    next: usize,
}

impl TokenPool {
    /// Slots in one pool.
    pub const SLOTS: usize = 8192;

    /// Allocate a pool on `device` and register it.
    pub fn new(device: &mscclpp_sys::driver::Device, rank: usize) -> Result<Self> {
        let buf = GpuBuffer::new(device, Self::SLOTS * 8)?;
        let reg = RegisteredMemory::from_gpu_buffer(&buf, rank)?;
        Ok(TokenPool { buf, reg, next: 0 })
    }

    /// Take one zeroed slot: its device address and its registration.
    pub fn take(&mut self) -> Result<(DevicePtr, RegisteredMemory)> {
        if self.next >= Self::SLOTS {
            return Err(Error::InvalidArgument(format!(
                "more than {} semaphore tokens in one communicator",
                Self::SLOTS
            )));
        }
        let off = (self.next * 8) as u64;
        self.next += 1;
        Ok((self.buf.ptr() + off, self.reg.slice(off, 8)?))
    }
}

/// GPU-to-GPU semaphore over CUDA IPC: both sides' kernels signal and wait directly.
#[derive(Debug)]
pub struct MemoryDevice2DeviceSemaphore {
    handle: MemoryDevice2DeviceSemaphoreDeviceHandle,
    _remote: Arc<RemoteMemory>,
}

impl MemoryDevice2DeviceSemaphore {
    /// Assemble from the local slots and the peer's mapped inbound token.
    pub fn new(
        inbound: DevicePtr,
        expected: DevicePtr,
        remote_inbound: Arc<RemoteMemory>,
        channel_id: u32,
        peer: u32,
    ) -> Result<Self> {
        if !remote_inbound.is_mapped() {
            return Err(Error::Unsupported(format!(
                "a memory semaphore needs rank {peer}'s GPU memory mapped here (same host, CUDA IPC); use a port \
                 channel between hosts"
            )));
        }
        Ok(MemoryDevice2DeviceSemaphore {
            handle: MemoryDevice2DeviceSemaphoreDeviceHandle {
                inbound_token: inbound,
                remote_inbound_token: remote_inbound.ptr(),
                expected_inbound_token: expected,
                channel_id,
                peer,
            },
            _remote: remote_inbound,
        })
    }

    /// The device handle.
    pub fn device_handle(&self) -> MemoryDevice2DeviceSemaphoreDeviceHandle {
        self.handle
    }
}

/// Host-to-GPU semaphore: the local GPU waits on the local tokens; the local proxy signals the peer's token
/// through the connection, and on one host the local GPU may signal the peer's direct token itself (small puts
/// moved over NVLink without the proxy; see `PortDirectState`).
#[derive(Debug)]
pub struct Host2DeviceSemaphore {
    handle: Host2DeviceSemaphoreDeviceHandle,
    connection: Arc<Connection>,
    remote_inbound: Arc<RemoteMemory>,
    remote_direct: Option<Arc<RemoteMemory>>,
    outbound: AtomicU64,
}

/// The local token slots of a [`Host2DeviceSemaphore`].
#[derive(Clone, Copy, Debug)]
pub struct HostSemaphoreTokens {
    /// Incremented by the peer's proxy.
    pub inbound: DevicePtr,
    /// Counts the waits done here.
    pub expected: DevicePtr,
    /// Incremented by the peer's GPU (direct path); `None` when the peer is on another host.
    pub direct: Option<DevicePtr>,
}

impl Host2DeviceSemaphore {
    /// Assemble from the local slots, the connection and the peer's tokens (`remote_direct`: the peer's direct
    /// token, mapped here, when the peer is on this host).
    pub fn new(
        tokens: HostSemaphoreTokens,
        connection: Arc<Connection>,
        remote_inbound: Arc<RemoteMemory>,
        remote_direct: Option<Arc<RemoteMemory>>,
        channel_id: u32,
    ) -> Self {
        let peer = connection.remote_rank() as u32;
        Host2DeviceSemaphore {
            handle: Host2DeviceSemaphoreDeviceHandle {
                inbound_token: tokens.inbound,
                expected_inbound_token: tokens.expected,
                direct_inbound_token: tokens.direct.unwrap_or(0),
                channel_id,
                peer,
            },
            connection,
            remote_inbound,
            remote_direct: remote_direct.filter(|r| r.is_mapped()),
            outbound: AtomicU64::new(0),
        }
    }

    /// The device handle (waits of the local GPU).
    pub fn device_handle(&self) -> Host2DeviceSemaphoreDeviceHandle {
        self.handle
    }

    /// The connection to the peer.
    pub fn connection(&self) -> &Arc<Connection> {
        &self.connection
    }

    /// The peer's direct token as this GPU addresses it, when the peer is on this host.
    pub fn remote_direct_token(&self) -> Option<DevicePtr> {
        self.remote_direct.as_ref().map(|r| r.ptr())
    }

    /// Signal the peer once (ordered after all writes queued on the connection).
    pub fn signal(&self) -> Result<()> {
        let v = self.outbound.fetch_add(1, Ordering::Relaxed) + 1;
        self.connection.update_and_sync(&self.remote_inbound, v)
    }
}
