//! MSCCL++'s Python DSL on the eDSL: a program recorded by `mscclpp.language` (the Python package with MSCCL++'s
//! names: `CollectiveProgram`, `Rank`, `MemoryChannel`, ...) as a list of calls ([`DslProgram`]), replayed here
//! call by call on [`crate::program::build_plan`], so the same program graph, lowering and checks serve both.
//! An error names the Python file and line of the call that caused it ([`DslError`]).
//!
//! What the Rust eDSL checks from types is checked here when a call is replayed: packet operations need the `LL`
//! protocol and scratch chunks, `get`/`read_reduce`/relaxed signals need memory channels, `flush` and the
//! `put_with_signal` forms need port channels.

use serde::Deserialize;

use crate::plan::{BufferType, Collective, Plan, ReduceOp};
use crate::program::{
    AnyBuffer, Buffer, Channel, Chunk, LL, LL128, Memory, PacketProtocol, Port, Program, ProgramError, ProgramSpec,
    ProtocolKind, Scratch, Semaphore, Simple, Switch, SyncType, Tb,
};

/// A program recorded by the Python DSL.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DslProgram {
    /// Plan name.
    pub name: String,
    /// The collective (`allgather`, `allreduce`, `reducescatter`, `alltoall`, `test`, ...).
    pub collective: Collective,
    /// Ranks.
    pub num_ranks: usize,
    /// The collective's chunk factor (MSCCL++'s `chunk_factor` / `chunksperloop`).
    #[serde(default = "one")]
    pub chunk_factor: usize,
    /// In place.
    #[serde(default)]
    pub inplace: bool,
    /// Input and output chunks of a `test` collective.
    #[serde(default)]
    pub buffer_chunks: Option<(usize, usize)>,
    /// `Simple` or `LL`.
    #[serde(default = "simple")]
    pub protocol: String,
    /// Instances.
    #[serde(default = "one")]
    pub instances: usize,
    /// Instruction fusion.
    #[serde(default = "yes")]
    pub instr_fusion: bool,
    /// Automatic data syncs.
    #[serde(default = "yes")]
    pub auto_sync: bool,
    /// Reuse resources across instances.
    #[serde(default)]
    pub reuse_resources: bool,
    /// Threads per block.
    #[serde(default = "threads")]
    pub num_threads_per_block: u32,
    /// Double scratch buffering.
    #[serde(default)]
    pub use_double_scratch_buffer: bool,
    /// Buffer alignment in bytes.
    #[serde(default = "alignment")]
    pub buffer_alignment: u64,
    /// Smallest message.
    #[serde(default)]
    pub min_message_size: u64,
    /// Largest message.
    #[serde(default = "largest")]
    pub max_message_size: u64,
    /// The calls, in program order.
    pub calls: Vec<DslCall>,
}

fn one() -> usize {
    1
}
fn yes() -> bool {
    true
}
fn simple() -> String {
    "Simple".into()
}
fn threads() -> u32 {
    1024
}
fn alignment() -> u64 {
    16
}
fn largest() -> u64 {
    u64::MAX
}

/// Where a Python call was made.
#[derive(Debug, Clone, Default, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct PySite {
    /// File.
    pub file: String,
    /// Line.
    pub line: u32,
}

/// One recorded call and where it was made.
#[derive(Debug, Clone, Deserialize)]
pub struct DslCall {
    /// The call.
    #[serde(flatten)]
    pub op: DslOp,
    /// Where.
    #[serde(default)]
    pub site: PySite,
}

/// A chunk: `rank.get_input_buffer()[a:b]`, `get_output_buffer()`, or a scratch `Buffer` (by its id).
#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct ChunkRef {
    /// The rank whose buffer it is.
    pub rank: usize,
    /// The buffer (`"i"`, `"o"`, `"s"`, as plans name them).
    pub buffer: BufferType,
    /// The scratch buffer (the id of its `Buffer(rank, size)` call), for `scratch`.
    #[serde(default)]
    pub scratch: Option<usize>,
    /// First chunk, relative to the buffer.
    pub index: usize,
    /// Chunks.
    pub size: usize,
}

