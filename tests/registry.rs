//! The registry: listing, lookup errors, the default selector, the plan cache (memory, disk, corruption) and
//! install.

use mscclpp_lang::plan::{Collective, Protocol, parse_plan, read_plan};
use mscclpp_lang::prelude::*;
use mscclpp_lang::registry::{
    self, Origin, PlanCache, RegistryError, Request, Target, cache_key, install, install_jobs,
};
use mscclpp_macros::collective_program;

// Link the default algorithms in.
use mscclpp_algorithms as _;

/// A program registered by this test crate: every rank copies its input into its output.
#[collective_program(
    name = "test_local_copy",
    collective = "custom",
    world_sizes = 1..=4,
    ranks_per_node = 1..=4,
    buffer_mode = "out_of_place",
    tags(default = 3, flavour = 2)
)]
fn local_copy(p: &mut Program<'_, Simple>) -> Result<(), ProgramError> {
    for r in 0..p.world_size() {
        p.rank(r)?.copy(p.output(r)?.all()?, p.input(r)?.all()?, 0)?;
    }
    Ok(())
}

/// A program of tuned tables only (`default = 0`), in a narrower range than `test_local_copy`.
#[collective_program(
    name = "test_table_only_copy",
    collective = "custom",
    world_sizes = 1..=4,
    message_sizes = 0..=4096,
    buffer_mode = "out_of_place",
    tags(default = 0)
)]
fn table_only_copy(p: &mut Program<'_, Simple>) -> Result<(), ProgramError> {
    local_copy(p)
}

/// A program that refuses 3 ranks at run time.
#[collective_program(collective = "test", world_sizes = 2..=4, buffer_mode = "out_of_place", check = false)]
fn no_three(p: &mut Program<'_, Simple>) -> Result<(), ProgramError> {
    if p.world_size() == 3 {
        return Err(ProgramError::custom("three is a crowd"));
    }
    Ok(())
}

#[test]
fn a_failing_program_reports_its_error_once() {
    let m = registry::find("no_three").unwrap();
    assert!(m.build_plan(&Target::new(2)).is_ok());
    let e = m.build_plan(&Target::new(3)).unwrap_err();
    assert!(matches!(e, RegistryError::Build { world_size: 3, .. }));
    assert_eq!(e.to_string(), "program `no_three` failed to build for 3 ranks: three is a crowd");
    assert!(std::error::Error::source(&e).is_none());
}

#[test]
fn at_least_nine_programs_with_metadata() {
    let all = registry::programs();
    assert!(all.len() >= 9, "{} programs", all.len());
    for m in &all {
        assert!(!m.name.is_empty());
        assert!(!m.description.is_empty(), "{} has no description", m.name);
        assert!(!m.source.is_empty());
        assert!(m.world_sizes.min >= 1);
    }
    let names: Vec<&str> = all.iter().map(|m| m.name).collect();
    let mut sorted = names.clone();
    sorted.sort();
    assert_eq!(names, sorted, "programs() is sorted by name");
}

#[test]
fn a_test_crate_program_registers_with_its_metadata() {
    let m = registry::find("test_local_copy").unwrap();
    assert_eq!(m.collective, Collective::Custom);
    assert_eq!(m.protocol, Protocol::Simple);
    assert_eq!(m.tag("flavour"), Some(2));
    assert_eq!(m.description, "A program registered by this test crate: every rank copies its input into its output.");
    assert!(m.function.ends_with("::local_copy"), "{}", m.function);
    assert!(m.ranks_per_node.accepts(4, 2));
    assert!(!m.ranks_per_node.accepts(4, 3));
    // Two nodes of two ranks.
    let plan = m.build_plan(&Target::new(4).ranks_per_node(2)).unwrap();
    assert_eq!(plan.world_size(), 4);
    // The function is still callable as written.
    assert!(build_plan(&ProgramSpec::new("direct", Collective::Custom, 2), local_copy).is_ok());
    let info = serde_json::to_value(m.info()).unwrap();
    assert_eq!(info["world_sizes"]["max"], 4);
    assert_eq!(info["tags"]["default"], 3);
}

