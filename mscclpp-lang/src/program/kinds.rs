//! Marker types that carry the program's protocol, a chunk's buffer kind and a channel's kind in the type system,
//! and the sealed traits that say which operation accepts which of them.
//!
//! The traits are sealed: only the markers of this module implement them. When an operation is called on the wrong
//! kind, the compiler reports the trait's own message, which says what is wrong and what to use instead.

use crate::plan;

mod sealed {
    pub trait Sealed {}
}
use sealed::Sealed;

// ---------------------------------------------------------------------------------------------------------------
// Protocols
// ---------------------------------------------------------------------------------------------------------------

/// A protocol: [`Simple`], [`LL`] or [`LL128`]. It is the type parameter `P` of [`Program`](super::Program) and of every
/// channel, so operations that need packets exist only in `LL` programs.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a protocol",
    label = "expected `Simple`, `LL` or `LL128`",
    note = "a program is `Program<'_, Simple>`, `Program<'_, LL>` or `Program<'_, LL128>`"
)]
pub trait ProtocolKind: Sealed + Copy + std::fmt::Debug + Default + 'static {
    /// The plan's `protocol` field.
    const PROTOCOL: plan::Protocol;
}

/// The Simple protocol: plain data movement, ordered by signals and waits.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct Simple;

/// The LL (low-latency) protocol: data travels as packets whose flags order it; needed by every packet operation.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct LL;

/// The LL128 protocol: packets of 128-byte lines, 120 data bytes and a flag each, so packets cost the link 7 % more
/// than the data instead of LL's 100 %. Every packet operation of [`LL`] exists; a packet range must be read with
/// the same chunk ranges it was written with (lines are counted from a chunk reference's start), and the threads
/// per block must be a multiple of 32 (a warp moves four lines).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct LL128;

impl Sealed for Simple {}
impl Sealed for LL {}
impl Sealed for LL128 {}
impl ProtocolKind for Simple {
    const PROTOCOL: plan::Protocol = plan::Protocol::Simple;
}
impl ProtocolKind for LL {
    const PROTOCOL: plan::Protocol = plan::Protocol::Ll;
}
impl ProtocolKind for LL128 {
    const PROTOCOL: plan::Protocol = plan::Protocol::Ll128;
}

/// Protocols that may move packets: [`LL`] and [`LL128`].
#[diagnostic::on_unimplemented(
    message = "packet operations need the LL or LL128 protocol, but this program uses `{Self}`",
    label = "this packet operation is not available in a `{Self}` program",
    note = "declare the program as `Program<'_, LL>` (or `LL128`) to use packets, or use the plain operation (`put`, `copy`, `reduce`, `broadcast`) with signal/wait"
)]
pub trait PacketProtocol: ProtocolKind {}
impl PacketProtocol for LL {}
impl PacketProtocol for LL128 {}

// ---------------------------------------------------------------------------------------------------------------
// Buffer kinds
// ---------------------------------------------------------------------------------------------------------------

/// The kind of buffer a [`Chunk`](super::Chunk) lies in, or [`AnyBuffer`] once the kind has been erased.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a buffer kind",
    note = "chunks are `Chunk<'p, Input>`, `Chunk<'p, Output>`, `Chunk<'p, Scratch>` or `Chunk<'p, AnyBuffer>`"
)]
pub trait ChunkKind: Sealed + Copy + std::fmt::Debug + 'static {}

/// A concrete buffer kind: [`Input`], [`Output`] or [`Scratch`].
#[diagnostic::on_unimplemented(
    message = "a chunk of a specific buffer kind is needed here, but this one is `{Self}`",
    note = "use a chunk taken from `p.input(r)`, `p.output(r)` or `p.scratch(r, n)`"
)]
pub trait BufferKind: ChunkKind {
    /// The buffer type this kind names.
    const TYPE: plan::BufferType;
}

/// The rank's input buffer (the user's send buffer).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct Input;
/// The rank's output buffer (the user's receive buffer).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct Output;
/// The rank's scratch buffer, owned by the executor.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct Scratch;
/// Any buffer: the kind of a chunk after [`Chunk::erase`](super::Chunk::erase), for lists that mix kinds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct AnyBuffer;

