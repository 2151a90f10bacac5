//! Opening an HCA port: device choice (`MSCCLPP_HCA_DEVICES`), port attributes, GID (`MSCCLPP_IB_GID_INDEX`).

use std::ffi::{CStr, c_int};
use std::ptr::NonNull;
use std::sync::Arc;

use super::{Verbs, ffi};
use crate::error::{Error, Result};

/// An InfiniBand path MTU (`enum ibv_mtu`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Mtu {
    /// 256 bytes.
    B256,
    /// 512 bytes.
    B512,
    /// 1024 bytes.
    B1024,
    /// 2048 bytes.
    B2048,
    /// 4096 bytes.
    B4096,
}

impl Mtu {
    /// From the verbs value (`IBV_MTU_256` = 1 ... `IBV_MTU_4096` = 5).
    pub fn from_raw(raw: u32) -> Option<Self> {
        Some(match raw {
            ffi::IBV_MTU_256 => Mtu::B256,
            ffi::IBV_MTU_512 => Mtu::B512,
            ffi::IBV_MTU_1024 => Mtu::B1024,
            ffi::IBV_MTU_2048 => Mtu::B2048,
            ffi::IBV_MTU_4096 => Mtu::B4096,
            _ => return None,
        })
    }

    /// The verbs value.
    pub fn to_raw(self) -> u32 {
        match self {
            Mtu::B256 => ffi::IBV_MTU_256,
            Mtu::B512 => ffi::IBV_MTU_512,
            Mtu::B1024 => ffi::IBV_MTU_1024,
            Mtu::B2048 => ffi::IBV_MTU_2048,
            Mtu::B4096 => ffi::IBV_MTU_4096,
        }
    }

    /// Bytes per packet.
    pub fn bytes(self) -> u32 {
        128 << self.to_raw()
    }

    /// From a byte count (256, 512, 1024, 2048 or 4096).
    pub fn from_bytes(bytes: u32) -> Option<Self> {
        [Mtu::B256, Mtu::B512, Mtu::B1024, Mtu::B2048, Mtu::B4096].into_iter().find(|m| m.bytes() == bytes)
    }
}

/// The link layer of a port.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LinkLayer {
    /// Native InfiniBand (also what verbs reports as "unspecified" on old kernels): addressed by LID.
    InfiniBand,
    /// RoCE: addressed by GID, every packet carries a global route header.
    Ethernet,
}

impl LinkLayer {
    /// From the verbs value (`IBV_LINK_LAYER_*`); unspecified (0) means InfiniBand, as in verbs.h.
    pub fn from_raw(raw: u8) -> Option<Self> {
        match raw {
            ffi::IBV_LINK_LAYER_UNSPECIFIED | ffi::IBV_LINK_LAYER_INFINIBAND => Some(LinkLayer::InfiniBand),
            ffi::IBV_LINK_LAYER_ETHERNET => Some(LinkLayer::Ethernet),
            _ => None,
        }
    }

    /// The verbs value.
    pub fn to_raw(self) -> u8 {
        match self {
            LinkLayer::InfiniBand => ffi::IBV_LINK_LAYER_INFINIBAND,
            LinkLayer::Ethernet => ffi::IBV_LINK_LAYER_ETHERNET,
        }
    }
}

/// What a peer needs to know about our port, plus what we check before using it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PortInfo {
    /// Port number (from 1).
    pub port: u8,
    /// Local identifier (0 on RoCE).
    pub lid: u16,
    /// Active MTU.
    pub active_mtu: Mtu,
    /// Link layer.
    pub link_layer: LinkLayer,
    /// The GID at [`PortInfo::gid_index`].
    pub gid: [u8; 16],
    /// GID table index used as the source GID (`MSCCLPP_IB_GID_INDEX`).
    pub gid_index: u8,
    /// Largest message the port accepts.
    pub max_msg_sz: u32,
}

/// Which HCA and port a local rank uses.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HcaChoice {
    /// Device name, e.g. `mlx5_0`.
    pub name: String,
    /// Port number (from 1).
    pub port: u8,
}

