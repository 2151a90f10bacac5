//! Operation fusion (lowering step 2, docs/edsl.md "Lowering"): each operation is folded greedily with its successors
//! in the same thread block while a rule applies; a rule that does not fuse may still drop a `nop` that a neighbour
//! makes redundant.

use super::super::ir::{IrOp, Site};
use super::super::sync_type::SyncType;
use crate::plan::{BufferRef, ChannelType, Locator, OpName, Operation};

fn is_barrier_like(name: OpName) -> bool {
    matches!(name, OpName::Nop | OpName::Barrier)
}

/// The synchronisation a pipeline provides at its ends: `before` if its first operation is a `nop`/`barrier` or
/// a sync operation with a `nop` before it; `after` likewise for its last operation.
pub(super) fn pipeline_sync(op: &IrOp) -> SyncType {
    let (Some(first), Some(last)) = (op.inner.first(), op.inner.last()) else {
        return SyncType::None;
    };
    let mut s = SyncType::None;
    if is_barrier_like(first.op.name) || (first.op.name.is_sync() && first.sync.before()) {
        s = s.union(SyncType::Before);
    }
    if is_barrier_like(last.op.name) || (last.op.name.is_sync() && last.sync.after()) {
        s = s.union(SyncType::After);
    }
    s
}

/// Whether `op` already synchronises the thread block before it runs.
fn syncs_before(op: &IrOp) -> bool {
    is_barrier_like(op.op.name)
        || (op.op.name.is_sync() && op.sync.before())
        || (op.op.name == OpName::Pipeline && pipeline_sync(op).before())
}

fn same_local(a: &BufferRef, b: &BufferRef) -> bool {
    a.buffer_type.is_some() && (a.buffer_type, a.index, a.size) == (b.buffer_type, b.index, b.size)
}

fn is_local(b: &BufferRef) -> bool {
    matches!(b.locator(), Some(Locator::Local(_)))
}

fn split(refs: &[BufferRef]) -> (Vec<BufferRef>, Vec<BufferRef>) {
    refs.iter().copied().partition(is_local)
}

fn first_src(op: &Operation) -> Option<&BufferRef> {
    op.srcs().first()
}

fn union_ids(a: &[u32], b: &[u32]) -> Vec<u32> {
    let mut v: Vec<u32> = a.iter().chain(b).copied().collect();
    v.sort_unstable();
    v.dedup();
    v
}

fn concat<T: Clone>(a: &[T], b: &[T]) -> Vec<T> {
    a.iter().chain(b).cloned().collect()
}

/// A new operation derived from `a` (keeps its origin and pipeline; [`fuse`] sets the call sites).
fn derived(a: &IrOp, op: Operation, sync: SyncType) -> IrOp {
    IrOp { op, sync, pipeline: a.pipeline, inner: Vec::new(), origin: a.origin, sites: Vec::new() }
}

/// The call sites of `a` followed by those of `b` that `a` does not have: every call that made a fused
/// operation, in program order.
fn merged_sites(a: &IrOp, b: &IrOp) -> Vec<Site> {
    let mut sites = a.sites.clone();
    for s in &b.sites {
        if !sites.contains(s) {
            sites.push(*s);
        }
    }
    sites
}

