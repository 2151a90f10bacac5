//! `#[repr(C)]` mirrors of the device structs in `cuda/include/mscclpp/*.hpp`.
//!
//! Their sizes and field offsets are checked against the CUDA headers by compiling [`layout_probe_source`] with
//! NVRTC (the probe is a list of `static_assert`s generated from these Rust definitions by [`crate::layout`]).
//! The plan interpreter's records are mirrored beside them in [`crate::device_plan`].

pub use crate::device_wait::{DeviceWaitKind, DeviceWaitReport};
use crate::driver::{DevicePtr, DeviceRepr};
use crate::layout::{LayoutEntry, layout_entry, probe_source};

/// GPU-to-GPU semaphore (`mscclpp::MemoryDevice2DeviceSemaphoreDeviceHandle`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MemoryDevice2DeviceSemaphoreDeviceHandle {
    /// Local token the peer increments.
    pub inbound_token: DevicePtr,
    /// The peer's inbound token, mapped here.
    pub remote_inbound_token: DevicePtr,
    /// Local counter of waits done.
    pub expected_inbound_token: DevicePtr,
    /// Channel id reported on a wait timeout.
    pub channel_id: u32,
    /// Peer rank reported on a wait timeout.
    pub peer: u32,
}

/// Host-to-GPU semaphore (`mscclpp::Host2DeviceSemaphoreDeviceHandle`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Host2DeviceSemaphoreDeviceHandle {
    /// Local token the peer's proxy increments.
    pub inbound_token: DevicePtr,
    /// Local counter of waits done.
    pub expected_inbound_token: DevicePtr,
    /// Local token the peer's GPU increments after a direct (small, same-host) put; 0 between hosts.
    pub direct_inbound_token: DevicePtr,
    /// Channel id reported on a wait timeout.
    pub channel_id: u32,
    /// Peer rank reported on a wait timeout.
    pub peer: u32,
}

/// Semaphore-only memory channel (`mscclpp::BaseMemoryChannelDeviceHandle`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BaseMemoryChannelDeviceHandle {
    /// The semaphore.
    pub semaphore: MemoryDevice2DeviceSemaphoreDeviceHandle,
}

/// Memory channel (`mscclpp::MemoryChannelDeviceHandle`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MemoryChannelDeviceHandle {
    /// The semaphore.
    pub semaphore: MemoryDevice2DeviceSemaphoreDeviceHandle,
    /// The peer's buffer, mapped here.
    pub dst: DevicePtr,
    /// The local buffer.
    pub src: DevicePtr,
    /// Local buffer the peer writes packets into (0 if none).
    pub packet_buffer: DevicePtr,
}

/// One proxy FIFO entry (`mscclpp::ProxyTrigger`).
#[repr(C, align(16))]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ProxyTrigger {
    /// `[0,32)` size, `[32,64)` source offset.
    pub fst: u64,
    /// `[0,32)` destination offset, `[32,41)` source memory, `[41,50)` destination memory, `[50,53)` type,
    /// `[53,63)` semaphore id, bit 63 lap parity.
    pub snd: u64,
}

/// Trigger type bit: copy data.
pub const TRIGGER_DATA: u64 = 0x1;
/// Trigger type bit: signal the semaphore.
pub const TRIGGER_FLAG: u64 = 0x2;
/// Trigger type bit: flush (complete prior copies before popping).
pub const TRIGGER_SYNC: u64 = 0x4;

/// A decoded [`ProxyTrigger`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Trigger {
    /// OR of `TRIGGER_*` bits.
    pub kind: u64,
    /// Destination memory id.
    pub dst: u32,
    /// Destination byte offset.
    pub dst_offset: u64,
    /// Source memory id.
    pub src: u32,
    /// Source byte offset.
    pub src_offset: u64,
    /// Bytes to copy.
    pub size: u64,
    /// Semaphore id (which connection / peer).
    pub semaphore_id: u32,
}

