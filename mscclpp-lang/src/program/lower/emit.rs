//! Emission of the plan's JSON schema types from the lowered program.

use super::super::error::ProgramError;
use super::super::ir::IrOp;
use super::super::state::State;
use crate::location::SourceLocation;
use crate::plan::{
    ChannelDecl, ChannelType, Collective, Gpu, MAX_CHANNELS_PER_TB, MAX_OPS_PER_TB, OpName, Operation, Plan, RankGroup,
    RemoteBuffer, RemoteBufferRefs, SemaphoreDecl, TbChannels, ThreadBlock,
};

/// The operation as the plan carries it: drops the fields the schema does not emit for it, and adds the call sites
/// as `source_locations`.
fn emit_op(ir: &IrOp) -> Operation {
    let mut op = ir.op.clone();
    let keep_channels = op.name.carries_channel_ids(op.channel_type);
    if !keep_channels {
        op.channel_ids = None;
    }
    if op.name == OpName::Pipeline {
        op.ops = Some(ir.inner.iter().map(emit_op).collect());
    }
    if !ir.sites.is_empty() {
        op.source_locations = Some(ir.sites.iter().map(|(call, at)| SourceLocation::at_line(call, at)).collect());
    }
    op
}

/// Drops the `source_locations` of every operation: the plan of a spec that did not ask for them (the build's own
/// checks, which run before, name them in their errors all the same).
pub(super) fn strip_sources(plan: &mut Plan) {
    for tb in plan.gpus.iter_mut().flat_map(|g| &mut g.threadblocks) {
        for op in &mut tb.ops {
            op.source_locations = None;
            for inner in op.ops.iter_mut().flatten() {
                inner.source_locations = None;
            }
        }
    }
}

/// Builds the plan (one instance), every operation with its source locations.
pub(super) fn emit(state: &State) -> Result<Plan, ProgramError> {
    let mut gpus = Vec::with_capacity(state.ranks.len());
    for (r, rs) in state.ranks.iter().enumerate() {
        let n_tbs = rs.tbs.keys().next_back().map(|t| t + 1).unwrap_or(0);
        let mut threadblocks = Vec::with_capacity(n_tbs);
        for t in 0..n_tbs {
            let tb = rs.tbs.get(&t).cloned().unwrap_or_default();
            threadblocks.push(ThreadBlock {
                id: t as u32,
                ops: tb.ops.iter().map(emit_op).collect(),
                channels: tb
                    .channels
                    .iter()
                    .filter(|(_, ids)| !ids.is_empty())
                    .map(|(k, ids)| TbChannels { channel_type: *k, channel_ids: ids.clone(), buff: None })
                    .collect(),
                remote_buffer_refs: Some(
                    tb.remote_refs
                        .iter()
                        .map(|(k, ids)| RemoteBufferRefs { access_channel_type: *k, remote_buffer_ids: ids.clone() })
                        .collect(),
                ),
            });
        }
        let mut channels: Vec<ChannelDecl> = rs
            .peers
            .iter()
            .map(|(k, peers)| ChannelDecl {
                channel_type: *k,
                connected_to: Some(peers.iter().map(|&p| p as u32).collect()),
                buffer_type: None,
                buff: None,
                rank_groups: None,
            })
            .collect();
        channels.extend(rs.switches.iter().map(|s| ChannelDecl {
            channel_type: ChannelType::Switch,
            connected_to: None,
            buffer_type: Some(s.buffer),
            buff: None,
            rank_groups: Some(vec![RankGroup {
                size: s.ranks.len() as u32,
                ranks: s.ranks.iter().map(|&m| m as u32).collect(),
            }]),
        }));
        gpus.push(Gpu {
            id: r as u32,
            input_chunks: state.input_chunks as u32,
            output_chunks: state.output_chunks as u32,
            scratch_chunks: rs.scratch as u32,
            threadblocks,
            channels,
            remote_buffers: rs
                .remote_buffers
                .iter()
                .map(|b| RemoteBuffer {
                    rank: b.owner as u32,
                    buffer_type: b.buffer,
                    access_channel_types: b.access.clone(),
                })
                .collect(),
            semaphores: Some(rs.semaphores.iter().map(|&v| SemaphoreDecl { init_value: v }).collect()),
        });
    }
    let o = &state.options;
    Ok(Plan {
        name: state.spec.name.clone(),
        collective: state.spec.collective,
        protocol: state.protocol,
        inplace: state.spec.inplace,
        reuse_resources: Some(o.reuse_resources),
        gpus,
        num_threads_per_block: Some(o.num_threads_per_block),
        use_double_scratch_buffer: Some(o.use_double_scratch_buffer),
        buffer_alignment: Some(o.buffer_alignment),
        min_message_size: Some(o.min_message_size),
        max_message_size: Some(o.max_message_size),
        root: (state.spec.collective == Collective::Broadcast).then(|| state.spec.root.unwrap_or(0) as u32),
    })
}

/// The interpreter's limits, reported with rank and thread block.
pub(super) fn check_limits(plan: &Plan) -> Result<(), ProgramError> {
    for (r, gpu) in plan.gpus.iter().enumerate() {
        for (t, tb) in gpu.threadblocks.iter().enumerate() {
            let count: usize = tb.ops.iter().map(|o| 1 + o.inner().len()).sum();
            if count > MAX_OPS_PER_TB {
                return Err(ProgramError::limit(
                    r,
                    t,
                    None,
                    format!(
                        "{count} operations after lowering; a thread block holds at most {MAX_OPS_PER_TB} (pipeline steps count): spread the work over more thread blocks"
                    ),
                ));
            }
            for kind in [ChannelType::Memory, ChannelType::Port, ChannelType::Switch] {
                let n = tb.channel_ids(kind).len();
                if n > MAX_CHANNELS_PER_TB {
                    return Err(ProgramError::limit(
                        r,
                        t,
                        None,
                        format!(
                            "{n} {kind} channels; a thread block holds at most {MAX_CHANNELS_PER_TB}: spread the channels over more thread blocks"
                        ),
                    ));
                }
            }
        }
    }
    Ok(())
}
