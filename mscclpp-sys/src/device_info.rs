//! Device facts beyond [`crate::driver::Device`]'s: total memory and how two GPUs are linked, as `mscclpp info`
//! reports them. Queries only (no context is created).

use cudarc::driver::sys;

use crate::driver::result;
use crate::error::Result;
use crate::loader;

fn raw_device(ordinal: usize) -> Result<sys::CUdevice> {
    loader::driver()?;
    Ok(result::device_get(i32::try_from(ordinal).unwrap_or(i32::MAX))?)
}

/// Total memory of GPU `ordinal`, in bytes.
pub fn total_memory(ordinal: usize) -> Result<u64> {
    Ok(result::device_total_mem(raw_device(ordinal)?)? as u64)
}

/// Whether GPU `ordinal` supports multicast objects (`CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED`).
pub fn multicast_supported(ordinal: usize) -> Result<bool> {
    let attr = sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED;
    Ok(result::device_get_attribute(attr, raw_device(ordinal)?)? != 0)
}

/// The link from one GPU to another as the driver describes it (`cuDeviceGetP2PAttribute`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PeerLink {
    /// Peer access is supported (kernels on one GPU can map the other's memory).
    pub access_supported: bool,
    /// The driver's relative performance rank of the link (0 is the best the system has).
    pub performance_rank: i32,
    /// Atomic operations over the link are native: the driver reports this for NVLink peers, not for PCIe ones.
    pub native_atomics: bool,
}

fn p2p_attribute(attr: sys::CUdevice_P2PAttribute, from: sys::CUdevice, to: sys::CUdevice) -> Result<i32> {
    Ok(result::device_get_p2p_attribute(attr, from, to)?)
}

/// How GPU `from` reaches GPU `to` (two different ordinals).
pub fn peer_link(from: usize, to: usize) -> Result<PeerLink> {
    let (a, b) = (raw_device(from)?, raw_device(to)?);
    use sys::CUdevice_P2PAttribute as A;
    Ok(PeerLink {
        access_supported: p2p_attribute(A::CU_DEVICE_P2P_ATTRIBUTE_ACCESS_SUPPORTED, a, b)? != 0,
        performance_rank: p2p_attribute(A::CU_DEVICE_P2P_ATTRIBUTE_PERFORMANCE_RANK, a, b)?,
        native_atomics: p2p_attribute(A::CU_DEVICE_P2P_ATTRIBUTE_NATIVE_ATOMIC_SUPPORTED, a, b)? != 0,
    })
}
