//! Tuned tables in selection and the autotuner's candidates, over the default algorithms. One test installs a
//! table process-wide; the others pass theirs explicitly (`select_with`), so they do not see it.

use mscclpp_lang::data::DataType;
use mscclpp_lang::plan::Collective;
use mscclpp_lang::registry::{
    self, MAX_RESIDENT_THREAD_BLOCKS, Request, TUNE_THREAD_BLOCKS, TUNE_THREADS, TUNED_FORMAT, TableKey, TunedRow,
    TunedTable,
};

// Link the default algorithms in.
use mscclpp_algorithms as _;

fn key(world: usize) -> TableKey {
    TableKey {
        format: TUNED_FORMAT,
        gpu: "test GPU".into(),
        world_size: world,
        ranks_per_node: world,
        driver: "13.0".into(),
        library: "test".into(),
    }
}

fn request(size: u64) -> Request {
    Request::new(Collective::AllReduce, 2, size).dtype(DataType::F16)
}

fn row(size: u64, program: &str, instances: usize, threads: u32) -> TunedRow {
    TunedRow {
        collective: Collective::AllReduce,
        dtype: DataType::F16,
        inplace: false,
        size,
        program: Some(program.into()),
        instances,
        thread_blocks: instances,
        threads_per_block: threads,
        us: Some(10.0),
        nccl_us: None,
    }
}

fn names(r: &Request) -> Vec<&'static str> {
    registry::candidates(r).iter().map(|m| m.name).collect()
}

/// A size `s` and a program that serves both `s / 2` and `s` but that the default selection does not choose at
/// `s / 2`: a table row that names it can only come from the table.
fn a_second_choice() -> (u64, &'static str) {
    for p in 11..=28 {
        let s = 1u64 << p;
        let default = registry::select_with(&request(s / 2), None).unwrap().program.name;
        let half = names(&request(s / 2));
        if let Some(other) = names(&request(s)).into_iter().find(|n| *n != default && half.contains(n)) {
            return (s, other);
        }
    }
    panic!("no all-reduce size on 2 ranks with two programs to choose from");
}

#[test]
fn selection_takes_the_row_at_or_above_the_size_and_the_normal_choice_beyond_the_last() {
    let (s, other) = a_second_choice();
    let mut table = TunedTable::new(key(2));
    table.merge(vec![row(s, other, 1, 256)]);
    for size in [s / 2, s] {
        let chosen = registry::select_with(&request(size), Some(&table)).unwrap();
        assert_eq!(chosen.program.name, other, "at {size} bytes");
        assert!(chosen.by_tuned_table && !chosen.nccl_faster);
        assert_eq!((chosen.target.instances, chosen.target.threads_per_block), (1, Some(256)));
    }
    // The other placement, with no rows of its own, follows these rows.
    let other_placement = registry::select_with(&request(s).inplace(true), Some(&table)).unwrap();
    assert!(other_placement.by_tuned_table && other_placement.program.name == other);
    // Beyond the last row, and for another world size or collective: the normal selection.
    let cases = [request(2 * s), Request::new(Collective::AllReduce, 4, s), Request::new(Collective::AllGather, 2, s)];
    for r in cases {
        let plain = registry::select_with(&r, None).unwrap();
        let chosen = registry::select_with(&r, Some(&table)).unwrap();
        assert_eq!(chosen.program.name, plain.program.name, "{r}");
        assert_eq!(chosen.target, plain.target, "{r}");
        assert!(!chosen.by_tuned_table, "{r}");
    }
}

#[test]
fn a_row_naming_a_program_that_cannot_serve_the_request_is_passed_over() {
    let mut table = TunedTable::new(key(2));
    table.merge(vec![row(4096, "no_such_program", 1, 256), row(1 << 30, "allgather_allpairs", 1, 256)]);
    for size in [1024, 1 << 20] {
        let plain = registry::select_with(&request(size), None).unwrap();
        let chosen = registry::select_with(&request(size), Some(&table)).unwrap();
        assert_eq!((chosen.program.name, chosen.by_tuned_table), (plain.program.name, false));
    }
}

