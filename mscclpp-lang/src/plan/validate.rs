//! Semantic checks of a parsed plan: every index in range, every operation with the fields it needs.

use super::error::PlanError;
use super::op_name::OpName;
use super::schema::{BufferRef, BufferType, ChannelType, Gpu, Locator, Operation, Plan, ThreadBlock};
use crate::location::Location;

/// Operations per thread block the interpreter holds (pipeline inner ops count).
pub const MAX_OPS_PER_TB: usize = 64;
/// Channels of one type per thread block.
pub const MAX_CHANNELS_PER_TB: usize = 16;
/// Channels per operation.
pub const MAX_CHANNELS_PER_OP: usize = 8;
/// Buffer references per side of an operation (the reference executor takes 10; our interpreter takes 16).
pub const MAX_REFS_PER_OP: usize = 16;
/// Barrier ids.
pub const MAX_BARRIERS: u32 = 16;
/// Semaphore ids per operation.
pub const MAX_SEMAPHORES_PER_OP: usize = 16;

/// Checks every rule of the schema that does not depend on the message size.
pub fn validate(plan: &Plan) -> Result<(), PlanError> {
    let n = plan.gpus.len();
    if n == 0 {
        return Err(PlanError::invalid(Location::plan().field("gpus"), "the plan has no ranks"));
    }
    if plan.alignment() == 0 {
        return Err(PlanError::invalid(Location::plan().field("buffer_alignment"), "must be positive"));
    }
    if plan.threads_per_block() == 0 || plan.threads_per_block() > 1024 {
        return Err(PlanError::invalid(
            Location::plan().field("num_threads_per_block"),
            format!("{} is not between 1 and 1024", plan.threads_per_block()),
        ));
    }
    if plan.min_message() > plan.max_message() {
        return Err(PlanError::invalid(
            Location::plan().field("min_message_size"),
            "min_message_size is larger than max_message_size",
        ));
    }
    for (r, gpu) in plan.gpus.iter().enumerate() {
        validate_gpu(plan, r, gpu)?;
    }
    super::line_ranges::check(plan)
}

fn validate_gpu(plan: &Plan, r: usize, gpu: &Gpu) -> Result<(), PlanError> {
    let n = plan.gpus.len();
    if gpu.id as usize != r {
        return Err(PlanError::invalid(
            Location::rank(r).field("id"),
            format!("gpus[{r}] has id {}; entries must be ordered by rank", gpu.id),
        ));
    }
    for (c, ch) in gpu.channels.iter().enumerate() {
        let loc = Location::rank(r).field(format!("channels[{c}]"));
        match ch.channel_type {
            ChannelType::Memory | ChannelType::Port => {
                let peers = ch.connected_to.as_ref().ok_or_else(|| {
                    PlanError::invalid(loc.clone(), format!("a {} channel needs `connected_to`", ch.channel_type))
                })?;
                for &p in peers {
                    if p as usize >= n {
                        return Err(PlanError::invalid(
                            loc.clone().field(format!("channels[{c}].connected_to")),
                            format!("peer {p} does not exist in a world of {n} ranks"),
                        ));
                    }
                    if p as usize == r {
                        return Err(PlanError::invalid(
                            loc.clone().field(format!("channels[{c}].connected_to")),
                            format!("rank {r} declares a channel to itself"),
                        ));
                    }
                }
            }
            ChannelType::Switch => {
                if ch.switch_buffer().is_none() {
                    return Err(PlanError::invalid(loc, "a switch channel needs `buffer_type`"));
                }
                let groups = ch
                    .rank_groups
                    .as_ref()
                    .ok_or_else(|| PlanError::invalid(loc.clone(), "a switch channel needs `rank_groups`"))?;
                for g in groups {
                    if g.ranks.iter().any(|&m| m as usize >= n) {
                        return Err(PlanError::invalid(loc, format!("rank group {:?} names a rank >= {n}", g.ranks)));
                    }
                    if !g.ranks.contains(&(r as u32)) {
                        return Err(PlanError::invalid(loc, format!("rank {r} is not a member of its switch group")));
                    }
                }
            }
        }
    }
    for (b, rb) in gpu.remote_buffers.iter().enumerate() {
        let loc = Location::rank(r).field(format!("remote_buffers[{b}]"));
        if rb.rank as usize >= n {
            return Err(PlanError::invalid(loc, format!("owner rank {} does not exist", rb.rank)));
        }
        if rb.access_channel_types.contains(&ChannelType::Switch) {
            return Err(PlanError::invalid(loc, "remote buffers are accessed through memory or port channels only"));
        }
    }
    for (t, tb) in gpu.threadblocks.iter().enumerate() {
        validate_tb(plan, r, gpu, t, tb)?;
    }
    Ok(())
}

