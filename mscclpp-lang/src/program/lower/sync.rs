//! Data-sync `nop` insertion (lowering step 3, docs/edsl.md "Lowering") and automatic syncs between conflicting local
//! accesses (step 4).

use super::super::ir::IrOp;
use crate::plan::{BufferRef, BufferType, Locator, OpName, Operation, TbgInfo};

fn nop() -> IrOp {
    IrOp::new(Operation::new(OpName::Nop), "data sync")
}

/// Places the `nop`s each synchronisation operation still asks for after fusion.
pub(super) fn add_data_sync(ops: Vec<IrOp>) -> Vec<IrOp> {
    let mut out = Vec::with_capacity(ops.len());
    for mut op in ops {
        if op.op.name == OpName::Pipeline {
            op.inner = add_data_sync(std::mem::take(&mut op.inner));
        }
        let sync = op.op.name.is_sync().then_some(op.sync);
        if sync.is_some_and(|s| s.before()) {
            out.push(nop());
        }
        out.push(op);
        if sync.is_some_and(|s| s.after()) {
            out.push(nop());
        }
    }
    out
}

/// One local access: chunks `[start/den, end/den)` of a local buffer.
#[derive(Debug, Clone, Copy)]
struct Access {
    buffer: BufferType,
    start: u64,
    end: u64,
    den: u64,
    write: bool,
    op: usize,
}

impl Access {
    fn overlaps(&self, o: &Access) -> bool {
        self.buffer == o.buffer
            && (self.start as u128) * (o.den as u128) < (o.end as u128) * (self.den as u128)
            && (o.start as u128) * (self.den as u128) < (self.end as u128) * (o.den as u128)
    }
}

fn access(r: &BufferRef, tbg: Option<TbgInfo>, write: bool, op: usize) -> Option<Access> {
    let Some(Locator::Local(buffer)) = r.locator() else { return None };
    let (start, end) = (r.index as u64, r.index as u64 + r.size as u64);
    Some(match tbg {
        // The group member's slice: [start + k·size/g, start + (k+1)·size/g).
        Some(g) => {
            let n = g.tbg_size.max(1) as u64;
            let size = end - start;
            Access {
                buffer,
                start: start * n + g.tb_id as u64 * size,
                end: start * n + (g.tb_id as u64 + 1) * size,
                den: n,
                write,
                op,
            }
        }
        None => Access { buffer, start, end, den: 1, write, op },
    })
}

/// The local buffers an operation reads and writes, leaving out packet buffers (their flags order them).
fn accesses(ir: &IrOp, id: usize, out: &mut Vec<Access>) {
    let op = &ir.op;
    let tbg = op.tbg_info;
    let mut read = |r: &BufferRef| out.extend(access(r, tbg, false, id));
    match op.name {
        OpName::Pipeline => {
            for inner in &ir.inner {
                accesses(inner, id, out);
            }
            return;
        }
        name if name.reads_local_sources() => {
            // Packet sources are ordered by their flags; the plain sources are tracked.
            let packets = name.packet_sources(op.srcs().len());
            op.srcs().iter().enumerate().filter(|(i, _)| !packets.contains(i)).for_each(|(_, r)| read(r))
        }
        _ => {}
    }
    let mut write = |r: &BufferRef| out.extend(access(r, tbg, true, id));
    match op.name {
        name if name.writes_local_result() => {
            // The plain result is the first destination; the rest are packet copies or remote.
            op.dsts().iter().take(1).for_each(&mut write)
        }
        OpName::MultiLoadReduce => op.dst_chunk.iter().for_each(&mut write),
        _ => {}
    }
}

/// Inserts a `nop` before an operation whose local accesses overlap an earlier access of the thread block since
/// the last `nop`/`barrier`, where either access writes. Remote accesses are ordered by signals and not tracked.
pub(super) fn resolve_conflicts(ops: Vec<IrOp>) -> Vec<IrOp> {
    let mut seen: Vec<Access> = Vec::new();
    let mut out = Vec::with_capacity(ops.len());
    for (id, mut op) in ops.into_iter().enumerate() {
        if matches!(op.op.name, OpName::Nop | OpName::Barrier) {
            seen.clear();
            out.push(op);
            continue;
        }
        if op.op.name == OpName::Pipeline {
            op.inner = resolve_conflicts(std::mem::take(&mut op.inner));
        }
        let mut mine = Vec::new();
        accesses(&op, id, &mut mine);
        let conflict = mine.iter().any(|a| seen.iter().any(|s| s.op != a.op && s.overlaps(a) && (s.write || a.write)));
        if conflict {
            out.push(nop());
            seen.clear();
        }
        seen.extend(mine);
        out.push(op);
    }
    out
}