impl Sealed for Input {}
impl Sealed for Output {}
impl Sealed for Scratch {}
impl Sealed for AnyBuffer {}
impl ChunkKind for Input {}
impl ChunkKind for Output {}
impl ChunkKind for Scratch {}
impl ChunkKind for AnyBuffer {}
impl BufferKind for Input {
    const TYPE: plan::BufferType = plan::BufferType::Input;
}
impl BufferKind for Output {
    const TYPE: plan::BufferType = plan::BufferType::Output;
}
impl BufferKind for Scratch {
    const TYPE: plan::BufferType = plan::BufferType::Scratch;
}

/// Buffers that hold LL packets: only [`Scratch`].
#[diagnostic::on_unimplemented(
    message = "packets live in scratch buffers only, but this chunk is in the `{Self}` buffer",
    label = "expected a chunk of a scratch buffer here",
    note = "packets are written into and read from chunks of `p.scratch(rank, n_chunks)`; to move their data into another buffer, `unpack_packets` it from scratch"
)]
pub trait PacketBuffer: BufferKind {}
impl PacketBuffer for Scratch {}

// ---------------------------------------------------------------------------------------------------------------
// Channel kinds
// ---------------------------------------------------------------------------------------------------------------

/// The kind of a [`Channel`](super::Channel): [`Memory`], [`Port`] or [`Switch`].
pub trait ChannelKind: Sealed + Copy + std::fmt::Debug + 'static {
    /// The plan's channel type.
    const TYPE: plan::ChannelType;
}

/// Memory channel: the GPU reads and writes peer memory directly (NVLink / PCIe peer access).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct Memory;
/// Port channel: a host proxy issues the transfers (CUDA IPC copies, InfiniBand, Ethernet).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct Port;
/// Switch channel: NVLink multicast (NVLS) over a group of ranks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct Switch;

impl Sealed for Memory {}
impl Sealed for Port {}
impl Sealed for Switch {}
impl ChannelKind for Memory {
    const TYPE: plan::ChannelType = plan::ChannelType::Memory;
}
impl ChannelKind for Port {
    const TYPE: plan::ChannelType = plan::ChannelType::Port;
}
impl ChannelKind for Switch {
    const TYPE: plan::ChannelType = plan::ChannelType::Switch;
}

/// Channels between two ranks ([`Memory`], [`Port`]): `put`, `signal`, `wait`, `put_packets`,
/// `read_put_packets`.
#[diagnostic::on_unimplemented(
    message = "`put`, `get`, `signal` and `wait` need a memory or port channel, but this is a `{Self}` channel",
    label = "not available on a `{Self}` channel",
    note = "a switch channel multicasts: use `.at_rank(r)?.reduce(..)`, `.broadcast(..)` or `.broadcast_packets(..)`; to talk to one peer, create `p.memory_channel(peer, rank)` or `p.port_channel(peer, rank)`"
)]
pub trait PeerChannel: ChannelKind {}
impl PeerChannel for Memory {}
impl PeerChannel for Port {}

/// Channels that map peer memory ([`Memory`] only): `get`, `read_reduce`, relaxed signal/wait.
#[diagnostic::on_unimplemented(
    message = "this operation reads peer memory directly and needs a memory channel, but this is a `{Self}` channel",
    label = "not available on a `{Self}` channel",
    note = "`get`, `read_reduce`, `relaxed_signal` and `relaxed_wait` exist on `MemoryChannel` only; create one with `p.memory_channel(peer, rank)`"
)]
pub trait DirectChannel: PeerChannel {}
impl DirectChannel for Memory {}

/// Channels driven by the host proxy ([`Port`] only): `flush`, `put_with_signal`, `put_with_signal_and_flush`.
#[diagnostic::on_unimplemented(
    message = "`flush`, `put_with_signal` and `put_with_signal_and_flush` need a port channel, but this is a `{Self}` channel",
    label = "not available on a `{Self}` channel",
    note = "a memory channel writes peer memory directly and has nothing to flush: use `put(..)` followed by `signal(..)`; or create `p.port_channel(peer, rank)`"
)]
pub trait ProxyChannel: PeerChannel {}
impl ProxyChannel for Port {}

/// Multicast channels ([`Switch`] only): switch `reduce`, `broadcast`, `broadcast_packets`.
#[diagnostic::on_unimplemented(
    message = "switch `reduce`, `broadcast` and `broadcast_packets` need a switch channel, but this is a `{Self}` channel",
    label = "not available on a `{Self}` channel",
    note = "create one with `p.switch_channel(&ranks, buffer_type)` and pick a member with `.at_rank(r)?`; to reduce over a memory channel use `read_reduce`, to send use `put`"
)]
pub trait MulticastChannel: ChannelKind {}
impl MulticastChannel for Switch {}
