//! Instances chosen per message size from each program's `thread_blocks` table.

use mscclpp_algorithms as _;
use mscclpp_lang::plan::{Collective, Layout};
use mscclpp_lang::registry::{self, MAX_RESIDENT_THREAD_BLOCKS, Request, Target, max_thread_blocks};

fn tuned(name: &str, world: usize, size: u64) -> (usize, usize) {
    let meta = registry::find(name).unwrap();
    let target = meta.tuned_target(Target::new(world), size).unwrap();
    let plan = meta.build_plan(&target).unwrap();
    (target.instances, max_thread_blocks(&plan))
}

#[test]
fn small_messages_use_one_instance() {
    assert_eq!(tuned("allreduce_twoshot", 2, 1024).0, 1);
    assert_eq!(tuned("allreduce_oneshot_ll", 8, 1024).0, 1);
}

#[test]
fn large_messages_fill_the_gpu_without_exceeding_residency() {
    let (k, tbs) = tuned("allreduce_twoshot", 2, 256 << 20);
    assert_eq!((k, tbs), (64, 64));
    for world in [3, 4, 8] {
        let (k, tbs) = tuned("allreduce_twoshot", world, world as u64 * (32 << 20));
        assert!(k > 1 && tbs <= MAX_RESIDENT_THREAD_BLOCKS, "world {world}: {k} instances, {tbs} thread blocks");
    }
    assert_eq!(tuned("allreduce_oneshot_ll", 2, 16 << 10).0, 4);
    assert_eq!(tuned("allreduce_oneshot_ll", 2, 64 << 10), (8, 16));
}

#[test]
fn small_ll_messages_use_few_threads_per_block() {
    let meta = registry::find("allreduce_oneshot_ll").unwrap();
    let threads = |size: u64| {
        let target = meta.tuned_target(Target::new(2), size).unwrap();
        let plan = meta.build_plan(&target).unwrap();
        assert_eq!(target.threads_per_block, plan.num_threads_per_block, "the plan carries the target's threads");
        plan.threads_per_block()
    };
    assert_eq!(threads(1024), 256);
    assert_eq!(threads(16 << 10), 256);
    assert_eq!(threads(64 << 10), 512);
    // A target that names its threads keeps them.
    let fixed = meta.tuned_target(Target::new(2).threads_per_block(Some(1024)), 1024).unwrap();
    assert_eq!(fixed.threads_per_block, Some(1024));
    // Programs without a threads column keep the plan's default.
    let two = registry::find("allreduce_twoshot").unwrap();
    assert_eq!(two.tuned_target(Target::new(2), 1 << 20).unwrap().threads_per_block, None);
}

#[test]
fn the_instance_count_always_splits_the_message() {
    let meta = registry::find("allreduce_twoshot").unwrap();
    let mut several = Vec::new();
    for world in [2, 3, 5, 8] {
        for size in [(1u64 << 20) + 48 * world as u64, 3 << 20, 256 << 20] {
            let target = meta.tuned_target(Target::new(world), size).unwrap();
            // One instance is the fallback when no larger count splits the message; the others must split it.
            if target.instances == 1 {
                continue;
            }
            let plan = meta.build_plan(&target).unwrap();
            for rank in 0..world {
                Layout::new(&plan, rank, size, size).unwrap();
            }
            several.push((world, size, target.instances));
        }
    }
    // The loop checks something: several instances at 2, 3 and 8 ranks (5 ranks split none of these sizes into
    // more instances).
    assert!(several.len() >= 3, "{several:?}");
    for world in [2, 3, 8] {
        assert!(several.iter().any(|&(w, _, _)| w == world), "world {world}: {several:?}");
    }
}

#[test]
fn selection_sizes_instances_to_the_request() {
    let small = registry::select(&Request::new(Collective::AllReduce, 2, 1024)).unwrap();
    let large = registry::select(&Request::new(Collective::AllReduce, 2, 512 << 20)).unwrap();
    assert_eq!(small.program.name, "allreduce_oneshot_ll");
    assert_eq!((small.target.instances, small.target.threads_per_block), (2, Some(256)));
    // 128 thread blocks in groups of 4.
    assert_eq!(large.program.name, "allreduce_rotated");
    assert_eq!(large.target.instances, 32);
}

#[test]
fn odd_sizes_split_and_selection_skips_programs_that_cannot() {
    // 4 KiB + 8 B on 2 ranks: the Simple defaults (4-byte alignment) split it, the LL one (8-byte) does not.
    let r = Request::new(Collective::AllReduce, 2, 4096 + 8);
    let chosen = registry::select(&r).unwrap();
    assert_eq!(chosen.program.name, "allreduce_twoshot");
    let why = r.rejection(registry::find("allreduce_oneshot_ll").unwrap());
    assert!(matches!(why, Some(registry::Rejection::Split { .. })), "{why:?}");
    assert!(why.unwrap().to_string().contains("cannot split"));
    let plan = chosen.plan().unwrap();
    for rank in 0..2 {
        Layout::new(&plan, rank, 4096 + 8, 4096 + 8).unwrap();
    }
    // 4 KiB + 16 B is split by both; the LL program's narrower range wins.
    assert_eq!(
        registry::select(&Request::new(Collective::AllReduce, 2, 4096 + 16)).unwrap().program.name,
        "allreduce_oneshot_ll"
    );
}
