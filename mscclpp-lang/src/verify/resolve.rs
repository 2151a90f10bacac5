//! Resolution of a plan into the form the interpreter runs: tb-local channel and buffer indices become ranks,
//! rank-level channels and partner channels (the `k`-th channel of a
//! type from rank A to rank B is the partner of the `k`-th channel of that type from B to A).

use crate::location::{Location, SourceLocation};
use crate::plan::{
    BufferRef, BufferType, ChannelType, IterContext, Locator, OpName, Operation, Plan, ReduceOp, TbgInfo, ThreadBlock,
};

/// What a resolved buffer reference points at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Target {
    /// A local buffer of the executing rank.
    Local(BufferType),
    /// A buffer of another rank, through a memory or port channel.
    Remote { owner: usize, buffer: BufferType },
    /// A switch channel (rank-level switch index of the executing rank).
    Switch { chan: usize },
}

/// A resolved buffer reference.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RefR {
    pub target: Target,
    pub index: u32,
    pub size: u32,
}

/// A resolved operation.
#[derive(Debug, Clone)]
pub(crate) struct OpR {
    pub name: OpName,
    /// Index in the thread block's op list.
    pub index: usize,
    /// Index inside a pipeline.
    pub inner: Option<usize>,
    pub srcs: Vec<RefR>,
    pub dsts: Vec<RefR>,
    /// Rank-level channel indices (of `ctype`).
    pub chans: Vec<usize>,
    pub ctype: Option<ChannelType>,
    pub sems: Vec<usize>,
    pub barrier: (usize, usize),
    pub reduce: ReduceOp,
    pub tbg: Option<TbgInfo>,
    pub pipeline: Option<(IterContext, Vec<OpR>)>,
    /// The program source lines that recorded it (empty when the plan carries none).
    pub source: Vec<SourceLocation>,
}

/// One end of a memory or port channel.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ChanEnd {
    pub peer: usize,
    /// The peer's channel index (same type) that pairs with this one.
    pub partner: Option<usize>,
}

/// A switch channel declaration.
#[derive(Debug, Clone)]
pub(crate) struct SwitchDecl {
    pub buffer: BufferType,
    pub members: Vec<usize>,
}

/// A thread block.
#[derive(Debug, Clone)]
pub(crate) struct TbProg {
    pub ops: Vec<OpR>,
    /// Logical threads that run sync operations (thread i handles channel/semaphore i); one more thread stands
    /// for the rest of the block.
    pub sync_threads: usize,
}

/// A rank.
#[derive(Debug, Clone)]
pub(crate) struct RankProg {
    pub tbs: Vec<TbProg>,
    pub mem: Vec<ChanEnd>,
    pub port: Vec<ChanEnd>,
    pub switch: Vec<SwitchDecl>,
    pub sems: Vec<i64>,
}

impl RankProg {
    pub fn chans(&self, kind: ChannelType) -> &[ChanEnd] {
        match kind {
            ChannelType::Port => &self.port,
            _ => &self.mem,
        }
    }
}

/// The resolved plan.
#[derive(Debug, Clone)]
pub(crate) struct Prog {
    pub ranks: Vec<RankProg>,
}

/// A resolution error: where and what.
#[derive(Debug, Clone)]
pub(crate) struct ResolveError {
    pub location: Box<Location>,
    pub message: String,
}

fn pair(plan: &Plan, kind: ChannelType) -> Vec<Vec<ChanEnd>> {
    let peers: Vec<Vec<u32>> = plan.gpus.iter().map(|g| g.channel_peers(kind)).collect();
    peers
        .iter()
        .enumerate()
        .map(|(a, list)| {
            list.iter()
                .enumerate()
                .map(|(c, &b)| {
                    let b = b as usize;
                    let k = list[..c].iter().filter(|&&p| p as usize == b).count();
                    let partner = peers
                        .get(b)
                        .and_then(|bl| bl.iter().enumerate().filter(|(_, p)| **p as usize == a).nth(k).map(|(i, _)| i));
                    ChanEnd { peer: b, partner }
                })
                .collect()
        })
        .collect()
}