/// Pick the HCA for `local_rank`: entry `local_rank % n` of `spec` (`MSCCLPP_HCA_DEVICES`, a comma list of
/// `name` or `name:port`), else the first device of `available` on port 1.
pub fn choose_hca(available: &[String], spec: Option<&str>, local_rank: usize) -> Result<HcaChoice> {
    let entries: Vec<&str> = spec.unwrap_or("").split(',').map(str::trim).filter(|s| !s.is_empty()).collect::<Vec<_>>();
    if entries.is_empty() {
        let name = available
            .first()
            .ok_or_else(|| Error::Ib("no InfiniBand device found; use the CudaIpc or Ethernet transport".into()))?;
        return Ok(HcaChoice { name: name.clone(), port: 1 });
    }
    let entry = entries[local_rank % entries.len()];
    let (name, port) = match entry.split_once(':') {
        Some((n, p)) => {
            let port = p.trim().parse::<u8>().ok().filter(|p| *p > 0).ok_or_else(|| {
                Error::Ib(format!(
                    "MSCCLPP_HCA_DEVICES entry {entry:?} has port {p:?}; write `name` or `name:port` with a port \
                     from 1 (see `ibv_devinfo`)"
                ))
            })?;
            (n.trim(), port)
        }
        None => (entry, 1),
    };
    if !available.iter().any(|a| a == name) {
        return Err(Error::Ib(format!(
            "MSCCLPP_HCA_DEVICES names {name:?} for local rank {local_rank}, but this machine has {available:?}; \
             fix the list (see `ibv_devices`)"
        )));
    }
    Ok(HcaChoice { name: name.to_string(), port })
}

/// `MSCCLPP_IB_GID_INDEX` (default 0).
pub fn gid_index_from_env() -> Result<u8> {
    match mscclpp_config::IB_GID_INDEX.get() {
        Ok(v) => Ok(v.and_then(|v| u8::try_from(v).ok()).unwrap_or(0)),
        Err(e) => Err(Error::Ib(format!(
            "{e} (a GID table index); list the GIDs with `show_gids` or `ibv_devinfo -v` and pick a RoCE v2 one"
        ))),
    }
}

/// A 24-bit packet sequence number, different for every call.
pub fn random_psn() -> u32 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0);
    let mut h = blake3::Hasher::new();
    h.update(&nanos.to_le_bytes());
    h.update(&std::process::id().to_le_bytes());
    h.update(&COUNTER.fetch_add(1, Ordering::Relaxed).to_le_bytes());
    let b = h.finalize();
    u32::from_le_bytes([b.as_bytes()[0], b.as_bytes()[1], b.as_bytes()[2], 0])
}

fn port_state_name(state: u32) -> &'static str {
    match state {
        ffi::IBV_PORT_DOWN => "DOWN",
        ffi::IBV_PORT_INIT => "INIT (no subnet manager has configured it)",
        ffi::IBV_PORT_ARMED => "ARMED",
        ffi::IBV_PORT_ACTIVE => "ACTIVE",
        ffi::IBV_PORT_ACTIVE_DEFER => "ACTIVE_DEFER",
        _ => "in an unknown state",
    }
}

pub(crate) fn os_error(rc: c_int) -> std::io::Error {
    if rc > 0 { std::io::Error::from_raw_os_error(rc) } else { std::io::Error::last_os_error() }
}

/// An opened HCA (`ibv_context`) and the port this process uses on it.
pub struct Context {
    pub(crate) verbs: &'static Verbs,
    pub(crate) raw: NonNull<ffi::ibv_context>,
    name: String,
    port: PortInfo,
}

// SAFETY: an ibv_context is usable from any thread: rdma-core's verbs are thread-safe (providers lock their
// queues), and this type never hands out references to the context's mutable fields.
unsafe impl Send for Context {}
// SAFETY: see above; all methods take `&self` and go through thread-safe verbs calls.
unsafe impl Sync for Context {}

impl std::fmt::Debug for Context {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Context").field("device", &self.name).field("port", &self.port).finish()
    }
}

impl Context {
    /// Open the HCA for `local_rank` ([`choose_hca`] over `MSCCLPP_HCA_DEVICES`) with the GID index of
    /// `MSCCLPP_IB_GID_INDEX`.
    pub fn open_for_local_rank(local_rank: usize) -> Result<Arc<Self>> {
        let verbs = Verbs::global()?;
        let names = verbs.device_names()?;
        let spec = mscclpp_config::HCA_DEVICES.raw();
        let choice = choose_hca(&names, spec.as_deref(), local_rank)?;
        Self::open(verbs, &choice.name, choice.port, gid_index_from_env()?)
    }