/// A thread block or a thread-block group.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
#[serde(untagged)]
pub enum TbRef {
    /// One thread block.
    One(usize),
    /// A group.
    Group(Vec<usize>),
}

/// The calls the Python DSL records.
#[derive(Debug, Clone, Deserialize)]
#[serde(tag = "call", rename_all = "snake_case", deny_unknown_fields)]
pub enum DslOp {
    /// `Buffer(rank, size)`: scratch chunks of a rank.
    #[serde(rename = "scratch")]
    MakeScratch {
        /// Id the chunks refer to.
        id: usize,
        /// Rank.
        rank: usize,
        /// Chunks.
        size: usize,
    },
    /// `MemoryChannel(dst, src)` / `PortChannel(dst, src)`. (Named apart from `program::Channel`, so that compiler
    /// messages keep printing that one's short name.)
    #[serde(rename = "channel")]
    MakeChannel {
        /// Id the calls refer to.
        id: usize,
        /// `memory` or `port`.
        kind: String,
        /// The peer.
        dst: usize,
        /// The rank its operations run on.
        src: usize,
    },
    /// `ch.signal(tb, data_sync, relaxed)`.
    Signal {
        /// Channel id.
        channel: usize,
        /// Thread block.
        tb: TbRef,
        /// Data sync.
        sync: SyncType,
        /// Relaxed (memory channels).
        #[serde(default)]
        relaxed: bool,
    },
    /// `ch.wait(tb, data_sync, relaxed)`.
    Wait {
        /// Channel id.
        channel: usize,
        /// Thread block.
        tb: TbRef,
        /// Data sync.
        sync: SyncType,
        /// Relaxed (memory channels).
        #[serde(default)]
        relaxed: bool,
    },
    /// `ch.flush(tb, data_sync)` (port channels).
    Flush {
        /// Channel id.
        channel: usize,
        /// Thread block.
        tb: TbRef,
        /// Data sync.
        sync: SyncType,
    },
    /// `ch.put(dst, src, tb)`, `put_with_signal`, `put_with_signal_and_flush`, `get`, `put_packets`,
    /// `read_put_packets`.
    Transfer {
        /// `put`, `put_with_signal`, `put_with_signal_and_flush`, `get`, `put_packets`, `read_put_packets`.
        name: String,
        /// Channel id.
        channel: usize,
        /// Destination.
        dst: ChunkRef,
        /// Source.
        src: ChunkRef,
        /// Thread block.
        tb: TbRef,
    },
    /// `ch.read_reduce(dst, src, remotes, tb, reduce_op)` (memory channels).
    ReadReduce {
        /// Channel id.
        channel: usize,
        /// Destination (local).
        dst: ChunkRef,
        /// Local source.
        src: ChunkRef,
        /// Peer chunks.
        remotes: Vec<ChunkRef>,
        /// Thread block.
        tb: TbRef,
        /// Reduction.
        #[serde(default = "sum")]
        op: ReduceOp,
    },
    /// `rank.copy(dst, src, tb)`, `copy_packets`, `unpack_packets`.
    #[serde(rename = "copy")]
    LocalCopy {
        /// `copy`, `copy_packets`, `unpack_packets`.
        name: String,
        /// Rank.
        rank: usize,
        /// Destination.
        dst: ChunkRef,
        /// Source.
        src: ChunkRef,
        /// Thread block.
        tb: TbRef,
    },
    /// `rank.reduce(src, others, tb, dst=..., reduce_op=...)`, packets too.
    Reduce {
        /// `reduce` or `reduce_packets`.
        name: String,
        /// Rank.
        rank: usize,
        /// Destination.
        dst: ChunkRef,
        /// Source.
        src: ChunkRef,
        /// Other operands.
        others: Vec<ChunkRef>,
        /// Thread block.
        tb: TbRef,
        /// Reduction.
        #[serde(default = "sum")]
        op: ReduceOp,
    },
    /// `SwitchChannel(rank_list, buffer_type)`: a multicast group over `buffer` of `ranks` (emulated through peer
    /// pointers by the executor; NVLink multicast is never set up).
    #[serde(rename = "switch")]
    MakeSwitch {
        /// Id the calls refer to.
        id: usize,
        /// The members.
        ranks: Vec<usize>,
        /// The buffer it spans.
        buffer: BufferType,
    },
    /// `sw.reduce(rank, buffer_offset, size, dst_chunk, tb, reduce_op)` / `sw.at_rank(r).reduce(...)`.
    SwitchReduce {
        /// Switch channel id.
        channel: usize,
        /// The member that runs it.
        rank: usize,
        /// Chunk index in every member's buffer.
        offset: usize,
        /// Chunks (the destination's size).
        size: usize,
        /// Destination (on `rank`).
        dst: ChunkRef,
        /// Thread block.
        tb: TbRef,
        /// Reduction.
        #[serde(default = "sum")]
        op: ReduceOp,
    },
    /// `sw.broadcast(rank, src_chunk, buffer_offset, size, tb)` and `broadcast_packets`.
    SwitchBroadcast {
        /// `broadcast` or `broadcast_packets`.
        name: String,
        /// Switch channel id.
        channel: usize,
        /// The member that runs it.
        rank: usize,
        /// Chunk index in every member's buffer.
        offset: usize,
        /// Chunks (the source's size).
        size: usize,
        /// Source (on `rank`).
        src: ChunkRef,
        /// Thread block.
        tb: TbRef,
    },
    /// `Semaphore(rank, initial_value)`: a device semaphore of a rank.
    #[serde(rename = "semaphore")]
    MakeSemaphore {
        /// Id the calls refer to.
        id: usize,
        /// Rank.
        rank: usize,
        /// Initial value.
        initial_value: i64,
    },
    /// `sem.acquire(tb, data_sync)` (`acquire: true`) or `sem.release(tb, data_sync)`.
    SemaphoreOp {
        /// Semaphore id.
        semaphore: usize,
        /// Acquire, else release.
        acquire: bool,
        /// Thread block.
        tb: TbRef,
        /// Data sync.
        sync: SyncType,
    },
    /// `with LoopIterationContext(unit, num_chunks):` opens a pipeline; the calls up to its `pipeline_end` run
    /// inside it.
    PipelineBegin {
        /// Bytes per iteration.
        unit: u64,
        /// Chunks each data operation inside spans.
        num_chunks: usize,
    },
    /// The end of the innermost open pipeline.
    PipelineEnd {},
    /// `rank.barrier(tb_list)`.
    Barrier {
        /// Rank.
        rank: usize,
        /// Thread blocks.
        tbs: Vec<usize>,
    },
}

