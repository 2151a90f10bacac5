//! Channels: memory, port and switch, and their operations.
//!
//! One generic [`Channel`] type carries its kind as a type parameter; each operation names the kinds it accepts
//! with a trait bound, so calling it on another kind does not compile and the compiler says why.

use std::marker::PhantomData;

use super::buffer::Chunk;
use super::error::ProgramError;
use super::ir::IrOp;
use super::kinds::{
    AnyBuffer, ChannelKind, ChunkKind, DirectChannel, Memory, MulticastChannel, PacketBuffer, PacketProtocol,
    PeerChannel, Port, ProtocolKind, ProxyChannel, Switch,
};
use super::refs::{check_on_rank, check_same_size, local_ref, remote_ref};
use super::state::{Brand, ChannelInfo, Ctx};
use super::sync_type::SyncType;
use super::tb::Tb;
use crate::plan::{BufferRef, BufferType, ChannelType, OpName, Operation, ReduceOp, TbgInfo};

/// A channel of kind `K` ([`Memory`], [`Port`] or [`Switch`]) in a program of protocol `P`.
///
/// Memory and port channels connect a source rank (where their operations run) to a destination rank. A switch
/// channel spans a group of ranks; [`Channel::at_rank`] picks the member that runs an operation.
///
/// The k-th channel created from `a` to `b` pairs with the k-th channel from `b` to `a`: a signal on one is seen
/// by a wait on the other. Signals and waits go through one semaphore per channel, so every thread block that
/// signals or waits needs its own channel. A channel belongs to its program (the brand `'p`); using it in another
/// program is error E0521 "borrowed data escapes outside of closure".
#[derive(Clone, Copy)]
pub struct Channel<'p, P: ProtocolKind, K: ChannelKind> {
    ctx: &'p Ctx,
    index: usize,
    at: Option<usize>,
    _brand: Brand<'p>,
    _kinds: PhantomData<(P, K)>,
}

/// A memory channel: direct peer memory access over NVLink or PCIe.
pub type MemoryChannel<'p, P> = Channel<'p, P, Memory>;
/// A port channel: transfers posted to the host proxy (CUDA IPC copies, InfiniBand, Ethernet).
pub type PortChannel<'p, P> = Channel<'p, P, Port>;
/// A switch channel: NVLink multicast over a group of ranks.
pub type SwitchChannel<'p, P> = Channel<'p, P, Switch>;

impl<'p, P: ProtocolKind, K: ChannelKind> std::fmt::Debug for Channel<'p, P, K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let s = self.ctx.state.borrow();
        match s.channels.get(self.index) {
            Some(ChannelInfo::Peer { kind, src, dst, id }) => write!(f, "{kind} channel {id} of rank {src} to {dst}"),
            Some(ChannelInfo::Switch { buffer, ranks, .. }) => {
                write!(f, "switch channel over {ranks:?} ({buffer})")?;
                if let Some(r) = self.at {
                    write!(f, " at rank {r}")?;
                }
                Ok(())
            }
            None => write!(f, "channel"),
        }
    }
}

fn single_tb(tb: &Tb, rank: usize, op: &str) -> Result<(), ProgramError> {
    if tb.group().is_some() {
        return Err(ProgramError::invalid(
            Some(rank),
            None,
            op,
            "takes a single thread block, not a thread-block group",
        ));
    }
    Ok(())
}

/// Checks that chunk `c`, the operation's `role` (e.g. "the destination"), lies on `peer`, the rank the channel
/// reaches.
fn check_on_peer<K: ChunkKind>(
    c: &Chunk<'_, K>,
    rank: usize,
    peer: usize,
    op: &str,
    role: &str,
) -> Result<(), ProgramError> {
    if c.rank != peer {
        return Err(ProgramError::invalid(
            Some(rank),
            None,
            op,
            format!("{role} chunk is on rank {}, but this channel reaches rank {peer}", c.rank),
        ));
    }
    Ok(())
}