fn validate_tb(plan: &Plan, r: usize, gpu: &Gpu, t: usize, tb: &ThreadBlock) -> Result<(), PlanError> {
    if tb.id as usize != t {
        return Err(PlanError::invalid(
            Location::tb(r, t).field("id"),
            format!("threadblocks[{t}] has id {}; entries must be ordered by id", tb.id),
        ));
    }
    for kind in [ChannelType::Memory, ChannelType::Port, ChannelType::Switch] {
        let ids = tb.channel_ids(kind);
        if ids.len() > MAX_CHANNELS_PER_TB {
            return Err(PlanError::invalid(
                Location::tb(r, t).field("channels"),
                format!("{} {kind} channels; a thread block holds at most {MAX_CHANNELS_PER_TB}", ids.len()),
            ));
        }
        let available = match kind {
            ChannelType::Switch => gpu.switch_channels().len(),
            _ => gpu.channel_peers(kind).len(),
        };
        if let Some(&bad) = ids.iter().find(|&&c| c as usize >= available) {
            return Err(PlanError::invalid(
                Location::tb(r, t).field("channels"),
                format!("{kind} channel {bad} does not exist: rank {r} declares {available} {kind} channels"),
            ));
        }
    }
    for kind in [ChannelType::Memory, ChannelType::Port] {
        for id in tb.remote_buffer_ids(kind) {
            let rb = gpu.remote_buffers.get(id as usize).ok_or_else(|| {
                PlanError::invalid(
                    Location::tb(r, t).field("remote_buffer_refs"),
                    format!("remote buffer {id} does not exist: rank {r} declares {}", gpu.remote_buffers.len()),
                )
            })?;
            if !rb.access_channel_types.contains(&kind) {
                return Err(PlanError::invalid(
                    Location::tb(r, t).field("remote_buffer_refs"),
                    format!("remote buffer {id} is not declared accessible through {kind} channels"),
                ));
            }
        }
    }
    let count: usize = tb.ops.iter().map(|o| 1 + o.inner().len()).sum();
    if count > MAX_OPS_PER_TB {
        return Err(PlanError::invalid(
            Location::tb(r, t).field("ops"),
            format!("{count} operations; a thread block holds at most {MAX_OPS_PER_TB} (pipeline steps count)"),
        ));
    }
    let ctx = Ctx { plan, r, gpu, tb };
    for (o, op) in tb.ops.iter().enumerate() {
        let loc = Location::op(r, t, o, op.name.as_str()).with_source(op.sources());
        ctx.op(op, &loc)?;
        if op.name == OpName::Pipeline {
            if op.iter_context.is_none() {
                return Err(PlanError::invalid(loc.field("iter_context"), "a pipeline needs `iter_context`"));
            }
            if op.iter_context.is_some_and(|ic| ic.unit_size == 0) {
                return Err(PlanError::invalid(loc.field("iter_context.unit_size"), "must be positive"));
            }
            for (i, inner) in op.inner().iter().enumerate() {
                let mut l = Location::op(r, t, o, inner.name.as_str()).with_source(inner.sources());
                l.inner = Some(i);
                if inner.name == OpName::Pipeline {
                    return Err(PlanError::invalid(l, "pipelines cannot be nested"));
                }
                ctx.op(inner, &l)?;
            }
        } else if op.ops.is_some() {
            return Err(PlanError::invalid(loc.field("ops"), "only a pipeline has inner operations"));
        }
    }
    Ok(())
}

struct Ctx<'a> {
    plan: &'a Plan,
    r: usize,
    gpu: &'a Gpu,
    tb: &'a ThreadBlock,
}

