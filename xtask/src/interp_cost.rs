//! The `interp-cost` part: the one-shot LL all-reduce as a hand-written kernel against the interpreter running
//! the same plan (the `interp_cost` example), 1 KiB to 256 KiB (the one-shot LL range). With two GPUs or more it times both and prints the
//! interpreter's overhead per size; with one, two ranks share it and it checks both for correctness only (the
//! example says so on every line).

use crate::context::Context;
use crate::step::Step;

/// The sizes of the comparison.
pub const SIZES: &str = "1K:256K";

/// The steps: one job of the example on 2 ranks (sharing GPU 0 when the host has one GPU).
pub fn steps(ctx: &Context) -> Vec<Step> {
    let shared = ctx.gpus < 2;
    let env: &[&str] = if shared { &crate::step::SHARED_GPU_ENV } else { &[] };
    let argv = ctx
        .launcher
        .command(&env.iter().map(|s| s.to_string()).collect::<Vec<_>>(), &[ctx.exe("interp_cost"), SIZES.to_string()]);
    let name = if shared { "interp_cost (2 ranks share GPU 0: correctness only)" } else { "interp_cost" };
    let step = Step::new(name, 300, argv);
    vec![step.sharing_gpu0(shared)]
}
