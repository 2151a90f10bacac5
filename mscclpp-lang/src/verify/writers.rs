//! Who a reading operation depends on: the peers whose operations write into the local buffer ranges it reads.
//! The executor names them when a packet read times out (a packet read has no channel, hence no peer of its own).

use super::resolve::{OpR, RefR, Target, resolve};
use crate::plan::{BufferType, Plan};

/// The peers (sorted, without repetition) whose operations write into the ranges of `rank`'s local buffers that
/// operation `op` of thread block `tb` reads. `op` is the flattened index the interpreter reports: operations in
/// order, a pipeline's inner operations numbered right after it. Empty when the plan does not resolve, the
/// operation does not exist, or it reads nothing a peer writes.
pub fn peers_writing_what_op_reads(plan: &Plan, rank: usize, tb: usize, op: usize) -> Vec<usize> {
    let Ok(prog) = resolve(plan) else { return Vec::new() };
    let Some(target) = prog.ranks.get(rank).and_then(|r| r.tbs.get(tb)).and_then(|t| flat(&t.ops).nth(op)) else {
        return Vec::new();
    };
    let reads: Vec<(BufferType, u32, u32)> = target
        .srcs
        .iter()
        .filter_map(|r| match r.target {
            Target::Local(b) => Some((b, r.index, r.index + r.size)),
            _ => None,
        })
        .collect();
    let writes_into = |d: &RefR| match d.target {
        Target::Remote { owner, buffer } if owner == rank => {
            reads.iter().any(|&(b, lo, hi)| b == buffer && d.index < hi && lo < d.index + d.size)
        }
        _ => false,
    };
    let mut peers: Vec<usize> = prog
        .ranks
        .iter()
        .enumerate()
        .filter(|&(q, _)| q != rank)
        .filter(|(_, r)| r.tbs.iter().any(|t| flat(&t.ops).any(|o| o.dsts.iter().any(writes_into))))
        .map(|(q, _)| q)
        .collect();
    peers.dedup();
    peers
}

/// Operations in the interpreter's flattened order.
fn flat(ops: &[OpR]) -> impl Iterator<Item = &OpR> {
    ops.iter().flat_map(|o| std::iter::once(o).chain(o.pipeline.iter().flat_map(|(_, inner)| inner.iter())))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::parse_plan;

    fn corpus(name: &str) -> Plan {
        let path = format!("{}/../tests/corpus/mscclpp/generated/{name}", env!("CARGO_MANIFEST_DIR"));
        parse_plan(&std::fs::read_to_string(&path).unwrap()).unwrap()
    }

    #[test]
    fn a_packet_read_waits_for_the_peers_that_put_packets_there() {
        let plan = corpus("single_node__allreduce_pkt__n2.json");
        let mut named = 0;
        for (rank, gpu) in plan.gpus.iter().enumerate() {
            for (tb, t) in gpu.threadblocks.iter().enumerate() {
                let mut i = 0;
                for op in &t.ops {
                    if op.name.reads_packets() {
                        assert_eq!(peers_writing_what_op_reads(&plan, rank, tb, i), vec![1 - rank], "tb {tb} op {i}");
                        named += 1;
                    }
                    i += 1 + op.inner().len();
                }
            }
        }
        assert!(named > 0, "the plan has packet reads");
    }

    #[test]
    fn nothing_is_named_for_an_operation_that_does_not_exist() {
        let plan = corpus("single_node__allreduce_pkt__n2.json");
        assert!(peers_writing_what_op_reads(&plan, 0, 0, 10_000).is_empty());
        assert!(peers_writing_what_op_reads(&plan, 7, 0, 0).is_empty());
    }
}