impl ProxyTrigger {
    /// Encode (without the parity bit), exactly as `mscclpp::makeTrigger` does on the device.
    pub fn encode(t: &Trigger) -> ProxyTrigger {
        ProxyTrigger {
            fst: (t.size & 0xffff_ffff) | ((t.src_offset & 0xffff_ffff) << 32),
            snd: (t.dst_offset & 0xffff_ffff)
                | (((t.src & 0x1ff) as u64) << 32)
                | (((t.dst & 0x1ff) as u64) << 41)
                | ((t.kind & 0x7) << 50)
                | (((t.semaphore_id & 0x3ff) as u64) << 53),
        }
    }

    /// Decode (ignoring the parity bit).
    pub fn decode(&self) -> Trigger {
        Trigger {
            size: self.fst & 0xffff_ffff,
            src_offset: self.fst >> 32,
            dst_offset: self.snd & 0xffff_ffff,
            src: ((self.snd >> 32) & 0x1ff) as u32,
            dst: ((self.snd >> 41) & 0x1ff) as u32,
            kind: (self.snd >> 50) & 0x7,
            semaphore_id: ((self.snd >> 53) & 0x3ff) as u32,
        }
    }

    /// The parity bit a trigger pushed at FIFO position `pos` carries (lap 0 writes 1).
    pub fn parity_for(pos: u64, log2_size: u32) -> u64 {
        (((pos >> log2_size) & 1) ^ 1) << 63
    }
}

/// Device side of the proxy FIFO (`mscclpp::FifoDeviceHandle`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FifoDeviceHandle {
    /// Triggers (pinned host memory, device address).
    pub triggers: DevicePtr,
    /// Completed count (pinned host memory, device address).
    pub tail: DevicePtr,
    /// Reserved count (device memory).
    pub head: DevicePtr,
    /// Last tail seen by the GPU (device memory).
    pub tail_cache: DevicePtr,
    /// Number of slots (power of two).
    pub size: u32,
    /// log2 of `size`.
    pub log2_size: u32,
}

/// Port channel with memories named per call (`mscclpp::BasePortChannelDeviceHandle`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BasePortChannelDeviceHandle {
    /// Index of the semaphore in the proxy service.
    pub semaphore_id: u32,
    /// Unused.
    pub reserved: u32,
    /// The host-to-device semaphore.
    pub semaphore: Host2DeviceSemaphoreDeviceHandle,
    /// The proxy FIFO.
    pub fifo: FifoDeviceHandle,
    /// The channel's [`PortDirectState`] in device memory (0: every operation goes through the proxy).
    pub direct: DevicePtr,
}

/// Port channel (`mscclpp::PortChannelDeviceHandle`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PortChannelDeviceHandle {
    /// Index of the semaphore in the proxy service.
    pub semaphore_id: u32,
    /// Unused.
    pub reserved: u32,
    /// The host-to-device semaphore.
    pub semaphore: Host2DeviceSemaphoreDeviceHandle,
    /// The proxy FIFO.
    pub fifo: FifoDeviceHandle,
    /// The channel's [`PortDirectState`] in device memory (0: every operation goes through the proxy).
    pub direct: DevicePtr,
    /// Destination memory id in the proxy service.
    pub dst: u32,
    /// Source memory id in the proxy service.
    pub src: u32,
}

/// A memory the proxy can name, as the GPU sees it (`mscclpp::MemoryWindow`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MemoryWindow {
    /// Address usable by this GPU (0: not addressable here, e.g. on another host).
    pub base: DevicePtr,
    /// Size in bytes.
    pub size: u64,
}

/// The direct path of a same-host port channel (`mscclpp::PortDirectState`, device memory): puts of at most
/// `max_bytes` are moved by the calling GPU thread and signalled through the peer's direct token while none of
/// the channel's proxy work is in flight.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PortDirectState {
    /// The peer's direct inbound token, mapped here.
    pub remote_direct_token: DevicePtr,
    /// [`MemoryWindow`]s indexed by memory id.
    pub memories: DevicePtr,
    /// Pinned host counter (device address): triggers of this channel the proxy has completed.
    pub done: DevicePtr,
    /// Triggers with data or a signal the GPU pushed on this channel.
    pub issued: u64,
    /// The GPU's cache of `*done`.
    pub done_cache: u64,
    /// Largest direct put in bytes (0: off).
    pub max_bytes: u64,
    /// Entries of `memories`.
    pub n_memories: u32,
    /// Unused.
    pub reserved: u32,
    /// Unused.
    pub reserved2: u64,
}

