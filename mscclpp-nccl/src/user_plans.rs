//! Plans a user registers, tried before the registry's programs: MSCCL++ JSON execution plans (from MSCCL++'s
//! Python DSL, `mscclpp plan`, or written by hand) in the directory `MSCCLPP_NCCL_PLAN_DIR` names, read once when
//! the first communicator is set up, and plans handed over at run time through [`register_json`] (the C function
//! `mscclpp_nccl_register_plan`, e.g. from the Python module living in the same process).
//!
//! Each plan is verified on the CPU once, when it is registered (a few schedules of a few launches, at the
//! default message size): a plan that fails is refused, with the verifier's finding on stderr and as the text
//! of `ncclGetLastError`, and never runs. A call takes the first registered plan (in registration order; the
//! directory's in file-name order) of its collective and world size whose message range holds its size, whose
//! chunks split it, and, for a broadcast, whose root is the call's.

use std::path::Path;
use std::sync::{Arc, OnceLock, RwLock};

use mscclpp_exec::executor::ExecutionPlan;
use mscclpp_exec::frontend::Prepared;
use mscclpp_lang::plan::{Collective, Plan, ReduceOp};
use mscclpp_lang::registry::splits_message;
use mscclpp_lang::verify::{self, VerifyOptions};

use crate::error::PlanError;

/// One verified plan and where it came from.
struct UserPlan {
    source: String,
    plan: Arc<Plan>,
}

fn plans() -> &'static RwLock<Vec<UserPlan>> {
    static PLANS: RwLock<Vec<UserPlan>> = RwLock::new(Vec::new());
    &PLANS
}

/// Verify `plan` on the CPU and add it; the finding when it is refused.
pub fn register(plan: Plan, source: &str) -> Result<(), PlanError> {
    let report = verify::verify(&plan, &VerifyOptions::default());
    if !report.ok() {
        return Err(PlanError::Refused {
            source_name: source.to_string(),
            plan: plan.name.clone(),
            findings: report.render(),
        });
    }
    let mut list = plans().write().map_err(|_| PlanError::Poisoned)?;
    list.push(UserPlan { source: source.to_string(), plan: Arc::new(plan) });
    Ok(())
}

/// Parse, verify and add a JSON plan.
pub fn register_json(text: &str, source: &str) -> Result<(), PlanError> {
    let plan = mscclpp_lang::plan::parse_plan(text)
        .map_err(|error| PlanError::Parse { source_name: source.to_string(), error })?;
    register(plan, source)
}

/// Read every `*.json` of `dir` (file-name order), registering each plan; the refusals.
pub fn load_dir(dir: &Path) -> Vec<String> {
    let mut files: Vec<_> = match std::fs::read_dir(dir) {
        Ok(entries) => entries
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "json"))
            .collect(),
        Err(e) => return vec![format!("MSCCLPP_NCCL_PLAN_DIR {}: {e}", dir.display())],
    };
    files.sort();
    let mut refused = Vec::new();
    for f in files {
        let source = f.display().to_string();
        let outcome = std::fs::read_to_string(&f)
            .map_err(|error| PlanError::Read { source_name: source.clone(), error })
            .and_then(|text| register_json(&text, &source));
        if let Err(e) = outcome {
            refused.push(e.to_string());
        }
    }
    refused
}

/// Load `MSCCLPP_NCCL_PLAN_DIR` once per process (at the first communicator's setup); refusals go to stderr and
/// `ncclGetLastError`.
pub fn load_configured_dir() {
    static LOADED: OnceLock<()> = OnceLock::new();
    LOADED.get_or_init(|| {
        let Some(dir) = mscclpp_config::NCCL_PLAN_DIR.get() else { return };
        for e in load_dir(&dir) {
            eprintln!("mscclpp-nccl: {e}");
            crate::state::set_last_error(e);
        }
    });
}

