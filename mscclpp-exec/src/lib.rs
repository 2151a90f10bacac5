//! The mscclpp runtime: bootstrap, communicator, GPU memory registration, transports, semaphores, memory and
//! port channels with the proxy service, and a launcher for users' own kernels.
//!
//! Module map:
//! - [`bootstrap`]: rank discovery and small messages ([`bootstrap::TcpBootstrap`], launcher detection).
//! - [`mod@env`]: host identity, the local-rank rule that picks the GPU and the InfiniBand HCA, GPU sharing.
//! - [`memory`]: [`GpuBuffer`] (cuMemAlloc, legacy IPC), [`RawGpuBuffer`] (cuMem VMM, fd handles),
//!   [`RegisteredMemory`] and [`RemoteMemory`].
//! - [`connection`]: [`Connection`] to one peer, over one of the [`transport`]s: CUDA IPC on one host
//!   ([`transport::ipc`], with cuMem fd passing), Ethernet between hosts ([`transport::ethernet`]), InfiniBand
//!   (`transport::ib`, feature `ib`: RC queue pairs, RDMA WRITE).
//! - [`semaphore`]: GPU-to-GPU and host-to-GPU semaphores.
//! - [`channel`]: [`MemoryChannel`], [`channel::SwitchChannel`] (NVLS guard); port channels come from the
//!   [`ProxyService`].
//! - [`proxy`]: the [`ProxyService`] (FIFO in pinned host memory, one proxy thread).
//! - [`communicator`]: [`Communicator`], tying the above together.
//! - [`startup`]: the start-up trace (`MSCCLPP_TRACE_STARTUP=1`).
//! - [`tune`]: the autotuner and the machine's tuned table ([`tune::tune`], [`tune::install_tuned_table`]).
//! - [`kernel`]: [`KernelBuilder`] for users' CUDA sources with the mscclpp headers, [`GpuContext`],
//!   [`DeviceArray`].

pub mod bootstrap;
pub mod channel;
pub mod communicator;
pub mod connection;
pub mod env;
pub mod error;
pub mod executor;
pub mod frontend;
pub mod kernel;
pub mod memory;
pub mod proxy;
pub mod semaphore;
pub mod startup;
pub mod transport;
pub mod tune;

pub use channel::MemoryChannel;
pub use communicator::Communicator;
pub use connection::{Connection, Transport};
pub use error::{Error, Result};
pub use kernel::{DeviceArray, GpuContext, Kernel, KernelBuilder};
pub use memory::{GpuBuffer, RawGpuBuffer, RegisteredMemory, RemoteMemory};
/// The CUDA / NVRTC edge, re-exported.
pub use mscclpp_sys as sys;
pub use proxy::ProxyService;