/// Switch (NVLS) channel (`mscclpp::SwitchChannelDeviceHandle`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SwitchChannelDeviceHandle {
    /// Unicast address of the bound buffer.
    pub device_ptr: DevicePtr,
    /// Multicast address of the bound buffer.
    pub mc_ptr: DevicePtr,
    /// Size of the bound buffer.
    pub buffer_size: u64,
}

/// Grid barrier state (`mscclpp::DeviceSyncer`), zero-initialised in device memory.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DeviceSyncer {
    /// Blocks arrived in this round.
    pub count: u32,
    /// Round number.
    pub generation: u32,
    /// Unused.
    pub reserved: [u32; 2],
}

/// Counting semaphore in device memory (`mscclpp::DeviceSemaphore`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DeviceSemaphore {
    /// Current count.
    pub value: i32,
}

/// LL16 packet (`mscclpp::LL16Packet`).
#[repr(C, align(16))]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LL16Packet {
    /// First payload word.
    pub data1: u32,
    /// Flag for `data1`.
    pub flag1: u32,
    /// Second payload word.
    pub data2: u32,
    /// Flag for `data2`.
    pub flag2: u32,
}

/// LL8 packet (`mscclpp::LL8Packet`).
#[repr(C, align(8))]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LL8Packet {
    /// Payload.
    pub data: u32,
    /// Flag.
    pub flag: u32,
}

/// The record a device wait writes before it stops the kernel (`mscclpp::DeviceErrorRecord`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DeviceErrorRecord {
    /// 0 empty, 1 being written, 2 complete.
    pub state: u32,
    /// A [`DeviceWaitKind`] value.
    pub kind: u32,
    /// Rank of the process (from [`DeviceEnv::rank`]).
    pub rank: u32,
    /// `blockIdx.x` of the thread that gave up.
    pub block: u32,
    /// `threadIdx.x` of the thread that gave up.
    pub thread: u32,
    /// Channel id (`u32::MAX` if none).
    pub channel: u32,
    /// Peer rank (`u32::MAX` if none).
    pub peer: u32,
    /// The plan interpreter's operation in that block, plus one (0: not an interpreter kernel).
    pub op: u32,
    /// Value waited for.
    pub expected: u64,
    /// Value last seen.
    pub observed: u64,
    /// How long it waited.
    pub elapsed_ns: u64,
}

/// The per-module environment (`mscclpp::DeviceEnv`, global `mscclppDeviceEnv`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DeviceEnv {
    /// Device address of a [`DeviceErrorRecord`] in mapped pinned host memory (0: none).
    pub error_slot: DevicePtr,
    /// Bound of every device wait, in nanoseconds (0: 10 s).
    pub wait_timeout_ns: u64,
    /// This process's rank.
    pub rank: u32,
    /// Reserved flags.
    pub flags: u32,
}

// SAFETY: each of these is #[repr(C)] plain data whose layout matches its CUDA counterpart (checked by the
// NVRTC layout probe).
unsafe impl DeviceRepr for MemoryDevice2DeviceSemaphoreDeviceHandle {}
// SAFETY: as above.
unsafe impl DeviceRepr for Host2DeviceSemaphoreDeviceHandle {}
// SAFETY: as above.
unsafe impl DeviceRepr for BaseMemoryChannelDeviceHandle {}
// SAFETY: as above.
unsafe impl DeviceRepr for MemoryChannelDeviceHandle {}
// SAFETY: as above.
unsafe impl DeviceRepr for FifoDeviceHandle {}
// SAFETY: as above.
unsafe impl DeviceRepr for BasePortChannelDeviceHandle {}
// SAFETY: as above.
unsafe impl DeviceRepr for PortChannelDeviceHandle {}
// SAFETY: as above.
unsafe impl DeviceRepr for MemoryWindow {}
// SAFETY: as above.
unsafe impl DeviceRepr for PortDirectState {}
// SAFETY: as above.
unsafe impl DeviceRepr for SwitchChannelDeviceHandle {}
// SAFETY: as above.
unsafe impl DeviceRepr for DeviceEnv {}
// SAFETY: as above.
unsafe impl DeviceRepr for DeviceSyncer {}
// SAFETY: as above.
unsafe impl DeviceRepr for ProxyTrigger {}

