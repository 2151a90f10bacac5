//! The plan for each call: which registered program runs a (collective, size, type, operator, root), in which
//! placement, and the padded size for a message no plan splits as it is. Everything here depends on the key
//! alone, so every rank chooses alike.

use mscclpp_exec::executor::ExecutionPlan;
use mscclpp_exec::frontend::Prepared;
use mscclpp_lang::data::DataType;
use mscclpp_lang::plan::{Plan, ReduceOp};
use mscclpp_lang::registry::Request;
use mscclpp_sys::interpreter::ElementType;

use crate::policy::Op;

/// Identity of a prepared plan.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct Key {
    pub(crate) op: Op,
    pub(crate) in_bytes: u64,
    pub(crate) elem: ElementType,
    pub(crate) reduce: ReduceOp,
    /// The broadcast root (0 for the other collectives).
    pub(crate) root: usize,
}

/// The registry's plan for `key` on `world` ranks, or `None`. First a plan whose peers never address the
/// caller's buffers (it runs zero copy), in the placement the collective is usually called with (torch's
/// all-reduce and broadcast run in place, its all-gather and reduce-scatter out of place), then the other; else
/// any plan of the call's size, usual placement first (it runs on registered buffers or staged); else, for an
/// all-reduce or broadcast of a size no plan splits, the smallest padded size some plan takes (staged).
/// Depends on `key` alone, so every rank chooses alike.
pub(crate) fn select(world: usize, key: Key) -> Option<Prepared> {
    let usual = matches!(key.op, Op::AllReduce | Op::Broadcast);
    let build = |bytes: u64, inplace: bool| build_plan(world, key, key.elem, bytes, inplace);
    for inplace in [usual, !usual] {
        if let Some(plan) = build(key.in_bytes, inplace)
            && plan.buffers_independent()
        {
            return Some(Prepared { plan, inplace, plan_bytes: key.in_bytes });
        }
    }
    for plan_bytes in padded_sizes(key.op, key.in_bytes) {
        for inplace in [usual, !usual] {
            if let Some(plan) = build(plan_bytes, inplace) {
                return Some(Prepared { plan, inplace, plan_bytes });
            }
        }
    }
    None
}

/// The input sizes to try for `op` and `in_bytes`: the size itself, then, for the collectives whose elements
/// are independent of each other's positions (all-reduce, broadcast), the next multiples of a few
/// granularities.
fn padded_sizes(op: Op, in_bytes: u64) -> Vec<u64> {
    let mut sizes = vec![in_bytes];
    if matches!(op, Op::AllReduce | Op::Broadcast) {
        for g in [64u64, 256, 1024, 4096, 16384] {
            let s = in_bytes.next_multiple_of(g);
            if !sizes.contains(&s) {
                sizes.push(s);
            }
        }
    }
    sizes
}

/// The registry's plan for `key` with `bytes` of input, in place or not: reductions set to `key.reduce`, and a
/// broadcast built for `key.root` (a root other than 0 only from a program whose plan the CPU verifier
/// passes for that root, so a program that ignores the root is never trusted with one).
fn build_plan(world: usize, key: Key, dtype: DataType, bytes: u64, inplace: bool) -> Option<ExecutionPlan> {
    let request = Request::new(key.op.collective(), world, bytes).inplace(inplace).dtype(dtype);
    let selected = mscclpp_exec::tune::select(&request).ok()?;
    let meta = selected.program;
    // Sized by the selection: a tuned table's row keeps its own instance count, otherwise the program's table
    // picks one for the size.
    let target = selected.target;
    let mut plan = if key.root == 0 {
        meta.build_plan(&target).ok()?
    } else {
        let mut spec = meta.spec(&target).ok()?;
        spec.root = Some(key.root);
        let mut plan = (meta.build)(&spec).ok()?;
        if let Some(t) = target.threads_per_block {
            plan.num_threads_per_block = Some(t);
        }
        mscclpp_lang::plan::validate(&plan).ok()?;
        if plan.root_rank() != key.root || !rooted_plan_verifies(&plan) {
            return None;
        }
        plan
    };
    if key.reduce != ReduceOp::Sum {
        plan.set_reduce_op(key.reduce);
    }
    ExecutionPlan::new(plan).ok()
}