fn sum() -> ReduceOp {
    ReduceOp::Sum
}

/// A DSL program that does not build, with the Python call that made it fail.
#[derive(Debug, thiserror::Error)]
pub enum DslError {
    /// The recorded program is not valid JSON of the expected shape.
    #[error("the recorded DSL program does not parse: {0}")]
    Parse(String),
    /// A call (or the lowering after the last call) failed.
    #[error("{}{error}", site.as_ref().map(|s| format!("{}:{}: ", s.file, s.line)).unwrap_or_default())]
    Build {
        /// Where the failing call was made (none: the lowering after the last call).
        site: Option<PySite>,
        /// The eDSL's error.
        error: Box<ProgramError>,
    },
}

/// Parse a recorded program (the JSON the Python package writes).
pub fn parse(json: &str) -> Result<DslProgram, DslError> {
    serde_json::from_str(json).map_err(|e| DslError::Parse(e.to_string()))
}

/// Build the plan of a recorded program.
pub fn build(program: &DslProgram) -> Result<Plan, DslError> {
    let mut spec = ProgramSpec::new(program.name.clone(), program.collective, program.num_ranks)
        .chunk_factor(program.chunk_factor)
        .inplace(program.inplace)
        .instances(program.instances)
        .message_range(program.min_message_size, program.max_message_size);
    if let Some((i, o)) = program.buffer_chunks {
        spec = spec.buffer_chunks(i, o);
    }
    spec.num_threads_per_block = program.num_threads_per_block;
    spec.use_double_scratch_buffer = program.use_double_scratch_buffer;
    spec.buffer_alignment = program.buffer_alignment;
    spec.reuse_resources = program.reuse_resources;
    spec.instr_fusion = program.instr_fusion;
    spec.auto_sync = program.auto_sync;
    let failed = std::cell::RefCell::new(None);
    let built = match program.protocol.as_str() {
        "Simple" => crate::program::build_plan::<Simple>(&spec, |p| replay(p, &program.calls, &failed)),
        "LL" => crate::program::build_plan::<LL>(&spec, |p| replay(p, &program.calls, &failed)),
        "LL128" => crate::program::build_plan::<LL128>(&spec, |p| replay(p, &program.calls, &failed)),
        other => {
            return Err(DslError::Build {
                site: None,
                error: Box::new(ProgramError::invalid(
                    None,
                    None,
                    "CollectiveProgram",
                    format!("protocol {other:?}: use \"Simple\", \"LL\" or \"LL128\""),
                )),
            });
        }
    };
    built.map_err(|error| DslError::Build { site: failed.into_inner(), error: Box::new(error) })
}

