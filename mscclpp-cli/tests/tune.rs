//! `mscclpp tune` without GPUs and with bad arguments, and `mscclpp list` showing the tuned tables of the cache.

use std::path::Path;
use std::process::{Command, Output};

fn mscclpp(args: &[&str], cache: &Path, env: &[(&str, &str)]) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_mscclpp"));
    c.args(args).env("MSCCLPP_CACHE_DIR", cache);
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().unwrap()
}

fn text(o: &[u8]) -> String {
    String::from_utf8_lossy(o).into_owned()
}

#[test]
fn no_gpu_is_a_clear_error() {
    let cache = tempfile::tempdir().unwrap();
    let env = [("MSCCLPP_RANK", "0"), ("MSCCLPP_WORLD_SIZE", "1"), ("CUDA_VISIBLE_DEVICES", "")];
    let o = mscclpp(&["tune", "allreduce", "--sizes", "1K:4K", "--budget-s", "5"], cache.path(), &env);
    let e = text(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{e}");
    assert!(e.contains("one process per GPU") && e.contains("mpirun -np 2 mscclpp tune"), "{e}");
    assert!(["GPU", "CUDA", "device", "driver"].iter().any(|w| e.contains(w)), "{e}");
    // Nothing was tuned, so nothing was written.
    assert!(!cache.path().join("tuned").exists());
}

#[test]
fn without_a_launcher_the_error_says_how_to_launch() {
    let cache = tempfile::tempdir().unwrap();
    let o = mscclpp(&["tune"], cache.path(), &[]);
    let e = text(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{e}");
    assert!(e.contains("mpirun") && e.contains("torchrun"), "{e}");
}

#[test]
fn bad_arguments_are_refused_before_any_gpu_work() {
    let cache = tempfile::tempdir().unwrap();
    let cases: [(&[&str], &str); 5] = [
        (&["tune", "--sizes", "8K:1K"], "runs backwards"),
        (&["tune", "sendrecv"], "sendrecv"),
        (&["tune", "--dtype", "f64"], "--dtype"),
        (&["tune", "--budget-s", "0"], "--budget-s"),
        (&["tune", "--iters", "0"], "--iters"),
    ];
    for (args, want) in cases {
        let o = mscclpp(args, cache.path(), &[]);
        let e = text(&o.stderr);
        assert!(!o.status.success() && e.contains(want), "{args:?}: {e}");
    }
}

const TABLE: &str = r#"{
  "key": { "format": 1, "gpu": "NVIDIA H200", "world_size": 2, "ranks_per_node": 2, "driver": "13.0",
           "library": "0.1.0" },
  "rows": [
    { "collective": "allreduce", "dtype": "f16", "inplace": false, "size": 1024,
      "program": "allreduce_oneshot_ll", "instances": 4, "thread_blocks": 4, "threads_per_block": 256,
      "us": 4.5, "nccl_us": 6.0 },
    { "collective": "allreduce", "dtype": "f16", "inplace": false, "size": 1048576,
      "program": "allreduce_twoshot", "instances": 2, "thread_blocks": 16, "threads_per_block": 1024,
      "us": 15.0, "nccl_us": 14.0 }
  ]
}"#;

#[test]
fn list_shows_the_tuned_tables_and_says_which_are_ignored() {
    let cache = tempfile::tempdir().unwrap();
    let o = mscclpp(&["list"], cache.path(), &[]);
    assert!(o.status.success());
    let out = text(&o.stdout);
    // No table in the cache; the shipped ones are listed one line each.
    assert!(!out.lines().any(|l| l.starts_with("tuned table ")), "{out}");
    assert!(out.contains("shipped tuned tables"), "{out}");
    assert!(out.contains("  tuned-nvidia-h200-w4-r4.json: NVIDIA H200, 4 ranks (4 per node), "), "{out}");

    let dir = cache.path().join("tuned");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("tuned-nvidia-h200-w2-r2.json"), TABLE).unwrap();
    std::fs::write(dir.join("tuned-broken-w2-r2.json"), "{ not json").unwrap();
    let o = mscclpp(&["list"], cache.path(), &[]);
    let out = text(&o.stdout);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert!(out.contains("tuned-nvidia-h200-w2-r2.json (2 row(s)): NVIDIA H200, 2 ranks (2 per node)"), "{out}");
    // The table's rows (the program list above names the same programs).
    let line =
        |needle: &str| out.lines().find(|l| l.contains(" f16 ") && l.contains(needle)).unwrap_or_default().to_string();
    let small = line("allreduce_oneshot_ll  ");
    assert!(small.contains("4 x 256") && small.trim_end().ends_with("ours"), "{out}");
    assert!(line("allreduce_twoshot  ").trim_end().ends_with("nccl"), "{out}");
    assert!(out.contains("tuned-broken-w2-r2.json is ignored"), "{out}");
    // --collective filters the rows.
    let o = mscclpp(&["list", "--collective", "allgather"], cache.path(), &[]);
    assert!(text(&o.stdout).contains("(0 row(s))"), "{}", text(&o.stdout));
}