impl<'p, P: ProtocolKind, K: ChannelKind> Channel<'p, P, K> {
    pub(crate) fn new(ctx: &'p Ctx, index: usize, at: Option<usize>) -> Self {
        Channel { ctx, index, at, _brand: PhantomData, _kinds: PhantomData }
    }

    /// `(kind, src, dst, id)` of a memory or port channel.
    pub(crate) fn peer(&self, op: &str) -> Result<(ChannelType, usize, usize, u32), ProgramError> {
        match self.ctx.state.borrow().channels.get(self.index) {
            Some(ChannelInfo::Peer { kind, src, dst, id }) => Ok((*kind, *src, *dst, *id)),
            _ => Err(ProgramError::invalid(None, None, op, "not a memory or port channel")),
        }
    }

    /// The rank the channel's operations run on (for a switch channel, the rank chosen with `at_rank`).
    pub fn src_rank(&self) -> Option<usize> {
        match self.ctx.state.borrow().channels.get(self.index) {
            Some(ChannelInfo::Peer { src, .. }) => Some(*src),
            _ => self.at,
        }
    }
    /// The peer a memory or port channel reaches.
    pub fn dst_rank(&self) -> Option<usize> {
        match self.ctx.state.borrow().channels.get(self.index) {
            Some(ChannelInfo::Peer { dst, .. }) => Some(*dst),
            _ => None,
        }
    }

    #[track_caller]
    fn sync_op(&self, name: OpName, origin: &'static str, tb: Tb, sync: SyncType) -> Result<(), ProgramError> {
        let at = super::line::here();
        tb.locate((origin, at), || {
            let (kind, src, dst, id) = self.peer(origin)?;
            single_tb(&tb, src, origin)?;
            let mut s = self.ctx.state.borrow_mut();
            s.record(src, &tb, (origin, at), |rs, t, _| {
                let local = rs.tb(t).channel(kind, id);
                let mut op = Operation::new(name);
                op.channel_ids = Some(vec![local]);
                op.channel_type = Some(kind);
                let mut ir = IrOp::new(op, origin);
                ir.sync = sync;
                Ok(ir)
            })?;
            match name {
                OpName::Signal | OpName::RelaxedSignal => {
                    s.count_signal(src, dst, kind, at);
                    s.count_channel_use(self.index, false, at);
                }
                OpName::Wait | OpName::RelaxedWait => {
                    s.count_wait(dst, src, kind, at);
                    s.count_channel_use(self.index, true, at);
                }
                _ => {}
            }
            Ok(())
        })
    }

    /// A data transfer from local chunks to the peer: put, put_packets, read_put_packets, pws, pwsf.
    #[track_caller]
    fn transfer<D: ChunkKind, S: ChunkKind>(
        &self,
        name: OpName,
        origin: &'static str,
        dst: Chunk<'p, D>,
        src: Chunk<'p, S>,
        tb: Tb,
    ) -> Result<(), ProgramError> {
        let at = super::line::here();
        tb.locate((origin, at), || {
            let (kind, rank, peer, id) = self.peer(origin)?;
            check_on_rank(&src, rank, origin, "source")?;
            check_on_peer(&dst, rank, peer, origin, "the destination")?;
            check_same_size(dst.size, src.size, rank, origin, "destination and source sizes differ")?;
            if kind == ChannelType::Port {
                single_tb(&tb, rank, origin)?;
            }
            let mut s = self.ctx.state.borrow_mut();
            s.record(rank, &tb, (origin, at), |rs, t, tbg| {
                let local = rs.tb(t).channel(kind, id);
                let remote = remote_ref(rs, t, kind, &dst);
                let mut op = Operation::new(name);
                op.src_buff = Some(vec![local_ref(&src)]);
                op.dst_buff = Some(vec![remote]);
                op.channel_ids = Some(vec![local]);
                op.channel_type = Some(kind);
                op.tbg_info = tbg;
                Ok(IrOp::new(op, origin))
            })?;
            if name.is_put_with_signal() {
                s.count_signal(rank, peer, kind, at);
                s.count_channel_use(self.index, false, at);
            }
            Ok(())
        })
    }
}