impl From<&DeviceErrorRecord> for DeviceWaitReport {
    fn from(r: &DeviceErrorRecord) -> Self {
        let opt = |v: u32| if v == u32::MAX { None } else { Some(v) };
        DeviceWaitReport {
            kind: DeviceWaitKind::from_code(r.kind),
            rank: r.rank,
            block: r.block,
            thread: r.thread,
            channel: opt(r.channel),
            peer: opt(r.peer),
            expected: r.expected,
            observed: r.observed,
            elapsed_ms: r.elapsed_ns / 1_000_000,
            op: r.op.checked_sub(1),
        }
    }
}

/// Every mirrored struct with its Rust layout.
pub fn layouts() -> Vec<LayoutEntry> {
    vec![
        layout_entry!("mscclpp::MemoryDevice2DeviceSemaphoreDeviceHandle", MemoryDevice2DeviceSemaphoreDeviceHandle, [
            "inboundToken" => inbound_token, "remoteInboundToken" => remote_inbound_token,
            "expectedInboundToken" => expected_inbound_token, "channelId" => channel_id, "peer" => peer]),
        layout_entry!("mscclpp::Host2DeviceSemaphoreDeviceHandle", Host2DeviceSemaphoreDeviceHandle, [
            "inboundToken" => inbound_token, "expectedInboundToken" => expected_inbound_token,
            "directInboundToken" => direct_inbound_token, "channelId" => channel_id, "peer" => peer]),
        layout_entry!("mscclpp::BaseMemoryChannelDeviceHandle", BaseMemoryChannelDeviceHandle, [
            "semaphore_" => semaphore]),
        layout_entry!("mscclpp::MemoryChannelDeviceHandle", MemoryChannelDeviceHandle, [
            "semaphore_" => semaphore, "semaphore_.remoteInboundToken" => semaphore.remote_inbound_token,
            "dst_" => dst, "src_" => src, "packetBuffer_" => packet_buffer]),
        layout_entry!("mscclpp::ProxyTrigger", ProxyTrigger, ["fst" => fst, "snd" => snd]),
        layout_entry!("mscclpp::FifoDeviceHandle", FifoDeviceHandle, [
            "triggers" => triggers, "tail" => tail, "head" => head, "tailCache" => tail_cache,
            "size" => size, "log2Size" => log2_size]),
        layout_entry!("mscclpp::BasePortChannelDeviceHandle", BasePortChannelDeviceHandle, [
            "semaphoreId_" => semaphore_id, "reserved_" => reserved, "semaphore_" => semaphore, "fifo_" => fifo,
            "direct_" => direct]),
        layout_entry!("mscclpp::PortChannelDeviceHandle", PortChannelDeviceHandle, [
            "semaphoreId_" => semaphore_id, "reserved_" => reserved, "semaphore_" => semaphore, "fifo_" => fifo,
            "fifo_.size" => fifo.size, "direct_" => direct, "dst_" => dst, "src_" => src]),
        layout_entry!("mscclpp::MemoryWindow", MemoryWindow, ["base" => base, "size" => size]),
        layout_entry!("mscclpp::PortDirectState", PortDirectState, [
            "remoteDirectToken" => remote_direct_token, "memories" => memories, "done" => done,
            "issued" => issued, "doneCache" => done_cache, "maxBytes" => max_bytes, "nMemories" => n_memories,
            "reserved" => reserved, "reserved2" => reserved2]),
        layout_entry!("mscclpp::SwitchChannelDeviceHandle", SwitchChannelDeviceHandle, [
            "devicePtr" => device_ptr, "mcPtr" => mc_ptr, "bufferSize" => buffer_size]),
        layout_entry!("mscclpp::DeviceSyncer", DeviceSyncer, ["count_" => count, "generation_" => generation,
            "reserved_" => reserved]),
        layout_entry!("mscclpp::DeviceSemaphore", DeviceSemaphore, ["value_" => value]),
        layout_entry!("mscclpp::LL16Packet", LL16Packet, [
            "data1" => data1, "flag1" => flag1, "data2" => data2, "flag2" => flag2]),
        layout_entry!("mscclpp::LL8Packet", LL8Packet, ["data" => data, "flag" => flag]),
        layout_entry!("mscclpp::DeviceErrorRecord", DeviceErrorRecord, [
            "state" => state, "kind" => kind, "rank" => rank, "block" => block, "thread" => thread,
            "channel" => channel, "peer" => peer, "op" => op, "expected" => expected, "observed" => observed,
            "elapsedNs" => elapsed_ns]),
        layout_entry!("mscclpp::DeviceEnv", DeviceEnv, [
            "errorSlot" => error_slot, "waitTimeoutNs" => wait_timeout_ns, "rank" => rank, "flags" => flags]),
    ]
}

