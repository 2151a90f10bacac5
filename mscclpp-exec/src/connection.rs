//! Transports and connections: how a proxy moves data and signals to one peer.

use std::time::Duration;

use mscclpp_sys::driver::{Device, DevicePtr, Stream};
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::memory::RemoteMemory;
use crate::transport::ipc::{self, Signaller};

/// How two ranks reach each other.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Transport {
    /// Same host: peer memory mapped through CUDA IPC; copies by the copy engine.
    CudaIpc,
    /// Different hosts: TCP, staged through pinned host memory.
    Ethernet,
    /// Different hosts: InfiniBand RDMA (feature `ib`).
    Ib,
}

/// What one side tells the other before a connection is built.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Endpoint {
    /// Rank.
    pub rank: u32,
    /// Host id (`MSCCLPP_HOSTID` or hostname).
    pub host: String,
    /// Process id.
    pub pid: u32,
    /// GPU ordinal.
    pub device: u32,
    /// Transport this side proposes.
    pub transport: Transport,
}

pub use crate::env::ib_requested;

/// The transport chosen for two endpoints: CUDA IPC on one host; between hosts InfiniBand when both endpoints
/// propose it (both have an HCA port up) or `MSCCLPP_TRANSPORT=ib` is set, else Ethernet.
pub fn choose_transport(local: &Endpoint, remote: &Endpoint) -> Transport {
    choose_transport_with(local, remote, ib_requested())
}

/// [`choose_transport`] with the `MSCCLPP_TRANSPORT=ib` request given explicitly.
pub fn choose_transport_with(local: &Endpoint, remote: &Endpoint, ib_requested: bool) -> Transport {
    if local.host == remote.host {
        Transport::CudaIpc
    } else if ib_requested || (local.transport == Transport::Ib && remote.transport == Transport::Ib) {
        Transport::Ib
    } else {
        Transport::Ethernet
    }
}

/// A connection to one peer, used by the proxy thread.
#[derive(Debug)]
pub struct Connection {
    transport: Transport,
    remote_rank: usize,
    device: Device,
    stream: Stream,
    signal: Signaller,
    ethernet: Option<crate::transport::ethernet::EthernetLink>,
    #[cfg(feature = "ib")]
    ib: Option<crate::transport::ib::IbLink>,
}

impl Connection {
    /// A CUDA IPC connection from `device` to the peer's GPU `remote_device` (checked for peer access when it is
    /// visible in this process).
    pub fn cuda_ipc(device: &Device, remote_rank: usize, remote_device: usize) -> Result<Self> {
        ipc::check_peer_access(device, remote_device)?;
        device.bind()?;
        let signal = Signaller::new(device)?;
        Ok(Connection {
            transport: Transport::CudaIpc,
            remote_rank,
            device: *device,
            stream: Stream::new(device)?,
            signal,
            ethernet: None,
            #[cfg(feature = "ib")]
            ib: None,
        })
    }

    /// An Ethernet connection to `remote_rank` (another host): frames over the bootstrap under `tag`.
    pub fn ethernet(
        device: &Device,
        bootstrap: std::sync::Arc<dyn crate::bootstrap::Bootstrap>,
        remote_rank: usize,
        tag: u64,
        exposed: std::sync::Arc<crate::transport::ethernet::ExposedRanges>,
    ) -> Result<Self> {
        device.bind()?;
        let link = crate::transport::ethernet::EthernetLink::new(bootstrap, device, remote_rank, tag, exposed)?;
        Ok(Connection {
            transport: Transport::Ethernet,
            remote_rank,
            device: *device,
            stream: Stream::new(device)?,
            signal: Signaller::WriteValue,
            ethernet: Some(link),
            #[cfg(feature = "ib")]
            ib: None,
        })
    }

