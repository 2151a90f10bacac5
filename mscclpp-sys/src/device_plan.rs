//! `#[repr(C)]` mirrors of the plan interpreter's records (`cuda/execution_kernel.cu`, namespace
//! `mscclpp::interp`): the device plan header, thread-block, operation, reference and switch-channel records,
//! and the kernel's parameters.
//!
//! The executor (`mscclpp_exec::executor::records`) fills them from a plan; their sizes, alignments and field
//! offsets are checked against the interpreter source by compiling [`layout_probe_source`] with NVRTC. What each
//! field means for the plan is described in `docs/executor.md`.

use crate::driver::DeviceRepr;
use crate::layout::{LayoutEntry, layout_entry, probe_source};

/// Where a [`Ref`] points (`mscclpp::interp::Loc`).
#[repr(u8)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Loc {
    /// This rank's input buffer.
    Input = 0,
    /// This rank's output buffer.
    Output = 1,
    /// This rank's scratch buffer.
    Scratch = 2,
    /// A peer buffer through a memory channel; in a laid-out plan the offset is the final device address.
    Memory = 3,
    /// A peer buffer through a port channel.
    Port = 4,
    /// Every member's buffer of a switch channel.
    Switch = 5,
}

/// [`Ref::flags`] bit: the target is a scratch buffer (the device adds the launch's scratch half).
pub const REF_SCRATCH: u8 = 1;
/// [`Ref::flags`] bit: the target holds packets (the offset is already in packet space).
pub const REF_PACKET: u8 = 2;

/// One buffer reference of an operation (`mscclpp::interp::Ref`, 16 bytes).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Ref {
    /// Final byte offset in the target buffer.
    pub offset: u64,
    /// Payload bytes.
    pub size: u32,
    /// A [`Loc`] value.
    pub loc: u8,
    /// Tb-local remote-buffer or switch-channel index.
    pub id: u8,
    /// [`REF_SCRATCH`] | [`REF_PACKET`].
    pub flags: u8,
    /// Unused.
    pub reserved: u8,
}

/// Maximum ids (channels or semaphores) of one operation.
pub const MAX_OP_IDS: usize = 16;

/// One operation (`mscclpp::interp::Op`, 40 bytes). Sources are the thread block's refs
/// `[ref_begin, ref_begin + n_src)`, destinations follow.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Op {
    /// Operation code (`mscclpp_lang::plan::OpName::code`, the interpreter's `OpType`).
    pub ty: u8,
    /// 0 none, 1 memory, 2 port, 3 switch.
    pub channel_type: u8,
    /// Source references.
    pub n_src: u8,
    /// Destination references.
    pub n_dst: u8,
    /// Entries used in `ids`.
    pub n_ids: u8,
    /// 0 sum, 1 min, 2 max.
    pub reduce_op: u8,
    /// Pipeline: inner operations that follow.
    pub n_inner: u8,
    /// Unused.
    pub reserved: u8,
    /// Index of the first source reference.
    pub ref_begin: u16,
    /// Barrier id.
    pub barrier_id: u16,
    /// Barrier participants.
    pub n_blocks: u32,
    /// Pipeline iterations.
    pub iterations: u32,
    /// Pipeline bytes per iteration.
    pub unit_size: u32,
    /// Tb-local channel ids, or rank-level semaphore ids.
    pub ids: [u8; MAX_OP_IDS],
}

/// Members of a switch channel (`mscclpp::interp::SwitchInfo`, 80 bytes).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SwitchInfo {
    /// Multicast address (0: emulated through the member pointers).
    pub mc_ptr: u64,
    /// Number of members.
    pub n_members: u32,
    /// Unused.
    pub reserved: u32,
    /// Unicast address of every member's bound buffer (allocation base), this rank's included.
    pub members: [u64; MAX_SWITCH_MEMBERS],
}

/// Members of one switch channel the interpreter can address.
pub const MAX_SWITCH_MEMBERS: usize = 8;

