//! [`Program`], [`build_plan`] and the shared state behind every handle.

use std::cell::RefCell;
use std::marker::PhantomData;

use super::buffer::Buffer;
use super::channel::Channel;
use super::error::ProgramError;
use super::kinds::{Input, Memory, Output, Port, ProtocolKind, Scratch, Switch};
use super::lower;
use super::rank::{Rank, Semaphore};
use super::spec::ProgramSpec;
use super::state::{Brand, ChannelInfo, Ctx, PipelineCtx, State};
use super::tb::ThreadBlockGroup;
use crate::plan::{BufferType, ChannelType, Collective, Plan, Protocol};

/// A collective program under construction, for protocol `P` ([`Simple`](super::Simple) or [`LL`](super::LL)).
///
/// A program function receives `&mut Program` and creates buffers, channels and operations through it and through
/// the handles it returns. Every handle carries the program's brand `'p`, so none can leave the function or be
/// used in another program.
///
/// ```
/// use mscclpp_lang::prelude::*;
///
/// /// Each rank copies its input chunk into its output buffer.
/// fn local_copy(p: &mut Program<'_, Simple>) -> Result<(), ProgramError> {
///     for r in 0..p.world_size() {
///         let src = p.input(r)?.chunk(0)?;
///         let dst = p.output(r)?.chunk(0)?;
///         p.rank(r)?.copy(dst, src, 0)?;
///     }
///     Ok(())
/// }
///
/// let spec = ProgramSpec::new("local_copy", Collective::SendRecv, 2);
/// let plan = build_plan(&spec, local_copy).unwrap();
/// assert_eq!(plan.gpus.len(), 2);
/// assert_eq!(plan.gpus[1].threadblocks[0].ops[0].name, OpName::Copy);
/// ```
pub struct Program<'p, P: ProtocolKind> {
    pub(crate) ctx: &'p Ctx,
    _brand: Brand<'p>,
    _protocol: PhantomData<P>,
}

impl<'p, P: ProtocolKind> std::fmt::Debug for Program<'p, P> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let s = self.ctx.state.borrow();
        f.debug_struct("Program")
            .field("name", &s.spec.name)
            .field("collective", &s.spec.collective)
            .field("world_size", &s.spec.world_size)
            .field("protocol", &s.protocol)
            .finish()
    }
}

/// Builds the plan of a program: runs `f` on a fresh [`Program`] for `spec`, then lowers it (signal/wait pairing,
/// fusion, data-sync `nop`s, automatic syncs, instance replication) and validates the result.
///
/// ```
/// use mscclpp_lang::prelude::*;
/// let spec = ProgramSpec::new("empty", Collective::Test, 1);
/// let plan = build_plan::<Simple>(&spec, |_p| Ok(())).unwrap();
/// assert_eq!(plan.name, "empty");
/// ```
pub fn build_plan<P: ProtocolKind>(
    spec: &ProgramSpec,
    f: impl for<'p> FnOnce(&mut Program<'p, P>) -> Result<(), ProgramError>,
) -> Result<Plan, ProgramError> {
    check_spec(spec)?;
    let ctx = Ctx { state: RefCell::new(State::new(spec, P::PROTOCOL)) };
    {
        let mut program = Program { ctx: &ctx, _brand: PhantomData, _protocol: PhantomData };
        f(&mut program)?;
    }
    let state = ctx.state.into_inner();
    if let Some(p) = state.pipeline {
        return Err(ProgramError::invalid(None, None, "pipeline", format!("pipeline {} was not closed", p.id)));
    }
    lower::lower(state)
}

fn check_spec(spec: &ProgramSpec) -> Result<(), ProgramError> {
    let bad = |m: String| Err(ProgramError::Invalid { site: Box::default(), message: m });
    if spec.world_size == 0 {
        return bad(format!("program `{}`: world_size must be at least 1", spec.name));
    }
    if spec.instances == 0 {
        return bad(format!("program `{}`: instances must be at least 1", spec.name));
    }
    if spec.ranks_per_node == 0 || !spec.world_size.is_multiple_of(spec.ranks_per_node) {
        return bad(format!(
            "program `{}`: ranks_per_node {} does not divide world_size {}",
            spec.name, spec.ranks_per_node, spec.world_size
        ));
    }
    if spec.inplace && matches!(spec.collective, Collective::Test | Collective::Custom) && spec.input_chunks.is_some() {
        // Test collectives with explicit buffers are never in place.
        return bad(format!(
            "program `{}`: a test collective with explicit chunk counts cannot be in place",
            spec.name
        ));
    }
    Ok(())
}