/// A channel of either peer kind.
enum AnyChannel<'p, P: ProtocolKind> {
    Memory(Channel<'p, P, Memory>),
    Port(Channel<'p, P, Port>),
}

/// What the replay holds: the scratch buffers, channels and semaphores made so far, by id.
struct Made<'p, P: ProtocolKind> {
    scratch: Vec<Option<Buffer<'p, Scratch>>>,
    channels: Vec<Option<AnyChannel<'p, P>>>,
    switches: Vec<Option<Channel<'p, P, Switch>>>,
    semaphores: Vec<Option<Semaphore<'p>>>,
}

fn invalid(op: &str, message: impl Into<String>) -> ProgramError {
    ProgramError::invalid(None, None, op, message)
}

/// The operations that exist only for LL programs, per protocol: LL runs them, Simple refuses them as the Rust
/// eDSL's types do.
trait Packets<'p>: ProtocolKind + Sized {
    fn put_packets(ch: &AnyChannel<'p, Self>, dst: Chunk<'p, Scratch>, src: Chunk<'p, AnyBuffer>, tb: Tb) -> R;
    fn read_put_packets(ch: &AnyChannel<'p, Self>, dst: Chunk<'p, Scratch>, src: Chunk<'p, Scratch>, tb: Tb) -> R;
    fn copy_packets(
        p: &Program<'p, Self>,
        rank: usize,
        dst: Chunk<'p, Scratch>,
        src: Chunk<'p, AnyBuffer>,
        tb: Tb,
    ) -> R;
    fn unpack_packets(
        p: &Program<'p, Self>,
        rank: usize,
        dst: Chunk<'p, AnyBuffer>,
        src: Chunk<'p, Scratch>,
        tb: Tb,
    ) -> R;
    fn reduce_packets(
        p: &Program<'p, Self>,
        rank: usize,
        dst: Chunk<'p, AnyBuffer>,
        src: Chunk<'p, AnyBuffer>,
        others: &[Chunk<'p, Scratch>],
        tb: Tb,
        op: ReduceOp,
    ) -> R;
    fn broadcast_packets(sw: &Channel<'p, Self, Switch>, dst_index: usize, src: Chunk<'p, Scratch>, tb: Tb) -> R;
}

type R = Result<(), ProgramError>;

fn needs_ll(op: &str) -> R {
    Err(invalid(op, "packet operations need the LL protocol: create the CollectiveProgram with protocol=\"LL\""))
}

impl<'p> Packets<'p> for Simple {
    fn put_packets(_: &AnyChannel<'p, Self>, _: Chunk<'p, Scratch>, _: Chunk<'p, AnyBuffer>, _: Tb) -> R {
        needs_ll("put_packets")
    }
    fn read_put_packets(_: &AnyChannel<'p, Self>, _: Chunk<'p, Scratch>, _: Chunk<'p, Scratch>, _: Tb) -> R {
        needs_ll("read_put_packets")
    }
    fn copy_packets(_: &Program<'p, Self>, _: usize, _: Chunk<'p, Scratch>, _: Chunk<'p, AnyBuffer>, _: Tb) -> R {
        needs_ll("copy_packets")
    }
    fn unpack_packets(_: &Program<'p, Self>, _: usize, _: Chunk<'p, AnyBuffer>, _: Chunk<'p, Scratch>, _: Tb) -> R {
        needs_ll("unpack_packets")
    }
    fn reduce_packets(
        _: &Program<'p, Self>,
        _: usize,
        _: Chunk<'p, AnyBuffer>,
        _: Chunk<'p, AnyBuffer>,
        _: &[Chunk<'p, Scratch>],
        _: Tb,
        _: ReduceOp,
    ) -> R {
        needs_ll("reduce_packets")
    }
    fn broadcast_packets(_: &Channel<'p, Self, Switch>, _: usize, _: Chunk<'p, Scratch>, _: Tb) -> R {
        needs_ll("broadcast_packets")
    }
}

impl<'p, P: PacketProtocol> Packets<'p> for P {
    fn put_packets(ch: &AnyChannel<'p, Self>, dst: Chunk<'p, Scratch>, src: Chunk<'p, AnyBuffer>, tb: Tb) -> R {
        match ch {
            AnyChannel::Memory(c) => c.put_packets(dst, src, tb),
            AnyChannel::Port(c) => c.put_packets(dst, src, tb),
        }
    }
    fn read_put_packets(ch: &AnyChannel<'p, Self>, dst: Chunk<'p, Scratch>, src: Chunk<'p, Scratch>, tb: Tb) -> R {
        match ch {
            AnyChannel::Memory(c) => c.read_put_packets(dst, src, tb),
            AnyChannel::Port(c) => c.read_put_packets(dst, src, tb),
        }
    }
    fn copy_packets(
        p: &Program<'p, Self>,
        rank: usize,
        dst: Chunk<'p, Scratch>,
        src: Chunk<'p, AnyBuffer>,
        tb: Tb,
    ) -> R {
        p.rank(rank)?.copy_packets(dst, src, tb)
    }
    fn unpack_packets(
        p: &Program<'p, Self>,
        rank: usize,
        dst: Chunk<'p, AnyBuffer>,
        src: Chunk<'p, Scratch>,
        tb: Tb,
    ) -> R {
        p.rank(rank)?.unpack_packets(dst, src, tb)
    }
    fn reduce_packets(
        p: &Program<'p, Self>,
        rank: usize,
        dst: Chunk<'p, AnyBuffer>,
        src: Chunk<'p, AnyBuffer>,
        others: &[Chunk<'p, Scratch>],
        tb: Tb,
        op: ReduceOp,
    ) -> R {
        p.rank(rank)?.reduce_packets(dst, src, others, tb, op)
    }
    fn broadcast_packets(sw: &Channel<'p, Self, Switch>, dst_index: usize, src: Chunk<'p, Scratch>, tb: Tb) -> R {
        sw.broadcast_packets(dst_index, src, tb)
    }
}

fn replay<'p, P: Packets<'p>>(
    p: &mut Program<'p, P>,
    calls: &[DslCall],
    failed: &std::cell::RefCell<Option<PySite>>,
) -> R {
    // MSCCL++ pairs signals and waits per pair of ranks only; a mispairing between channels of one pair is left to
    // the verifier (docs/python.md), so its programs build unchanged.
    p.set_channel_pairing_check(false);
    let mut made = Made { scratch: Vec::new(), channels: Vec::new(), switches: Vec::new(), semaphores: Vec::new() };
    replay_calls(p, &mut made, calls, failed)
}

/// Replay `calls`; a pipeline's calls run inside [`Program::pipeline`].
fn replay_calls<'p, P: Packets<'p>>(
    p: &mut Program<'p, P>,
    made: &mut Made<'p, P>,
    calls: &[DslCall],
    failed: &std::cell::RefCell<Option<PySite>>,
) -> R {
    let mut i = 0;
    while i < calls.len() {
        let call = &calls[i];
        let fail = |e: ProgramError| {
            if failed.borrow().is_none() {
                *failed.borrow_mut() = Some(call.site.clone());
            }
            e
        };
        if let DslOp::PipelineBegin { unit, num_chunks } = call.op {
            let mut depth = 0usize;
            let end = calls[i..].iter().position(|c| {
                match c.op {
                    DslOp::PipelineBegin { .. } => depth += 1,
                    DslOp::PipelineEnd {} => depth -= 1,
                    _ => {}
                }
                depth == 0
            });
            let Some(end) = end.map(|e| i + e) else {
                return Err(fail(invalid("pipeline", "a LoopIterationContext that never closes")));
            };
            let body = &calls[i + 1..end];
            let line = crate::program::intern_line(&call.site.file, call.site.line, 0);
            crate::program::with_script_line(line, || {
                p.pipeline(unit, num_chunks, |p| replay_calls(p, made, body, failed))
            })
            .map_err(fail)?;
            i = end + 1;
            continue;
        }
        let line = crate::program::intern_line(&call.site.file, call.site.line, 0);
        crate::program::with_script_line(line, || replay_one(p, made, &call.op)).map_err(fail)?;
        i += 1;
    }
    Ok(())
}

fn tb_of<P: ProtocolKind>(p: &Program<'_, P>, tb: &TbRef) -> Result<Tb, ProgramError> {
    Ok(match tb {
        TbRef::One(t) => (*t).into(),
        TbRef::Group(ts) => (&p.tb_group(ts)?).into(),
    })
}

fn chunk<'p, P: ProtocolKind>(
    p: &Program<'p, P>,
    made: &Made<'p, P>,
    c: &ChunkRef,
) -> Result<Chunk<'p, AnyBuffer>, ProgramError> {
    let range = c.index..c.index + c.size;
    Ok(match c.buffer {
        BufferType::Input => p.input(c.rank)?.slice(range)?.erase(),
        BufferType::Output => p.output(c.rank)?.slice(range)?.erase(),
        BufferType::Scratch => scratch_chunk(made, c)?.erase(),
    })
}

fn scratch_chunk<'p, P: ProtocolKind>(made: &Made<'p, P>, c: &ChunkRef) -> Result<Chunk<'p, Scratch>, ProgramError> {
    if c.buffer != BufferType::Scratch {
        return Err(invalid(
            "packets",
            format!(
                "packets live in scratch buffers only, but this chunk is in the {} buffer of rank {}; write packets \
                 into a Buffer(rank, size) and unpack_packets them from there",
                c.buffer, c.rank
            ),
        ));
    }
    let id = c.scratch.ok_or_else(|| invalid("Buffer", "a scratch chunk that names no Buffer"))?;
    let buf = kept(&made.scratch, id, "Buffer")?;
    buf.slice(c.index..c.index + c.size)
}

