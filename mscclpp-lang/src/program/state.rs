//! The state behind every handle of one program under construction ([`Ctx`], [`State`]): buffers' chunk counts,
//! ranks and their thread blocks' operations, channels, the open pipeline, the signals and waits counted for the
//! pairing check. The handles (`buffer`, `channel`, `rank`, `tb`) record into it; `builder` creates it and `lower`
//! turns it into a plan.

use std::cell::RefCell;
use std::marker::PhantomData;

use super::error::ProgramError;
use super::ir::{IrOp, RankState, Site};
use super::spec::ProgramSpec;
use super::tb::{Tb, ThreadBlockGroup};
use crate::location::Location;
use crate::plan::{BufferType, ChannelType, Protocol, TbgInfo};

/// What the program knows of a channel handle.
#[derive(Debug, Clone)]
pub(crate) enum ChannelInfo {
    /// A memory or port channel: operations run on `src` and reach `dst`; `id` is its index among `src`'s
    /// channels of that kind.
    Peer { kind: ChannelType, src: usize, dst: usize, id: u32 },
    /// A switch channel: each member's id among its switch channels.
    Switch { buffer: BufferType, ranks: Vec<usize>, ids: Vec<(usize, u32)> },
}

/// The brand of a program: an invariant lifetime carried by every handle, so that handles cannot leave the program
/// function nor be used in another program.
pub(crate) type Brand<'p> = PhantomData<fn(&'p ()) -> &'p ()>;

/// An active pipeline (loop) context.
#[derive(Debug, Clone, Copy)]
pub(crate) struct PipelineCtx {
    pub id: usize,
    /// Where the program opened it.
    pub at: Line,
    pub unit_size: u64,
    pub num_chunks: usize,
}

/// Program options settable by the program itself (defaults from the spec).
#[derive(Debug, Clone)]
pub(crate) struct Options {
    pub num_threads_per_block: u32,
    pub use_double_scratch_buffer: bool,
    pub buffer_alignment: u64,
    pub reuse_resources: bool,
    pub instr_fusion: bool,
    pub auto_sync: bool,
    pub min_message_size: u64,
    pub max_message_size: u64,
    /// Whether the build checks signals and waits channel pair by channel pair (not only per rank pair).
    pub check_channel_pairs: bool,
}

/// The state of a program under construction.
#[derive(Debug)]
pub(crate) struct State {
    pub spec: ProgramSpec,
    pub protocol: Protocol,
    pub options: Options,
    /// Input and output chunks per rank (before replication).
    pub input_chunks: usize,
    pub output_chunks: usize,
    pub ranks: Vec<RankState>,
    pub channels: Vec<ChannelInfo>,
    pub pipeline: Option<PipelineCtx>,
    pub next_pipeline: usize,
    /// The source lines of the signals per (signalling rank, waiting rank, channel type).
    pub signals: Vec<SyncLines>,
    /// The source lines of the waits per (signalling rank, waiting rank, channel type).
    pub waits: Vec<SyncLines>,
    /// Per channel (same index as `channels`): where it was created and the signals and waits on it.
    pub channel_uses: Vec<ChannelUse>,
}

pub(crate) use super::line::Line;

/// The source lines of the signals (or waits) from one rank to another over one channel type: (signalling rank,
/// waiting rank, channel type) and the lines.
pub(crate) type SyncLines = ((usize, usize, ChannelType), Vec<Line>);

/// Where a channel was created and where it signals and waits, for the per-channel pairing check.
#[derive(Debug, Clone)]
pub(crate) struct ChannelUse {
    /// The program source line that created the channel.
    pub created: Line,
    /// The source lines of the signals sent over the channel (`signal`, `relaxed_signal`, puts with signal).
    pub signals: Vec<Line>,
    /// The source lines of the waits performed on the channel (`wait`, `relaxed_wait`).
    pub waits: Vec<Line>,
}

fn bump(list: &mut Vec<SyncLines>, key: (usize, usize, ChannelType), at: Line) {
    match list.iter_mut().find(|(k, _)| *k == key) {
        Some((_, lines)) => lines.push(at),
        None => list.push((key, vec![at])),
    }
}

