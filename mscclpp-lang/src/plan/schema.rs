//! Serde types for MSCCL++ JSON execution plans (differences from the reference executor: docs/plan-format.md).
//!
//! Every key the schema defines is modelled. Keys that a plan may omit are `Option`s so that a parsed plan
//! re-serializes to a JSON value equal to its input; use the accessor methods for the effective values with
//! their defaults. Field order follows the order in which the MSCCL++ DSL emits keys.

use serde::{Deserialize, Serialize};

pub use super::channel_type::ChannelType;
use super::op_name::OpName;
use crate::location::SourceLocation;

/// Default number of threads per block of the interpreter kernel.
pub const DEFAULT_THREADS_PER_BLOCK: u32 = 1024;
/// Default buffer alignment in bytes: the granularity of the chunk math.
pub const DEFAULT_BUFFER_ALIGNMENT: u64 = 16;

/// A whole execution plan: every rank's thread blocks, channels and buffers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Plan {
    /// Plan name; also the executor's context key.
    pub name: String,
    /// The collective the plan implements.
    pub collective: Collective,
    /// `Simple` or `LL` (packets).
    pub protocol: Protocol,
    /// Whether the plan runs in place.
    pub inplace: bool,
    /// One context per plan regardless of buffers (accepted; how our executor treats it: docs/plan-format.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reuse_resources: Option<bool>,
    /// One entry per rank; `gpus[r].id == r`.
    pub gpus: Vec<Gpu>,
    /// Threads per block of the interpreter kernel (default 1024).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub num_threads_per_block: Option<u32>,
    /// Double the scratch buffer and alternate halves per launch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub use_double_scratch_buffer: Option<bool>,
    /// Granularity in bytes of the chunk math and size checks (default 16).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub buffer_alignment: Option<u64>,
    /// Smallest message size in bytes the plan accepts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_message_size: Option<u64>,
    /// Largest message size in bytes the plan accepts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_message_size: Option<u64>,
    /// Extension: root rank of a `broadcast` plan (default 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub root: Option<u32>,
}

impl Plan {
    /// Number of ranks.
    pub fn world_size(&self) -> usize {
        self.gpus.len()
    }
    /// Effective `reuse_resources` (default false).
    pub fn reuse_resources(&self) -> bool {
        self.reuse_resources.unwrap_or(false)
    }
    /// Effective threads per block (default 1024).
    pub fn threads_per_block(&self) -> u32 {
        self.num_threads_per_block.unwrap_or(DEFAULT_THREADS_PER_BLOCK)
    }
    /// Effective double-scratch flag (default false).
    pub fn double_scratch(&self) -> bool {
        self.use_double_scratch_buffer.unwrap_or(false)
    }
    /// Bytes to allocate for `payload` bytes of scratch payload: twice that for LL plans (packets carry their flags
    /// beside the payload) and again twice with double scratch buffering (see docs/executor.md).
    pub fn scratch_alloc_for(&self, payload: u64) -> u64 {
        let mut s = payload;
        if self.protocol.packets() {
            s = s.saturating_mul(2);
        }
        if self.double_scratch() {
            s = s.saturating_mul(2);
        }
        s
    }
    /// Whether any operation (or any pipeline's inner operation) reads or writes LL packets: only then does the
    /// packet format (LL16 or LL8) matter.
    pub fn uses_packets(&self) -> bool {
        self.gpus
            .iter()
            .flat_map(|g| &g.threadblocks)
            .flat_map(|tb| &tb.ops)
            .any(|op| op.name.uses_packets() || op.inner().iter().any(|i| i.name.uses_packets()))
    }
    /// Set every reduction (also inside pipelines) to `op`: the same plan then serves another reduction operator.
    pub fn set_reduce_op(&mut self, op: ReduceOp) {
        let ops = self.gpus.iter_mut().flat_map(|g| &mut g.threadblocks).flat_map(|tb| &mut tb.ops);
        for o in ops {
            if o.name.is_reduction() {
                o.reduce_op = Some(op);
            }
            for inner in o.ops.iter_mut().flatten() {
                if inner.name.is_reduction() {
                    inner.reduce_op = Some(op);
                }
            }
        }
    }
    /// Effective buffer alignment in bytes (default 16).
    pub fn alignment(&self) -> u64 {
        self.buffer_alignment.unwrap_or(DEFAULT_BUFFER_ALIGNMENT)
    }
    /// Effective minimum message size (default 0).
    pub fn min_message(&self) -> u64 {
        self.min_message_size.unwrap_or(0)
    }
    /// Effective maximum message size (default `u64::MAX`).
    pub fn max_message(&self) -> u64 {
        self.max_message_size.unwrap_or(u64::MAX)
    }
    /// Root rank of a broadcast (default 0).
    pub fn root_rank(&self) -> usize {
        self.root.unwrap_or(0) as usize
    }
}