/// Keep what call `id` made, by id.
fn keep<T>(slots: &mut Vec<Option<T>>, id: usize, made: T) {
    if slots.len() <= id {
        slots.resize_with(id + 1, || None);
    }
    slots[id] = Some(made);
}

/// What call `id` made (a `what`: `channel`, `Semaphore`, ...).
fn kept<'a, T>(slots: &'a [Option<T>], id: usize, what: &str) -> Result<&'a T, ProgramError> {
    slots.get(id).and_then(Option::as_ref).ok_or_else(|| invalid(what, format!("no {what} {id} was made")))
}

fn channel<'a, 'p, P: ProtocolKind>(made: &'a Made<'p, P>, id: usize) -> Result<&'a AnyChannel<'p, P>, ProgramError> {
    kept(&made.channels, id, "channel")
}

fn memory<'a, 'p, P: ProtocolKind>(
    made: &'a Made<'p, P>,
    id: usize,
    op: &str,
) -> Result<&'a Channel<'p, P, Memory>, ProgramError> {
    match channel(made, id)? {
        AnyChannel::Memory(c) => Ok(c),
        AnyChannel::Port(_) => {
            Err(invalid(op, format!("`{op}` reads peer memory directly and needs a MemoryChannel, not a PortChannel")))
        }
    }
}