    /// Open device `name`, check that `port` is active and read its LID, MTU, link layer and GID `gid_index`.
    pub fn open(verbs: &'static Verbs, name: &str, port: u8, gid_index: u8) -> Result<Arc<Self>> {
        let mut n: c_int = 0;
        // SAFETY: valid out-pointer; the list is freed below, after the device was opened (allowed by verbs).
        let list = unsafe { (verbs.f.get_device_list)(&mut n) };
        if list.is_null() {
            return Err(Error::Ib(format!(
                "ibv_get_device_list failed ({}); no RDMA subsystem on this machine",
                std::io::Error::last_os_error()
            )));
        }
        let mut raw: *mut ffi::ibv_context = std::ptr::null_mut();
        let mut found = false;
        for i in 0..n.max(0) as usize {
            // SAFETY: `list` holds `n` valid device pointers.
            let dev = unsafe { *list.add(i) };
            // SAFETY: live device; the name is NUL-terminated and owned by it.
            let dev_name = unsafe { (verbs.f.get_device_name)(dev) };
            // SAFETY: checked non-null; NUL-terminated.
            if !dev_name.is_null() && unsafe { CStr::from_ptr(dev_name) }.to_bytes() == name.as_bytes() {
                found = true;
                // SAFETY: `dev` comes from the live list.
                raw = unsafe { (verbs.f.open_device)(dev) };
                break;
            }
        }
        let open_err = std::io::Error::last_os_error();
        // SAFETY: `list` came from ibv_get_device_list and is freed once; an opened context stays valid.
        unsafe { (verbs.f.free_device_list)(list) };
        if !found {
            return Err(Error::Ib(format!(
                "no RDMA device named {name:?}; list them with `ibv_devices` and fix MSCCLPP_HCA_DEVICES"
            )));
        }
        let raw = NonNull::new(raw).ok_or_else(|| {
            Error::Ib(format!(
                "ibv_open_device({name}) failed: {open_err}; check permissions on /dev/infiniband/uverbs* and that \
                 the device's kernel driver is loaded"
            ))
        })?;
        // From here on, dropping `ctx` closes the device.
        let mut ctx = Context {
            verbs,
            raw,
            name: name.to_string(),
            port: PortInfo {
                port,
                lid: 0,
                active_mtu: Mtu::B1024,
                link_layer: LinkLayer::InfiniBand,
                gid: [0; 16],
                gid_index,
                max_msg_sz: 0,
            },
        };
        let mut attr = ffi::ibv_port_attr::default();
        // SAFETY: live context; `attr` is zeroed and larger than the `_compat_ibv_port_attr` the exported symbol
        // writes.
        let rc = unsafe { (verbs.f.query_port)(raw.as_ptr(), port, &mut attr) };
        if rc != 0 {
            return Err(Error::Ib(format!(
                "ibv_query_port({name}, port {port}) failed: {}; check the port number in MSCCLPP_HCA_DEVICES \
                 (`ibv_devinfo` lists the ports)",
                os_error(rc)
            )));
        }
        if attr.state != ffi::IBV_PORT_ACTIVE {
            return Err(Error::Ib(format!(
                "port {port} of {name} is {}; check the cable and the subnet manager (`ibstat`), or choose another \
                 HCA with MSCCLPP_HCA_DEVICES",
                port_state_name(attr.state)
            )));
        }
        let link_layer = LinkLayer::from_raw(attr.link_layer).ok_or_else(|| {
            Error::Ib(format!(
                "port {port} of {name} has unknown link layer {}; this HCA is not supported",
                attr.link_layer
            ))
        })?;
        let active_mtu = Mtu::from_raw(attr.active_mtu).ok_or_else(|| {
            Error::Ib(format!("port {port} of {name} reports unknown active MTU value {}", attr.active_mtu))
        })?;
        let mut gid = ffi::ibv_gid::default();
        // SAFETY: live context, valid out-pointer.
        let rc = unsafe { (verbs.f.query_gid)(raw.as_ptr(), port, c_int::from(gid_index), &mut gid) };
        if rc != 0 {
            return Err(Error::Ib(format!(
                "ibv_query_gid({name}, port {port}, index {gid_index}) failed: {}; the GID table has {} entries: \
                 fix MSCCLPP_IB_GID_INDEX",
                os_error(rc),
                attr.gid_tbl_len
            )));
        }
        // SAFETY: every bit pattern is a valid `[u8; 16]`.
        let gid = unsafe { gid.raw };
        if link_layer == LinkLayer::Ethernet && gid == [0; 16] {
            return Err(Error::Ib(format!(
                "GID {gid_index} of {name} port {port} is empty, and RoCE needs one: list the GIDs with `show_gids` \
                 and set MSCCLPP_IB_GID_INDEX to a RoCE v2 entry"
            )));
        }
        if link_layer == LinkLayer::InfiniBand && attr.lid == 0 {
            return Err(Error::Ib(format!(
                "port {port} of {name} has no LID: is a subnet manager running (`sminfo`, `ibstat`)?"
            )));
        }
        ctx.port =
            PortInfo { port, lid: attr.lid, active_mtu, link_layer, gid, gid_index, max_msg_sz: attr.max_msg_sz };
        Ok(Arc::new(ctx))
    }