/// The collective a plan implements.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Collective {
    /// Every rank receives every rank's input.
    #[serde(rename = "allgather")]
    AllGather,
    /// Every rank receives the element-wise reduction of all inputs.
    #[serde(rename = "allreduce")]
    AllReduce,
    /// Rank r receives slice r of the reduction.
    #[serde(rename = "reducescatter")]
    ReduceScatter,
    /// Rank r receives slice r of every rank's input.
    #[serde(rename = "alltoall")]
    AllToAll,
    /// Point-to-point exchange between rank groups.
    #[serde(rename = "sendrecv")]
    SendRecv,
    /// The root's input is copied to every rank's output.
    #[serde(rename = "broadcast")]
    Broadcast,
    /// A test program: the result is whatever the operations imply.
    #[serde(rename = "test")]
    Test,
    /// A custom collective.
    #[serde(rename = "custom")]
    Custom,
}

impl Collective {
    /// The JSON name.
    pub fn as_str(self) -> &'static str {
        match self {
            Collective::AllGather => "allgather",
            Collective::AllReduce => "allreduce",
            Collective::ReduceScatter => "reducescatter",
            Collective::AllToAll => "alltoall",
            Collective::SendRecv => "sendrecv",
            Collective::Broadcast => "broadcast",
            Collective::Test => "test",
            Collective::Custom => "custom",
        }
    }
    /// Every collective, in a stable order.
    pub const ALL: [Collective; 8] = [
        Collective::AllGather,
        Collective::AllReduce,
        Collective::ReduceScatter,
        Collective::AllToAll,
        Collective::SendRecv,
        Collective::Broadcast,
        Collective::Test,
        Collective::Custom,
    ];
}

impl std::fmt::Display for Collective {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for Collective {
    type Err = crate::ParseError;
    fn from_str(s: &str) -> Result<Self, crate::ParseError> {
        let lower = s.to_ascii_lowercase().replace(['_', '-'], "");
        Collective::ALL.into_iter().find(|c| c.as_str() == lower).ok_or_else(|| {
            let names: Vec<&str> = Collective::ALL.iter().map(|c| c.as_str()).collect();
            crate::ParseError::Unknown {
                what: "collective",
                input: s.to_string(),
                expected: format!("one of {}", names.join(", ")),
            }
        })
    }
}

/// The protocol of a plan.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Protocol {
    /// Plain data movement, synchronised with signals.
    Simple,
    /// Low-latency packets: data interleaved with flags.
    #[serde(rename = "LL")]
    Ll,
    /// Low-latency packets of 128-byte lines, 120 data bytes and a flag each (ours; MSCCL++ has no such plans).
    /// Lines are counted from the start of each chunk reference, so a packet range is read with the same chunk
    /// ranges it was written with.
    #[serde(rename = "LL128")]
    Ll128,
}

/// Bytes of one LL128 line (`mscclpp::LL128Packet::kLineBytes`): eight 16-byte slots, one of them half flag.
pub const LL128_LINE_BYTES: u64 = 128;

/// The multiple an LL128 chunk's offset must be: its packets, at twice its offset in scratch, then start on a line.
pub const LL128_CHUNK_ALIGN: u64 = LL128_LINE_BYTES / 2;

impl Protocol {
    /// The JSON name.
    pub fn as_str(self) -> &'static str {
        match self {
            Protocol::Simple => "Simple",
            Protocol::Ll => "LL",
            Protocol::Ll128 => "LL128",
        }
    }

    /// Whether data travels as packets (LL and LL128): scratch holds twice the payload.
    pub fn packets(self) -> bool {
        matches!(self, Protocol::Ll | Protocol::Ll128)
    }
}