impl Ctx<'_> {
    fn op(&self, op: &Operation, loc: &Location) -> Result<(), PlanError> {
        use OpName::*;
        let err = |field: &str, msg: String| Err(PlanError::invalid(loc.clone().field(field), msg));
        let need_channel_type = |kinds: &[ChannelType]| -> Result<ChannelType, PlanError> {
            match op.channel_type {
                Some(k) if kinds.contains(&k) => Ok(k),
                Some(k) => Err(PlanError::invalid(
                    loc.clone().field("channel_type"),
                    format!("`{}` does not go through {k} channels", op.name),
                )),
                None => Err(PlanError::invalid(
                    loc.clone().field("channel_type"),
                    format!("`{}` needs `channel_type`", op.name),
                )),
            }
        };
        if op.srcs().len() > MAX_REFS_PER_OP || op.dsts().len() > MAX_REFS_PER_OP {
            return err("src_buff", format!("at most {MAX_REFS_PER_OP} buffer references per side"));
        }
        if op.channels().len() > MAX_CHANNELS_PER_OP {
            return err("channel_ids", format!("at most {MAX_CHANNELS_PER_OP} channels per operation"));
        }
        if let Some(tbg) = op.tbg_info
            && (tbg.tbg_size == 0 || tbg.tb_id >= tbg.tbg_size)
        {
            return err("tbg_info", format!("tb_id {} is not below tbg_size {}", tbg.tb_id, tbg.tbg_size));
        }
        match op.name {
            Nop | Pipeline => {}
            Barrier => {
                let id =
                    op.barrier_id.ok_or_else(|| PlanError::invalid(loc.clone(), "`barrier` needs `barrier_id`"))?;
                let nb = op
                    .num_threadblocks
                    .ok_or_else(|| PlanError::invalid(loc.clone(), "`barrier` needs `num_threadblocks`"))?;
                if id >= MAX_BARRIERS {
                    return err("barrier_id", format!("{id} is not below {MAX_BARRIERS}"));
                }
                if nb == 0 || nb as usize > self.gpu.threadblocks.len() {
                    return err(
                        "num_threadblocks",
                        format!("{nb} thread blocks, but rank {} has {}", self.r, self.gpu.threadblocks.len()),
                    );
                }
            }
            Signal | Wait | RelaxedSignal | RelaxedWait | Flush => {
                let kind = need_channel_type(if op.name == Flush {
                    &[ChannelType::Port]
                } else {
                    &[ChannelType::Memory, ChannelType::Port]
                })?;
                if op.channels().is_empty() {
                    return err("channel_ids", format!("`{}` names no channel", op.name));
                }
                self.channel_ids(op, kind, loc)?;
            }
            SemAcquire | SemRelease => {
                let ids = op.semaphores();
                if ids.is_empty() {
                    return err("semaphore_ids", format!("`{}` names no semaphore", op.name));
                }
                if ids.len() > MAX_SEMAPHORES_PER_OP {
                    return err("semaphore_ids", format!("at most {MAX_SEMAPHORES_PER_OP} per operation"));
                }
                let have = self.gpu.semaphores().len();
                if let Some(&bad) = ids.iter().find(|&&s| s as usize >= have) {
                    return err(
                        "semaphore_ids",
                        format!("semaphore {bad} does not exist: rank {} declares {have}", self.r),
                    );
                }
            }
            Copy | CopyPackets | UnpackPackets | Reduce | ReducePackets | ReduceCopyPackets => {
                self.refs(op, loc, None)?;
                self.all_local(op, loc)?;
                self.min_refs(op, loc, 1, if op.name == ReduceCopyPackets { 2 } else { 1 })?;
            }
            Put | PutPackets | ReadPutPackets | PutWithSignal | PutWithSignalAndFlush => {
                let kind = need_channel_type(if op.name.is_put_with_signal() {
                    &[ChannelType::Port]
                } else {
                    &[ChannelType::Memory, ChannelType::Port]
                })?;
                if kind == ChannelType::Port {
                    self.channel_ids(op, kind, loc)?;
                }
                self.refs(op, loc, Some(kind))?;
                self.min_refs(op, loc, 1, 1)?;
            }
            Get => {
                let kind = need_channel_type(&[ChannelType::Memory])?;
                self.refs(op, loc, Some(kind))?;
                self.min_refs(op, loc, 1, 1)?;
            }
            ReduceSend | ReadReduce | ReadReduceSend | ReduceSendPackets | ReduceCopySendPackets => {
                let kind = need_channel_type(&[ChannelType::Memory, ChannelType::Port])?;
                self.refs(op, loc, Some(kind))?;
                self.min_refs(op, loc, 1, 1)?;
            }
            MultiLoadReduceStore | MultiStore | MultiStorePackets => {
                need_channel_type(&[ChannelType::Switch])?;
                self.refs(op, loc, Some(ChannelType::Switch))?;
                self.min_refs(op, loc, 1, 1)?;
            }
            MultiLoadReduce => {
                need_channel_type(&[ChannelType::Switch])?;
                self.channel_ids(op, ChannelType::Switch, loc)?;
                let d = op.dst_chunk.ok_or_else(|| PlanError::invalid(loc.clone(), "`glre` needs `dst_chunk`"))?;
                self.one_ref(&d, loc, "dst_chunk", None)?;
                if op.buffer_type.is_none() || op.buffer_offset.is_none() || op.size.is_none() {
                    return err("buffer_offset", "`glre` needs `buffer_type`, `buffer_offset` and `size`".into());
                }
            }
        }
        Ok(())
    }

    fn channel_ids(&self, op: &Operation, kind: ChannelType, loc: &Location) -> Result<(), PlanError> {
        let have = self.tb.channel_ids(kind).len();
        if let Some(&bad) = op.channels().iter().find(|&&c| c as usize >= have) {
            return Err(PlanError::invalid(
                loc.clone().field("channel_ids"),
                format!("{kind} channel {bad} does not exist: the thread block lists {have} {kind} channels"),
            ));
        }
        Ok(())
    }

    fn min_refs(&self, op: &Operation, loc: &Location, src: usize, dst: usize) -> Result<(), PlanError> {
        if op.srcs().len() < src {
            return Err(PlanError::invalid(
                loc.clone().field("src_buff"),
                format!("`{}` needs at least {src} source buffer(s)", op.name),
            ));
        }
        if op.dsts().len() < dst {
            return Err(PlanError::invalid(
                loc.clone().field("dst_buff"),
                format!("`{}` needs at least {dst} destination buffer(s)", op.name),
            ));
        }
        Ok(())
    }

    fn all_local(&self, op: &Operation, loc: &Location) -> Result<(), PlanError> {
        for (side, refs) in [("src_buff", op.srcs()), ("dst_buff", op.dsts())] {
            for (i, b) in refs.iter().enumerate() {
                if !matches!(b.locator(), Some(Locator::Local(_))) {
                    return Err(PlanError::invalid(
                        loc.clone().field(format!("{side}[{i}]")),
                        format!("`{}` works on local buffers only (give `type`)", op.name),
                    ));
                }
            }
        }
        Ok(())
    }

    fn refs(&self, op: &Operation, loc: &Location, via: Option<ChannelType>) -> Result<(), PlanError> {
        for (side, refs) in [("src_buff", op.srcs()), ("dst_buff", op.dsts())] {
            for (i, b) in refs.iter().enumerate() {
                self.one_ref(b, loc, &format!("{side}[{i}]"), via)?;
            }
        }
        Ok(())
    }

    fn one_ref(&self, b: &BufferRef, loc: &Location, field: &str, via: Option<ChannelType>) -> Result<(), PlanError> {
        let l = || loc.clone().field(field.to_string());
        if b.size == 0 {
            return Err(PlanError::invalid(l(), "a buffer reference of 0 chunks"));
        }
        let end = b.index as u64 + b.size as u64;
        let (owner, buffer, chunks) = match b.locator() {
            None => {
                return Err(PlanError::invalid(
                    l(),
                    "a buffer reference needs exactly one of `type`, `buffer_id`, `switch_channel_id`",
                ));
            }
            Some(Locator::Local(t)) => (self.r, t, self.gpu.chunks(t)),
            Some(Locator::Remote(id)) => {
                let kind = match via {
                    Some(k @ (ChannelType::Memory | ChannelType::Port)) => k,
                    _ => {
                        return Err(PlanError::invalid(
                            l(),
                            "a remote buffer reference needs a memory or port operation",
                        ));
                    }
                };
                let ids = self.tb.remote_buffer_ids(kind);
                let rb_index = *ids.get(id as usize).ok_or_else(|| {
                    PlanError::invalid(
                        l().field(format!("{field}.buffer_id")),
                        format!(
                            "remote buffer {id} does not exist: the thread block lists {} for {kind} access",
                            ids.len()
                        ),
                    )
                })?;
                let rb = &self.gpu.remote_buffers[rb_index as usize];
                let owner = rb.rank as usize;
                (owner, rb.buffer_type, self.plan.gpus[owner].chunks(rb.buffer_type))
            }
            Some(Locator::Switch(id)) => {
                let ids = self.tb.channel_ids(ChannelType::Switch);
                let rank_index = *ids.get(id as usize).ok_or_else(|| {
                    PlanError::invalid(
                        l().field(format!("{field}.switch_channel_id")),
                        format!("switch channel {id} does not exist: the thread block lists {}", ids.len()),
                    )
                })?;
                let decl = self.gpu.switch_channels()[rank_index as usize];
                let t = decl.switch_buffer().unwrap_or(BufferType::Scratch);
                (self.r, t, self.gpu.chunks(t))
            }
        };
        if end > chunks as u64 {
            return Err(PlanError::invalid(
                l(),
                format!(
                    "chunks [{}, {end}) are out of range: the {buffer} buffer of rank {owner} has {chunks} chunk(s)",
                    b.index
                ),
            ));
        }
        Ok(())
    }
}
