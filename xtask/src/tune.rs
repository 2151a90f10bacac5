//! The `tune` part: `mscclpp tune` end to end at the suite's rank count (2 ranks sharing GPU 0 when the host has one): tuning writes the
//! machine's table into a fresh cache directory, `mscclpp list` shows it, `mscclpp bench` and `mscclpp test`
//! follow it, a small budget stops the run cleanly, and a table measured elsewhere is ignored with a warning. The
//! tables are copied into the log folder.

use std::path::Path;

use crate::context::Context;
use crate::step::Step;

/// Runs `argv`, prints its output, and passes when it exits 0 and its output matches every pattern of `grep -E`.
fn expecting(name: &str, limit_s: u64, argv: Vec<String>, patterns: &[&str]) -> Step {
    let mut script = String::from("out=$(\"$@\" 2>&1); rc=$?; printf '%s\\n' \"$out\"; [ $rc -eq 0 ] || exit $rc\n");
    for p in patterns {
        script.push_str(&format!(
            "printf '%s\\n' \"$out\" | grep -Eq -- '{p}' || {{ echo \"tune part: no line matches '{p}'\"; exit 1; }}\n"
        ));
    }
    let mut a = vec!["bash".to_string(), "-c".to_string(), script, name.to_string()];
    a.extend(argv);
    Step::new(name, limit_s, a)
}

/// The steps of the `tune` part.
pub fn steps(ctx: &Context) -> Vec<Step> {
    let shared = ctx.gpus < 2;
    let cache = std::env::temp_dir().join(format!("mscclpp-tune-{}", std::process::id()));
    let cache_s = cache.display().to_string();
    let mut env = vec!["MSCCLPP_CACHE_DIR"];
    if shared {
        env.extend(crate::step::SHARED_GPU_ENV);
    }
    let on = |s: Step| s.with_env("MSCCLPP_CACHE_DIR", &cache_s).sharing_gpu0(shared);
    let job = |args: &[&str]| ctx.mpi(&env, ctx.mscclpp(args));
    let log = |name: &str| ctx.logs.join(name).display().to_string();
    let nccl: &[&str] = if shared { &[] } else { &["--nccl"] };
    // Sharing one GPU, two ranks' thread blocks must be resident together: at most 64 each.
    let quick: &[&str] = if shared {
        &["--runs", "5", "--iters", "5", "--thread-blocks", "4,8,16,32,64"]
    } else {
        &["--runs", "5", "--iters", "5"]
    };

    let mut s = Vec::new();
    let out = log("tuned-allreduce.json");
    let mut args = vec!["tune", "allreduce", "--sizes", "1K:256K", "--budget-s", "150", "--out", &out];
    args.extend(quick.iter().copied());
    args.extend(nccl);
    s.push(on(expecting("tune allreduce 1K-256K", 300, job(&args), &["^allreduce +f16 +out +1 KiB", "tuned table: "])));

    let out = log("tuned-allgather-reducescatter.json");
    let mut args = vec!["tune", "allgather", "reducescatter", "--sizes", "4K,256K", "--budget-s", "90", "--out", &out];
    args.extend(quick.iter().copied());
    s.push(on(expecting(
        "tune allgather and reducescatter",
        240,
        job(&args),
        &["^allgather +f16 +out +4 KiB", "^reducescatter +f16 +out +256 KiB"],
    )));

    let mut args = vec!["tune", "broadcast", "--sizes", "1K:1G", "--budget-s", "20"];
    args.extend(quick.iter().copied());
    s.push(on(expecting("a 20 s budget stops cleanly", 240, job(&args), &["the budget ran out", "tuned table: "])));

    // The table holds every collective tuned so far; list shows it, for this job's world size.
    let n = ctx.launcher.ranks;
    let listed = format!("tuned table .*row\\(s\\)\\): .*{n} ranks \\({n} per node\\)");
    s.push(on(expecting(
        "list shows the tuned table",
        60,
        ctx.mscclpp(&["list"]),
        &[&listed, "^allreduce +f16", "^allgather +f16"],
    )));
    s.push(on(expecting(
        "bench follows the tuned table",
        300,
        job(&["bench", "allreduce", "--sizes", "1K:256K", "--graph"]),
        &["tuned table: "],
    )));
    s.push(on(expecting(
        "test follows the tuned table",
        180,
        job(&["test", "allreduce_oneshot_ll", "--size", "4K,64K", "--graph"]),
        &["tuned table: "],
    )));

    // A table measured with another driver: ignored with one warning, the run goes on with the normal choice.
    let stale = format!(
        "for f in \"$MSCCLPP_CACHE_DIR\"/tuned/*.json; do cp \"$f\" {logs}/; \
         sed -i 's/\"driver\": \"[^\"]*\"/\"driver\": \"0.0\"/' \"$f\"; done; \"$@\"",
        logs = shell_quote(&ctx.logs)
    );
    let mut argv = vec!["bash".to_string(), "-c".to_string(), stale, "stale".to_string()];
    argv.extend(job(&["test", "allreduce_oneshot_ll", "--size", "4K", "--no-timing"]));
    s.push(on(expecting(
        "a table from another driver is ignored",
        180,
        argv,
        &["warning: .*ignored: it was measured on"],
    )));
    s
}

fn shell_quote(p: &Path) -> String {
    format!("'{}'", p.display().to_string().replace('\'', "'\\''"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::launch::words;

    #[test]
    fn the_expecting_wrapper_checks_exit_and_output() {
        let ok = expecting("t", 10, words(&["echo", "tuned table: x"]), &["^tuned table: "]);
        let status = |s: &Step| std::process::Command::new(&s.argv[0]).args(&s.argv[1..]).output().unwrap().status;
        assert!(status(&ok).success());
        let missing = expecting("t", 10, words(&["echo", "nothing"]), &["tuned table"]);
        assert!(!status(&missing).success());
        let failing = expecting("t", 10, words(&["false"]), &[]);
        assert!(!status(&failing).success());
    }
}