impl<'p, P: ProtocolKind> Program<'p, P> {
    /// The plan name.
    pub fn name(&self) -> String {
        self.ctx.state.borrow().spec.name.clone()
    }
    /// The collective.
    pub fn collective(&self) -> Collective {
        self.ctx.state.borrow().spec.collective
    }
    /// Number of ranks.
    pub fn world_size(&self) -> usize {
        self.ctx.state.borrow().spec.world_size
    }
    /// Number of ranks (the same as [`Program::world_size`]).
    pub fn rank_count(&self) -> usize {
        self.world_size()
    }
    /// Ranks per node.
    pub fn ranks_per_node(&self) -> usize {
        self.ctx.state.borrow().spec.ranks_per_node
    }
    /// Number of nodes: `world_size / ranks_per_node`.
    pub fn node_count(&self) -> usize {
        let s = self.ctx.state.borrow();
        s.spec.world_size / s.spec.ranks_per_node.max(1)
    }
    /// Number of instances the lowering will replicate the program into.
    pub fn instances(&self) -> usize {
        self.ctx.state.borrow().spec.instances
    }
    /// Whether the collective runs in place.
    pub fn inplace(&self) -> bool {
        self.ctx.state.borrow().spec.inplace
    }
    /// Chunks per rank of the collective's smaller buffer.
    pub fn chunk_factor(&self) -> usize {
        self.ctx.state.borrow().spec.chunk_factor
    }
    /// The protocol.
    pub fn protocol(&self) -> Protocol {
        P::PROTOCOL
    }
    /// The root rank of a broadcast (default 0).
    pub fn root(&self) -> usize {
        self.ctx.state.borrow().spec.root.unwrap_or(0)
    }

    /// Sets the chunks per rank of the collective's smaller buffer (MSCCL++'s `chunk_factor`): the program then
    /// addresses its buffers in finer chunks, e.g. to move a slice in several rounds. Call it first: it fails
    /// once a channel, scratch buffer or operation exists, because buffers taken before would keep the old chunk
    /// size. A test collective with explicit chunk counts keeps them.
    #[track_caller]
    pub fn set_chunk_factor(&mut self, chunk_factor: usize) -> Result<&mut Self, ProgramError> {
        let at = super::line::here();
        let mut s = self.ctx.state.borrow_mut();
        if chunk_factor == 0 {
            return Err(ProgramError::custom("the chunk factor must be at least 1").at_call("set_chunk_factor", at));
        }
        let started = !s.channels.is_empty()
            || s.ranks.iter().any(|r| r.scratch > 0 || r.tbs.values().any(|tb| !tb.ops.is_empty()));
        if started {
            return Err(ProgramError::custom(
                "set_chunk_factor must come before any channel, scratch buffer or operation of the program",
            )
            .at_call("set_chunk_factor", at));
        }
        s.spec.chunk_factor = chunk_factor;
        let (input, output) = s.spec.collective_chunks();
        s.input_chunks = input;
        s.output_chunks = output;
        drop(s);
        Ok(self)
    }
    /// Sets the kernel's threads per block (1..=1024).
    pub fn set_threads_per_block(&mut self, threads: u32) -> &mut Self {
        self.ctx.state.borrow_mut().options.num_threads_per_block = threads;
        self
    }
    /// Doubles the scratch buffer and alternates halves per launch.
    pub fn set_double_scratch(&mut self, on: bool) -> &mut Self {
        self.ctx.state.borrow_mut().options.use_double_scratch_buffer = on;
        self
    }
    /// Sets the buffer alignment in bytes (the granularity of the chunk math).
    pub fn set_buffer_alignment(&mut self, bytes: u64) -> &mut Self {
        self.ctx.state.borrow_mut().options.buffer_alignment = bytes;
        self
    }
    /// Keeps one executor context per plan regardless of buffers.
    pub fn set_reuse_resources(&mut self, on: bool) -> &mut Self {
        self.ctx.state.borrow_mut().options.reuse_resources = on;
        self
    }
    /// Turns operation fusion on or off.
    pub fn set_instr_fusion(&mut self, on: bool) -> &mut Self {
        self.ctx.state.borrow_mut().options.instr_fusion = on;
        self
    }
    /// Turns automatic `nop` insertion between conflicting local accesses on or off.
    pub fn set_auto_sync(&mut self, on: bool) -> &mut Self {
        self.ctx.state.borrow_mut().options.auto_sync = on;
        self
    }
    /// Sets the accepted message-size range in bytes.
    pub fn set_message_range(&mut self, min: u64, max: u64) -> &mut Self {
        let mut s = self.ctx.state.borrow_mut();
        s.options.min_message_size = min;
        s.options.max_message_size = max;
        self
    }