#[test]
fn unknown_names_list_the_known_ones() {
    let e = registry::find("allgather_ring").unwrap_err();
    let msg = e.to_string();
    assert!(matches!(e, RegistryError::UnknownProgram { .. }));
    assert!(
        msg.contains("allgather_ring") && msg.contains("allgather_allpairs") && msg.contains("mscclpp list"),
        "{msg}"
    );
}

#[test]
fn impossible_world_sizes_state_the_supported_range() {
    let e = registry::find("allreduce_twoshot").unwrap().build_plan(&Target::new(9)).unwrap_err();
    assert!(matches!(e, RegistryError::UnsupportedWorldSize { world_size: 9, .. }));
    assert!(e.to_string().contains("2..=8"), "{e}");
    let e = registry::find("allreduce_twoshot").unwrap().build_plan(&Target::new(8).ranks_per_node(4)).unwrap_err();
    assert!(e.to_string().contains("ranks per node"), "{e}");
    let e = registry::find("seed_allgather").unwrap().build_plan(&Target::new(2).inplace(false)).unwrap_err();
    assert!(e.to_string().contains("in place only"), "{e}");
}

#[test]
fn default_selector_prefers_the_narrowest_range() {
    let pick = |r: Request| registry::select(&r).unwrap().program.name;
    assert_eq!(pick(Request::new(Collective::AllReduce, 8, 16 << 10)), "allreduce_oneshot_ll");
    assert_eq!(pick(Request::new(Collective::AllReduce, 8, 256 << 10)), "allreduce_oneshot_ll");
    assert_eq!(pick(Request::new(Collective::AllReduce, 8, (256 << 10) + 32)), "allreduce_twoshot");
    // A size no plan can split into its chunks is refused with the reason, not selected and failed later.
    let e = registry::select(&Request::new(Collective::AllReduce, 8, (256 << 10) + 16)).unwrap_err().to_string();
    assert!(e.contains("cannot split"), "{e}");
    assert_eq!(pick(Request::new(Collective::AllReduce, 4, 64 << 20).inplace(true)), "allreduce_rsag");
    assert_eq!(pick(Request::new(Collective::AllReduce, 4, 256 << 20).inplace(true)), "allreduce_staged");
    assert_eq!(pick(Request::new(Collective::AllReduce, 4, 512 << 20).inplace(true)), "allreduce_rotated");
    assert_eq!(pick(Request::new(Collective::AllReduce, 4, 2 << 30).inplace(true)), "allreduce_twoshot");
    assert_eq!(pick(Request::new(Collective::AllReduce, 2, 1 << 20)), "allreduce_twoshot_ll128");
    // A program tagged `default = 0` is no default even where its range is the narrowest (`test_table_only_copy`,
    // up to 4 KiB, against `test_local_copy`'s every size); it serves where nothing else does, as
    // `allreduce_two_nodes` for two nodes.
    assert_eq!(pick(Request::new(Collective::Custom, 2, 1024)), "test_local_copy");
    assert_eq!(registry::candidates(&Request::new(Collective::Custom, 2, 1024)).len(), 2);
    assert_eq!(pick(Request::new(Collective::AllReduce, 4, 2 << 20).ranks_per_node(2)), "allreduce_two_nodes");
    // All-gather compares per-rank size × world size: 8 × 128 KiB = 1 MiB is LL, 8 × 256 KiB is not; 8 × 2 MiB is
    // past the staged program's 8 MiB, 8 × 256 MiB past the rotated program's 1 GiB.
    assert_eq!(pick(Request::new(Collective::AllGather, 8, 128 << 10)), "allgather_allpairs_ll");
    assert_eq!(pick(Request::new(Collective::AllGather, 8, 256 << 10)), "allgather_staged");
    assert_eq!(pick(Request::new(Collective::AllGather, 8, 2 << 20)), "allgather_rotated");
    assert_eq!(pick(Request::new(Collective::AllGather, 8, 256 << 20)), "allgather_allpairs");
    assert_eq!(pick(Request::new(Collective::ReduceScatter, 2, 4096)), "reducescatter_ll");
    assert_eq!(pick(Request::new(Collective::ReduceScatter, 2, 4 << 20)), "reducescatter_staged");
    assert_eq!(pick(Request::new(Collective::ReduceScatter, 2, 64 << 20)), "reducescatter_rotated");
    assert_eq!(pick(Request::new(Collective::ReduceScatter, 2, 2 << 30)), "reducescatter");
    assert_eq!(pick(Request::new(Collective::AllToAll, 4, 4096)), "alltoall");
    assert_eq!(pick(Request::new(Collective::Broadcast, 3, 4096).inplace(true)), "broadcast_ll");
    assert_eq!(pick(Request::new(Collective::Broadcast, 3, 2 << 20).inplace(true)), "broadcast");
}

