//! Local operations of one rank (copy, reduce, packets, barriers) and device semaphores.

use std::marker::PhantomData;

use super::buffer::Chunk;
use super::channel::Channel;
use super::error::ProgramError;
use super::ir::IrOp;
use super::kinds::{ChunkKind, DirectChannel, PacketBuffer, PacketProtocol, ProtocolKind};
use super::refs::{check_on_rank, check_same_size, local_ref, remote_ref};
use super::state::{Brand, Ctx};
use super::sync_type::SyncType;
use super::tb::Tb;
use crate::plan::{OpName, Operation, ReduceOp};

/// One rank of a program: its local operations.
///
/// ```
/// use mscclpp_lang::prelude::*;
/// let spec = ProgramSpec::new("reduce_two", Collective::Test, 1).buffer_chunks(2, 1);
/// let plan = build_plan::<Simple>(&spec, |p| {
///     let input = p.input(0)?;
///     let out = p.output(0)?.chunk(0)?;
///     p.rank(0)?.reduce(out, input.chunk(0)?, &[input.chunk(1)?], 0, ReduceOp::Sum)
/// })
/// .unwrap();
/// assert_eq!(plan.gpus[0].threadblocks[0].ops[0].name, OpName::Reduce);
/// ```
#[derive(Clone, Copy)]
pub struct Rank<'p, P: ProtocolKind> {
    ctx: &'p Ctx,
    rank: usize,
    _brand: Brand<'p>,
    _protocol: PhantomData<P>,
}

impl<'p, P: ProtocolKind> std::fmt::Debug for Rank<'p, P> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Rank({})", self.rank)
    }
}

impl<'p, P: ProtocolKind> Rank<'p, P> {
    pub(crate) fn new(ctx: &'p Ctx, rank: usize) -> Self {
        Rank { ctx, rank, _brand: PhantomData, _protocol: PhantomData }
    }
    /// The rank id.
    pub fn id(&self) -> usize {
        self.rank
    }

    #[track_caller]
    fn local_copy<D: ChunkKind, S: ChunkKind>(
        &self,
        name: OpName,
        origin: &'static str,
        dst: Chunk<'p, D>,
        src: Chunk<'p, S>,
        tb: Tb,
    ) -> Result<(), ProgramError> {
        let at = super::line::here();
        tb.locate((origin, at), || {
            check_on_rank(&dst, self.rank, origin, "destination")?;
            check_on_rank(&src, self.rank, origin, "source")?;
            check_same_size(dst.size, src.size, self.rank, origin, "destination and source sizes differ")?;
            self.ctx.state.borrow_mut().record(self.rank, &tb, (origin, at), |_, _, tbg| {
                let mut op = Operation::new(name);
                op.src_buff = Some(vec![local_ref(&src)]);
                op.dst_buff = Some(vec![local_ref(&dst)]);
                op.tbg_info = tbg;
                Ok(IrOp::new(op, origin))
            })
        })
    }

    /// Copies `src` to `dst` (`copy`); both on this rank.
    #[track_caller]
    pub fn copy<D: ChunkKind, S: ChunkKind>(
        &self,
        dst: Chunk<'p, D>,
        src: Chunk<'p, S>,
        tb: impl Into<Tb>,
    ) -> Result<(), ProgramError> {
        self.local_copy(OpName::Copy, "copy", dst, src, tb.into())
    }

    /// Packs `src` into LL packets in scratch chunk `dst` (`cpkt`).
    #[track_caller]
    pub fn copy_packets<D: PacketBuffer, S: ChunkKind>(
        &self,
        dst: Chunk<'p, D>,
        src: Chunk<'p, S>,
        tb: impl Into<Tb>,
    ) -> Result<(), ProgramError>
    where
        P: PacketProtocol,
    {
        self.local_copy(OpName::CopyPackets, "copy_packets", dst, src, tb.into())
    }

    /// Unpacks the LL packets of scratch chunk `src` into `dst` (`upkt`), waiting for each packet's flag.
    #[track_caller]
    pub fn unpack_packets<D: ChunkKind, S: PacketBuffer>(
        &self,
        dst: Chunk<'p, D>,
        src: Chunk<'p, S>,
        tb: impl Into<Tb>,
    ) -> Result<(), ProgramError>
    where
        P: PacketProtocol,
    {
        self.local_copy(OpName::UnpackPackets, "unpack_packets", dst, src, tb.into())
    }