#[test]
fn instances_that_do_not_split_the_message_fall_back_to_the_programs_own() {
    let (s, other) = a_second_choice();
    let mut table = TunedTable::new(key(2));
    // 127 instances split no power-of-two message into whole chunks.
    table.merge(vec![row(s, other, 127, 512)]);
    let chosen = registry::select_with(&request(s), Some(&table)).unwrap();
    assert_eq!(chosen.program.name, other);
    assert_ne!(chosen.target.instances, 127);
    assert_eq!(chosen.target.threads_per_block, Some(512));
    let plan = registry::find(other).unwrap().build_plan(&chosen.target).unwrap();
    assert!(registry::splits_message(&plan, s));
}

#[test]
fn a_row_whose_grid_cannot_be_resident_falls_back_to_the_programs_own_and_says_so() {
    // A row measured before its program grew: its instances now need more thread blocks per rank than can be
    // resident, yet split the message (so only the bound can refuse them).
    let s = 1u64 << 24;
    let mut found = None;
    for m in registry::candidates(&request(s)) {
        let Ok(one) = m.build_plan(&request(s).target().instances(1)) else { continue };
        let per = registry::max_thread_blocks(&one).max(1);
        let k = (MAX_RESIDENT_THREAD_BLOCKS / per + 1).next_power_of_two();
        if m.build_plan(&request(s).target().instances(k)).is_ok_and(|p| {
            registry::splits_message(&p, s) && registry::max_thread_blocks(&p) > MAX_RESIDENT_THREAD_BLOCKS
        }) {
            found = Some((m.name, k));
            break;
        }
    }
    let (name, k) = found.expect("a 2-rank all-reduce program whose oversized grid splits 16 MiB");
    let mut table = TunedTable::new(key(2));
    table.merge(vec![row(s, name, k, 512)]);
    let chosen = registry::select_with(&request(s), Some(&table)).unwrap();
    assert_eq!((chosen.program.name, chosen.target.threads_per_block), (name, Some(512)));
    assert!(chosen.by_tuned_table);
    let plan = registry::find(name).unwrap().build_plan(&chosen.target).unwrap();
    assert!(registry::max_thread_blocks(&plan) <= MAX_RESIDENT_THREAD_BLOCKS, "{} instances", chosen.target.instances);
    assert!(registry::splits_message(&plan, s));
    let warning = chosen.warning.expect("the passed-over row is reported");
    assert!(warning.contains(name) && warning.contains("mscclpp tune"), "{warning}");
    // A row that fits says nothing.
    table.merge(vec![row(s, name, 1, 512)]);
    assert!(registry::select_with(&request(s), Some(&table)).unwrap().warning.is_none());
}

#[test]
fn an_installed_table_steers_select_and_says_where_nccl_is_faster() {
    let (s, other) = a_second_choice();
    let mut table = TunedTable::new(key(2));
    let mut nccl_row = row(2 * s, other, 1, 1024);
    nccl_row.nccl_us = Some(1.0);
    table.merge(vec![row(s, other, 1, 768), nccl_row]);
    registry::install_tuned_table(Some(table));
    let at = registry::select(&request(s)).unwrap();
    assert_eq!((at.program.name, at.target.threads_per_block, at.nccl_faster), (other, Some(768), false));
    assert!(!registry::tuned_prefers_nccl(&request(s)));
    // The NCCL row: callers that can forward do; `select` still names the best of ours.
    assert!(registry::tuned_prefers_nccl(&request(2 * s)));
    let nccl = registry::select(&request(2 * s)).unwrap();
    assert!(nccl.nccl_faster && nccl.by_tuned_table);
    assert_eq!(nccl.program.name, other);
    registry::install_tuned_table(None);
    assert!(registry::tuned_table().is_none());
    assert!(!registry::select(&request(s)).unwrap().by_tuned_table);
    assert!(!registry::tuned_prefers_nccl(&request(2 * s)));
}