impl<'p, P: ProtocolKind, K: ChannelKind> Channel<'p, P, K> {
    /// Signals the peer (`signal`): the peer's matching `wait` on its channel back to this rank returns.
    /// `sync` places `nop`s so that this thread block's earlier data operations complete first (default
    /// [`SyncType::Both`]).
    #[track_caller]
    pub fn signal(&self, tb: impl Into<Tb>, sync: SyncType) -> Result<(), ProgramError>
    where
        K: PeerChannel,
    {
        self.sync_op(OpName::Signal, "signal", tb.into(), sync)
    }

    /// Waits for one signal of the peer (`wait`).
    #[track_caller]
    pub fn wait(&self, tb: impl Into<Tb>, sync: SyncType) -> Result<(), ProgramError>
    where
        K: PeerChannel,
    {
        self.sync_op(OpName::Wait, "wait", tb.into(), sync)
    }

    /// Copies local chunk `src` to chunk `dst` of the peer (`put`). A memory channel may spread it over a
    /// thread-block group.
    #[track_caller]
    pub fn put<D: ChunkKind, S: ChunkKind>(
        &self,
        dst: Chunk<'p, D>,
        src: Chunk<'p, S>,
        tb: impl Into<Tb>,
    ) -> Result<(), ProgramError>
    where
        K: PeerChannel,
    {
        self.transfer(OpName::Put, "put", dst, src, tb.into())
    }

    /// Sends local data `src` as LL packets into the peer's scratch chunk `dst` (`ppkt`).
    #[track_caller]
    pub fn put_packets<D: PacketBuffer, S: ChunkKind>(
        &self,
        dst: Chunk<'p, D>,
        src: Chunk<'p, S>,
        tb: impl Into<Tb>,
    ) -> Result<(), ProgramError>
    where
        P: PacketProtocol,
        K: PeerChannel,
    {
        self.transfer(OpName::PutPackets, "put_packets", dst, src, tb.into())
    }

    /// Forwards the LL packets of local scratch chunk `src` into the peer's scratch chunk `dst` (`rppkt`).
    #[track_caller]
    pub fn read_put_packets<D: PacketBuffer, S: PacketBuffer>(
        &self,
        dst: Chunk<'p, D>,
        src: Chunk<'p, S>,
        tb: impl Into<Tb>,
    ) -> Result<(), ProgramError>
    where
        P: PacketProtocol,
        K: PeerChannel,
    {
        self.transfer(OpName::ReadPutPackets, "read_put_packets", dst, src, tb.into())
    }
}

impl<'p, P: ProtocolKind, K: ChannelKind> Channel<'p, P, K> {
    /// A relaxed signal (`rlxsignal`): orders execution only, not memory; for handshakes that guard no data.
    #[track_caller]
    pub fn relaxed_signal(&self, tb: impl Into<Tb>, sync: SyncType) -> Result<(), ProgramError>
    where
        K: DirectChannel,
    {
        self.sync_op(OpName::RelaxedSignal, "relaxed_signal", tb.into(), sync)
    }

    /// A relaxed wait (`rlxwait`), the partner of [`Channel::relaxed_signal`].
    #[track_caller]
    pub fn relaxed_wait(&self, tb: impl Into<Tb>, sync: SyncType) -> Result<(), ProgramError>
    where
        K: DirectChannel,
    {
        self.sync_op(OpName::RelaxedWait, "relaxed_wait", tb.into(), sync)
    }