impl std::fmt::Display for Protocol {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One rank's part of a plan.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Gpu {
    /// The rank.
    pub id: u32,
    /// Number of chunks of the input buffer.
    pub input_chunks: u32,
    /// Number of chunks of the output buffer.
    pub output_chunks: u32,
    /// Number of chunk-sized slots of the scratch buffer.
    pub scratch_chunks: u32,
    /// Thread blocks; position equals `id`.
    pub threadblocks: Vec<ThreadBlock>,
    /// Channel declarations of this rank.
    pub channels: Vec<ChannelDecl>,
    /// Buffers of other ranks this rank accesses.
    #[serde(default)]
    pub remote_buffers: Vec<RemoteBuffer>,
    /// Intra-rank device semaphores.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub semaphores: Option<Vec<SemaphoreDecl>>,
}

impl Gpu {
    /// Number of chunks of a local buffer.
    pub fn chunks(&self, buffer: BufferType) -> u32 {
        match buffer {
            BufferType::Input => self.input_chunks,
            BufferType::Output => self.output_chunks,
            BufferType::Scratch => self.scratch_chunks,
        }
    }
    /// The device semaphores (empty when absent).
    pub fn semaphores(&self) -> &[SemaphoreDecl] {
        self.semaphores.as_deref().unwrap_or(&[])
    }
    /// Memory- or port-channel peers of this rank in channel-index order: channel `c` of a type is
    /// position `c` in the concatenation of all `connected_to` lists of that type.
    pub fn channel_peers(&self, kind: ChannelType) -> Vec<u32> {
        self.channels
            .iter()
            .filter(|c| c.channel_type == kind)
            .flat_map(|c| c.connected_to.iter().flatten().copied())
            .collect()
    }
    /// Switch-channel declarations of this rank in switch-channel-index order.
    pub fn switch_channels(&self) -> Vec<&ChannelDecl> {
        self.channels.iter().filter(|c| c.channel_type == ChannelType::Switch).collect()
    }
}

/// Local buffer type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum BufferType {
    /// The user's input buffer.
    #[serde(rename = "i")]
    Input,
    /// The user's output buffer.
    #[serde(rename = "o")]
    Output,
    /// The executor's scratch buffer.
    #[serde(rename = "s")]
    Scratch,
}

impl BufferType {
    /// The JSON letter.
    pub fn as_str(self) -> &'static str {
        match self {
            BufferType::Input => "i",
            BufferType::Output => "o",
            BufferType::Scratch => "s",
        }
    }
    /// A readable name.
    pub fn long_name(self) -> &'static str {
        match self {
            BufferType::Input => "input",
            BufferType::Output => "output",
            BufferType::Scratch => "scratch",
        }
    }
    /// All three, in enum order.
    pub const ALL: [BufferType; 3] = [BufferType::Input, BufferType::Output, BufferType::Scratch];
}

impl std::fmt::Display for BufferType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.long_name())
    }
}

/// A rank-level channel declaration: memory or port channels to a list of peers, or a switch (NVLS) channel over
/// a rank group.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ChannelDecl {
    /// Memory, port or switch.
    pub channel_type: ChannelType,
    /// Memory/port: one channel per element, to that peer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connected_to: Option<Vec<u32>>,
    /// Switch: the buffer bound to the multicast object.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub buffer_type: Option<BufferType>,
    /// Switch: pre-0.9 spelling of `buffer_type`, accepted and preserved.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub buff: Option<BufferType>,
    /// Switch: the member ranks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rank_groups: Option<Vec<RankGroup>>,
}

impl ChannelDecl {
    /// Effective switch buffer type (`buffer_type`, or the legacy `buff`).
    pub fn switch_buffer(&self) -> Option<BufferType> {
        self.buffer_type.or(self.buff)
    }
}

/// Members of a switch channel.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RankGroup {
    /// Number of chunks of the bound buffer.
    pub size: u32,
    /// Member ranks.
    pub ranks: Vec<u32>,
}