#[test]
fn the_candidates_are_admissible_programs_times_bounded_thread_blocks_times_threads() {
    let mut checked = 0;
    for collective in [Collective::AllReduce, Collective::AllGather, Collective::ReduceScatter] {
        for world in [2, 8] {
            for size in [1u64 << 10, 1 << 20, 64 << 20] {
                let r = Request::new(collective, world, size).dtype(DataType::F16);
                let admitted = registry::candidates(&r);
                let cands = registry::tune_candidates(&r, &TUNE_THREAD_BLOCKS, &TUNE_THREADS);
                let bound = admitted.len() * (TUNE_THREAD_BLOCKS.len() * TUNE_THREADS.len() + 1);
                assert!(cands.len() <= bound, "{r}");
                // The defaults come first.
                let defaults = cands.iter().take_while(|c| c.default).count();
                assert!(cands[defaults..].iter().all(|c| !c.default), "{r}: a default after the others");
                for c in &cands {
                    let default = cands.iter().find(|d| d.default && d.program.name == c.program.name);
                    let least = default.map_or(0, |d| d.target.instances / registry::MIN_INSTANCE_FRACTION);
                    assert!(
                        c.target.instances >= least,
                        "{r}: {} with {} instances",
                        c.program.name,
                        c.target.instances
                    );
                    assert!(admitted.iter().any(|m| m.name == c.program.name), "{r}: {}", c.program.name);
                    assert!(c.program.tag("port").is_none_or(|v| v == 0), "{r}: port program {}", c.program.name);
                    assert!(r.rejection(c.program).is_none(), "{r}: {}", c.program.name);
                    assert!(c.thread_blocks >= 1 && c.thread_blocks <= MAX_RESIDENT_THREAD_BLOCKS, "{r}");
                    assert!(c.default || TUNE_THREADS.contains(&c.threads_per_block));
                    assert_eq!(c.target.threads_per_block, Some(c.threads_per_block));
                    assert_eq!((c.target.world_size, c.target.inplace), (world, Some(false)));
                }
                for m in &admitted {
                    let mine: Vec<_> = cands.iter().filter(|c| c.program.name == m.name).collect();
                    if mine.is_empty() {
                        continue;
                    }
                    // One default: the configuration selection would run without a table.
                    let d: Vec<_> = mine.iter().filter(|c| c.default).collect();
                    assert_eq!(d.len(), 1, "{r}: {}", m.name);
                    let plain = m.tuned_target(r.target(), r.plan_message_size()).unwrap();
                    assert_eq!(d[0].target.instances, plain.instances, "{r}: {}", m.name);
                    // No configuration twice.
                    let mut shapes: Vec<_> = mine.iter().map(|c| (c.target.instances, c.threads_per_block)).collect();
                    shapes.sort_unstable();
                    let all = shapes.len();
                    shapes.dedup();
                    assert_eq!(shapes.len(), all, "{r}: {} has a configuration twice", m.name);
                }
                checked += cands.len();
            }
        }
    }
    assert!(checked > 0, "no candidates at all");
    // One all-reduce shape in full: its plan builds, has the thread blocks claimed and splits the message.
    let r = request(1 << 20);
    let cands = registry::tune_candidates(&r, &TUNE_THREAD_BLOCKS, &TUNE_THREADS);
    assert!(!cands.is_empty());
    for c in cands.iter().filter(|c| c.threads_per_block == 1024) {
        let plan = c.program.build_plan(&c.target).unwrap();
        assert_eq!(registry::max_thread_blocks(&plan), c.thread_blocks, "{}", c.program.name);
        assert!(registry::splits_message(&plan, 1 << 20));
        assert_eq!(plan.num_threads_per_block, Some(1024));
    }
    // Fewer shapes asked for, fewer candidates; none asked for, only the defaults.
    assert!(registry::tune_candidates(&r, &[128], &[1024]).len() < cands.len());
    let only = registry::tune_candidates(&r, &[], &TUNE_THREADS);
    assert!(!only.is_empty() && only.iter().all(|c| c.default));
    assert_eq!(only.len(), cands.iter().filter(|c| c.default).count());
}