/// Tries to fuse `b` into `a`. May clear a redundant `before` of `b` or `after` of `a` even when it does not fuse.
fn fuse_pair(a: &mut IrOp, b: &mut IrOp) -> Option<IrOp> {
    let (an, bn) = (a.op.name, b.op.name);
    match an {
        OpName::Nop => {
            if bn == OpName::Nop || bn == OpName::Barrier {
                return Some(b.clone());
            }
            if bn == OpName::Pipeline && pipeline_sync(b).before() {
                return Some(b.clone());
            }
            if bn.is_sync() {
                b.sync = b.sync.without_before();
            }
            None
        }
        OpName::Barrier => {
            if bn == OpName::Nop {
                return Some(a.clone());
            }
            if bn.is_sync() {
                b.sync = b.sync.without_before();
            }
            None
        }
        _ if an.is_sync() => {
            let same_kind = an == bn && a.op.channel_type == b.op.channel_type;
            let fusable = same_kind
                && match an {
                    OpName::Signal | OpName::Wait | OpName::RelaxedSignal | OpName::RelaxedWait => {
                        !a.op.channels().iter().any(|c| b.op.channels().contains(c))
                    }
                    _ => true,
                };
            if fusable {
                let mut op = a.op.clone();
                if matches!(an, OpName::SemAcquire | OpName::SemRelease) {
                    op.semaphore_ids = Some(concat(a.op.semaphores(), b.op.semaphores()));
                } else {
                    op.channel_ids = Some(union_ids(a.op.channels(), b.op.channels()));
                }
                return Some(derived(a, op, a.sync.union(b.sync)));
            }
            if syncs_before(b) {
                a.sync = a.sync.without_after();
            }
            None
        }
        OpName::Get => {
            let ok = bn == OpName::Get
                && first_src(&a.op).map(|s| s.size) == first_src(&b.op).map(|s| s.size)
                && a.op.channel_type == b.op.channel_type
                && a.op.tbg_info == b.op.tbg_info;
            ok.then(|| multi(a, b, true))
        }
        OpName::Put | OpName::PutPackets | OpName::PutWithSignal | OpName::PutWithSignalAndFlush => {
            let ok = bn == an
                && first_src(&a.op).map(|s| s.size) == first_src(&b.op).map(|s| s.size)
                && a.op.channel_type == b.op.channel_type
                && a.op.tbg_info == b.op.tbg_info;
            ok.then(|| multi(a, b, true))
        }
        OpName::ReadPutPackets => {
            let ok = bn == an
                && a.op.srcs() == b.op.srcs()
                && a.op.channel_type == b.op.channel_type
                && a.op.tbg_info == b.op.tbg_info;
            ok.then(|| multi(a, b, false))
        }
        OpName::MultiLoadReduce => {
            let ok = bn == OpName::MultiStore
                && a.op.size == b.op.dsts().first().map(|d| d.size)
                && a.op.channel_ids == b.op.channel_ids
                && match (a.op.dst_chunk, b.op.srcs().first()) {
                    (Some(d), Some(s)) => same_local(&d, s),
                    _ => false,
                };
            if !ok {
                return None;
            }
            let ch = a.op.channels().first().copied().unwrap_or(0);
            let size = a.op.size.unwrap_or(0);
            let dst_index = b.op.dsts().first().map(|d| d.index).unwrap_or(0);
            let mut op = Operation::new(OpName::MultiLoadReduceStore);
            op.src_buff = Some(vec![BufferRef::switch(ch, a.op.buffer_offset.unwrap_or(0), size)]);
            op.dst_buff = Some(vec![BufferRef::switch(ch, dst_index, size)]);
            op.channel_ids = a.op.channel_ids.clone();
            op.channel_type = Some(ChannelType::Switch);
            op.reduce_op = a.op.reduce_op;
            Some(derived(a, op, SyncType::None))
        }
        OpName::Reduce
        | OpName::ReducePackets
        | OpName::ReadReduce
        | OpName::ReduceSend
        | OpName::ReadReduceSend
        | OpName::ReduceSendPackets
        | OpName::ReduceCopyPackets
        | OpName::ReduceCopySendPackets => fuse_reduce(a, b),
        OpName::Pipeline => {
            let s = pipeline_sync(a);
            if s.after() && bn.is_sync() {
                b.sync = b.sync.without_before();
                return None;
            }
            if bn == OpName::Nop && s.after() {
                return Some(a.clone());
            }
            None
        }
        _ => None,
    }
}

/// `a` and `b` as one operation over both sets of buffers (multi-destination put, multi-get, multi-dst rppkt).
fn multi(a: &IrOp, b: &IrOp, concat_srcs: bool) -> IrOp {
    let mut op = a.op.clone();
    if concat_srcs {
        op.src_buff = Some(concat(a.op.srcs(), b.op.srcs()));
    }
    op.dst_buff = Some(concat(a.op.dsts(), b.op.dsts()));
    if a.op.channel_ids.is_some() || b.op.channel_ids.is_some() {
        op.channel_ids = Some(concat(a.op.channels(), b.op.channels()));
    }
    derived(a, op, SyncType::None)
}