    /// An InfiniBand connection to `remote_rank` (another host): an RC queue pair connected over the bootstrap
    /// under `tag` (both sides use the same tag). Puts and signals are RDMA WRITEs; GPU memory is registered with
    /// the HCA on first use.
    #[cfg(feature = "ib")]
    pub fn ib(
        device: &Device,
        bootstrap: std::sync::Arc<dyn crate::bootstrap::Bootstrap>,
        remote_rank: usize,
        tag: u64,
    ) -> Result<Self> {
        let link = crate::transport::ib::IbLink::connect(&bootstrap, remote_rank, tag, Some(*device))?;
        device.bind()?;
        Ok(Connection {
            transport: Transport::Ib,
            remote_rank,
            device: *device,
            stream: Stream::new(device)?,
            signal: Signaller::WriteValue,
            ethernet: None,
            ib: Some(link),
        })
    }

    /// The transport.
    pub fn transport(&self) -> Transport {
        self.transport
    }

    /// The peer's rank.
    pub fn remote_rank(&self) -> usize {
        self.remote_rank
    }

    /// The local GPU.
    pub fn device(&self) -> &Device {
        &self.device
    }

    /// Queue a copy of `size` bytes from local `src + src_off` to the peer's `dst + dst_off`.
    pub fn write(&self, dst: &RemoteMemory, dst_off: u64, src: DevicePtr, src_off: u64, size: u64) -> Result<()> {
        if dst_off.checked_add(size).is_none_or(|e| e > dst.size()) {
            return Err(Error::InvalidArgument(format!(
                "put of {size} bytes at offset {dst_off} overruns the {}-byte destination of rank {}",
                dst.size(),
                self.remote_rank
            )));
        }
        if let Some(eth) = &self.ethernet {
            return eth.write(dst.desc().ptr + dst_off, src + src_off, size);
        }
        #[cfg(feature = "ib")]
        if let Some(ib) = &self.ib {
            return ib.put(dst, dst_off, src + src_off, size);
        }
        if !dst.is_mapped() {
            return Err(Error::Unsupported(format!(
                "rank {} is on another host; the {:?} transport cannot write its memory",
                self.remote_rank, self.transport
            )));
        }
        Ok(self.stream.copy_d2d(dst.ptr() + dst_off, src + src_off, size as usize)?)
    }

    /// Queue a copy between two addresses valid in this process (e.g. local to local).
    pub fn copy_local(&self, dst: DevicePtr, src: DevicePtr, size: u64) -> Result<()> {
        Ok(self.stream.copy_d2d(dst, src, size as usize)?)
    }

    /// Queue a store of `value` into the peer's semaphore token, ordered after every copy queued before.
    pub fn update_and_sync(&self, token: &RemoteMemory, value: u64) -> Result<()> {
        if let Some(eth) = &self.ethernet {
            return eth.update(token.desc().ptr, value);
        }
        #[cfg(feature = "ib")]
        if let Some(ib) = &self.ib {
            return ib.signal(token, value);
        }
        if !token.is_mapped() {
            return Err(Error::Unsupported(format!("rank {}'s semaphore is on another host", self.remote_rank)));
        }
        self.signal.signal(&self.stream, token.ptr(), value, || self.flush(mscclpp_sys::device_env::wait_timeout()))
    }

    /// Non-blocking: true when every queued copy and signal has completed.
    pub fn is_idle(&self) -> Result<bool> {
        #[cfg(feature = "ib")]
        if let Some(ib) = &self.ib
            && !ib.is_idle()?
        {
            return Ok(false);
        }
        Ok(self.stream.is_idle()?)
    }

    /// Wait (bounded) until every queued copy and signal has completed.
    pub fn flush(&self, timeout: Duration) -> Result<()> {
        // Ethernet sends are synchronous: nothing is left queued locally.
        #[cfg(feature = "ib")]
        if let Some(ib) = &self.ib {
            ib.flush(timeout)?;
        }
        Ok(self.stream.synchronize(timeout)?)
    }
}