    /// Copies the peer's chunk `src` into local chunk `dst` (`get`).
    #[track_caller]
    pub fn get<D: ChunkKind, S: ChunkKind>(
        &self,
        dst: Chunk<'p, D>,
        src: Chunk<'p, S>,
        tb: impl Into<Tb>,
    ) -> Result<(), ProgramError>
    where
        K: DirectChannel,
    {
        let origin = "get";
        let tb = tb.into();
        let at = super::line::here();
        tb.locate((origin, at), || {
            let (kind, rank, peer, id) = self.peer(origin)?;
            check_on_rank(&dst, rank, origin, "destination")?;
            check_on_peer(&src, rank, peer, origin, "the source")?;
            check_same_size(dst.size, src.size, rank, origin, "destination and source sizes differ")?;
            self.ctx.state.borrow_mut().record(rank, &tb, (origin, at), |rs, t, tbg| {
                let local = rs.tb(t).channel(kind, id);
                let remote = remote_ref(rs, t, kind, &src);
                let mut op = Operation::new(OpName::Get);
                op.src_buff = Some(vec![remote]);
                op.dst_buff = Some(vec![local_ref(&dst)]);
                op.channel_ids = Some(vec![local]);
                op.channel_type = Some(kind);
                op.tbg_info = tbg;
                Ok(IrOp::new(op, origin))
            })
        })
    }

    /// `dst = local_src ⊕ remote_srcs...` (`rre`), reading the peer's chunks directly.
    #[track_caller]
    pub fn read_reduce<D: ChunkKind, S: ChunkKind, R: ChunkKind>(
        &self,
        dst: Chunk<'p, D>,
        local_src: Chunk<'p, S>,
        remote_srcs: &[Chunk<'p, R>],
        tb: impl Into<Tb>,
        reduce_op: ReduceOp,
    ) -> Result<(), ProgramError>
    where
        K: DirectChannel,
    {
        let origin = "read_reduce";
        let tb = tb.into();
        let at = super::line::here();
        tb.locate((origin, at), || {
            let (kind, rank, peer, id) = self.peer(origin)?;
            check_on_rank(&dst, rank, origin, "destination")?;
            check_on_rank(&local_src, rank, origin, "local source")?;
            check_same_size(dst.size, local_src.size, rank, origin, "destination and local source sizes differ")?;
            if remote_srcs.is_empty() {
                return Err(ProgramError::invalid(Some(rank), None, origin, "needs at least one remote source chunk"));
            }
            for r in remote_srcs {
                check_on_peer(r, rank, peer, origin, "a remote source")?;
                check_same_size(r.size, local_src.size, rank, origin, "a remote source's size differs")?;
            }
            self.ctx.state.borrow_mut().record(rank, &tb, (origin, at), |rs, t, tbg| {
                let local = rs.tb(t).channel(kind, id);
                let mut srcs = vec![local_ref(&local_src)];
                for r in remote_srcs {
                    srcs.push(remote_ref(rs, t, kind, r));
                }
                let mut op = Operation::new(OpName::ReadReduce);
                op.src_buff = Some(srcs);
                op.dst_buff = Some(vec![local_ref(&dst)]);
                op.channel_ids = Some(vec![local]);
                op.channel_type = Some(kind);
                op.reduce_op = Some(reduce_op);
                op.tbg_info = tbg;
                Ok(IrOp::new(op, origin))
            })
        })
    }
}

impl<'p, P: ProtocolKind, K: ChannelKind> Channel<'p, P, K> {
    /// Waits until the proxy has completed this channel's posted transfers (`flush`).
    #[track_caller]
    pub fn flush(&self, tb: impl Into<Tb>, sync: SyncType) -> Result<(), ProgramError>
    where
        K: ProxyChannel,
    {
        self.sync_op(OpName::Flush, "flush", tb.into(), sync)
    }