#[test]
fn opt_in_programs_need_their_tag() {
    // The example all-gather runs in place at 2 ranks, but the default all-gather wins.
    let r = Request::new(Collective::AllGather, 2, 64 << 20).inplace(true);
    assert_eq!(registry::select(&r).unwrap().program.name, "allgather_rotated");
    assert_eq!(registry::select(&r.clone().tag("example", 1)).unwrap().program.name, "seed_allgather");
    // The NVLS all-reduce is chosen only for requests that ask for NVLS.
    let r = Request::new(Collective::AllReduce, 8, 64 << 20).inplace(true);
    assert_eq!(registry::select(&r).unwrap().program.name, "allreduce_rsag");
    let nvls = registry::select(&r.clone().tag("nvls", 1)).unwrap();
    assert_eq!(nvls.program.name, "allreduce_nvls_zero_copy");
    assert!(!nvls.by_user_selector);
    assert_eq!(nvls.target.world_size, 8);
    assert_eq!(nvls.target.inplace, Some(true));
    // Required tags filter: no all-reduce has `flavour`.
    let e = registry::select(&r.tag("flavour", 2)).unwrap_err();
    assert!(e.to_string().contains("has no tag `flavour`"), "{e}");
}

#[test]
fn no_program_explains_why() {
    let e = registry::select(&Request::new(Collective::AllReduce, 16, 1024)).unwrap_err();
    let msg = e.to_string();
    assert!(matches!(e, RegistryError::NoProgram { .. }));
    assert!(msg.contains("allreduce_twoshot: it supports world sizes 2..=8"), "{msg}");
    assert!(msg.contains("16 ranks"), "{msg}");
}

#[test]
fn cache_builds_then_serves_from_memory_then_from_disk() {
    let dir = tempfile::tempdir().unwrap();
    let meta = registry::find("allgather_allpairs").unwrap();
    let target = Target::new(4);
    let cache = PlanCache::new(dir.path());
    let first = cache.compile(meta, &target).unwrap();
    assert_eq!(first.origin, Origin::Built);
    assert!(first.write_error.is_none(), "{:?}", first.write_error);
    let file = first.file.clone().unwrap();
    assert_eq!(file, dir.path().join(format!("{}.json", first.key)));
    assert_eq!(read_plan(&file).unwrap(), *first.plan);
    assert_eq!(cache.compile(meta, &target).unwrap().origin, Origin::Memory);
    // A fresh cache over the same directory (a new process) reads the file.
    let again = PlanCache::new(dir.path()).compile(meta, &target).unwrap();
    assert_eq!(again.origin, Origin::Disk);
    assert_eq!(again.plan, first.plan);
    // Only the plan file is left: the temporary file was renamed into place.
    let entries: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(entries.len(), 1, "{entries:?}");
}

#[test]
fn a_corrupt_cache_file_is_ignored_and_rewritten() {
    let dir = tempfile::tempdir().unwrap();
    let meta = registry::find("allreduce_oneshot_ll").unwrap();
    let target = Target::new(2);
    let file = PlanCache::new(dir.path()).compile(meta, &target).unwrap().file.unwrap();
    for garbage in ["{ not json", "{\"name\": \"x\"}", ""] {
        std::fs::write(&file, garbage).unwrap();
        let c = PlanCache::new(dir.path()).compile(meta, &target).unwrap();
        assert_eq!(c.origin, Origin::Built, "{garbage:?} was not rebuilt");
        assert!(parse_plan(&std::fs::read_to_string(&file).unwrap()).is_ok(), "{garbage:?} was not rewritten");
    }
    // A valid plan of another program under this key is not trusted either.
    let other = registry::find("allgather_allpairs").unwrap().build_plan(&target).unwrap();
    std::fs::write(&file, mscclpp_lang::plan::emit_plan(&other)).unwrap();
    let c = PlanCache::new(dir.path()).compile(meta, &target).unwrap();
    assert_eq!(c.origin, Origin::Built);
    assert_eq!(c.plan.name, "allreduce_oneshot_ll");
}