/// A remote buffer this rank accesses: a peer's buffer of some type and the channel types it is accessed through.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RemoteBuffer {
    /// The owner rank.
    pub rank: u32,
    /// Which of the owner's buffers.
    #[serde(rename = "type")]
    pub buffer_type: BufferType,
    /// Channel kinds through which it is accessed.
    pub access_channel_types: Vec<ChannelType>,
}

/// A device semaphore declaration.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SemaphoreDecl {
    /// Initial value.
    pub init_value: i64,
}

/// A thread block's program: its operations and the channels and remote buffers they index.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ThreadBlock {
    /// Position in the rank's list.
    pub id: u32,
    /// Operations, executed in order.
    pub ops: Vec<Operation>,
    /// Channels this thread block uses; position per type = tb-local index.
    pub channels: Vec<TbChannels>,
    /// Remote buffers this thread block uses; position per access type = tb-local `buffer_id`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remote_buffer_refs: Option<Vec<RemoteBufferRefs>>,
}

impl ThreadBlock {
    /// Rank-level channel indices of one type, in tb-local order.
    pub fn channel_ids(&self, kind: ChannelType) -> Vec<u32> {
        self.channels.iter().filter(|c| c.channel_type == kind).flat_map(|c| c.channel_ids.iter().copied()).collect()
    }
    /// Rank-level remote-buffer indices accessed through one channel type, in tb-local order.
    pub fn remote_buffer_ids(&self, kind: ChannelType) -> Vec<u32> {
        self.remote_buffer_refs
            .iter()
            .flatten()
            .filter(|r| r.access_channel_type == kind)
            .flat_map(|r| r.remote_buffer_ids.iter().copied())
            .collect()
    }
}

/// The channels a thread block uses.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TbChannels {
    /// Memory, port or switch.
    pub channel_type: ChannelType,
    /// Rank-level channel indices.
    pub channel_ids: Vec<u32>,
    /// Accepted and ignored.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub buff: Option<BufferType>,
}

/// The remote buffers a thread block uses through one channel type.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RemoteBufferRefs {
    /// Memory or port.
    pub access_channel_type: ChannelType,
    /// Indices into the rank's `remote_buffers`.
    pub remote_buffer_ids: Vec<u32>,
}

/// Reduction operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum ReduceOp {
    /// Sum.
    #[default]
    Sum,
    /// Minimum.
    Min,
    /// Maximum.
    Max,
}

impl ReduceOp {
    /// The JSON name.
    pub fn as_str(self) -> &'static str {
        match self {
            ReduceOp::Sum => "sum",
            ReduceOp::Min => "min",
            ReduceOp::Max => "max",
        }
    }
}

impl std::fmt::Display for ReduceOp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Thread-block-group slice of an operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TbgInfo {
    /// This thread block's position in the group.
    pub tb_id: u32,
    /// Number of thread blocks in the group.
    pub tbg_size: u32,
}

/// Pipeline loop context.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IterContext {
    /// Bytes per iteration.
    pub unit_size: u64,
    /// Chunks the inner data operations span.
    pub num_chunks: u32,
}

/// A buffer reference inside an operation: a buffer (local type or remote-buffer index) with a chunk index and size.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BufferRef {
    /// Producer's annotation (ignored).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rank: Option<u32>,
    /// Local buffer.
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub buffer_type: Option<BufferType>,
    /// Tb-local remote buffer index.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub buffer_id: Option<u32>,
    /// Tb-local switch channel index.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub switch_channel_id: Option<u32>,
    /// First chunk.
    pub index: u32,
    /// Number of chunks.
    pub size: u32,
}

/// Where a [`BufferRef`] points.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Locator {
    /// A local buffer of this rank.
    Local(BufferType),
    /// Tb-local remote buffer index.
    Remote(u32),
    /// Tb-local switch channel index.
    Switch(u32),
}