    /// Turns the per-channel signal/wait check of the build on (the default) or off. With it off, only the totals
    /// per rank pair and channel type must balance: for lowering tests and hand-written plans whose channels do
    /// not pair in creation order on purpose. A collective run on such a plan deadlocks.
    pub fn set_channel_pairing_check(&mut self, on: bool) -> &mut Self {
        self.ctx.state.borrow_mut().options.check_channel_pairs = on;
        self
    }

    /// A rank, for its local operations (copy, reduce, barrier, ...).
    #[track_caller]
    pub fn rank(&self, rank: usize) -> Result<Rank<'p, P>, ProgramError> {
        let at = super::line::here();
        self.ctx.state.borrow().check_rank(rank, "rank").map_err(|e| e.at_call("rank", at))?;
        Ok(Rank::new(self.ctx, rank))
    }

    /// The input buffer of `rank`. In an in-place AllGather it is this rank's slice of the output buffer.
    #[track_caller]
    pub fn input(&self, rank: usize) -> Result<Buffer<'p, Input>, ProgramError> {
        let s = self.ctx.state.borrow();
        let at = super::line::here();
        s.check_rank(rank, "input").map_err(|e| e.at_call("input", at))?;
        let f = s.input_chunks;
        Ok(match (s.spec.collective, s.spec.inplace) {
            (Collective::AllGather, true) => Buffer::new(rank, BufferType::Output, rank * f, f),
            _ => Buffer::new(rank, BufferType::Input, 0, f),
        })
    }

    /// The output buffer of `rank`. In an in-place ReduceScatter it is slice `rank` of the input buffer; in an
    /// in-place AllReduce, AllToAll, SendRecv or Broadcast it is the input buffer itself.
    #[track_caller]
    pub fn output(&self, rank: usize) -> Result<Buffer<'p, Output>, ProgramError> {
        let s = self.ctx.state.borrow();
        let at = super::line::here();
        s.check_rank(rank, "output").map_err(|e| e.at_call("output", at))?;
        let o = s.output_chunks;
        Ok(match (s.spec.collective, s.spec.inplace) {
            (Collective::ReduceScatter, true) => Buffer::new(rank, BufferType::Input, rank * o, o),
            (Collective::AllReduce | Collective::AllToAll | Collective::SendRecv | Collective::Broadcast, true) => {
                Buffer::new(rank, BufferType::Input, 0, o)
            }
            _ => Buffer::new(rank, BufferType::Output, 0, o),
        })
    }

    /// Allocates `n_chunks` chunks at the end of `rank`'s scratch buffer.
    #[track_caller]
    pub fn scratch(&self, rank: usize, n_chunks: usize) -> Result<Buffer<'p, Scratch>, ProgramError> {
        let mut s = self.ctx.state.borrow_mut();
        let at = super::line::here();
        s.check_rank(rank, "scratch").map_err(|e| e.at_call("scratch", at))?;
        let rs = &mut s.ranks[rank];
        let offset = rs.scratch;
        rs.scratch += n_chunks;
        Ok(Buffer::new(rank, BufferType::Scratch, offset, n_chunks))
    }

    /// A thread-block group (duplicates are refused).
    #[track_caller]
    pub fn tb_group(&self, tbs: &[usize]) -> Result<ThreadBlockGroup, ProgramError> {
        ThreadBlockGroup::new(tbs)
    }

    /// A memory channel from `src_rank` to `dst_rank`; its operations run on `src_rank`. Each call creates a new
    /// channel (one connection and one semaphore); the k-th channel `a → b` pairs with the k-th channel `b → a`,
    /// and a signal on one is waited for on the other. The build checks this pair by pair: at 2 ranks a ring's
    /// "next" and "prev" channels reach the same peer, so create one channel per peer and use it both ways.
    #[track_caller]
    pub fn memory_channel(&self, dst_rank: usize, src_rank: usize) -> Result<Channel<'p, P, Memory>, ProgramError> {
        let index = self.peer_channel(ChannelType::Memory, dst_rank, src_rank, "memory_channel")?;
        Ok(Channel::new(self.ctx, index, None))
    }

    /// A port channel from `src_rank` to `dst_rank`; its operations run on `src_rank` and are carried out by the
    /// host proxy. Channels pair as for [`Program::memory_channel`].
    #[track_caller]
    pub fn port_channel(&self, dst_rank: usize, src_rank: usize) -> Result<Channel<'p, P, Port>, ProgramError> {
        let index = self.peer_channel(ChannelType::Port, dst_rank, src_rank, "port_channel")?;
        Ok(Channel::new(self.ctx, index, None))
    }

    #[track_caller]
    fn peer_channel(&self, kind: ChannelType, dst: usize, src: usize, op: &str) -> Result<usize, ProgramError> {
        let created = super::line::here();
        let mut s = self.ctx.state.borrow_mut();
        let checked = s.check_rank(dst, op).and_then(|()| s.check_rank(src, op)).and_then(|()| {
            if dst == src {
                return Err(ProgramError::invalid(
                    Some(src),
                    None,
                    op,
                    format!("a channel connects two different ranks, but both ends are rank {src}"),
                ));
            }
            Ok(())
        });
        checked.map_err(|e| e.at_call(op, created))?;
        let id = s.ranks[src].add_peer(kind, dst);
        Ok(s.push_channel(ChannelInfo::Peer { kind, src, dst, id }, created))
    }

    /// A switch (NVLink multicast) channel over `ranks`, bound to each member's `buffer`. Pick the member that runs
    /// an operation with [`Channel::at_rank`].
    #[track_caller]
    pub fn switch_channel(&self, ranks: &[usize], buffer: BufferType) -> Result<Channel<'p, P, Switch>, ProgramError> {
        let created = super::line::here();
        let mut s = self.ctx.state.borrow_mut();
        let checked = (|| {
            if ranks.len() < 2 {
                return Err(ProgramError::invalid(
                    None,
                    None,
                    "switch_channel",
                    format!("a switch channel needs at least two ranks, got {ranks:?}"),
                ));
            }
            for (i, &r) in ranks.iter().enumerate() {
                s.check_rank(r, "switch_channel")?;
                if ranks[..i].contains(&r) {
                    return Err(ProgramError::invalid(
                        Some(r),
                        None,
                        "switch_channel",
                        format!("rank {r} appears twice in {ranks:?}"),
                    ));
                }
            }
            Ok(())
        })();
        checked.map_err(|e| e.at_call("switch_channel", created))?;
        let mut ids = Vec::new();
        for &r in ranks {
            let rs = &mut s.ranks[r];
            rs.switches.push(super::ir::SwitchDecl { buffer, ranks: ranks.to_vec() });
            ids.push((r, (rs.switches.len() - 1) as u32));
        }
        let index = s.push_channel(ChannelInfo::Switch { buffer, ranks: ranks.to_vec(), ids }, created);
        Ok(Channel::new(self.ctx, index, None))
    }

    /// A device semaphore of `rank` with an initial value, for ordering thread blocks of one rank.
    #[track_caller]
    pub fn semaphore(&self, rank: usize, initial_value: i64) -> Result<Semaphore<'p>, ProgramError> {
        let at = super::line::here();
        let mut s = self.ctx.state.borrow_mut();
        s.check_rank(rank, "semaphore").map_err(|e| e.at_call("semaphore", at))?;
        let rs = &mut s.ranks[rank];
        rs.semaphores.push(initial_value);
        Ok(Semaphore::new(self.ctx, rank, rs.semaphores.len() - 1))
    }

    /// Synchronises thread blocks `tbs` of `rank`: one thread block gets a `nop`, several a `barrier`.
    #[track_caller]
    pub fn barrier(&self, rank: usize, tbs: &[usize]) -> Result<(), ProgramError> {
        self.rank(rank)?.barrier(tbs)
    }

    /// Runs `body` as a pipelined loop: every operation it records becomes part of one `pipeline` operation per
    /// thread block, executed `ceil(num_chunks · chunk_size / unit_size)` times with data offsets advancing by
    /// `unit_size` bytes. Data operations inside should span exactly `num_chunks` chunks. Pipelines do not nest.
    #[track_caller]
    pub fn pipeline(
        &mut self,
        unit_size: u64,
        num_chunks: usize,
        body: impl FnOnce(&mut Self) -> Result<(), ProgramError>,
    ) -> Result<(), ProgramError> {
        let at = super::line::here();
        {
            let mut s = self.ctx.state.borrow_mut();
            if let Some(p) = s.pipeline {
                return Err(ProgramError::invalid(
                    None,
                    None,
                    "pipeline",
                    format!("pipelines do not nest: pipeline {} is still open", p.id),
                )
                .at_call("pipeline", at));
            }
            if unit_size == 0 || num_chunks == 0 {
                return Err(ProgramError::invalid(
                    None,
                    None,
                    "pipeline",
                    "a pipeline needs a positive unit size and at least one chunk",
                )
                .at_call("pipeline", at));
            }
            let id = s.next_pipeline;
            s.next_pipeline += 1;
            s.pipeline = Some(PipelineCtx { id, at, unit_size, num_chunks });
        }
        let result = body(self);
        let mut s = self.ctx.state.borrow_mut();
        let ctx = s.pipeline.take();
        result?;
        if let Some(ctx) = ctx {
            lower::close_pipeline(&mut s, ctx);
        }
        Ok(())
    }
}
