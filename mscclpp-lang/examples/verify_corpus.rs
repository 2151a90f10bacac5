//! Verifies every plan of the MSCCL++ corpus and prints one line per plan (or, with `--report FILE`, writes the
//! corpus report in Markdown, naming the commit it ran at). Reports are generated on demand, or kept with the
//! results of a run (`results/<date>-<commit>-cpu/corpus-report.md`, see results/README.md).
//!
//! `cargo run --release -p mscclpp-lang --example verify_corpus -- [--schedules K] [--filter TEXT] [--verbose]
//! [--report FILE]`

use std::path::PathBuf;

use mscclpp_lang::verify::{Report, VerifyOptions, verify_text};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let get = |k: &str| args.iter().position(|a| a == k).and_then(|i| args.get(i + 1)).cloned();
    let mut opts = VerifyOptions::default();
    if let Some(k) = get("--schedules") {
        opts.schedules = k.parse().unwrap_or(opts.schedules);
    }
    let filter = get("--filter").unwrap_or_default();
    let verbose = args.iter().any(|a| a == "--verbose");
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/corpus/mscclpp");
    let index = std::fs::read_to_string(root.join("INDEX.tsv")).unwrap_or_default();
    let mut rows = Vec::new();
    for line in index.lines().skip(1) {
        let file = line.split('\t').next().unwrap_or_default().to_string();
        if !file.contains(&filter) {
            continue;
        }
        let text = std::fs::read_to_string(root.join(&file)).unwrap_or_default();
        let report = verify_text(&text, &opts);
        let kinds: Vec<String> = report.kinds().iter().map(|k| k.to_string()).collect();
        println!(
            "{:<72} {:>6} ms  {}",
            file,
            report.elapsed_ms,
            if report.ok() { "OK".to_string() } else { kinds.join(", ") }
        );
        if verbose && !report.ok() {
            print!("{}", report.render());
        }
        rows.push((file, report));
    }
    if let Some(path) = get("--report") {
        let text = render_report(&rows, &opts);
        if let Err(e) = std::fs::write(&path, text) {
            eprintln!("cannot write {path}: {e}");
        }
    }
}

/// Why a corpus plan fails: (file-name pattern, verdict, explanation). Every failure of the corpus is a defect of
/// the plan; verifier defects found on the way were fixed (see docs/verifier.md).
const EXPLANATIONS: &[(&str, &str, &str)] = &[
    (
        "multi_node__reducescatter__",
        "plan defect",
        "`pws` (port put with signal) is never flushed: the proxy reads the source chunk of the input \
         asynchronously, and nothing orders that read before the rank's launch ends, so the host's refill of the \
         input for the next launch (and the next launch's `rre` into the same chunk) races with it. Use `pwsf` or \
         a `flush` before the end of the kernel.",
    ),
    (
        "multi_node__send_recv__",
        "plan defect",
        "same as the reducescatter plans: `pws` without a flush, so the proxy may still read the input when the \
         next launch refills it; use `pwsf` (with `pwsf` instead of `pws`, this plan and the reducescatter ones \
         verify clean).",
    ),
    (
        "single_node__allgather_nvls_zero_copy__",
        "plan defect (memory model)",
        "the closing handshake after the multimem stores (`gstore`) is `rlxsignal`/`rlxwait`: a relaxed signal \
         orders execution but does not publish the signaller's earlier writes, so the stores into a peer's \
         output are not ordered before that peer's launch ends (its result check races with them, and in \
         delayed-visibility schedules the result is wrong). Use `signal`/`wait` for the closing round.",
    ),
    (
        "single_node__allreduce_nvls_zero_copy__",
        "plan defect (memory model)",
        "as the allgather: the closing handshake after `glres` is relaxed, so the multimem stores are not \
         published to their owners before the owners' launches end. Use `signal`/`wait` for the closing round.",
    ),
    (
        "reduce_nvls.json",
        "plan defect (memory model)",
        "relaxed closing handshake after `glres` (as the DSL's nvls zero-copy allreduce).",
    ),
    (
        "reduce_nvls_pipeline.json",
        "plan defect (memory model)",
        "relaxed closing handshake after the pipelined `glres` (as the DSL's nvls zero-copy allreduce).",
    ),
    (
        "reduce_tbg.json",
        "plan defect",
        "thread-block groups are sliced differently on the two ranks: rank 1 copies scratch chunks 0-1 with a \
         2-block group (block 0 writes chunk 0), while rank 0's block 1 reads the second half of chunk 0 through \
         `rres` after waiting only on the channel that rank 1's block 1 signals; block 0's writes reach it with \
         no happens-before.",
    ),
    (
        "unit__put_fuse_test",
        "plan defect (DSL demonstration)",
        "both ranks put into each other's input while reading their own input chunks that the peer overwrites: \
         a race by construction (the DSL's unit tests are demonstrations of the fused operation).",
    ),
    (
        "unit__put_with_signal_test",
        "plan defect (DSL demonstration)",
        "`pws` without a flush (see the reducescatter plans).",
    ),
    (
        "unit__read_put_packet_test",
        "plan defect (DSL demonstration)",
        "`rppkt` forwards scratch packets that nothing ever writes: the read spins forever.",
    ),
    (
        "unit__reduce_copy_packet_test",
        "plan defect (DSL demonstration)",
        "the packet reduction reads scratch packets that nothing writes: it spins forever.",
    ),
    (
        "unit__reduce_copy_send_packet_test",
        "plan defect (DSL demonstration)",
        "the packet reduction reads scratch packets that nothing writes: it spins forever.",
    ),
    (
        "unit__reduce_packets_fuse_test",
        "plan defect (DSL demonstration)",
        "the packet reduction reads scratch packets that nothing writes: it spins forever.",
    ),
    (
        "unit__reduce_packets_test",
        "plan defect (DSL demonstration)",
        "the packet reduction reads scratch packets that nothing writes: it spins forever.",
    ),
    (
        "unit__reduce_send_packet_test",
        "plan defect (DSL demonstration)",
        "the packet reduction reads scratch packets that nothing writes: it spins forever.",
    ),
    (
        "unit__relaxed_signal_wait_fuse_test",
        "plan defect (DSL demonstration)",
        "each rank signals its channels 0 and 1 and waits on channels 2 and 3; by the pairing rule channel k of \
         one rank pairs with channel k of the other, so nobody ever signals channels 2 and 3.",
    ),
    (
        "unit__signal_wait_fuse_test",
        "plan defect (DSL demonstration)",
        "as the relaxed variant: signals on channels 0-1, waits on channels 2-3, which nobody signals.",
    ),
    (
        "unit__switch_broadcast_test",
        "plan defect (DSL demonstration)",
        "a multimem store into every member's input with no synchronisation at all: it races with the members' \
         own input fills and result checks.",
    ),
    (
        "unit__switch_reduce_test",
        "plan defect (DSL demonstration)",
        "a standalone `glre` (loaded here, as the design asks) with no synchronisation: the load-reduce reads the \
         peers' inputs while they are refilled.",
    ),
    (
        "unit__tbg_reduce_send_test",
        "plan defect (DSL demonstration)",
        "only block 0 of the 4-block group synchronises; blocks 1-3 write the peer's output (`res`) with no \
         signal, so the peer's result check races with them.",
    ),
];