/// Whether the CPU verifier finds `plan` correct (a few schedules of one launch at a small size).
fn rooted_plan_verifies(plan: &Plan) -> bool {
    let opts = mscclpp_lang::verify::VerifyOptions { launches: 1, schedules: 4, ..Default::default() };
    mscclpp_lang::verify::verify(plan, &opts).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy;
    use mscclpp_lang::registry::{self, Target};
    use mscclpp_lang::verify::plan_reduce_op;

    #[test]
    fn every_collective_has_a_plan_across_its_window() {
        let mut found = 0;
        for world in [2usize, 4, 8] {
            for op in Op::ALL {
                let elem = match op {
                    Op::AllReduce | Op::ReduceScatter => ElementType::F16,
                    _ => ElementType::U8,
                };
                for piece in [1024u64, 16 << 10, policy::window(op, world)] {
                    let in_bytes = if op == Op::ReduceScatter { piece * world as u64 } else { piece };
                    let key = Key { op, in_bytes, elem, reduce: ReduceOp::Sum, root: 0 };
                    let p = select(world, key)
                        .unwrap_or_else(|| panic!("no plan for {} of {in_bytes} B on {world} ranks", op.name()));
                    assert_eq!(p.plan.plan().world_size(), world);
                    found += 1;
                }
            }
        }
        assert_eq!(found, 3 * 4 * 3);
    }

    fn key(op: Op, in_bytes: u64, root: usize) -> Key {
        let elem = if matches!(op, Op::AllReduce | Op::ReduceScatter) { ElementType::F16 } else { ElementType::U8 };
        Key { op, in_bytes, elem, reduce: ReduceOp::Sum, root }
    }

    /// Whether a call of the plan's placement runs on the application's buffers without registering them.
    fn zero_copy(p: &Prepared, in_bytes: u64) -> bool {
        p.plan.buffers_independent() && p.plan_bytes == in_bytes
    }

    #[test]
    fn small_collectives_run_zero_copy_in_their_usual_placement() {
        let mut direct = 0;
        for world in [2usize, 4, 8] {
            for op in [Op::AllReduce, Op::AllGather, Op::ReduceScatter] {
                for piece in [1024u64, 4096, 16 << 10, 64 << 10, 256 << 10] {
                    if piece == 256 << 10 && world == 8 && op != Op::AllReduce {
                        // The 8-rank all-gather and reduce-scatter of 256 KiB pieces use plans that map peers.
                        continue;
                    }
                    let in_bytes = if op == Op::ReduceScatter { piece * world as u64 } else { piece };
                    // f32 as well as f16: the standalone GPU test runs f32.
                    let f32_key = Key { elem: ElementType::F32, ..key(op, in_bytes, 0) };
                    let q = select(world, f32_key).expect("an f32 plan");
                    assert!(zero_copy(&q, in_bytes), "f32 {} of {piece} B on {world} ranks", op.name());
                    let p = select(world, key(op, in_bytes, 0)).expect("a plan");
                    assert!(
                        zero_copy(&p, in_bytes),
                        "{} of {piece} B on {world} ranks: `{}` is staged",
                        op.name(),
                        p.plan.plan().name
                    );
                    assert!(p.plan.buffers_independent());
                    assert_eq!(p.plan_bytes, in_bytes);
                    // torch's all-reduce is in place; its all-gather and reduce-scatter are not.
                    assert_eq!(p.inplace, op == Op::AllReduce, "{}", op.name());
                    direct += 1;
                }
            }
            // A small broadcast (`broadcast_ll`) writes only scratch: zero-copy, in place as torch calls it. A
            // large one (`broadcast`) puts into its peers' outputs: staged, through buffers every rank has alike.
            let p = select(world, key(Op::Broadcast, 4096, 0)).expect("a broadcast plan");
            assert_eq!(p.plan.plan().name, "broadcast_ll");
            assert!(zero_copy(&p, 4096), "broadcast of 4096 B on {world} ranks is staged");
            let p = select(world, key(Op::Broadcast, 4 << 20, 0)).expect("a broadcast plan");
            assert_eq!(p.plan.plan().name, "broadcast");
            assert!(!zero_copy(&p, 4 << 20) && !p.plan.buffers_independent());
        }
        assert_eq!(direct, 3 * 3 * 5 - 2);
    }

    #[test]
    fn a_port_channel_or_a_mapped_output_ties_a_plan_to_the_callers_buffers() {
        use mscclpp_lang::plan::{BufferType, ChannelType, RemoteBuffer};
        let plan = registry::find("allreduce_oneshot_ll").unwrap().build_plan(&Target::new(2)).unwrap();
        assert!(ExecutionPlan::new(plan.clone()).unwrap().buffers_independent());
        let mut port = plan.clone();
        let mut decl = port.gpus[0].channels[0].clone();
        decl.channel_type = ChannelType::Port;
        port.gpus[0].channels.push(decl);
        assert!(!ExecutionPlan::new(port).unwrap().buffers_independent(), "the proxy addresses registered memory");
        let mut mapped = plan;
        mapped.gpus[1].remote_buffers.push(RemoteBuffer {
            rank: 0,
            buffer_type: BufferType::Output,
            access_channel_types: vec![ChannelType::Memory],
        });
        assert!(!ExecutionPlan::new(mapped).unwrap().buffers_independent(), "a peer maps rank 0's output");
    }

    #[test]
    fn tiny_all_reduces_and_broadcasts_are_padded_not_refused() {
        let mut seen = 0;
        for world in [2usize, 4, 8] {
            for (op, bytes) in [(Op::AllReduce, 2u64), (Op::AllReduce, 4), (Op::AllReduce, 1020), (Op::Broadcast, 3)] {
                let p = select(world, key(op, bytes, 0))
                    .unwrap_or_else(|| panic!("{} of {bytes} B on {world} ranks has no plan", op.name()));
                assert!(p.plan_bytes >= bytes && p.plan_bytes <= bytes.next_multiple_of(16384), "{}", p.plan_bytes);
                assert!(!zero_copy(&p, bytes) || p.plan_bytes == bytes, "padding runs through the staging buffers");
                seen += 1;
            }
        }
        assert_eq!(seen, 12);
        assert_eq!(padded_sizes(Op::AllReduce, 1020), vec![1020, 1024, 4096, 16384]);
        assert_eq!(padded_sizes(Op::AllGather, 1020), vec![1020], "an all-gather's pieces sit at fixed offsets");
        assert_eq!(padded_sizes(Op::ReduceScatter, 4), vec![4]);
    }

    #[test]
    fn broadcasts_from_any_root_verify_on_the_cpu() {
        let mut roots = 0;
        for (world, root) in [(2usize, 1usize), (4, 1), (4, 3), (8, 5)] {
            let p = select(world, key(Op::Broadcast, 4096, root))
                .unwrap_or_else(|| panic!("no broadcast from root {root} on {world} ranks"));
            let plan = p.plan.plan();
            assert_eq!(plan.root_rank(), root);
            let report = mscclpp_lang::verify::verify(plan, &Default::default());
            assert!(report.ok(), "root {root} of {world}: {}", report.render());
            roots += 1;
        }
        assert_eq!(roots, 4);
        // Root 0 and root 1 are different plans (the executor keys contexts by the plan's contents).
        let a = select(2, key(Op::Broadcast, 4096, 0)).unwrap();
        let b = select(2, key(Op::Broadcast, 4096, 1)).unwrap();
        assert_ne!(a.plan.plan(), b.plan.plan());
    }

    #[test]
    fn min_and_max_reach_every_reduction_of_the_plan() {
        let meta = registry::find("allreduce_oneshot_ll").unwrap();
        let mut plan = meta.build_plan(&Target::new(2)).unwrap();
        assert_eq!(plan_reduce_op(&plan), ReduceOp::Sum);
        plan.set_reduce_op(ReduceOp::Max);
        assert_eq!(plan_reduce_op(&plan), ReduceOp::Max);
        let reductions = plan
            .gpus
            .iter()
            .flat_map(|g| &g.threadblocks)
            .flat_map(|tb| &tb.ops)
            .flat_map(|o| std::iter::once(o).chain(o.inner()))
            .filter(|o| o.name.is_reduction())
            .inspect(|o| assert_eq!(o.reduce(), ReduceOp::Max))
            .count();
        assert!(reductions > 0);
    }
}
