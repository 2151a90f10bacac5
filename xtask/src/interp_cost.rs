//! The `interp-cost` part: each LL program of the registry as a hand-written kernel against the interpreter
//! running the same plan (the `interp_cost` example), 1 KiB to 1 MiB (each within its message sizes), with the
//! plan-specialised programs, the one-shot all-reduce once more on the generic interpreter (`MSCCLPP_FIXED_KERNELS=off`) for the difference, and
//! the LL128 `allreduce_twoshot_ll128` and `allreduce_oneshot_ll128` at 256 KiB–4 MiB and the Simple all-reduces `allreduce_rsag`,
//! `allreduce_twoshot` and `allreduce_staged` at 1–64 MiB.
//! With two GPUs or more it times both and prints the interpreter's overhead per size; with one, two ranks share it
//! and it checks both for correctness only (the example says so on every line).

use crate::context::Context;
use crate::step::Step;

/// The sizes of the comparison.
pub const SIZES: &str = "1K:1M";

/// The programs the example has hand-written kernels for.
pub const PROGRAMS: [&str; 4] =
    ["allreduce_oneshot_ll", "allreduce_twoshot_ll", "allgather_allpairs_ll", "reducescatter_ll"];

/// The LL128 programs with a hand-written kernel, and their sizes (their ranges).
pub const LL128: ([&str; 2], &str) = (["allreduce_twoshot_ll128", "allreduce_oneshot_ll128"], "256K:4M:x2");

/// The Simple programs with a hand-written kernel (`allreduce_rsag` and `allreduce_twoshot` share one), and sizes.
pub const SIMPLE: ([&str; 3], &str) = (["allreduce_rsag", "allreduce_twoshot", "allreduce_staged"], "1M:64M:x4");

/// The steps: one job of the example per program on 2 ranks (sharing GPU 0 when the host has one GPU), then the
/// one-shot on the generic interpreter, then the LL128 all-reduces and the Simple ones.
pub fn steps(ctx: &Context) -> Vec<Step> {
    let shared = ctx.gpus < 2;
    let mut env: Vec<String> =
        if shared { crate::step::SHARED_GPU_ENV.iter().map(|s| s.to_string()).collect() } else { Vec::new() };
    env.push("MSCCLPP_FIXED_KERNELS".to_string());
    let note = if shared { " (2 ranks share GPU 0: correctness only)" } else { "" };
    let job = |sizes: &str, program: &str| {
        ctx.launcher.command(&env, &[ctx.exe("interp_cost"), sizes.to_string(), program.into()])
    };
    let mut steps: Vec<Step> = PROGRAMS
        .iter()
        .map(|p| Step::new(format!("interp_cost {p}{note}"), 300, job(SIZES, p)).with_env("MSCCLPP_FIXED_KERNELS", ""))
        .collect();
    steps.push(
        Step::new(
            format!("interp_cost {} on the generic interpreter{note}", PROGRAMS[0]),
            300,
            job(SIZES, PROGRAMS[0]),
        )
        .with_env("MSCCLPP_FIXED_KERNELS", "off"),
    );
    for p in LL128.0 {
        steps.push(Step::new(format!("interp_cost {p}{note}"), 300, job(LL128.1, p)));
    }
    for p in SIMPLE.0 {
        steps.push(Step::new(format!("interp_cost {p}{note}"), 300, job(SIMPLE.1, p)));
    }
    steps.into_iter().map(|s| s.sharing_gpu0(shared)).collect()
}