#[test]
fn at_four_ranks_the_candidates_reach_many_thread_blocks_on_power_of_two_sizes() {
    // One instance of the two-shot has 3 thread blocks at 4 ranks: 64 thread blocks would be 21 instances, which do
    // not split a power-of-two message; the candidates search downwards to the largest instance count that does.
    let r = Request::new(Collective::AllReduce, 4, 16 << 20).dtype(DataType::F16);
    let cands = registry::tune_candidates(&r, &TUNE_THREAD_BLOCKS, &TUNE_THREADS);
    let twoshot: Vec<_> = cands.iter().filter(|c| c.program.name == "allreduce_twoshot").collect();
    assert!(!twoshot.is_empty());
    let most = twoshot.iter().map(|c| c.target.instances).max().unwrap();
    assert_eq!(most, 32, "{:?}", twoshot.iter().map(|c| c.target.instances).collect::<Vec<_>>());
    for c in &twoshot {
        let plan = c.program.build_plan(&c.target).unwrap();
        assert!(registry::splits_message(&plan, 16 << 20), "{} instances", c.target.instances);
        assert_eq!(registry::max_thread_blocks(&plan), c.thread_blocks);
    }
    // The registry's own choice is among them, flagged as the default.
    let plain = registry::select_with(&r, None).unwrap();
    assert!(
        cands
            .iter()
            .any(|c| c.default && c.program.name == plain.program.name && c.target.instances == plain.target.instances),
        "{} x{}",
        plain.program.name,
        plain.target.instances
    );
}

#[test]
fn every_row_of_the_shipped_tables_names_a_program_that_serves_it() {
    let mut rows = 0;
    for (name, table) in mscclpp_exec::tune::shipped_tables() {
        let t = table.as_ref().unwrap_or_else(|e| panic!("{name}: {e}"));
        let world = t.key.world_size;
        for row in &t.rows {
            let Some(program) = &row.program else { continue };
            let input = if row.collective == Collective::AllGather { row.size / world as u64 } else { row.size };
            let r = Request::new(row.collective, world, input)
                .ranks_per_node(t.key.ranks_per_node)
                .inplace(row.inplace)
                .dtype(row.dtype);
            let meta = registry::find(program).unwrap_or_else(|e| panic!("{name}: {program}: {e}"));
            assert!(r.rejection(meta).is_none(), "{name}: {program} cannot serve {r}");
            let plan = meta.build_plan(&r.target().instances(row.instances)).unwrap();
            assert!(registry::splits_message(&plan, row.size), "{name}: {program} x{} at {r}", row.instances);
            assert_eq!(registry::max_thread_blocks(&plan), row.thread_blocks, "{name}: {program} at {r}");
            // The interpreter needs every block resident (the bound the tuner keeps to).
            assert!(
                row.thread_blocks <= MAX_RESIDENT_THREAD_BLOCKS,
                "{name}: {program} at {r}: {} blocks",
                row.thread_blocks
            );
            // The table's choice is what selection makes there.
            let chosen = registry::select_with(&r, Some(t)).unwrap();
            assert_eq!(chosen.program.name, program.as_str(), "{name}: {r}");
            assert_eq!(chosen.target.instances, row.instances, "{name}: {r}");
            rows += 1;
        }
    }
    assert!(rows > 0, "no shipped rows");
}

#[test]
fn what_selection_runs_is_tuned_first() {
    // A size whose budget runs out after one candidate keeps a row no slower than what selection ran without it.
    let mut checked = 0;
    for collective in [Collective::AllReduce, Collective::AllGather, Collective::ReduceScatter] {
        for world in [2, 4, 8] {
            for size in [1u64 << 10, 1 << 20, 64 << 20] {
                let r = Request::new(collective, world, size).dtype(DataType::F16);
                let Ok(plan) = registry::select(&r).and_then(|s| s.plan()) else { continue };
                let mut cands = registry::tune_candidates(&r, &TUNE_THREAD_BLOCKS, &TUNE_THREADS);
                assert!(mscclpp::exec::tune::selection_first(&r, &mut cands), "{r}: {} not a candidate", plan.name);
                assert!(cands[0].default && cands[0].program.name == plan.name, "{r}: {}", cands[0].program.name);
                checked += 1;
            }
        }
    }
    assert!(checked >= 20, "{checked} requests");
}
