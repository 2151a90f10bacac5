//! The communicator: a bootstrap plus a GPU, with memory registration, connections and semaphores.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

use mscclpp_sys::driver::{Device, DevicePtr};

use crate::bootstrap::{Bootstrap, LaunchEnv, TcpBootstrap};
use crate::channel::MemoryChannel;
use crate::connection::{Connection, Endpoint, Transport, choose_transport};
use crate::error::{Error, Result};
use crate::memory::{GpuBuffer, RawGpuBuffer, RegisteredMemory, RemoteMemory};
use crate::semaphore::{Host2DeviceSemaphore, HostSemaphoreTokens, MemoryDevice2DeviceSemaphore, TokenPool};
use crate::transport::ethernet::ExposedRanges;

const KIND_MEMORY: u64 = 1 << 56;
const KIND_ENDPOINT: u64 = 2 << 56;
const KIND_SEMAPHORE: u64 = 3 << 56;
const KIND_ETHERNET: u64 = 4 << 56;
const KIND_SEMAPHORE_DIRECT: u64 = 5 << 56;
const KIND_GATHER: u64 = 6 << 56;

fn tag_of(kind: u64, tag: u64) -> Result<u64> {
    if tag >= 1 << 56 {
        return Err(Error::InvalidArgument(format!("tag {tag} is too large (at most 2^56 - 1)")));
    }
    Ok(kind | tag)
}

/// One rank's view of the job: bootstrap, GPU, registered memory, connections and semaphores.
pub struct Communicator {
    bootstrap: Arc<dyn Bootstrap>,
    device: Device,
    pool: Mutex<Vec<TokenPool>>,
    next_channel: AtomicU32,
    /// Executors created on this communicator so far (their ids keep their setup traffic apart).
    next_executor: AtomicU32,
    exposed: Arc<ExposedRanges>,
}

impl std::fmt::Debug for Communicator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Communicator")
            .field("rank", &self.rank())
            .field("size", &self.size())
            .field("device", &self.device.ordinal())
            .finish()
    }
}

/// What [`Communicator::send_memory`] sends: the registration's description, with the InfiniBand remote key of its
/// allocation when this process uses InfiniBand (the allocation is then registered with the HCA).
fn registration_message(mem: &RegisteredMemory) -> Result<Vec<u8>> {
    #[cfg(feature = "ib")]
    let desc = crate::transport::ib::with_remote_key(mem.desc());
    #[cfg(not(feature = "ib"))]
    let desc = std::borrow::Cow::Borrowed(mem.desc());
    serde_json::to_vec(&*desc).map_err(|e| Error::InvalidArgument(format!("serializing memory: {e}")))
}

impl Communicator {
    /// Wrap a bootstrap and the GPU this rank uses.
    pub fn new(bootstrap: Arc<dyn Bootstrap>, device: Device) -> Result<Self> {
        Ok(Communicator {
            bootstrap,
            device,
            pool: Mutex::new(Vec::new()),
            next_channel: AtomicU32::new(0),
            next_executor: AtomicU32::new(0),
            exposed: Arc::new(ExposedRanges::default()),
        })
    }

    /// From the launcher's environment (mpirun, torchrun, Slurm): TCP bootstrap, and GPU `local_rank` (an error
    /// says so when this host has fewer GPUs than local ranks, unless `MSCCLPP_SHARED_GPU=1` maps them
    /// round-robin; see [`crate::env::gpu_for_local_rank`]).
    pub fn from_env() -> Result<(Self, LaunchEnv)> {
        crate::startup::mark("communicator: start");
        let env = LaunchEnv::detect()?;
        let local_rank = env.local_rank;
        // CUDA initialisation and the primary context (the slowest part of start-up) overlap the rendezvous.
        let opening = std::thread::Builder::new()
            .name("mscclpp-device-open".into())
            .spawn(move || {
                let device = Device::open(crate::env::gpu_ordinal(local_rank)?);
                crate::startup::mark("communicator: GPU opened");
                device.map_err(Error::from)
            })
            .map_err(|e| Error::io("cannot start a thread to open the GPU", e))?;
        let id = env.unique_id()?;
        let bootstrap = TcpBootstrap::new(env.rank, env.world_size, &id, crate::bootstrap::default_timeout());
        crate::startup::mark("communicator: bootstrap joined");
        let device =
            opening.join().map_err(|_| Error::InvalidArgument("the thread opening the GPU panicked".into()))??;
        let bootstrap = bootstrap?;
        // The context was made current on the opening thread; this thread uses it too.
        device.bind()?;
        Ok((Communicator::new(Arc::new(bootstrap), device)?, env))
    }

    /// The bootstrap.
    pub fn bootstrap(&self) -> &Arc<dyn Bootstrap> {
        &self.bootstrap
    }

    /// This rank.
    pub fn rank(&self) -> usize {
        self.bootstrap.rank()
    }