/// The first user plan for a call: `collective` on `world` ranks with `in_bytes` of input per rank (`out_bytes`
/// of output), reduction `reduce`, broadcast root `root`.
pub fn find(
    collective: Collective,
    world: usize,
    in_bytes: u64,
    out_bytes: u64,
    reduce: ReduceOp,
    root: usize,
) -> Option<Prepared> {
    let list = plans().read().ok()?;
    // A plan's message size is an all-gather's output, every other collective's input.
    let size = if collective == Collective::AllGather { out_bytes } else { in_bytes };
    let u = list.iter().find(|u| {
        let p = &u.plan;
        p.collective == collective
            && p.world_size() == world
            && (p.min_message()..=p.max_message()).contains(&size)
            && (collective != Collective::Broadcast || p.root_rank() == root)
            && splits_message(p, size)
    })?;
    let mut plan = (*u.plan).clone();
    if reduce != ReduceOp::Sum {
        plan.set_reduce_op(reduce);
    }
    let inplace = plan.inplace;
    match ExecutionPlan::new(plan) {
        Ok(plan) => Some(Prepared { plan, inplace, plan_bytes: in_bytes }),
        Err(e) => {
            eprintln!("mscclpp-nccl: user plan {}: {e}", u.source);
            None
        }
    }
}

/// Whether some user plan may take `collective` on `world` ranks at this size (checked for calls above the
/// window, which user plans may take).
pub fn covers(collective: Collective, world: usize, in_bytes: u64, out_bytes: u64) -> bool {
    let size = if collective == Collective::AllGather { out_bytes } else { in_bytes };
    plans().read().is_ok_and(|l| {
        l.iter().any(|u| {
            u.plan.collective == collective
                && u.plan.world_size() == world
                && (u.plan.min_message()..=u.plan.max_message()).contains(&size)
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use mscclpp_lang::registry::{self, Target};

    #[test]
    fn a_verified_plan_is_found_for_its_calls_and_a_broken_one_is_refused() {
        let mut plan = registry::find("allreduce_oneshot_ll").unwrap().build_plan(&Target::new(3)).unwrap();
        plan.name = "user_allreduce_three_ranks".into();
        let text = serde_json::to_string(&plan).unwrap();
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.json"), &text).unwrap();
        // Broken: rank 1 never reads what rank 0 puts (its first thread block's operations are gone).
        let mut broken = plan.clone();
        broken.name = "user_broken".into();
        broken.gpus[1].threadblocks[0].ops.clear();
        std::fs::write(dir.path().join("b.json"), serde_json::to_string(&broken).unwrap()).unwrap();
        std::fs::write(dir.path().join("c.json"), "{ not json").unwrap();
        std::fs::write(dir.path().join("ignored.txt"), "not a plan").unwrap();
        let refused = load_dir(dir.path());
        assert_eq!(refused.len(), 2, "{refused:?}");
        assert!(refused.iter().any(|r| r.contains("b.json")), "{refused:?}");
        assert!(refused.iter().any(|r| r.contains("c.json")), "{refused:?}");
        // 3 ranks: no other test registers a 3-rank plan, so these lookups see this one only.
        let size = 3 * 1024;
        let p = find(Collective::AllReduce, 3, size, size, ReduceOp::Max, 0).expect("the user plan serves it");
        assert_eq!(p.plan.plan().name, "user_allreduce_three_ranks");
        assert_eq!(verify::plan_reduce_op(p.plan.plan()), ReduceOp::Max);
        assert!(covers(Collective::AllReduce, 3, size, size));
        assert!(find(Collective::AllGather, 3, size, 3 * size, ReduceOp::Sum, 0).is_none(), "another collective");
        assert!(find(Collective::AllReduce, 5, size, size, ReduceOp::Sum, 0).is_none(), "another world size");
        assert!(find(Collective::AllReduce, 3, plan.max_message() * 2, 0, ReduceOp::Sum, 0).is_none(), "too big");
    }
}