    /// `put` followed by a signal, in one proxy request (`pws`). Counts as a signal for pairing.
    #[track_caller]
    pub fn put_with_signal<D: ChunkKind, S: ChunkKind>(
        &self,
        dst: Chunk<'p, D>,
        src: Chunk<'p, S>,
        tb: impl Into<Tb>,
    ) -> Result<(), ProgramError>
    where
        K: ProxyChannel,
    {
        self.transfer(OpName::PutWithSignal, "put_with_signal", dst, src, tb.into())
    }

    /// `put`, signal and flush in one proxy request (`pwsf`). Counts as a signal for pairing.
    #[track_caller]
    pub fn put_with_signal_and_flush<D: ChunkKind, S: ChunkKind>(
        &self,
        dst: Chunk<'p, D>,
        src: Chunk<'p, S>,
        tb: impl Into<Tb>,
    ) -> Result<(), ProgramError>
    where
        K: ProxyChannel,
    {
        self.transfer(OpName::PutWithSignalAndFlush, "put_with_signal_and_flush", dst, src, tb.into())
    }
}

impl<'p, P: ProtocolKind, K: ChannelKind> Channel<'p, P, K> {
    /// The same switch channel, with its operations running on member `rank`.
    #[track_caller]
    pub fn at_rank(&self, rank: usize) -> Result<Self, ProgramError>
    where
        K: MulticastChannel,
    {
        let at = super::line::here();
        let s = self.ctx.state.borrow();
        s.check_rank(rank, "at_rank").map_err(|e| e.at_call("at_rank", at))?;
        let result = match s.channels.get(self.index) {
            Some(ChannelInfo::Switch { ranks, .. }) if ranks.contains(&rank) => {
                Ok(Channel::new(self.ctx, self.index, Some(rank)))
            }
            Some(ChannelInfo::Switch { ranks, .. }) => Err(ProgramError::invalid(
                Some(rank),
                None,
                "at_rank",
                format!("rank {rank} is not a member of this switch channel over {ranks:?}"),
            )),
            _ => Err(ProgramError::invalid(Some(rank), None, "at_rank", "not a switch channel")),
        };
        result.map_err(|e| e.at_call("at_rank", at))
    }

    /// The member rank and `(buffer, id on that rank, group size)` for an operation whose local chunk is on
    /// `chunk_rank`.
    fn member(&self, chunk_rank: usize, origin: &str) -> Result<(usize, BufferType, u32), ProgramError> {
        let s = self.ctx.state.borrow();
        let Some(ChannelInfo::Switch { buffer, ids, .. }) = s.channels.get(self.index) else {
            return Err(ProgramError::invalid(None, None, origin, "not a switch channel"));
        };
        let rank = self.at.unwrap_or(chunk_rank);
        if rank != chunk_rank {
            return Err(ProgramError::invalid(
                Some(rank),
                None,
                origin,
                format!("the local chunk is on rank {chunk_rank}, but the channel was taken at rank {rank}"),
            ));
        }
        let id = ids.iter().find(|(r, _)| *r == rank).map(|(_, i)| *i).ok_or_else(|| {
            ProgramError::invalid(
                Some(rank),
                None,
                origin,
                format!("rank {rank} is not a member of this switch channel"),
            )
        })?;
        Ok((rank, *buffer, id))
    }

    fn switch_len_check(&self, rank: usize, index: usize, size: usize, origin: &str) -> Result<(), ProgramError> {
        let s = self.ctx.state.borrow();
        let Some(ChannelInfo::Switch { buffer, .. }) = s.channels.get(self.index) else {
            return Ok(());
        };
        let len = match buffer {
            BufferType::Input => s.input_chunks,
            BufferType::Output => s.output_chunks,
            BufferType::Scratch => s.ranks[rank].scratch,
        };
        if index + size > len {
            return Err(ProgramError::ChunkOutOfBounds {
                site: Box::new(crate::location::Location::edsl_op(Some(rank), None, origin)),
                rank,
                buffer: buffer.long_name().to_string(),
                start: index,
                end: index + size,
                len,
            });
        }
        Ok(())
    }

