//! Operation fusion (reference §5.6 step 2).

use super::super::ir::IrOp;

/// Fuses the operations of one thread block.
pub(super) fn fuse(ops: Vec<IrOp>) -> Vec<IrOp> {
    ops
}
