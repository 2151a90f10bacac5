//! The `nccl` and `nccl-shared` parts: `libmscclpp_nccl.so` under torchrun, with and without `LD_PRELOAD`
//! (collected into `nccl/` by `gpu collect` with the scripts of `mscclpp-nccl/tests/`).

use std::path::PathBuf;

use crate::context::Context;
use crate::launch::words;
use crate::step::Step;

/// The folder inside the collected binaries that holds the library and the torch scripts.
pub const DIR: &str = "nccl";
/// The library's file name.
pub const LIBRARY: &str = "libmscclpp_nccl.so";
/// The torch scripts copied beside it (from `mscclpp-nccl/tests/`).
pub const SCRIPTS: [&str; 3] = ["torch_collectives.py", "torch_timing.py", "torch_fault.py"];
/// The standalone test of two ranks sharing GPU 0 (`mscclpp-nccl/tests/standalone_gpu.rs`).
const SHARED_TEST: &str = "two_ranks_share_a_gpu_without_a_real_nccl";
/// The standalone test of a symmetric window on two GPUs (this part runs it; `one-gpu` skips it).
pub const WINDOW_TEST: &str = "a_symmetric_window_on_two_gpus_without_a_real_nccl";
/// Where the steps write their JSON results on the GPU host.
const RESULTS: &str = "/tmp/mscclpp-nccl-suite";

fn file(ctx: &Context, name: &str) -> String {
    let p = ctx.bin.join(DIR).join(name);
    std::fs::canonicalize(&p).unwrap_or(p).display().to_string()
}

fn json(tag: &str) -> String {
    PathBuf::from(RESULTS).join(tag).display().to_string()
}

/// The suite's rank count (one per GPU): every collective both ways (with and without `device_id`), the outputs compared, the
/// forced-fallback run, the timing table both ways.
pub fn steps(ctx: &Context) -> Vec<Step> {
    let collectives = file(ctx, SCRIPTS[0]);
    let timing = file(ctx, SCRIPTS[1]);
    let lib = file(ctx, LIBRARY);
    let run = |name: &str, limit: u64, script: &str, args: &[&str], preload: bool| {
        let step = Step::new(name, limit, ctx.launcher.torchrun_python(script, &words(args)));
        if preload { step.with_env("LD_PRELOAD", &lib).with_env("MSCCLPP_NCCL_LOG", "info") } else { step }
    };
    let (nccl, ours, nccl_dev, ours_dev, forced) =
        (json("nccl"), json("mscclpp"), json("nccl-device-id"), json("mscclpp-device-id"), json("forced"));
    let compare = |name: &str, a: &str, b: &str| {
        Step::new(name, 60, vec!["python3".into(), collectives.clone(), "--compare".into(), a.into(), b.into()])
    };
    let standalone = ctx.bin.join("tests").join("standalone_gpu").display().to_string();
    vec![
        Step::new(
            "libmscclpp_nccl.so without NCCL: a symmetric window on 2 GPUs",
            240,
            words(&[&standalone, WINDOW_TEST, "--exact", "--include-ignored"]),
        )
        .test_binary()
        .with_env("CUDA_VISIBLE_DEVICES", "0,1"),
        run("torch collectives, NCCL", 300, &collectives, &["--json", &nccl], false),
        run("torch collectives, LD_PRELOAD", 300, &collectives, &["--json", &ours], true),
        compare("compare NCCL and LD_PRELOAD", &nccl, &ours),
        run("torch collectives, NCCL, device_id", 300, &collectives, &["--json", &nccl_dev, "--device-id"], false),
        run("torch collectives, LD_PRELOAD, device_id", 300, &collectives, &["--json", &ours_dev, "--device-id"], true),
        compare("compare NCCL and LD_PRELOAD (device_id)", &nccl_dev, &ours_dev),
        run("torch collectives, LD_PRELOAD, every call forced to NCCL", 300, &collectives, &["--json", &forced], true)
            .with_env("MSCCLPP_FORCE_NCCL_FALLBACK_OPERATION", "all"),
        compare("compare NCCL and forced fallback", &nccl, &forced),
        Step::new(
            "torch, LD_PRELOAD, a rank killed during graph replays",
            300,
            vec!["python3".into(), file(ctx, SCRIPTS[2])],
        )
        .with_env("LD_PRELOAD", &lib)
        .with_env("MSCCLPP_NCCL_LOG", "info"),
        run("torch timing, NCCL", 400, &timing, &["--json", &json("timing-nccl.json")], false),
        run("torch timing, LD_PRELOAD", 400, &timing, &["--json", &json("timing-mscclpp.json")], true),
        Step::new(
            "timing comparison",
            30,
            vec![
                "python3".into(),
                timing.clone(),
                "--compare".into(),
                json("timing-nccl.json"),
                json("timing-mscclpp.json"),
            ],
        ),
    ]
}

/// One GPU: NCCL refuses two ranks on one GPU ("Duplicate GPU detected"), so torch cannot run; the library's
/// own path runs instead, without any real NCCL (the `standalone_gpu` test: two ranks on GPU 0).
pub fn shared_steps(ctx: &Context) -> Vec<Step> {
    let exe = ctx.bin.join("tests").join("standalone_gpu").display().to_string();
    vec![
        Step::new(
            "libmscclpp_nccl.so without NCCL, 2 ranks on GPU 0",
            300,
            words(&[&exe, SHARED_TEST, "--exact", "--include-ignored"]),
        )
        .test_binary()
        .with_env("CUDA_VISIBLE_DEVICES", "0")
        .with_env("MSCCLPP_REQUIRE_NVRTC", "1"),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_parts_preload_the_library_only_where_they_say() {
        let ctx = crate::tests::context(2);
        let s = steps(&ctx);
        assert!(s.len() >= 10);
        for step in &s {
            let preloaded = step.env.iter().any(|(k, v)| k == "LD_PRELOAD" && v.ends_with(LIBRARY));
            let wants = step.name.starts_with("torch") && step.name.contains("LD_PRELOAD");
            assert_eq!(preloaded, wants, "{}", step.name);
        }
        assert!(
            s.iter().any(|x| x.env.iter().any(|(k, v)| k == "MSCCLPP_FORCE_NCCL_FALLBACK_OPERATION" && v == "all"))
        );
        assert!(s.iter().skip(1).all(|x| x.argv.iter().any(|a| a.ends_with(".py"))));
        assert!(s[0].argv[0].ends_with("tests/standalone_gpu") && s[0].argv.contains(&WINDOW_TEST.to_string()));
        assert!(s.iter().any(|x| x.argv.iter().any(|a| a.ends_with("torch_fault.py"))), "the fault step runs");
        let shared = shared_steps(&ctx);
        assert_eq!(shared.len(), 1);
        assert!(shared[0].argv[0].ends_with("tests/standalone_gpu"));
        assert_eq!(shared[0].argv[1], SHARED_TEST, "one GPU runs the shared test only");
    }
}