    /// Multimem load-reduce: `dst = ⊕ over members of chunks [src_index, src_index + dst.size())` of the
    /// switch-bound buffer (`glre`). Follow it, on the same thread block, with a [`Channel::broadcast`] of `dst`
    /// so that the lowering fuses both into one `glres`.
    #[track_caller]
    pub fn reduce<D: ChunkKind>(
        &self,
        dst: Chunk<'p, D>,
        src_index: usize,
        tb: impl Into<Tb>,
        reduce_op: ReduceOp,
    ) -> Result<(), ProgramError>
    where
        K: MulticastChannel,
    {
        let origin = "switch reduce";
        let tb = tb.into();
        let at = super::line::here();
        tb.locate((origin, at), || {
            let (rank, buffer, id) = self.member(dst.rank, origin)?;
            single_tb(&tb, rank, origin)?;
            self.switch_len_check(rank, src_index, dst.size, origin)?;
            self.ctx.state.borrow_mut().record(rank, &tb, (origin, at), |rs, t, _tbg: Option<TbgInfo>| {
                let local = rs.tb(t).channel(ChannelType::Switch, id);
                let mut op = Operation::new(OpName::MultiLoadReduce);
                op.buffer_type = Some(buffer);
                op.buffer_offset = Some(src_index as u32);
                op.size = Some(dst.size as u32);
                let mut d = local_ref(&dst);
                d.rank = Some(rank as u32);
                op.dst_chunk = Some(d);
                op.channel_ids = Some(vec![local]);
                op.channel_type = Some(ChannelType::Switch);
                op.reduce_op = Some(reduce_op);
                Ok(IrOp::new(op, origin))
            })
        })
    }

    #[track_caller]
    fn store(
        &self,
        name: OpName,
        origin: &'static str,
        dst_index: usize,
        src: Chunk<'p, AnyBuffer>,
        tb: Tb,
    ) -> Result<(), ProgramError> {
        let at = super::line::here();
        tb.locate((origin, at), || {
            let (rank, _buffer, id) = self.member(src.rank, origin)?;
            let size = src.size;
            single_tb(&tb, rank, origin)?;
            self.switch_len_check(rank, dst_index, size, origin)?;
            self.ctx.state.borrow_mut().record(rank, &tb, (origin, at), |rs, t, _| {
                let local = rs.tb(t).channel(ChannelType::Switch, id);
                let mut op = Operation::new(name);
                let mut s = local_ref(&src);
                s.rank = Some(rank as u32);
                op.src_buff = Some(vec![s]);
                op.dst_buff = Some(vec![BufferRef::switch(local, dst_index as u32, size as u32)]);
                op.channel_ids = Some(vec![local]);
                op.channel_type = Some(ChannelType::Switch);
                Ok(IrOp::new(op, origin))
            })
        })
    }

    /// Multimem store: writes local chunk `src` to chunks `[dst_index, dst_index + src.size())` of the switch-bound
    /// buffer of every member (`gstore`).
    #[track_caller]
    pub fn broadcast<S: ChunkKind>(
        &self,
        dst_index: usize,
        src: Chunk<'p, S>,
        tb: impl Into<Tb>,
    ) -> Result<(), ProgramError>
    where
        K: MulticastChannel,
    {
        self.store(OpName::MultiStore, "broadcast", dst_index, src.erase(), tb.into())
    }

    /// Multimem store of the LL packets of local scratch chunk `src` (`gstorepkt`).
    #[track_caller]
    pub fn broadcast_packets<S: PacketBuffer>(
        &self,
        dst_index: usize,
        src: Chunk<'p, S>,
        tb: impl Into<Tb>,
    ) -> Result<(), ProgramError>
    where
        P: PacketProtocol,
        K: MulticastChannel,
    {
        self.store(OpName::MultiStorePackets, "broadcast_packets", dst_index, src.erase(), tb.into())
    }
}