/// Resolves every rank, thread block and operation.
pub(crate) fn resolve(plan: &Plan) -> Result<Prog, ResolveError> {
    let mem = pair(plan, ChannelType::Memory);
    let port = pair(plan, ChannelType::Port);
    let world = plan.gpus.len();
    let mut ranks = Vec::with_capacity(world);
    for (r, gpu) in plan.gpus.iter().enumerate() {
        let mut switch = Vec::new();
        for decl in gpu.switch_channels() {
            for g in decl.rank_groups.iter().flatten() {
                let members: Vec<usize> = g.ranks.iter().map(|&m| m as usize).collect();
                if let Some(&bad) = members.iter().find(|&&m| m >= world) {
                    return Err(ResolveError {
                        location: Box::new(Location::rank(r)),
                        message: format!("switch channel names rank {bad}, but the plan has {world} ranks"),
                    });
                }
                switch.push(SwitchDecl { buffer: decl.switch_buffer().unwrap_or(BufferType::Scratch), members });
            }
        }
        let mut tbs = Vec::with_capacity(gpu.threadblocks.len());
        for (t, tb) in gpu.threadblocks.iter().enumerate() {
            let cx = Cx { plan, r, t, tb, switch_count: switch.len() };
            let mut ops = Vec::with_capacity(tb.ops.len());
            let mut width = 1usize;
            for (o, op) in tb.ops.iter().enumerate() {
                let mut resolved = cx.op(op, o, None)?;
                width = width.max(sync_width(&resolved));
                if let Some((ic, inner)) = &mut resolved.pipeline {
                    let _ = ic;
                    for (i, io) in op.inner().iter().enumerate() {
                        if io.name == OpName::Pipeline {
                            return Err(cx.err(Some(o), "pipelines cannot be nested".into()));
                        }
                        let x = cx.op(io, o, Some(i))?;
                        width = width.max(sync_width(&x));
                        inner.push(x);
                    }
                }
                ops.push(resolved);
            }
            tbs.push(TbProg { ops, sync_threads: width });
        }
        ranks.push(RankProg {
            tbs,
            mem: mem[r].clone(),
            port: port[r].clone(),
            switch,
            sems: gpu.semaphores().iter().map(|s| s.init_value).collect(),
        });
    }
    Ok(Prog { ranks })
}

fn sync_width(op: &OpR) -> usize {
    use OpName::*;
    match op.name {
        Signal | Wait | RelaxedSignal | RelaxedWait | Flush => op.chans.len(),
        SemAcquire | SemRelease => op.sems.len(),
        _ if op.ctype == Some(ChannelType::Port) => op.dsts.len(),
        _ => 1,
    }
}

struct Cx<'a> {
    plan: &'a Plan,
    r: usize,
    t: usize,
    tb: &'a ThreadBlock,
    switch_count: usize,
}