    /// Number of ranks.
    pub fn size(&self) -> usize {
        self.bootstrap.size()
    }

    /// This rank's GPU.
    pub fn device(&self) -> &Device {
        &self.device
    }

    /// A fresh channel id (reported by device wait timeouts).
    pub fn next_channel_id(&self) -> u32 {
        self.next_channel.fetch_add(1, Ordering::Relaxed)
    }

    /// The id of the next executor created on this communicator: 0, 1, 2 ... in creation order. Every rank must
    /// create its executors on one communicator in the same order, so that equal ids pair up across ranks.
    pub fn next_executor_id(&self) -> u32 {
        self.next_executor.fetch_add(1, Ordering::Relaxed)
    }

    /// An all-gather under `tag` (at most 2^56 - 1): every rank contributes `data` and gets every contribution by
    /// rank. Unlike [`Bootstrap::all_gather`], concurrent calls with different tags (e.g. from two executors on
    /// this communicator, in two threads) never take each other's messages.
    pub fn all_gather_tagged(&self, tag: u64, data: &[u8]) -> Result<Vec<Vec<u8>>> {
        self.bootstrap.all_gather_tagged(tag_of(KIND_GATHER, tag)?, data)
    }

    /// Register a [`GpuBuffer`].
    pub fn register(&self, buf: &GpuBuffer) -> Result<RegisteredMemory> {
        RegisteredMemory::from_gpu_buffer(buf, self.rank())
    }

    /// Register a whole [`RawGpuBuffer`].
    pub fn register_raw(&self, buf: &RawGpuBuffer) -> Result<RegisteredMemory> {
        RegisteredMemory::from_raw_buffer(buf, self.rank(), 0, buf.len())
    }

    /// Register `[ptr, ptr + size)` of a CUDA allocation: `cuMemAlloc` memory (e.g. a framework's tensor) or
    /// memory inside a live [`RawGpuBuffer`] ([`RegisteredMemory::for_ptr`]).
    pub fn register_ptr(&self, ptr: DevicePtr, size: usize) -> Result<RegisteredMemory> {
        RegisteredMemory::for_ptr(&self.device, self.rank(), ptr, size)
    }

    /// Send a registration to `peer` under `tag`.
    pub fn send_memory(&self, mem: &RegisteredMemory, peer: usize, tag: u64) -> Result<()> {
        self.exposed.add(mem.ptr(), mem.size());
        self.bootstrap.send(peer, tag_of(KIND_MEMORY, tag)?, &registration_message(mem)?)
    }

    /// Receive `peer`'s registration under `tag` and map it here when it is on this host.
    pub fn recv_memory(&self, peer: usize, tag: u64) -> Result<Arc<RemoteMemory>> {
        let bytes = self.bootstrap.recv(peer, tag_of(KIND_MEMORY, tag)?)?;
        Ok(Arc::new(RemoteMemory::import(&bytes, &self.device, peer)?))
    }

    /// Send `mem`'s registration to `peer` under the full tag `t` (kind included), receive the peer's under the
    /// same tag and map it here.
    fn swap_registrations(&self, mem: &RegisteredMemory, peer: usize, t: u64) -> Result<Arc<RemoteMemory>> {
        self.bootstrap.send(peer, t, &registration_message(mem)?)?;
        Ok(Arc::new(RemoteMemory::import(&self.bootstrap.recv(peer, t)?, &self.device, peer)?))
    }

    /// Exchange registrations with `peer`: send ours, receive theirs.
    pub fn exchange_memory(&self, mem: &RegisteredMemory, peer: usize, tag: u64) -> Result<Arc<RemoteMemory>> {
        self.send_memory(mem, peer, tag)?;
        self.recv_memory(peer, tag)
    }