    /// Device name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The port in use.
    pub fn port(&self) -> &PortInfo {
        &self.port
    }

    /// The loaded library.
    pub fn verbs(&self) -> &'static Verbs {
        self.verbs
    }
}

impl Drop for Context {
    fn drop(&mut self) {
        // SAFETY: the context is open, and every object created from it holds an `Arc<Context>`, so none is left.
        // A failure cannot be acted on while dropping.
        unsafe { (self.verbs.f.close_device)(self.raw.as_ptr()) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mtu_round_trips() {
        for raw in 1..=5 {
            let m = Mtu::from_raw(raw).expect("valid");
            assert_eq!(m.to_raw(), raw);
            assert_eq!(Mtu::from_bytes(m.bytes()), Some(m));
        }
        assert_eq!(Mtu::B256.bytes(), 256);
        assert_eq!(Mtu::B4096.bytes(), 4096);
        assert_eq!(Mtu::from_raw(0), None);
        assert_eq!(Mtu::from_raw(6), None);
        assert_eq!(Mtu::from_bytes(1500), None);
        assert!(Mtu::B1024 < Mtu::B4096);
        assert_eq!(Mtu::B2048.min(Mtu::B4096), Mtu::B2048);
    }

    #[test]
    fn link_layer_values() {
        assert_eq!(LinkLayer::from_raw(0), Some(LinkLayer::InfiniBand));
        assert_eq!(LinkLayer::from_raw(1), Some(LinkLayer::InfiniBand));
        assert_eq!(LinkLayer::from_raw(2), Some(LinkLayer::Ethernet));
        assert_eq!(LinkLayer::from_raw(3), None);
        assert_eq!(LinkLayer::from_raw(LinkLayer::Ethernet.to_raw()), Some(LinkLayer::Ethernet));
    }

    #[test]
    fn hca_choice_by_local_rank() {
        let avail = vec!["mlx5_0".to_string(), "mlx5_1".to_string()];
        assert_eq!(choose_hca(&avail, None, 3).expect("first"), HcaChoice { name: "mlx5_0".into(), port: 1 });
        assert_eq!(choose_hca(&avail, Some(""), 0).expect("first").name, "mlx5_0");
        let spec = Some("mlx5_1, mlx5_0:2");
        assert_eq!(choose_hca(&avail, spec, 0).expect("0"), HcaChoice { name: "mlx5_1".into(), port: 1 });
        assert_eq!(choose_hca(&avail, spec, 1).expect("1"), HcaChoice { name: "mlx5_0".into(), port: 2 });
        assert_eq!(choose_hca(&avail, spec, 2).expect("wraps").name, "mlx5_1");
        let e = choose_hca(&avail, Some("mlx5_9"), 0).expect_err("unknown").to_string();
        assert!(e.contains("InfiniBand") && e.contains("mlx5_9") && e.contains("ibv_devices"), "{e}");
        let e = choose_hca(&avail, Some("mlx5_0:x"), 0).expect_err("bad port").to_string();
        assert!(e.contains("name:port"), "{e}");
        let e = choose_hca(&avail, Some("mlx5_0:0"), 0).expect_err("port 0").to_string();
        assert!(e.contains("port"), "{e}");
        let e = choose_hca(&[], None, 0).expect_err("none").to_string();
        assert!(e.contains("no InfiniBand device"), "{e}");
    }

    #[test]
    fn psns_are_24_bit_and_vary() {
        let a = random_psn();
        let b = random_psn();
        assert!(a < 1 << 24 && b < 1 << 24);
        assert_ne!(a, b);
    }
}
