//! Instance replication (lowering step 5, docs/edsl.md "Lowering"), interleaved: chunk range `[i, i+s)` of the program
//! becomes
//! `[i·n, (i+s)·n)` and instance `k` owns its `k`-th piece of `s` chunks; thread block `t` becomes `t·n + k`, and
//! channel, semaphore and barrier ids `c` become `c·n + k`.

use crate::plan::{BufferRef, Operation, Plan};

fn shift_index(i: u32, size: u32, k: u32, n: u32) -> u32 {
    i * n + k * size
}

fn shift_id(c: u32, k: u32, n: u32) -> u32 {
    c * n + k
}

fn shift_ref(r: &mut BufferRef, k: u32, n: u32) {
    r.index = shift_index(r.index, r.size, k, n);
}

fn shift_op(op: &mut Operation, k: u32, n: u32) {
    for r in op.src_buff.iter_mut().flatten().chain(op.dst_buff.iter_mut().flatten()) {
        shift_ref(r, k, n);
    }
    if let Some(d) = op.dst_chunk.as_mut() {
        shift_ref(d, k, n);
    }
    if let (Some(off), Some(size)) = (op.buffer_offset, op.size) {
        op.buffer_offset = Some(shift_index(off, size, k, n));
    }
    if let Some(ids) = op.semaphore_ids.as_mut() {
        ids.iter_mut().for_each(|s| *s = shift_id(*s, k, n));
    }
    if let Some(b) = op.barrier_id.as_mut() {
        *b = shift_id(*b, k, n);
    }
    if let Some(inner) = op.ops.as_mut() {
        inner.iter_mut().for_each(|o| shift_op(o, k, n));
    }
}

/// Replicates every rank `n` times.
pub(super) fn replicate(plan: &mut Plan, n: usize) {
    let n32 = n as u32;
    for gpu in &mut plan.gpus {
        gpu.input_chunks *= n32;
        gpu.output_chunks *= n32;
        gpu.scratch_chunks *= n32;
        for decl in &mut gpu.channels {
            if let Some(peers) = decl.connected_to.as_mut() {
                *peers = peers.iter().flat_map(|&p| std::iter::repeat_n(p, n)).collect();
            }
        }
        gpu.channels = gpu
            .channels
            .iter()
            .flat_map(|d| {
                let copies = if d.connected_to.is_some() { 1 } else { n };
                std::iter::repeat_n(d.clone(), copies)
            })
            .collect();
        if let Some(sems) = gpu.semaphores.as_mut() {
            *sems = sems.iter().flat_map(|s| std::iter::repeat_n(s.clone(), n)).collect();
        }
        let mut tbs = Vec::with_capacity(gpu.threadblocks.len() * n);
        for tb in &gpu.threadblocks {
            for k in 0..n32 {
                let mut t = tb.clone();
                t.id = shift_id(tb.id, k, n32);
                for ch in &mut t.channels {
                    ch.channel_ids.iter_mut().for_each(|c| *c = shift_id(*c, k, n32));
                }
                t.ops.iter_mut().for_each(|o| shift_op(o, k, n32));
                tbs.push(t);
            }
        }
        gpu.threadblocks = tbs;
    }
}