    #[track_caller]
    fn local_reduce<D: ChunkKind, S: ChunkKind, O: ChunkKind>(
        &self,
        (name, origin): (OpName, &'static str),
        dst: Chunk<'p, D>,
        src: Chunk<'p, S>,
        others: &[Chunk<'p, O>],
        tb: Tb,
        reduce_op: ReduceOp,
    ) -> Result<(), ProgramError> {
        let at = super::line::here();
        tb.locate((origin, at), || {
            check_on_rank(&dst, self.rank, origin, "destination")?;
            check_on_rank(&src, self.rank, origin, "source")?;
            check_same_size(dst.size, src.size, self.rank, origin, "destination and source sizes differ")?;
            if others.is_empty() {
                return Err(ProgramError::invalid(
                    Some(self.rank),
                    None,
                    origin,
                    "a reduction needs at least one other chunk to combine with the source",
                ));
            }
            for o in others {
                check_on_rank(o, self.rank, origin, "other source")?;
                check_same_size(
                    o.size,
                    src.size,
                    self.rank,
                    origin,
                    "another source's size differs from the source's",
                )?;
            }
            self.ctx.state.borrow_mut().record(self.rank, &tb, (origin, at), |_, _, tbg| {
                let mut op = Operation::new(name);
                let mut srcs = vec![local_ref(&src)];
                srcs.extend(others.iter().map(local_ref));
                op.src_buff = Some(srcs);
                op.dst_buff = Some(vec![local_ref(&dst)]);
                op.reduce_op = Some(reduce_op);
                op.tbg_info = tbg;
                Ok(IrOp::new(op, origin))
            })
        })
    }

    /// `dst = src ⊕ others[0] ⊕ ...` (`re`); all on this rank. `dst` may be `src`.
    #[track_caller]
    pub fn reduce<D: ChunkKind, S: ChunkKind, O: ChunkKind>(
        &self,
        dst: Chunk<'p, D>,
        src: Chunk<'p, S>,
        others: &[Chunk<'p, O>],
        tb: impl Into<Tb>,
        reduce_op: ReduceOp,
    ) -> Result<(), ProgramError> {
        self.local_reduce((OpName::Reduce, "reduce"), dst, src, others, tb.into(), reduce_op)
    }

    /// `dst = local_src ⊕ remotes...` (`rre`) with each remote chunk read through its own channel: one pass that
    /// loads from several peers at once, where [`Channel::read_reduce`] reads one peer. Every channel must run on
    /// this rank and reach the rank of its chunk; all chunks have the size of `dst`. A following
    /// [`Channel::put`] of `dst` on the same thread blocks fuses into the same pass (`rres`).
    #[track_caller]
    pub fn read_reduce<D: ChunkKind, S: ChunkKind, R: ChunkKind, K: DirectChannel>(
        &self,
        dst: Chunk<'p, D>,
        local_src: Chunk<'p, S>,
        remotes: &[(Channel<'p, P, K>, Chunk<'p, R>)],
        tb: impl Into<Tb>,
        reduce_op: ReduceOp,
    ) -> Result<(), ProgramError> {
        let origin = "read_reduce";
        let tb = tb.into();
        let at = super::line::here();
        tb.locate((origin, at), || {
            check_on_rank(&dst, self.rank, origin, "destination")?;
            check_on_rank(&local_src, self.rank, origin, "local source")?;
            check_same_size(dst.size, local_src.size, self.rank, origin, "destination and local source sizes differ")?;
            if remotes.is_empty() {
                return Err(ProgramError::invalid(
                    Some(self.rank),
                    None,
                    origin,
                    "needs at least one (channel, remote chunk) pair",
                ));
            }
            let mut peers = Vec::with_capacity(remotes.len());
            for (ch, chunk) in remotes {
                let (kind, src, peer, id) = ch.peer(origin)?;
                if src != self.rank {
                    return Err(ProgramError::invalid(
                        Some(self.rank),
                        None,
                        origin,
                        format!("a channel runs on rank {src}, but this operation runs on rank {}", self.rank),
                    ));
                }
                if chunk.rank != peer {
                    return Err(ProgramError::invalid(
                        Some(self.rank),
                        None,
                        origin,
                        format!("a remote chunk is on rank {}, but its channel reaches rank {peer}", chunk.rank),
                    ));
                }
                check_same_size(chunk.size, dst.size, self.rank, origin, "a remote source's size differs")?;
                peers.push((kind, id));
            }
            self.ctx.state.borrow_mut().record(self.rank, &tb, (origin, at), |rs, t, tbg| {
                let mut srcs = vec![local_ref(&local_src)];
                let mut channels = Vec::with_capacity(remotes.len());
                for ((kind, id), (_, chunk)) in peers.iter().zip(remotes) {
                    channels.push(rs.tb(t).channel(*kind, *id));
                    srcs.push(remote_ref(rs, t, *kind, chunk));
                }
                let mut op = Operation::new(OpName::ReadReduce);
                op.src_buff = Some(srcs);
                op.dst_buff = Some(vec![local_ref(&dst)]);
                op.channel_ids = Some(channels);
                op.channel_type = peers.first().map(|(kind, _)| *kind);
                op.reduce_op = Some(reduce_op);
                op.tbg_info = tbg;
                Ok(IrOp::new(op, origin))
            })
        })
    }

    /// `dst = src ⊕ packets(others...)` (`repkt`): the other sources are LL packets in scratch.
    #[track_caller]
    pub fn reduce_packets<D: ChunkKind, S: ChunkKind, O: PacketBuffer>(
        &self,
        dst: Chunk<'p, D>,
        src: Chunk<'p, S>,
        others: &[Chunk<'p, O>],
        tb: impl Into<Tb>,
        reduce_op: ReduceOp,
    ) -> Result<(), ProgramError>
    where
        P: PacketProtocol,
    {
        self.local_reduce((OpName::ReducePackets, "reduce_packets"), dst, src, others, tb.into(), reduce_op)
    }

    /// Synchronises thread blocks `tbs` of this rank: one thread block gets a `nop` (`__syncthreads()`), several a
    /// `barrier` shared by all of them.
    #[track_caller]
    pub fn barrier(&self, tbs: &[usize]) -> Result<(), ProgramError> {
        let at = super::line::here();
        let mut s = self.ctx.state.borrow_mut();
        let result = match tbs {
            [] => Err(ProgramError::invalid(
                Some(self.rank),
                None,
                "barrier",
                "a barrier needs at least one thread block",
            )),
            [t] => s.record(self.rank, &Tb::single(*t), ("barrier", at), |_, _, _| {
                Ok(IrOp::new(Operation::new(OpName::Nop), "barrier"))
            }),
            _ => {
                let group = super::tb::ThreadBlockGroup::new(tbs).map_err(|_| {
                    ProgramError::invalid(Some(self.rank), None, "barrier", format!("thread blocks {tbs:?} repeat"))
                })?;
                let rs = &mut s.ranks[self.rank];
                let mut key = tbs.to_vec();
                key.sort_unstable();
                let id = match rs.barriers.iter().position(|b| *b == key) {
                    Some(i) => i,
                    None => {
                        rs.barriers.push(key);
                        rs.barriers.len() - 1
                    }
                };
                let n = tbs.len() as u32;
                s.record(self.rank, &Tb::from(group), ("barrier", at), |_, _, _| {
                    let mut op = Operation::new(OpName::Barrier);
                    op.barrier_id = Some(id as u32);
                    op.num_threadblocks = Some(n);
                    Ok(IrOp::new(op, "barrier"))
                })
            }
        };
        result.map_err(|e| e.at_call("barrier", at))
    }
}

/// A device semaphore of one rank: `release` adds one, `acquire` waits until it can take one. Thread blocks of the
/// rank use it to hand work to each other. Every launch must leave it balanced.
#[derive(Clone, Copy)]
pub struct Semaphore<'p> {
    ctx: &'p Ctx,
    rank: usize,
    id: usize,
    _brand: Brand<'p>,
}

impl<'p> std::fmt::Debug for Semaphore<'p> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Semaphore(rank {}, id {})", self.rank, self.id)
    }
}

impl<'p> Semaphore<'p> {
    pub(crate) fn new(ctx: &'p Ctx, rank: usize, id: usize) -> Self {
        Semaphore { ctx, rank, id, _brand: PhantomData }
    }
    /// The owning rank.
    pub fn rank(&self) -> usize {
        self.rank
    }
    /// The semaphore's id on its rank.
    pub fn id(&self) -> usize {
        self.id
    }
    #[track_caller]
    fn op(&self, name: OpName, origin: &'static str, tb: Tb, sync: SyncType) -> Result<(), ProgramError> {
        let at = super::line::here();
        tb.locate((origin, at), || self.record_op(name, origin, at, &tb, sync))
    }
    fn record_op(
        &self,
        name: OpName,
        origin: &'static str,
        at: super::line::Line,
        tb: &Tb,
        sync: SyncType,
    ) -> Result<(), ProgramError> {
        if tb.group().is_some() {
            return Err(ProgramError::invalid(
                Some(self.rank),
                None,
                origin,
                "takes a single thread block, not a group",
            ));
        }
        let id = self.id as u32;
        self.ctx.state.borrow_mut().record(self.rank, tb, (origin, at), |_, _, _| {
            let mut op = Operation::new(name);
            op.semaphore_ids = Some(vec![id]);
            let mut ir = IrOp::new(op, origin);
            ir.sync = sync;
            Ok(ir)
        })
    }
    /// Waits until the semaphore is positive and decrements it (`sem_acquire`).
    #[track_caller]
    pub fn acquire(&self, tb: impl Into<Tb>, sync: SyncType) -> Result<(), ProgramError> {
        self.op(OpName::SemAcquire, "acquire", tb.into(), sync)
    }
    /// Increments the semaphore (`sem_release`).
    #[track_caller]
    pub fn release(&self, tb: impl Into<Tb>, sync: SyncType) -> Result<(), ProgramError> {
        self.op(OpName::SemRelease, "release", tb.into(), sync)
    }
}