/// The head of one thread block's records (`mscclpp::interp::TbInfo`, 32 bytes). A block's records are one
/// contiguous piece of the device plan, [`PlanHeader::block_stride`] bytes apart: this head, the block's ops from
/// byte [`OPS_OFFSET`], its refs from byte `ref_offset`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TbInfo {
    /// Ops of this block (pipeline inner ops included).
    pub n_ops: u16,
    /// Refs of this block.
    pub n_refs: u16,
    /// Byte offset of the refs in the block's records (16-byte aligned).
    pub ref_offset: u32,
    /// First memory channel handle.
    pub mem_channel_begin: u32,
    /// First port channel handle.
    pub port_channel_begin: u32,
    /// First port remote-buffer MemoryId.
    pub port_buffer_begin: u32,
    /// First switch channel.
    pub switch_begin: u32,
    /// Which operation sequence of a plan-specialised program the block runs ([`crate::fixed::Signature`]);
    /// the generic interpreter ignores it.
    pub variant: u32,
    /// Unused.
    pub reserved: u32,
}

/// Byte offset of the ops in a block's records (after its [`TbInfo`]; `mscclpp::interp::kOpsOffset`).
pub const OPS_OFFSET: usize = 32;

/// LL128 lines per group, what one warp moves at a time (`mscclpp::LL128Packet::kLinesPerGroup`).
const LL128_LINES_PER_GROUP: u64 = 4;
/// Packet bytes of a group of four LL128 lines (`mscclpp::LL128Packet::kGroupBytes`, 512).
pub const LL128_GROUP_BYTES: u64 = LL128_LINES_PER_GROUP * mscclpp_lang::plan::LL128_LINE_BYTES;
/// Bytes of an LL128 line that hold its flag (the upper half of its last 16-byte slot).
const LL128_FLAG_BYTES: u64 = 8;
/// Data bytes of a group of four LL128 lines (`mscclpp::LL128Packet::kGroupPayloadBytes`, 480: each line gives
/// 8 bytes to its flag; the host splits LL128 packet operations at multiples of it).
pub const LL128_GROUP_PAYLOAD_BYTES: u64 =
    LL128_LINES_PER_GROUP * (mscclpp_lang::plan::LL128_LINE_BYTES - LL128_FLAG_BYTES);

/// Header of one rank's device plan (`mscclpp::interp::PlanHeader`, 56 bytes); the arrays follow it in the
/// same allocation.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PlanHeader {
    /// Thread blocks.
    pub n_tbs: u32,
    /// MemoryId of this rank's input buffer; output and scratch follow.
    pub local_memory_id_begin: u32,
    /// Bytes of one block's records (a multiple of 16), which is also the dynamic shared memory of a block.
    pub block_stride: u32,
    /// Unused.
    pub reserved: u32,
    /// The blocks' records, block `b` at `blocks + b * block_stride`.
    pub blocks: u64,
    /// `BaseMemoryChannelDeviceHandle[]`.
    pub mem_channels: u64,
    /// `BasePortChannelDeviceHandle[]`.
    pub port_channels: u64,
    /// `u32[]`: MemoryIds of peer buffers.
    pub port_buffers: u64,
    /// `SwitchInfo[]`.
    pub switches: u64,
}

/// Kernel parameters (`mscclpp::interp::LaunchArgs`, passed by value).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LaunchArgs {
    /// Device address of the [`PlanHeader`].
    pub plan: u64,
    /// The caller's input pointer.
    pub input: u64,
    /// The caller's output pointer.
    pub output: u64,
    /// Scratch base.
    pub scratch: u64,
    /// Half of the scratch when double-buffered, else 0.
    pub scratch_half: u64,
    /// Per-block packet flag counters.
    pub flags: u64,
    /// `PlanHeader::blocks`, passed directly (a block's records are one load away at kernel start).
    pub blocks: u64,
    /// `PlanHeader::block_stride`.
    pub block_stride: u32,
    /// Unused.
    pub reserved: u32,
    /// `DeviceSyncer[MAX_BARRIERS]`.
    pub syncers: u64,
    /// `DeviceSemaphore[]` of this rank.
    pub semaphores: u64,
    /// `PlanHeader::mem_channels`, passed directly (a signal's channel handle is one load away, not two).
    pub mem_channels: u64,
}