fn fuse_reduce(a: &IrOp, b: &IrOp) -> Option<IrOp> {
    let (an, bn) = (a.op.name, b.op.name);
    let (a_lsrc, a_rsrc) = split(a.op.srcs());
    let (a_ldst, a_rdst) = split(a.op.dsts());
    let a_dst0 = a_ldst.first()?;
    let same_tbg = a.op.tbg_info == b.op.tbg_info;
    let b_src0 = b.op.srcs().first();

    // Same reduction with more sources.
    if matches!(an, OpName::Reduce | OpName::ReducePackets | OpName::ReadReduce)
        && bn == an
        && same_tbg
        && a.op.channel_type == b.op.channel_type
        && a.op.reduce_op == b.op.reduce_op
        && a_lsrc.first().zip(b.op.srcs().first()).is_some_and(|(x, y)| same_local(x, y))
        && a.op.dsts() == b.op.dsts()
    {
        let (b_lsrc, b_rsrc) = split(b.op.srcs());
        let mut srcs = a_lsrc.clone();
        srcs.extend(b_lsrc.into_iter().skip(1));
        srcs.extend(a_rsrc);
        srcs.extend(b_rsrc);
        let mut op = a.op.clone();
        op.src_buff = Some(srcs);
        if a.op.channel_ids.is_some() || b.op.channel_ids.is_some() {
            op.channel_ids = Some(concat(a.op.channels(), b.op.channels()));
        }
        return Some(derived(a, op, SyncType::None));
    }
    let memory = b.op.channel_type == Some(ChannelType::Memory);
    let b_src_is = |r: &BufferRef| b_src0.is_some_and(|s| same_local(r, s));
    let send_name = match (an, bn) {
        (OpName::Reduce | OpName::ReduceSend, OpName::Put) if memory && b_src_is(a_dst0) => Some(OpName::ReduceSend),
        (OpName::ReadReduce | OpName::ReadReduceSend, OpName::Put) if memory && b_src_is(a_dst0) => {
            Some(OpName::ReadReduceSend)
        }
        (OpName::ReducePackets | OpName::ReduceSendPackets, OpName::PutPackets) if memory && b_src_is(a_dst0) => {
            Some(OpName::ReduceSendPackets)
        }
        (OpName::ReduceCopyPackets | OpName::ReduceCopySendPackets, OpName::PutPackets)
            if memory && b_src_is(a_dst0) =>
        {
            Some(OpName::ReduceCopySendPackets)
        }
        (OpName::ReduceCopyPackets | OpName::ReduceCopySendPackets, OpName::ReadPutPackets)
            if memory && a_ldst.get(1).is_some_and(b_src_is) =>
        {
            Some(OpName::ReduceCopySendPackets)
        }
        _ => None,
    };
    if let Some(name) = send_name {
        if !same_tbg {
            return None;
        }
        let mut op = a.op.clone();
        op.name = name;
        let mut dsts = a_ldst;
        dsts.extend(a_rdst);
        dsts.extend(b.op.dsts().iter().copied());
        op.dst_buff = Some(dsts);
        op.channel_type = Some(ChannelType::Memory);
        return Some(derived(a, op, SyncType::None));
    }
    if an == OpName::ReducePackets && bn == OpName::CopyPackets && same_tbg && b_src_is(a_dst0) {
        let mut op = a.op.clone();
        op.name = OpName::ReduceCopyPackets;
        let mut dsts = a_ldst;
        dsts.extend(b.op.dsts().iter().copied());
        dsts.extend(a_rdst);
        op.dst_buff = Some(dsts);
        return Some(derived(a, op, SyncType::None));
    }
    None
}

/// Fuses the operations of one thread block (and, recursively, of its pipelines).
pub(super) fn fuse(ops: Vec<IrOp>) -> Vec<IrOp> {
    let mut ops: Vec<IrOp> = ops
        .into_iter()
        .map(|mut o| {
            if o.op.name == OpName::Pipeline {
                o.inner = fuse(std::mem::take(&mut o.inner));
            }
            o
        })
        .collect();
    let mut out = Vec::with_capacity(ops.len());
    let mut i = 0;
    while i < ops.len() {
        let mut current = ops[i].clone();
        let mut j = i + 1;
        while j < ops.len() {
            match fuse_pair(&mut current, &mut ops[j]) {
                Some(mut f) => {
                    f.sites = merged_sites(&current, &ops[j]);
                    current = f;
                    j += 1;
                }
                None => break,
            }
        }
        out.push(current);
        i = j;
    }
    out
}
