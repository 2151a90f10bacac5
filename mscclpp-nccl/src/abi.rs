//! The C types and constants of NCCL 2.28.9's `nccl.h`, as the exported functions see them. Enums are plain
//! `c_int`s (NCCL passes values outside the named ones, e.g. dynamic reduction operators), opaque handles are
//! raw pointers.

use std::ffi::{c_char, c_int, c_uint, c_void};

/// `ncclResult_t`.
pub type NcclResult = c_int;
/// `ncclDataType_t`.
pub type NcclDataType = c_int;
/// `ncclRedOp_t`.
pub type NcclRedOp = c_int;
/// `ncclScalarResidence_t`.
pub type NcclScalarResidence = c_int;
/// `ncclComm_t`: the real NCCL communicator, or one of ours when no real NCCL is loaded.
pub type NcclComm = *mut c_void;
/// `ncclWindow_t`.
pub type NcclWindow = *mut c_void;
/// `cudaStream_t` (the same handle as the driver's `CUstream`).
pub type CudaStream = *mut c_void;

/// `ncclSuccess`.
pub const SUCCESS: NcclResult = 0;
/// `ncclUnhandledCudaError`.
pub const UNHANDLED_CUDA_ERROR: NcclResult = 1;
/// `ncclSystemError`.
pub const SYSTEM_ERROR: NcclResult = 2;
/// `ncclInternalError`.
pub const INTERNAL_ERROR: NcclResult = 3;
/// `ncclInvalidArgument`.
pub const INVALID_ARGUMENT: NcclResult = 4;
/// `ncclInvalidUsage`.
pub const INVALID_USAGE: NcclResult = 5;
/// `ncclRemoteError`.
pub const REMOTE_ERROR: NcclResult = 6;
/// `ncclInProgress`.
pub const IN_PROGRESS: NcclResult = 7;
/// `ncclNumResults`.
pub const NUM_RESULTS: NcclResult = 8;

/// `ncclSum`.
pub const SUM: NcclRedOp = 0;
/// `ncclProd`.
pub const PROD: NcclRedOp = 1;
/// `ncclMax`.
pub const MAX: NcclRedOp = 2;
/// `ncclMin`.
pub const MIN: NcclRedOp = 3;
/// `ncclAvg`.
pub const AVG: NcclRedOp = 4;

/// `ncclInt8` / `ncclChar`.
pub const INT8: NcclDataType = 0;
/// `ncclUint8`.
pub const UINT8: NcclDataType = 1;
/// `ncclInt32` / `ncclInt`.
pub const INT32: NcclDataType = 2;
/// `ncclUint32`.
pub const UINT32: NcclDataType = 3;
/// `ncclInt64`.
pub const INT64: NcclDataType = 4;
/// `ncclUint64`.
pub const UINT64: NcclDataType = 5;
/// `ncclFloat16` / `ncclHalf`.
pub const FLOAT16: NcclDataType = 6;
/// `ncclFloat32` / `ncclFloat`.
pub const FLOAT32: NcclDataType = 7;
/// `ncclFloat64` / `ncclDouble`.
pub const FLOAT64: NcclDataType = 8;
/// `ncclBfloat16`.
pub const BFLOAT16: NcclDataType = 9;
/// `ncclFloat8e4m3`.
pub const FLOAT8E4M3: NcclDataType = 10;
/// `ncclFloat8e5m2`.
pub const FLOAT8E5M2: NcclDataType = 11;

/// `NCCL_SPLIT_NOCOLOR`.
pub const SPLIT_NOCOLOR: c_int = -1;
/// `NCCL_CONFIG_UNDEF_INT`.
pub const CONFIG_UNDEF_INT: c_int = c_int::MIN;
/// The magic `NCCL_CONFIG_INITIALIZER` writes into `ncclConfig_t::magic`.
pub const CONFIG_MAGIC: c_uint = 0xcafe_beef;
/// `NCCL_WIN_COLL_SYMMETRIC`: a window every rank registers alike, buffers at the same offsets on every rank.
pub const WIN_COLL_SYMMETRIC: c_int = 0x01;
/// `NCCL_UNIQUE_ID_BYTES`.
pub const UNIQUE_ID_BYTES: usize = 128;
/// `NCCL_VERSION_CODE` of the header this library implements.
pub const HEADER_VERSION: c_int = 22809;