// SAFETY: #[repr(C)] plain data whose layout equals `mscclpp::interp::LaunchArgs` (checked by the layout probe).
unsafe impl DeviceRepr for LaunchArgs {}
// SAFETY: the device plan's records: #[repr(C)] integer fields laid out without gaps, equal to their
// `mscclpp::interp` counterparts (layout probe and the size assertions in the tests).
unsafe impl DeviceRepr for PlanHeader {}
// SAFETY: as above.
unsafe impl DeviceRepr for TbInfo {}
// SAFETY: as above.
unsafe impl DeviceRepr for Op {}
// SAFETY: as above.
unsafe impl DeviceRepr for Ref {}
// SAFETY: as above.
unsafe impl DeviceRepr for SwitchInfo {}

/// Every mirrored record with its Rust layout (every field, the unused ones included).
pub fn layouts() -> Vec<LayoutEntry> {
    vec![
        layout_entry!("mscclpp::interp::Ref", Ref, ["offset" => offset, "size" => size, "loc" => loc, "id" => id,
            "flags" => flags, "reserved" => reserved]),
        layout_entry!("mscclpp::interp::Op", Op, ["type" => ty, "channelType" => channel_type, "nSrc" => n_src,
            "nDst" => n_dst, "nIds" => n_ids, "reduceOp" => reduce_op, "nInner" => n_inner,
            "reserved" => reserved, "refBegin" => ref_begin, "barrierId" => barrier_id, "nBlocks" => n_blocks,
            "iterations" => iterations, "unitSize" => unit_size, "ids" => ids]),
        layout_entry!("mscclpp::interp::SwitchInfo", SwitchInfo, ["mcPtr" => mc_ptr, "nMembers" => n_members,
            "reserved" => reserved, "members" => members]),
        layout_entry!("mscclpp::interp::TbInfo", TbInfo, ["nOps" => n_ops, "nRefs" => n_refs,
            "refOffset" => ref_offset, "memChannelBegin" => mem_channel_begin,
            "portChannelBegin" => port_channel_begin, "portBufferBegin" => port_buffer_begin,
            "switchBegin" => switch_begin, "variant" => variant, "reserved" => reserved]),
        layout_entry!("mscclpp::interp::PlanHeader", PlanHeader, ["nTbs" => n_tbs,
            "localMemoryIdBegin" => local_memory_id_begin, "blockStride" => block_stride,
            "reserved" => reserved, "blocks" => blocks, "memChannels" => mem_channels,
            "portChannels" => port_channels, "portBuffers" => port_buffers, "switches" => switches]),
        layout_entry!("mscclpp::interp::LaunchArgs", LaunchArgs, ["plan" => plan, "input" => input,
            "output" => output, "scratch" => scratch, "scratchHalf" => scratch_half, "flags" => flags,
            "blocks" => blocks, "blockStride" => block_stride, "reserved" => reserved, "syncers" => syncers,
            "semaphores" => semaphores, "memChannels" => mem_channels]),
    ]
}

/// A CUDA source of `static_assert`s that holds iff every record here has the same size, alignment and field
/// offsets as in the interpreter source ([`crate::layout::probe_source`] after the interpreter). Compile it with
/// NVRTC to check ([`crate::layout::check`]).
pub fn layout_probe_source() -> String {
    let mut s = probe_source(crate::interpreter::SOURCE, &layouts());
    s.push_str(&format!(
        "static_assert(mscclpp::interp::kOpsOffset == {OPS_OFFSET}, \"kOpsOffset differs from Rust ({OPS_OFFSET})\");\n"
    ));
    for (name, value) in [
        ("kGroupPayloadBytes", LL128_GROUP_PAYLOAD_BYTES),
        ("kGroupBytes", LL128_GROUP_BYTES),
        ("kLineBytes", mscclpp_lang::plan::LL128_LINE_BYTES),
    ] {
        s.push_str(&format!(
            "static_assert(mscclpp::LL128Packet::{name} == {value}, \"LL128Packet::{name} differs from Rust ({value})\");\n"
        ));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn record_sizes() {
        assert_eq!((LL128_GROUP_BYTES, LL128_GROUP_PAYLOAD_BYTES), (512, 480));
        assert_eq!(std::mem::size_of::<Ref>(), 16);
        assert_eq!(std::mem::size_of::<Op>(), 40);
        assert_eq!(std::mem::size_of::<SwitchInfo>(), 80);
        assert_eq!(std::mem::size_of::<TbInfo>(), 32);
        assert_eq!(std::mem::size_of::<PlanHeader>(), 56);
        assert_eq!(std::mem::size_of::<LaunchArgs>(), 88);
    }
}
