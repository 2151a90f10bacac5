//! The plan registry: every `#[collective_program]` linked into the binary, selection, and cached compilation.
//!
//! - [`programs`] lists the registered programs with their [`ProgramMeta`]; [`find`] looks one up by name.
//! - [`select`] picks a program for a [`Request`] (collective, world size, ranks per node, message size,
//!   placement, dtype, tags), through a user selector ([`set_selector`]) or the [`default_selector`].
//! - [`compile`] builds a program's plan for a world size, cached in memory and under `$MSCCLPP_CACHE_DIR`
//!   (default `~/.cache/mscclpp`) by content hash ([`PlanCache`]).
//! - [`check_program`] builds a program for every world size it declares and verifies the plans;
//!   `#[collective_program]` generates a test that runs it.
//! - [`TunedTable`]: the autotuner's measured choice per message size; once installed
//!   ([`install_tuned_table`]) [`select`] follows it (sizes between rows take the row at or above).
//! - [`install`] writes plans for world sizes 2, 4 and 8 into `<cache dir>/default/`.
//!
//! Programs register at link time through `inventory`. A crate of programs that nothing references is dropped by
//! the linker, so a binary that needs the default algorithms says `use mscclpp_algorithms as _;`.
//!
//! ```no_run
//! use mscclpp_lang::plan::Collective;
//! use mscclpp_lang::registry::{self, Request};
//!
//! let chosen = registry::select(&Request::new(Collective::AllReduce, 8, 16 << 10))?;
//! let plan = chosen.plan()?;
//! println!("{} -> {} thread blocks on rank 0", chosen.program.name, plan.gpus[0].threadblocks.len());
//! # Ok::<(), registry::RegistryError>(())
//! ```

mod cache;
mod check;
mod error;
mod install;
mod meta;
mod request;
mod select;
mod shape;
mod tuned;

use std::sync::{Arc, OnceLock};

pub use cache::{
    CACHE_DIR_ENV, Compiled, Origin, PlanCache, build_identity, cache_key, default_cache_dir, linked_file, write_atomic,
};
pub use check::{CheckCase, CheckReport, UNBOUNDED_CHECK_LIMIT, check_all, check_program};
pub use error::RegistryError;
pub use install::{
    DEFAULT_WORLD_SIZES, InstallJob, Installed, InstalledPlan, install, install_jobs, install_jobs_with,
};
pub use meta::{
    BuildFn, MAX_RESIDENT_THREAD_BLOCKS, ProgramInfo, ProgramMeta, RangeInfo, RanksPerNodeInfo, Registration, Tag,
    Target, max_thread_blocks,
};
pub use request::{OPT_IN_TAGS, Rejection, Request};
pub use select::{Selected, Selector, candidates, clear_selector, default_selector, select, select_with, set_selector};
pub use shape::{BufferMode, RanksPerNode, SizeRange, human_bytes, parse_size};
pub use tuned::{
    MIN_INSTANCE_FRACTION, TUNE_THREAD_BLOCKS, TUNE_THREADS, TUNED_FORMAT, TableError, TableKey, TableLoad,
    TuneCandidate, TunedRow, TunedTable, install_tuned_table, splits_message, tune_candidates, tuned_prefers_nccl,
    tuned_table,
};

use crate::plan::Plan;

/// Every registered program, sorted by name.
pub fn programs() -> Vec<&'static ProgramMeta> {
    let mut all: Vec<&'static ProgramMeta> = inventory::iter::<Registration>.into_iter().map(|r| &r.0).collect();
    all.sort_by(|a, b| a.name.cmp(b.name).then_with(|| a.function.cmp(b.function)));
    all
}

/// The names registered more than once (each should be unique; the first in [`programs`] order wins).
pub fn duplicate_names() -> Vec<&'static str> {
    let all = programs();
    let mut dups: Vec<&'static str> = all.windows(2).filter(|w| w[0].name == w[1].name).map(|w| w[0].name).collect();
    dups.dedup();
    dups
}

/// The program named `name`; the error lists the registered names.
pub fn find(name: &str) -> Result<&'static ProgramMeta, RegistryError> {
    let all = programs();
    all.iter().find(|m| m.name == name).copied().ok_or_else(|| RegistryError::UnknownProgram {
        name: name.to_string(),
        known: all.iter().map(|m| m.name.to_string()).collect(),
    })
}

/// The process-wide cache, in [`default_cache_dir`] (or in memory only when there is none).
pub fn global_cache() -> &'static PlanCache {
    static CACHE: OnceLock<PlanCache> = OnceLock::new();
    CACHE.get_or_init(PlanCache::from_env)
}

/// Compiles program `name` for `world_size` ranks, `ranks_per_node` per node and `instances` instances, in the
/// program's default placement, through the process-wide cache.
pub fn compile(
    name: &str,
    world_size: usize,
    ranks_per_node: usize,
    instances: usize,
) -> Result<Arc<Plan>, RegistryError> {
    compile_target(name, &Target::new(world_size).ranks_per_node(ranks_per_node).instances(instances)).map(|c| c.plan)
}

/// Compiles program `name` for `target` through the process-wide cache.
pub fn compile_target(name: &str, target: &Target) -> Result<Compiled, RegistryError> {
    global_cache().compile(find(name)?, target)
}