/// Bytes per element of an NCCL data type (`None` for values outside the enum).
pub fn element_bytes(dtype: NcclDataType) -> Option<usize> {
    match dtype {
        INT8 | UINT8 | FLOAT8E4M3 | FLOAT8E5M2 => Some(1),
        FLOAT16 | BFLOAT16 => Some(2),
        INT32 | UINT32 | FLOAT32 => Some(4),
        INT64 | UINT64 | FLOAT64 => Some(8),
        _ => None,
    }
}

/// `ncclUniqueId`: 128 opaque bytes, passed by value to the init functions.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NcclUniqueId {
    /// The bytes.
    pub internal: [c_char; UNIQUE_ID_BYTES],
}

/// `ncclConfig_t` (`struct ncclConfig_v22800`). Callers compiled against older headers pass a smaller struct:
/// read only the fields below [`NcclConfig::size`] ([`ConfigView`]).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct NcclConfig {
    /// `sizeof(ncclConfig_t)` in the caller's header.
    pub size: usize,
    /// [`CONFIG_MAGIC`].
    pub magic: c_uint,
    /// `NCCL_VERSION_CODE` of the caller's header.
    pub version: c_uint,
    /// 0: nonblocking communicator (calls may return `ncclInProgress`).
    pub blocking: c_int,
    /// `cgaClusterSize`.
    pub cga_cluster_size: c_int,
    /// `minCTAs`.
    pub min_ctas: c_int,
    /// `maxCTAs`.
    pub max_ctas: c_int,
    /// `netName`.
    pub net_name: *const c_char,
    /// `splitShare`.
    pub split_share: c_int,
    /// `trafficClass`.
    pub traffic_class: c_int,
    /// `commName`.
    pub comm_name: *const c_char,
    /// `collnetEnable`.
    pub collnet_enable: c_int,
    /// `CTAPolicy`.
    pub cta_policy: c_int,
    /// `shrinkShare`.
    pub shrink_share: c_int,
    /// `nvlsCTAs`.
    pub nvls_ctas: c_int,
    /// `nChannelsPerNetPeer`.
    pub n_channels_per_net_peer: c_int,
    /// `nvlinkCentricSched`.
    pub nvlink_centric_sched: c_int,
}

/// What this library reads from a caller's `ncclConfig_t`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ConfigView {
    /// False for `config.blocking == 0`.
    pub blocking: bool,
}

/// Why a config was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigError(pub String);