/// A CUDA source of `static_assert`s that holds iff every mirrored struct has the same size, alignment and
/// field offsets in Rust and in the headers ([`crate::layout::probe_source`]). Compile it with NVRTC to check
/// ([`crate::layout::check`]).
pub fn layout_probe_source() -> String {
    let mut s = probe_source("#include \"mscclpp/device.hpp\"\n", &layouts());
    s.push_str("extern \"C\" __global__ void mscclpp_layout_probe() {}\n");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trigger_round_trip() {
        let t = Trigger {
            kind: TRIGGER_DATA | TRIGGER_FLAG,
            dst: 7,
            dst_offset: 0x1234_5678,
            src: 511,
            src_offset: 0xdead_beef,
            size: 4096,
            semaphore_id: 1023,
        };
        let p = ProxyTrigger::encode(&t);
        assert_eq!(p.snd >> 63, 0);
        assert_eq!(p.decode(), t);
        let with_parity = ProxyTrigger { fst: p.fst, snd: p.snd | ProxyTrigger::parity_for(0, 9) };
        assert_eq!(with_parity.decode(), t);
        assert_eq!(ProxyTrigger::parity_for(0, 9), 1 << 63);
        assert_eq!(ProxyTrigger::parity_for(512, 9), 0);
        assert_eq!(ProxyTrigger::parity_for(1024, 9), 1 << 63);
    }

    #[test]
    fn sizes_match_the_header_comments() {
        assert_eq!(std::mem::size_of::<MemoryDevice2DeviceSemaphoreDeviceHandle>(), 32);
        assert_eq!(std::mem::size_of::<Host2DeviceSemaphoreDeviceHandle>(), 32);
        assert_eq!(std::mem::size_of::<MemoryChannelDeviceHandle>(), 56);
        assert_eq!(std::mem::size_of::<FifoDeviceHandle>(), 40);
        assert_eq!(std::mem::size_of::<BasePortChannelDeviceHandle>(), 88);
        assert_eq!(std::mem::size_of::<PortChannelDeviceHandle>(), 96);
        assert_eq!(std::mem::size_of::<PortDirectState>(), 64);
        assert_eq!(std::mem::size_of::<ProxyTrigger>(), 16);
    }

    #[test]
    fn report_names_wait_channel_and_peer() {
        let r = DeviceErrorRecord {
            state: 2,
            kind: 1,
            rank: 1,
            block: 3,
            thread: 0,
            channel: 5,
            peer: 0,
            op: 3,
            expected: 1,
            observed: 0,
            elapsed_ns: 200_000_000,
        };
        let msg = DeviceWaitReport::from(&r).to_string();
        assert!(msg.contains("wait() on memory channel 5"), "{msg}");
        assert!(msg.contains("peer rank 0"), "{msg}");
        assert!(msg.contains("thread block 3"), "{msg}");
        assert_eq!(DeviceWaitReport::from(&r).op, Some(2), "the record holds the operation plus one");
        assert_eq!(DeviceWaitReport::from(&DeviceErrorRecord { op: 0, ..r }).op, None);
    }
}