    /// Connect to `peer` (both sides call this with the same `tag`). The transport is CUDA IPC on the same host
    /// (`MSCCLPP_HOSTID` or hostname), else a network transport.
    pub fn connect(&self, peer: usize, tag: u64) -> Result<Arc<Connection>> {
        let local = Endpoint {
            rank: self.rank() as u32,
            host: crate::env::host_id(),
            pid: std::process::id(),
            device: self.device.ordinal() as u32,
            transport: self.proposed_transport(),
        };
        let t = tag_of(KIND_ENDPOINT, tag)?;
        let bytes =
            serde_json::to_vec(&local).map_err(|e| Error::InvalidArgument(format!("serializing endpoint: {e}")))?;
        self.bootstrap.send(peer, t, &bytes)?;
        let remote: Endpoint = serde_json::from_slice(&self.bootstrap.recv(peer, t)?)
            .map_err(|e| Error::Protocol { peer, reason: format!("endpoint: {e}") })?;
        match choose_transport(&local, &remote) {
            Transport::CudaIpc => Ok(Arc::new(Connection::cuda_ipc(&self.device, peer, remote.device as usize)?)),
            Transport::Ethernet => Ok(Arc::new(Connection::ethernet(
                &self.device,
                self.bootstrap.clone(),
                peer,
                tag_of(KIND_ETHERNET, tag)?,
                self.exposed.clone(),
            )?)),
            // The InfiniBand handshake uses the network transports' tag space (a connection is Ethernet or IB).
            #[cfg(feature = "ib")]
            Transport::Ib => {
                Ok(Arc::new(Connection::ib(&self.device, self.bootstrap.clone(), peer, tag_of(KIND_ETHERNET, tag)?)?))
            }
            #[cfg(not(feature = "ib"))]
            Transport::Ib => Err(Error::Unsupported(format!(
                "rank {peer} is on host {:?} and this rank on {:?}: InfiniBand was asked for (MSCCLPP_TRANSPORT=ib) \
                 but this build has no InfiniBand support; rebuild with `--features ib`, or unset MSCCLPP_TRANSPORT \
                 to use the Ethernet transport",
                remote.host, local.host
            ))),
        }
    }

    /// What this rank proposes for peers on other hosts: InfiniBand when built with it and an HCA port is up
    /// (the HCA of this rank's local rank in `MSCCLPP_HCA_DEVICES`), else Ethernet. Same-host peers always use CUDA
    /// IPC.
    fn proposed_transport(&self) -> Transport {
        #[cfg(feature = "ib")]
        if crate::transport::ib::IbContext::global(crate::env::local_rank(self.rank())).is_ok() {
            return Transport::Ib;
        }
        Transport::CudaIpc
    }

    fn take_token(&self) -> Result<(DevicePtr, RegisteredMemory)> {
        let mut pools = self.pool.lock().map_err(|_| Error::Poisoned { what: "the semaphore token pool" })?;
        if let Some(p) = pools.last_mut()
            && let Ok(t) = p.take()
        {
            return Ok(t);
        }
        let mut p = TokenPool::new(&self.device, self.rank())?;
        let t = p.take()?;
        pools.push(p);
        Ok(t)
    }

    /// Build a GPU-to-GPU semaphore with the peer of `conn` (both sides call this with the same `tag`).
    pub fn build_memory_semaphore(&self, conn: &Connection, tag: u64) -> Result<Arc<MemoryDevice2DeviceSemaphore>> {
        let peer = conn.remote_rank();
        let (inbound, inbound_reg) = self.take_token()?;
        let (expected, _) = self.take_token()?;
        let remote = self.swap_registrations(&inbound_reg, peer, tag_of(KIND_SEMAPHORE, tag)?)?;
        Ok(Arc::new(MemoryDevice2DeviceSemaphore::new(inbound, expected, remote, self.next_channel_id(), peer as u32)?))
    }

    /// Build a host-to-GPU semaphore with the peer of `conn` (both sides call this with the same `tag`). On one
    /// host (CUDA IPC) the semaphore also gets a direct token, so small port-channel puts can skip the proxy.
    pub fn build_host_semaphore(&self, conn: &Arc<Connection>, tag: u64) -> Result<Arc<Host2DeviceSemaphore>> {
        let peer = conn.remote_rank();
        let (inbound, inbound_reg) = self.take_token()?;
        let (expected, _) = self.take_token()?;
        let t = tag_of(KIND_SEMAPHORE, tag)?;
        self.exposed.add(inbound_reg.ptr(), inbound_reg.size());
        let remote = self.swap_registrations(&inbound_reg, peer, t)?;
        // Both sides see the same transport, so both take (or skip) the direct-token exchange.
        let (direct, remote_direct) = if conn.transport() == Transport::CudaIpc {
            let (direct, direct_reg) = self.take_token()?;
            let rd = self.swap_registrations(&direct_reg, peer, tag_of(KIND_SEMAPHORE_DIRECT, tag)?)?;
            (Some(direct), Some(rd))
        } else {
            (None, None)
        };
        let tokens = HostSemaphoreTokens { inbound, expected, direct };
        Ok(Arc::new(Host2DeviceSemaphore::new(tokens, conn.clone(), remote, remote_direct, self.next_channel_id())))
    }

    /// Convenience: connect to `peer`, build a memory semaphore and exchange `local` for the peer's buffer,
    /// giving a ready memory channel (both sides call it with the same `tag`).
    pub fn memory_channel(
        &self,
        peer: usize,
        tag: u64,
        local: &RegisteredMemory,
        packet_buffer: Option<DevicePtr>,
    ) -> Result<MemoryChannel> {
        let conn = self.connect(peer, tag)?;
        let sem = self.build_memory_semaphore(&conn, tag)?;
        let remote = self.exchange_memory(local, peer, tag)?;
        MemoryChannel::new(sem, remote, local, packet_buffer)
    }
}
