//! The rule LL128 plans add: a packet range is read with the chunk ranges it was written with.
//!
//! LL128 lines carry 120 data bytes, which do not divide power-of-two chunks, so the executor counts a range's
//! lines from its first chunk (docs/executor.md, "LL128 lines"). A reader that cut a written range differently would
//! look for flags where the writer put data: it could wait out its timeout, or take data words for a flag. So every
//! packet range an LL128 plan reads must be one that some operation writes whole, on the same rank's buffer.

use std::collections::HashSet;

use super::error::PlanError;
use super::schema::{BufferRef, BufferType, ChannelType, Locator, Plan, Protocol};
use crate::location::Location;

/// A packet range: the rank whose buffer it is, the buffer, first chunk and chunk count.
type Range = (usize, BufferType, u32, u32);

/// Checks the rule on an LL128 plan (other plans pass).
pub(crate) fn check(plan: &Plan) -> Result<(), PlanError> {
    if plan.protocol != Protocol::Ll128 {
        return Ok(());
    }
    let mut written: HashSet<Range> = HashSet::new();
    let mut read: Vec<(Range, Location)> = Vec::new();
    for (r, gpu) in plan.gpus.iter().enumerate() {
        for (t, tb) in gpu.threadblocks.iter().enumerate() {
            for (i, op) in tb.ops.iter().enumerate() {
                if !op.name.moves_packets() {
                    continue;
                }
                let port = op.channel_type == Some(ChannelType::Port);
                // Where a reference points: this rank's buffer, or a peer's through the block's remote buffers.
                let target = |b: &BufferRef| -> Option<Range> {
                    match b.locator()? {
                        Locator::Local(ty) => Some((r, ty, b.index, b.size)),
                        Locator::Remote(id) => {
                            let kind = op.channel_type.unwrap_or(ChannelType::Memory);
                            let rank_level = *tb.remote_buffer_ids(kind).get(id as usize)?;
                            let rb = gpu.remote_buffers.get(rank_level as usize)?;
                            Some((rb.rank as usize, rb.buffer_type, b.index, b.size))
                        }
                        Locator::Switch(_) => None,
                    }
                };
                for (k, b) in op.srcs().iter().enumerate() {
                    if op.name.holds_packets(port, true, k)
                        && let Some(range) = target(b)
                    {
                        read.push((range, Location::op(r, t, i, op.name.as_str())));
                    }
                }
                for (k, b) in op.dsts().iter().enumerate() {
                    if op.name.holds_packets(port, false, k)
                        && let Some(range) = target(b)
                    {
                        written.insert(range);
                    }
                }
            }
        }
    }
    for ((rank, ty, index, size), at) in read {
        if !written.contains(&(rank, ty, index, size)) {
            return Err(PlanError::invalid(
                at,
                format!(
                    "this LL128 plan reads packets of rank {rank}'s {ty} chunks {index}..{} as one range, but no \
                     operation writes that range whole; LL128 lines are counted from the start of the range they \
                     are written with, so read each packet range with the chunk ranges it was written with",
                    index + size
                ),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ll128_plan() -> Plan {
        let text = include_str!("../../../tests/corpus/mscclpp/upstream/execution-files__allreduce_packet.json");
        let mut plan = crate::plan::parse_plan(text).expect("corpus plan");
        plan.protocol = Protocol::Ll128;
        plan
    }

    /// MSCCL++'s packet all-reduce puts two chunks of packets at once and reduces them one chunk per thread block:
    /// fine with LL16 packets (each covers its own 8 bytes), refused as LL128, where the second chunk's lines would
    /// be counted from the first's. (The registered LL128 program passes: every default's plan validates.)
    #[test]
    fn a_read_that_recuts_a_written_range_is_refused() {
        let mut plan = ll128_plan();
        let e = check(&plan).expect_err("a re-cut read").to_string();
        assert!(e.contains("no operation writes that range whole"), "{e}");
        assert!(e.contains("chunks 0..1"), "{e}");
        plan.protocol = Protocol::Ll;
        check(&plan).expect("LL plans count no lines");
    }
}