impl ConfigView {
    /// Read `config` as NCCL does: NULL means defaults; the magic must match; fields at or past `size` are
    /// absent (older headers); `NCCL_CONFIG_UNDEF_INT` means the default (blocking).
    ///
    /// # Safety
    /// `config` is NULL or points to at least `min(config->size, size_of::<NcclConfig>())` readable bytes whose
    /// first field is `size`.
    pub unsafe fn read(config: *const NcclConfig) -> Result<ConfigView, ConfigError> {
        if config.is_null() {
            return Ok(ConfigView { blocking: true });
        }
        // SAFETY: the caller passes a readable config; `size` and `magic` are at fixed offsets in every version.
        let (size, magic) = unsafe { ((*config).size, (*config).magic) };
        if magic != CONFIG_MAGIC {
            return Err(ConfigError(format!(
                "ncclConfig_t has magic {magic:#x}, not {CONFIG_MAGIC:#x}: initialize it with NCCL_CONFIG_INITIALIZER"
            )));
        }
        let blocking_end = std::mem::offset_of!(NcclConfig, blocking) + std::mem::size_of::<c_int>();
        let blocking = if size >= blocking_end {
            // SAFETY: the field lies below the caller's declared size.
            let b = unsafe { (*config).blocking };
            b != 0
        } else {
            true
        };
        Ok(ConfigView { blocking })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::mem::{offset_of, size_of};

    #[test]
    fn config_layout_matches_the_header() {
        assert_eq!(size_of::<NcclConfig>(), 80);
        let offsets = [
            (offset_of!(NcclConfig, size), 0),
            (offset_of!(NcclConfig, magic), 8),
            (offset_of!(NcclConfig, version), 12),
            (offset_of!(NcclConfig, blocking), 16),
            (offset_of!(NcclConfig, cga_cluster_size), 20),
            (offset_of!(NcclConfig, min_ctas), 24),
            (offset_of!(NcclConfig, max_ctas), 28),
            (offset_of!(NcclConfig, net_name), 32),
            (offset_of!(NcclConfig, split_share), 40),
            (offset_of!(NcclConfig, traffic_class), 44),
            (offset_of!(NcclConfig, comm_name), 48),
            (offset_of!(NcclConfig, collnet_enable), 56),
            (offset_of!(NcclConfig, cta_policy), 60),
            (offset_of!(NcclConfig, shrink_share), 64),
            (offset_of!(NcclConfig, nvls_ctas), 68),
            (offset_of!(NcclConfig, n_channels_per_net_peer), 72),
            (offset_of!(NcclConfig, nvlink_centric_sched), 76),
        ];
        for (got, want) in offsets {
            assert_eq!(got, want);
        }
        assert_eq!(size_of::<NcclUniqueId>(), 128);
    }

    fn initializer() -> NcclConfig {
        NcclConfig {
            size: size_of::<NcclConfig>(),
            magic: CONFIG_MAGIC,
            version: HEADER_VERSION as c_uint,
            blocking: CONFIG_UNDEF_INT,
            cga_cluster_size: CONFIG_UNDEF_INT,
            min_ctas: CONFIG_UNDEF_INT,
            max_ctas: CONFIG_UNDEF_INT,
            net_name: std::ptr::null(),
            split_share: CONFIG_UNDEF_INT,
            traffic_class: CONFIG_UNDEF_INT,
            comm_name: std::ptr::null(),
            collnet_enable: CONFIG_UNDEF_INT,
            cta_policy: CONFIG_UNDEF_INT,
            shrink_share: CONFIG_UNDEF_INT,
            nvls_ctas: CONFIG_UNDEF_INT,
            n_channels_per_net_peer: CONFIG_UNDEF_INT,
            nvlink_centric_sched: CONFIG_UNDEF_INT,
        }
    }

    #[test]
    fn config_reading_follows_nccl() {
        // SAFETY: null is allowed.
        assert_eq!(unsafe { ConfigView::read(std::ptr::null()) }, Ok(ConfigView { blocking: true }));
        let mut c = initializer();
        // SAFETY: a full, initialized config.
        assert_eq!(unsafe { ConfigView::read(&c) }, Ok(ConfigView { blocking: true }));
        c.blocking = 0;
        // SAFETY: as above.
        assert_eq!(unsafe { ConfigView::read(&c) }, Ok(ConfigView { blocking: false }));
        // An older, shorter struct without the field: the default.
        c.size = 16;
        // SAFETY: as above (the struct is larger than its declared size).
        assert_eq!(unsafe { ConfigView::read(&c) }, Ok(ConfigView { blocking: true }));
        c.magic = 0;
        // SAFETY: as above.
        let err = unsafe { ConfigView::read(&c) }.unwrap_err();
        assert!(err.0.contains("NCCL_CONFIG_INITIALIZER"), "{}", err.0);
    }

    #[test]
    fn element_sizes() {
        assert_eq!(element_bytes(FLOAT16), Some(2));
        assert_eq!(element_bytes(BFLOAT16), Some(2));
        assert_eq!(element_bytes(FLOAT64), Some(8));
        assert_eq!(element_bytes(UINT8), Some(1));
        assert_eq!(element_bytes(12), None);
    }
}
