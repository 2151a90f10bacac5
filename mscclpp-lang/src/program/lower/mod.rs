//! Lowering a recorded program to a plan (the steps are listed in docs/edsl.md, "Lowering"): signal/wait pairing,
//! fusion, data-sync `nop`s, automatic syncs between conflicting local accesses, instance replication, emission and
//! validation.

mod emit;
mod fuse;
mod pairing;
mod replicate;
mod sync;

use super::error::ProgramError;
use super::ir::IrOp;
use super::state::{PipelineCtx, State};
use crate::plan::{self, IterContext, OpName, Operation, Plan};

/// Wraps the operations recorded in pipeline `ctx` into one `pipeline` operation per thread block.
pub(crate) fn close_pipeline(state: &mut State, ctx: PipelineCtx) {
    for rs in &mut state.ranks {
        for tb in rs.tbs.values_mut() {
            let start = tb.ops.iter().position(|o| o.pipeline == Some(ctx.id));
            let Some(start) = start else { continue };
            let inner: Vec<IrOp> = tb.ops.drain(start..).collect();
            let mut op = Operation::new(OpName::Pipeline);
            op.iter_context = Some(IterContext { unit_size: ctx.unit_size, num_chunks: ctx.num_chunks as u32 });
            let mut ir = IrOp::new(op, "pipeline");
            ir.inner = inner;
            ir.sites = vec![("pipeline", ctx.at)];
            tb.ops.push(ir);
        }
    }
}

/// Most instances of one program.
pub const MAX_INSTANCES: usize = 1024;
/// Most thread blocks per rank after replicating instances.
pub const MAX_REPLICATED_THREAD_BLOCKS: usize = 65_536;

/// `instances` copies of `plan` stay within the bounds (and the chunk counts within `u32`), so a request cannot
/// make the lowering allocate without bound.
fn check_instances(plan: &Plan, instances: usize) -> Result<(), ProgramError> {
    let most_tbs = plan.gpus.iter().map(|g| g.threadblocks.len()).max().unwrap_or(0);
    let most_chunks =
        plan.gpus.iter().map(|g| g.input_chunks.max(g.output_chunks).max(g.scratch_chunks) as usize).max().unwrap_or(0);
    let tbs = instances.saturating_mul(most_tbs);
    if instances > MAX_INSTANCES
        || tbs > MAX_REPLICATED_THREAD_BLOCKS
        || instances.saturating_mul(most_chunks) > u32::MAX as usize
    {
        return Err(ProgramError::Invalid {
            site: Box::new(crate::location::Location::plan()),
            message: format!(
                "{instances} instances of a program with {most_tbs} thread blocks and {most_chunks} chunks per rank: at \
                 most {MAX_INSTANCES} instances, {MAX_REPLICATED_THREAD_BLOCKS} thread blocks per rank and {} chunks \
                 per buffer; ask for fewer instances",
                u32::MAX
            ),
        });
    }
    Ok(())
}

/// Runs every pass and returns the validated plan.
pub(crate) fn lower(mut state: State) -> Result<Plan, ProgramError> {
    pairing::check(&state)?;
    let fusion = state.options.instr_fusion;
    let auto_sync = state.options.auto_sync;
    for rs in &mut state.ranks {
        for tb in rs.tbs.values_mut() {
            let ops = std::mem::take(&mut tb.ops);
            let ops = if fusion { fuse::fuse(ops) } else { ops };
            let ops = sync::add_data_sync(ops);
            let ops = if auto_sync { sync::resolve_conflicts(ops) } else { ops };
            tb.ops = ops;
        }
    }
    let mut plan = emit::emit(&state)?;
    if state.spec.instances > 1 {
        check_instances(&plan, state.spec.instances)?;
        replicate::replicate(&mut plan, state.spec.instances);
    }
    emit::check_limits(&plan)?;
    plan::validate(&plan)?;
    if !state.spec.source_locations {
        emit::strip_sources(&mut plan);
    }
    Ok(plan)
}