fn port<'a, 'p, P: ProtocolKind>(
    made: &'a Made<'p, P>,
    id: usize,
    op: &str,
) -> Result<&'a Channel<'p, P, Port>, ProgramError> {
    match channel(made, id)? {
        AnyChannel::Port(c) => Ok(c),
        AnyChannel::Memory(_) => Err(invalid(
            op,
            format!(
                "`{op}` needs a PortChannel: a memory channel writes peer memory directly and has nothing to flush"
            ),
        )),
    }
}

fn switch<'a, 'p, P: ProtocolKind>(
    made: &'a Made<'p, P>,
    id: usize,
) -> Result<&'a Channel<'p, P, Switch>, ProgramError> {
    kept(&made.switches, id, "SwitchChannel")
}

fn same_size(op: &str, size: usize, chunk: usize) -> R {
    if size != chunk {
        return Err(invalid(
            op,
            format!("size {size} differs from the chunk's {chunk} chunk(s); pass the chunk's size"),
        ));
    }
    Ok(())
}

fn replay_one<'p, P: Packets<'p>>(p: &mut Program<'p, P>, made: &mut Made<'p, P>, op: &DslOp) -> R {
    match op {
        DslOp::MakeScratch { id, rank, size } => {
            let b = p.scratch(*rank, *size)?;
            keep(&mut made.scratch, *id, b);
        }
        DslOp::MakeChannel { id, kind, dst, src } => {
            let ch = match kind.as_str() {
                "memory" => AnyChannel::Memory(p.memory_channel(*dst, *src)?),
                "port" => AnyChannel::Port(p.port_channel(*dst, *src)?),
                other => return Err(invalid("channel", format!("channel kind {other:?}: memory or port"))),
            };
            keep(&mut made.channels, *id, ch);
        }
        DslOp::Signal { channel: c, tb, sync, relaxed } => {
            let tb = tb_of(p, tb)?;
            match (channel(made, *c)?, relaxed) {
                (AnyChannel::Memory(ch), true) => ch.relaxed_signal(tb, *sync)?,
                (AnyChannel::Memory(ch), false) => ch.signal(tb, *sync)?,
                (AnyChannel::Port(_), true) => return Err(invalid("signal", "relaxed signals need a MemoryChannel")),
                (AnyChannel::Port(ch), false) => ch.signal(tb, *sync)?,
            }
        }
        DslOp::Wait { channel: c, tb, sync, relaxed } => {
            let tb = tb_of(p, tb)?;
            match (channel(made, *c)?, relaxed) {
                (AnyChannel::Memory(ch), true) => ch.relaxed_wait(tb, *sync)?,
                (AnyChannel::Memory(ch), false) => ch.wait(tb, *sync)?,
                (AnyChannel::Port(_), true) => return Err(invalid("wait", "relaxed waits need a MemoryChannel")),
                (AnyChannel::Port(ch), false) => ch.wait(tb, *sync)?,
            }
        }
        DslOp::Flush { channel: c, tb, sync } => port(made, *c, "flush")?.flush(tb_of(p, tb)?, *sync)?,
        DslOp::Transfer { name, channel: c, dst, src, tb } => {
            let tb = tb_of(p, tb)?;
            match name.as_str() {
                "put" => {
                    let (d, s) = (chunk(p, made, dst)?, chunk(p, made, src)?);
                    match channel(made, *c)? {
                        AnyChannel::Memory(ch) => ch.put(d, s, tb)?,
                        AnyChannel::Port(ch) => ch.put(d, s, tb)?,
                    }
                }
                "get" => memory(made, *c, "get")?.get(chunk(p, made, dst)?, chunk(p, made, src)?, tb)?,
                "put_with_signal" => {
                    port(made, *c, name)?.put_with_signal(chunk(p, made, dst)?, chunk(p, made, src)?, tb)?
                }
                "put_with_signal_and_flush" => {
                    port(made, *c, name)?.put_with_signal_and_flush(chunk(p, made, dst)?, chunk(p, made, src)?, tb)?
                }
                "put_packets" => {
                    P::put_packets(channel(made, *c)?, scratch_chunk(made, dst)?, chunk(p, made, src)?, tb)?
                }
                "read_put_packets" => {
                    P::read_put_packets(channel(made, *c)?, scratch_chunk(made, dst)?, scratch_chunk(made, src)?, tb)?
                }
                other => return Err(invalid(other, format!("`{other}` is not a channel operation of the DSL"))),
            }
        }
        DslOp::ReadReduce { channel: c, dst, src, remotes, tb, op } => {
            let tb = tb_of(p, tb)?;
            let remotes: Vec<_> = remotes.iter().map(|r| chunk(p, made, r)).collect::<Result<_, _>>()?;
            memory(made, *c, "read_reduce")?.read_reduce(
                chunk(p, made, dst)?,
                chunk(p, made, src)?,
                &remotes,
                tb,
                *op,
            )?
        }
        DslOp::LocalCopy { name, rank, dst, src, tb } => {
            let tb = tb_of(p, tb)?;
            match name.as_str() {
                "copy" => p.rank(*rank)?.copy(chunk(p, made, dst)?, chunk(p, made, src)?, tb)?,
                "copy_packets" => P::copy_packets(p, *rank, scratch_chunk(made, dst)?, chunk(p, made, src)?, tb)?,
                "unpack_packets" => P::unpack_packets(p, *rank, chunk(p, made, dst)?, scratch_chunk(made, src)?, tb)?,
                other => return Err(invalid(other, format!("`{other}` is not a rank operation of the DSL"))),
            }
        }
        DslOp::Reduce { name, rank, dst, src, others, tb, op } => {
            let tb = tb_of(p, tb)?;
            let (d, s) = (chunk(p, made, dst)?, chunk(p, made, src)?);
            match name.as_str() {
                "reduce" => {
                    let others: Vec<_> = others.iter().map(|o| chunk(p, made, o)).collect::<Result<_, _>>()?;
                    p.rank(*rank)?.reduce(d, s, &others, tb, *op)?
                }
                "reduce_packets" => {
                    let others: Vec<_> = others.iter().map(|o| scratch_chunk(made, o)).collect::<Result<_, _>>()?;
                    P::reduce_packets(p, *rank, d, s, &others, tb, *op)?
                }
                other => return Err(invalid(other, format!("`{other}` is not a reduction of the DSL"))),
            }
        }
        DslOp::Barrier { rank, tbs } => p.rank(*rank)?.barrier(tbs)?,
        DslOp::MakeSwitch { id, ranks, buffer } => {
            let sw = p.switch_channel(ranks, *buffer)?;
            keep(&mut made.switches, *id, sw);
        }
        DslOp::SwitchReduce { channel, rank, offset, size, dst, tb, op } => {
            let tb = tb_of(p, tb)?;
            let d = chunk(p, made, dst)?;
            same_size("switch reduce", *size, d.size())?;
            switch(made, *channel)?.at_rank(*rank)?.reduce(d, *offset, tb, *op)?
        }
        DslOp::SwitchBroadcast { name, channel, rank, offset, size, src, tb } => {
            let tb = tb_of(p, tb)?;
            let sw = switch(made, *channel)?.at_rank(*rank)?;
            match name.as_str() {
                "broadcast" => {
                    let s = chunk(p, made, src)?;
                    same_size("broadcast", *size, s.size())?;
                    sw.broadcast(*offset, s, tb)?
                }
                "broadcast_packets" => {
                    let s = scratch_chunk(made, src)?;
                    same_size("broadcast_packets", *size, s.size())?;
                    P::broadcast_packets(&sw, *offset, s, tb)?
                }
                other => return Err(invalid(other, format!("`{other}` is not a switch channel operation of the DSL"))),
            }
        }
        DslOp::MakeSemaphore { id, rank, initial_value } => {
            let sem = p.semaphore(*rank, *initial_value)?;
            keep(&mut made.semaphores, *id, sem);
        }
        DslOp::SemaphoreOp { semaphore, acquire, tb, sync } => {
            let tb = tb_of(p, tb)?;
            let sem = kept(&made.semaphores, *semaphore, "Semaphore")?;
            if *acquire { sem.acquire(tb, *sync)? } else { sem.release(tb, *sync)? }
        }
        DslOp::PipelineBegin { .. } | DslOp::PipelineEnd {} => {
            return Err(invalid("pipeline", "a LoopIterationContext closed that was never opened"));
        }
    }
    Ok(())
}