/// Notes on passing plans that the reference executor would treat differently.
const NOTES: &[(&str, &str)] = &[
    (
        "execution-files__allreduce_pipeline.json",
        "older schema (`buff` on switch channels, no `output_chunks`): the reference parser rejects it; ours \
         accepts `buff` and sizes the output from the collective.",
    ),
    (
        "unit__signal_wait_test",
        "no input or output chunks: the reference executor cannot size it (modulo by zero); verified with the \
         message spread over the scratch chunks.",
    ),
    ("unit__barrier_test", "no input or output chunks (see signal_wait_test)."),
    ("unit__semaphore", "no input or output chunks (see signal_wait_test)."),
    ("unit__relaxed_signal_wait_test", "no input or output chunks (see signal_wait_test)."),
    ("unit__flush", "no input or output chunks (see signal_wait_test); `flush` flushes (design fix)."),
];

fn render_report(rows: &[(String, Report)], opts: &VerifyOptions) -> String {
    use std::fmt::Write as _;
    let mut s = String::new();
    let failed: Vec<&(String, Report)> = rows.iter().filter(|(_, r)| !r.ok()).collect();
    let _ = writeln!(s, "# Corpus report: the MSCCL++ plans through the CPU verifier\n");
    // The commit the report ran at, when the sources are a git checkout.
    let commit = std::process::Command::new("git")
        .args(["rev-parse", "--short", "HEAD"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_else(|| "unknown".into());
    let _ = writeln!(
        s,
        "Generated at commit `{commit}` by `cargo run --release -p mscclpp-lang --example verify_corpus -- --report \
         FILE` from `tests/corpus/mscclpp/` ({} plans): {} launches x {} schedules per plan, {} data, default \
         message size (256 KiB, adjusted to each plan's range and pipelines), {} packets. The model is described in \
         docs/verifier.md.\n",
        rows.len(),
        opts.launches,
        opts.schedules,
        opts.dtype,
        opts.packet
    );
    let _ = writeln!(
        s,
        "**{} pass, {} fail.** Every failure is a defect of the plan (explained below); no failure is a defect of \
         the verifier (those found while building it were fixed, see docs/verifier.md, \"Calibration on the corpus\").\n",
        rows.len() - failed.len(),
        failed.len()
    );
    let _ = writeln!(s, "| plan | collective | ranks | verdict | findings | ms |");
    let _ = writeln!(s, "|---|---|---|---|---|---|");
    for (file, r) in rows {
        let verdict = if r.ok() {
            "pass".to_string()
        } else {
            EXPLANATIONS
                .iter()
                .find(|(p, _, _)| file.contains(p))
                .map_or("FAIL (unexplained)".to_string(), |e| format!("fail: {}", e.1))
        };
        let kinds: Vec<String> = r.kinds().iter().map(|k| k.to_string()).collect();
        let _ = writeln!(
            s,
            "| `{file}` | {} | {} | {verdict} | {} | {} |",
            r.collective,
            r.world_size,
            if kinds.is_empty() { "-".to_string() } else { kinds.join(", ") },
            r.elapsed_ms
        );
    }
    let _ = writeln!(s, "\n## Failures\n");
    for (file, r) in &failed {
        let (verdict, why) =
            EXPLANATIONS.iter().find(|(p, _, _)| file.contains(p)).map_or(("unexplained", "-"), |e| (e.1, e.2));
        let _ = writeln!(s, "### `{file}`\n\n**{verdict}**: {why}\n");
        let _ = writeln!(s, "First finding of each kind (of {} findings):\n\n```text", r.findings.len());
        let mut seen = Vec::new();
        for f in &r.findings {
            if seen.contains(&f.kind) {
                continue;
            }
            seen.push(f.kind);
            let _ = writeln!(s, "{} (in {} of {} schedules):", f.kind, f.schedules, r.schedules);
            for line in f.message.lines().take(8) {
                let _ = writeln!(s, "  {line}");
            }
        }
        let _ = writeln!(s, "```\n");
    }
    let _ = writeln!(s, "## Notes on passing plans\n");
    for (pattern, note) in NOTES {
        let _ = writeln!(s, "- `{pattern}`: {note}");
    }
    s
}