impl Cx<'_> {
    fn err(&self, op: Option<usize>, message: String) -> ResolveError {
        let location = Location { op, ..Location::tb(self.r, self.t) };
        ResolveError { location: Box::new(location), message }
    }

    fn op(&self, op: &Operation, index: usize, inner: Option<usize>) -> Result<OpR, ResolveError> {
        let sourced = |mut err: ResolveError| {
            err.location.source = op.sources().to_vec();
            err
        };
        let e = |m: String| sourced(self.err(Some(index), m));
        let ctype = op.channel_type;
        let rank_chans = |kind: ChannelType| -> Result<Vec<usize>, ResolveError> {
            let list = self.tb.channel_ids(kind);
            op.channels()
                .iter()
                .map(|&c| {
                    list.get(c as usize).map(|&x| x as usize).ok_or_else(|| {
                        e(format!("{kind} channel {c} is not listed by the thread block ({} listed)", list.len()))
                    })
                })
                .collect()
        };
        let chans = match (op.name, ctype) {
            (OpName::MultiLoadReduce, _) => rank_chans(ChannelType::Switch)?,
            (_, Some(k @ (ChannelType::Memory | ChannelType::Port))) => rank_chans(k)?,
            _ => Vec::new(),
        };
        let have_chans = self.plan.gpus[self.r].channel_peers(ctype.unwrap_or(ChannelType::Memory)).len();
        if let Some(&bad) = chans.iter().find(|&&c| c >= have_chans && op.name != OpName::MultiLoadReduce) {
            return Err(e(format!("channel {bad} is not declared by rank {}", self.r)));
        }
        let via = ctype.unwrap_or(ChannelType::Memory);
        let refs = |list: &[BufferRef]| -> Result<Vec<RefR>, ResolveError> {
            list.iter().map(|b| self.rf(b, via, index).map_err(sourced)).collect()
        };
        let mut srcs = refs(op.srcs())?;
        let mut dsts = refs(op.dsts())?;
        if op.name == OpName::MultiLoadReduce {
            let sw = chans.first().copied().ok_or_else(|| e("`glre` names no switch channel".into()))?;
            if sw >= self.switch_count {
                return Err(e(format!("switch channel {sw} is not declared")));
            }
            srcs = vec![RefR {
                target: Target::Switch { chan: sw },
                index: op.buffer_offset.unwrap_or(0),
                size: op.size.unwrap_or(1),
            }];
            let d = op.dst_chunk.ok_or_else(|| e("`glre` needs `dst_chunk`".into()))?;
            dsts = vec![self.rf(&d, via, index).map_err(sourced)?];
        }
        let sems = op.semaphores().iter().map(|&s| s as usize).collect::<Vec<_>>();
        let nsem = self.plan.gpus[self.r].semaphores().len();
        if let Some(&bad) = sems.iter().find(|&&s| s >= nsem) {
            return Err(e(format!("semaphore {bad} is not declared (rank declares {nsem})")));
        }
        if ctype == Some(ChannelType::Port) && op.name.is_put() && chans.len() < dsts.len() {
            return Err(e(format!(
                "a port `{}` needs one channel per destination: {} destinations, {} channels",
                op.name,
                dsts.len(),
                chans.len()
            )));
        }
        let pipeline = if op.name == OpName::Pipeline {
            let ic = op.iter_context.ok_or_else(|| e("a pipeline needs `iter_context`".into()))?;
            if ic.unit_size == 0 {
                return Err(e("pipeline `unit_size` must be positive".into()));
            }
            Some((ic, Vec::new()))
        } else {
            None
        };
        Ok(OpR {
            name: op.name,
            index,
            inner,
            srcs,
            dsts,
            chans,
            ctype,
            sems,
            barrier: (op.barrier_id.unwrap_or(0) as usize, op.num_threadblocks.unwrap_or(0) as usize),
            reduce: op.reduce(),
            tbg: op.tbg_info.filter(|g| g.tbg_size > 0 && g.tb_id < g.tbg_size),
            pipeline,
            source: op.sources().to_vec(),
        })
    }

    fn rf(&self, b: &BufferRef, via: ChannelType, index: usize) -> Result<RefR, ResolveError> {
        let e = |m: String| self.err(Some(index), m);
        let target = match b.locator() {
            None => {
                return Err(e(
                    "a buffer reference needs exactly one of `type`, `buffer_id`, `switch_channel_id`".into()
                ));
            }
            Some(Locator::Local(t)) => Target::Local(t),
            Some(Locator::Remote(id)) => {
                let kind = if via == ChannelType::Port { ChannelType::Port } else { ChannelType::Memory };
                let ids = self.tb.remote_buffer_ids(kind);
                let rb = ids
                    .get(id as usize)
                    .and_then(|&x| self.plan.gpus[self.r].remote_buffers.get(x as usize))
                    .ok_or_else(|| {
                        e(format!("remote buffer {id} is not listed for {kind} access by the thread block"))
                    })?;
                if rb.rank as usize >= self.plan.gpus.len() {
                    return Err(e(format!("remote buffer owner {} does not exist", rb.rank)));
                }
                Target::Remote { owner: rb.rank as usize, buffer: rb.buffer_type }
            }
            Some(Locator::Switch(id)) => {
                let ids = self.tb.channel_ids(ChannelType::Switch);
                let chan = ids
                    .get(id as usize)
                    .map(|&x| x as usize)
                    .filter(|&x| x < self.switch_count)
                    .ok_or_else(|| e(format!("switch channel {id} is not listed by the thread block")))?;
                Target::Switch { chan }
            }
        };
        Ok(RefR { target, index: b.index, size: b.size })
    }
}