impl BufferRef {
    /// A local reference.
    pub fn local(buffer: BufferType, index: u32, size: u32) -> Self {
        BufferRef { rank: None, buffer_type: Some(buffer), buffer_id: None, switch_channel_id: None, index, size }
    }
    /// A remote reference through tb-local remote buffer `id`.
    pub fn remote(id: u32, index: u32, size: u32) -> Self {
        BufferRef { rank: None, buffer_type: None, buffer_id: Some(id), switch_channel_id: None, index, size }
    }
    /// A reference through tb-local switch channel `id`.
    pub fn switch(id: u32, index: u32, size: u32) -> Self {
        BufferRef { rank: None, buffer_type: None, buffer_id: None, switch_channel_id: Some(id), index, size }
    }
    /// The locator, or `None` unless exactly one locator key is present.
    pub fn locator(&self) -> Option<Locator> {
        match (self.buffer_type, self.buffer_id, self.switch_channel_id) {
            (Some(t), None, None) => Some(Locator::Local(t)),
            (None, Some(b), None) => Some(Locator::Remote(b)),
            (None, None, Some(s)) => Some(Locator::Switch(s)),
            _ => None,
        }
    }
}

/// One operation. All fields but `name` are optional; which ones an operation needs is checked by
/// [`crate::plan::validate`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Operation {
    /// The operation.
    pub name: OpName,
    /// `glre`: switch buffer type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub buffer_type: Option<BufferType>,
    /// `glre`: first chunk in the switch buffer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub buffer_offset: Option<u32>,
    /// `glre`: number of chunks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<u32>,
    /// `glre`: destination chunk.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dst_chunk: Option<BufferRef>,
    /// Pipeline loop context.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iter_context: Option<IterContext>,
    /// Source buffers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub src_buff: Option<Vec<BufferRef>>,
    /// Destination buffers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dst_buff: Option<Vec<BufferRef>>,
    /// Tb-local channel indices.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub channel_ids: Option<Vec<u32>>,
    /// Channel type the operation goes through.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub channel_type: Option<ChannelType>,
    /// Barrier id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub barrier_id: Option<u32>,
    /// Number of thread blocks in the barrier.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub num_threadblocks: Option<u32>,
    /// Device semaphore ids.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub semaphore_ids: Option<Vec<u32>>,
    /// Reduction operator (default sum).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reduce_op: Option<ReduceOp>,
    /// Thread-block-group slice.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tbg_info: Option<TbgInfo>,
    /// Pipeline: inner operations.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ops: Option<Vec<Operation>>,
    /// Extension (debug information, ignored by executors): the program source lines that recorded the
    /// operation, in program order (several for an operation the lowering fused). Present only in plans built
    /// with [`ProgramSpec::source_locations`](crate::program::ProgramSpec::source_locations); verifier findings
    /// name them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_locations: Option<Vec<SourceLocation>>,
}

impl Operation {
    /// An operation with only its name set.
    pub fn new(name: OpName) -> Self {
        Operation {
            name,
            buffer_type: None,
            buffer_offset: None,
            size: None,
            dst_chunk: None,
            iter_context: None,
            src_buff: None,
            dst_buff: None,
            channel_ids: None,
            channel_type: None,
            barrier_id: None,
            num_threadblocks: None,
            semaphore_ids: None,
            reduce_op: None,
            tbg_info: None,
            ops: None,
            source_locations: None,
        }
    }
    /// Source references (empty when absent).
    pub fn srcs(&self) -> &[BufferRef] {
        self.src_buff.as_deref().unwrap_or(&[])
    }
    /// Destination references (empty when absent).
    pub fn dsts(&self) -> &[BufferRef] {
        self.dst_buff.as_deref().unwrap_or(&[])
    }
    /// Tb-local channel ids (empty when absent).
    pub fn channels(&self) -> &[u32] {
        self.channel_ids.as_deref().unwrap_or(&[])
    }
    /// Semaphore ids (empty when absent).
    pub fn semaphores(&self) -> &[u32] {
        self.semaphore_ids.as_deref().unwrap_or(&[])
    }
    /// Inner operations of a pipeline (empty otherwise).
    pub fn inner(&self) -> &[Operation] {
        self.ops.as_deref().unwrap_or(&[])
    }
    /// Effective reduction operator.
    pub fn reduce(&self) -> ReduceOp {
        self.reduce_op.unwrap_or_default()
    }
    /// The program source lines that recorded the operation (empty when the plan carries none).
    pub fn sources(&self) -> &[SourceLocation] {
        self.source_locations.as_deref().unwrap_or(&[])
    }
}