#[test]
fn cache_keys_cover_the_target_and_the_program() {
    let a = registry::find("allgather_allpairs").unwrap();
    let b = registry::find("allgather_allpairs_ll").unwrap();
    let t = Target::new(4).inplace(false);
    assert_eq!(cache_key(a, &t), cache_key(a, &t));
    assert_eq!(cache_key(a, &t).len(), 64);
    let others = [
        cache_key(b, &t),
        cache_key(a, &Target::new(8).inplace(false)),
        cache_key(a, &t.inplace(true)),
        cache_key(a, &t.instances(2)),
        cache_key(a, &Target::new(4).ranks_per_node(2).inplace(false)),
    ];
    for k in &others {
        assert_ne!(*k, cache_key(a, &t));
    }
    // The default placement and the explicit one share an entry.
    let dir = tempfile::tempdir().unwrap();
    let cache = PlanCache::new(dir.path());
    cache.compile(a, &Target::new(4)).unwrap();
    assert_eq!(cache.compile(a, &t).unwrap().origin, Origin::Memory);
}

#[test]
fn cache_keys_cover_the_code_beyond_the_program_function() {
    // The default programs' crate hashes its sources in its build script: an edit to a helper changes the key.
    let a = registry::find("allgather_allpairs").unwrap();
    assert_eq!(a.sources.len(), 16, "{:?}", a.sources);
    assert!(a.sources.chars().all(|c| c.is_ascii_hexdigit()));
    let edited = registry::ProgramMeta { sources: "0000000000000000", ..*a };
    let t = Target::new(4).inplace(false);
    assert_ne!(cache_key(&edited, &t), cache_key(a, &t));
    // A program from a crate without that build script: the key covers the file it was linked into (this test
    // executable), with its size and modification time.
    let local = registry::find("test_local_copy").unwrap();
    assert_eq!(local.sources, "");
    let exe = std::env::current_exe().unwrap();
    assert_eq!(registry::linked_file(local.build as usize).as_deref(), Some(exe.as_path()));
    let id = registry::build_identity(local);
    let len = std::fs::metadata(&exe).unwrap().len();
    assert!(id.starts_with(&format!("file {} {len} ", exe.display())), "{id}");
    let moved = registry::ProgramMeta { sources: "1", ..*local };
    assert_ne!(cache_key(&moved, &Target::new(2)), cache_key(local, &Target::new(2)));
}

#[test]
fn a_memory_only_cache_writes_nothing() {
    let cache = PlanCache::memory_only();
    let c = cache.compile(registry::find("broadcast").unwrap(), &Target::new(3)).unwrap();
    assert_eq!(c.origin, Origin::Built);
    assert!(c.file.is_none());
}

