//! The transports a [`crate::Connection`] moves data and semaphore values over, one submodule each:
//!
//! - [`ipc`]: one host. Peers' GPU memory is mapped through CUDA IPC (legacy `cuIpc*` handles, or cuMem
//!   allocations whose file descriptors are passed over a Unix-domain socket); copies and signals run on the
//!   connection's stream.
//! - [`ethernet`]: between hosts over TCP, frames staged through pinned host memory.
//! - `ib` (feature `ib`): between hosts over InfiniBand, RDMA WRITEs on one reliable-connected queue pair.

pub mod ethernet;
#[cfg(feature = "ib")]
pub mod ib;
pub mod ipc;
