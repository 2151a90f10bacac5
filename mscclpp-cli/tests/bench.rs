//! `mscclpp bench` without GPUs and with bad arguments: each fails at once with a clear error.

use std::process::{Command, Output};

fn bench(args: &[&str], env: &[(&str, &str)]) -> Output {
    let cache = tempfile::tempdir().unwrap();
    let mut c = Command::new(env!("CARGO_BIN_EXE_mscclpp"));
    c.arg("bench").args(args).env("MSCCLPP_CACHE_DIR", cache.path());
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn no_gpu_is_a_clear_error() {
    // One rank that sees no GPU (none visible here even on a GPU host).
    let env = [("MSCCLPP_RANK", "0"), ("MSCCLPP_WORLD_SIZE", "1"), ("CUDA_VISIBLE_DEVICES", "")];
    let o = bench(&["allreduce", "--sizes", "1K:4K"], &env);
    let e = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{e}");
    assert!(e.contains("one process per GPU") && e.contains("mpirun -np 2 mscclpp bench"), "{e}");
    assert!(["GPU", "CUDA", "device", "driver"].iter().any(|w| e.contains(w)), "{e}");
}

#[test]
fn without_a_launcher_the_error_says_how_to_launch() {
    let o = bench(&["allgather"], &[]);
    let e = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{e}");
    assert!(e.contains("mpirun") && e.contains("torchrun"), "{e}");
}

#[test]
fn bad_arguments_are_refused_before_any_gpu_work() {
    let cases: [(&[&str], &str); 6] = [
        (&["allreduce", "--sizes", "8K:1K"], "runs backwards"),
        (&["allreduce", "--sizes", "1K:1M:x1"], "at least 2"),
        (&["sendrecv"], "does not time `sendrecv`"),
        (&["allreduce", "--runs", "5"], "--runs"),
        (&["allreduce", "--dtype", "f64"], "--dtype"),
        (&["allreduce", "--graph", "--eager"], "cannot be used with"),
    ];
    for (args, want) in cases {
        let o = bench(args, &[]);
        let e = stderr(&o);
        assert!(!o.status.success() && e.contains(want), "{args:?}: {e}");
    }
    let o = bench(&["allreduce", "--op", "max"], &[("MSCCLPP_RANK", "0"), ("MSCCLPP_WORLD_SIZE", "1")]);
    let e = stderr(&o);
    assert!(!o.status.success() && e.contains("use --op sum"), "{e}");
}
