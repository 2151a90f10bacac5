//! The mscclpp runtime: bootstrap, communicator, GPU memory registration, transports, semaphores, memory and
//! port channels with the proxy service, and a launcher for users' own kernels.
//!
//! Module map:
//! - [`bootstrap`]: rank discovery and small messages ([`bootstrap::TcpBootstrap`], env detection).
//! - [`memory`]: [`GpuBuffer`] (cuMemAlloc, legacy IPC), [`RawGpuBuffer`] (cuMem VMM, fd handles),
//!   [`RegisteredMemory`] and [`RemoteMemory`].
//! - [`connection`]: transports (CudaIpc, Ethernet) and [`Connection`].
//! - [`semaphore`]: GPU-to-GPU and host-to-GPU semaphores.
//! - [`channel`]: [`MemoryChannel`], [`PortChannel`] handles, [`channel::SwitchChannel`] (NVLS guard).
//! - [`proxy`]: the [`ProxyService`] (FIFO in pinned host memory, one proxy thread).
//! - [`communicator`]: [`Communicator`], tying the above together.
//! - [`kernel`]: [`KernelBuilder`] for users' CUDA sources with the mscclpp headers.

pub mod bootstrap;
pub mod env;
pub mod error;

pub use error::{Error, Result};