#[test]
fn install_writes_every_default_plan_and_a_manifest() {
    let dir = tempfile::tempdir().unwrap();
    // A stale plan in default/ is removed; other files stay.
    std::fs::create_dir_all(dir.path().join("default")).unwrap();
    std::fs::write(dir.path().join("default/stale.json"), "{}").unwrap();
    std::fs::write(dir.path().join("default/notes.txt"), "keep").unwrap();
    let jobs = install_jobs(&registry::DEFAULT_WORLD_SIZES);
    let mut seen = 0;
    let installed = install(dir.path(), &jobs, &mut |_| seen += 1).unwrap();
    assert_eq!(seen, jobs.len());
    assert_eq!(installed.plans.len(), jobs.len());
    assert!(!dir.path().join("default/stale.json").exists());
    assert!(dir.path().join("default/notes.txt").exists());
    for name in ["allgather_allpairs", "allreduce_twoshot", "allreduce_oneshot_ll", "broadcast"] {
        for ws in [2, 4, 8] {
            for mode in ["inplace", "outofplace"] {
                let f = dir.path().join(format!("default/{name}_n{ws}_{mode}.json"));
                let plan = read_plan(&f).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
                assert_eq!(plan.world_size(), ws);
                assert_eq!(plan.inplace, mode == "inplace");
            }
        }
    }
    // The test crate's own program is installed too, for the world sizes it supports.
    assert!(dir.path().join("default/test_local_copy_n2_outofplace.json").exists());
    assert!(!dir.path().join("default/test_local_copy_n8_outofplace.json").exists());
    let index: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("default/index.json")).unwrap()).unwrap();
    assert_eq!(index.as_array().unwrap().len(), jobs.len());
    // Installed plans are in the hashed cache as well.
    let meta = registry::find("allreduce_twoshot").unwrap();
    let c = PlanCache::new(dir.path()).compile(meta, &Target::new(8).inplace(true)).unwrap();
    assert_eq!(c.origin, Origin::Disk);
}

/// A program for two equal nodes (`nodes = 2`): every rank copies its input into its output.
#[collective_program(
    name = "test_two_node_copy",
    collective = "custom",
    world_sizes = 2..=8,
    nodes = 2,
    buffer_mode = "out_of_place"
)]
fn two_node_copy(p: &mut Program<'_, Simple>) -> Result<(), ProgramError> {
    for r in 0..p.world_size() {
        p.rank(r)?.copy(p.output(r)?.all()?, p.input(r)?.all()?, 0)?;
    }
    Ok(())
}

#[test]
fn nodes_declares_equal_nodes_relative_to_the_world_size() {
    let meta = registry::find("test_two_node_copy").unwrap();
    assert_eq!(meta.ranks_per_node, registry::RanksPerNode::Nodes(2));
    for (world, per_node, ok) in [(8, 4, true), (6, 3, true), (2, 1, true), (8, 8, false), (8, 2, false), (5, 2, false)]
    {
        assert_eq!(meta.ranks_per_node.accepts(world, per_node), ok, "{world} ranks, {per_node} per node");
    }
    assert!(meta.build_plan(&Target::new(8).ranks_per_node(4)).is_ok());
    let e = meta.build_plan(&Target::new(8)).unwrap_err().to_string();
    assert!(e.contains("2 nodes of equal size"), "{e}");
    assert_eq!(meta.ranks_per_node.to_string(), "world/2");
    // The generated check builds every declared world size as two nodes (the odd ones are not declarable).
    let report = registry::check_program("test_two_node_copy").unwrap();
    assert!(report.ok(), "{report}");
    assert!(report.cases.iter().all(|c| c.ranks_per_node * 2 == c.world_size), "{report}");
    assert!(!report.cases.is_empty());
}

#[test]
fn install_writes_the_plans_of_a_multi_node_shape() {
    let dir = tempfile::tempdir().unwrap();
    let jobs = registry::install_jobs_with(&[4, 6, 8], Some(2));
    assert!(!jobs.is_empty());
    assert!(jobs.iter().all(|j| j.target.ranks_per_node == 2 && j.file_name.contains("_rpn2_")));
    let installed = install(dir.path(), &jobs, &mut |_| {}).unwrap();
    assert_eq!(installed.plans.len(), jobs.len());
    // Two nodes of 2 at 4 ranks: the two-node programs, not the one-node defaults.
    let f = dir.path().join("default/test_two_node_copy_n4_rpn2_outofplace.json");
    assert_eq!(read_plan(&f).unwrap_or_else(|e| panic!("{}: {e}", f.display())).world_size(), 4);
    assert!(installed.plans.iter().any(|p| p.name == "allreduce_two_nodes" && p.world_size == 4));
    assert!(!installed.plans.iter().any(|p| p.name == "allreduce_oneshot_ll"), "one node only");
    // A world size the nodes do not divide is skipped.
    assert!(registry::install_jobs_with(&[5], Some(2)).is_empty());
}