impl State {
    pub(crate) fn new(spec: &ProgramSpec, protocol: Protocol) -> Self {
        let (input_chunks, output_chunks) = spec.collective_chunks();
        State {
            spec: spec.clone(),
            protocol,
            options: Options {
                num_threads_per_block: spec.num_threads_per_block,
                use_double_scratch_buffer: spec.use_double_scratch_buffer,
                buffer_alignment: spec.buffer_alignment,
                reuse_resources: spec.reuse_resources,
                instr_fusion: spec.instr_fusion,
                auto_sync: spec.auto_sync,
                min_message_size: spec.min_message_size,
                max_message_size: spec.max_message_size,
                check_channel_pairs: true,
            },
            input_chunks,
            output_chunks,
            ranks: (0..spec.world_size).map(|_| RankState::default()).collect(),
            channels: Vec::new(),
            pipeline: None,
            next_pipeline: 0,
            signals: Vec::new(),
            waits: Vec::new(),
            channel_uses: Vec::new(),
        }
    }

    pub(crate) fn check_rank(&self, rank: usize, op: &str) -> Result<(), ProgramError> {
        if rank >= self.ranks.len() {
            return Err(ProgramError::RankOutOfRange {
                site: Box::new(Location::edsl_op(None, None, op)),
                rank,
                world_size: self.ranks.len(),
            });
        }
        Ok(())
    }

    pub(crate) fn count_signal(&mut self, from: usize, to: usize, kind: ChannelType, at: Line) {
        bump(&mut self.signals, (from, to, kind), at);
    }
    pub(crate) fn count_wait(&mut self, from: usize, to: usize, kind: ChannelType, at: Line) {
        bump(&mut self.waits, (from, to, kind), at);
    }
    /// Counts one signal (`wait == false`) or wait over channel `index` of `channels`, made at source line `at`.
    pub(crate) fn count_channel_use(&mut self, index: usize, wait: bool, at: Line) {
        if let Some(u) = self.channel_uses.get_mut(index) {
            if wait {
                u.waits.push(at);
            } else {
                u.signals.push(at);
            }
        }
    }
    pub(crate) fn push_channel(&mut self, info: ChannelInfo, created: Line) -> usize {
        self.channels.push(info);
        self.channel_uses.push(ChannelUse { created, signals: Vec::new(), waits: Vec::new() });
        self.channels.len() - 1
    }

    /// Records one operation per thread block named by `tb` on `rank`, made by the call `origin` at source line
    /// `at`. `build` gets the thread block's state (to register channels and remote buffers) and the group slice,
    /// and returns the operation.
    pub(crate) fn record(
        &mut self,
        rank: usize,
        tb: &Tb,
        (origin, at): Site,
        mut build: impl FnMut(&mut RankState, usize, Option<TbgInfo>) -> Result<IrOp, ProgramError>,
    ) -> Result<(), ProgramError> {
        self.check_rank(rank, origin)?;
        let ids = tb.ids(origin).map_err(|e| at_rank(e, rank))?;
        let group: Option<ThreadBlockGroup> = tb.group().cloned();
        let pipeline = self.pipeline.map(|p| p.id);
        for t in ids {
            let tbg = group
                .as_ref()
                .and_then(|g| g.position(t).map(|pos| TbgInfo { tb_id: pos as u32, tbg_size: g.len() as u32 }));
            let rs = &mut self.ranks[rank];
            rs.tb(t);
            let mut op = build(rs, t, tbg)?;
            op.pipeline = pipeline;
            op.sites = vec![(origin, at)];
            rs.tb(t).ops.push(op);
        }
        Ok(())
    }
}

fn at_rank(e: ProgramError, rank: usize) -> ProgramError {
    match e {
        ProgramError::Invalid { mut site, message } => {
            site.rank = Some(rank);
            ProgramError::Invalid { site, message }
        }
        other => other,
    }
}

/// The shared, interior-mutable state all handles of one program point to.
#[derive(Debug)]
pub(crate) struct Ctx {
    pub state: RefCell<State>,
}
