//! The verifier's speed figure: an 8-rank allreduce plan over 1 MiB of f32 data, 3 launches, 64 schedules.
//!
//! `cargo run --release -p mscclpp-lang --example verify_bench -- [PLAN.json] [--size BYTES] [--schedules K]`
//! (default plan: the corpus's 8-rank single-node allreduce). Run it pinned to one core:
//! `taskset -c 0 target/release/examples/verify_bench`.

use std::path::PathBuf;
use std::time::Instant;

use mscclpp_lang::verify::{VerifyOptions, verify_text};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let get = |k: &str| args.iter().position(|a| a == k).and_then(|i| args.get(i + 1)).cloned();
    let path = args.first().filter(|a| !a.starts_with("--")).map(PathBuf::from).unwrap_or_else(|| {
        PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../tests/corpus/mscclpp/generated/single_node__allreduce__n8.json")
    });
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("cannot read {}: {e}", path.display());
            std::process::exit(2);
        }
    };
    let opts = VerifyOptions {
        launches: 3,
        schedules: get("--schedules").and_then(|s| s.parse().ok()).unwrap_or(64),
        size: Some(get("--size").and_then(|s| s.parse().ok()).unwrap_or(1 << 20)),
        ..VerifyOptions::default()
    };
    let t = Instant::now();
    let report = verify_text(&text, &opts);
    let secs = t.elapsed().as_secs_f64();
    print!("{}", report.render());
    println!(
        "{}: {} ranks, {} B f32, {} launches, {} schedules, {} steps: {:.3} s",
        path.display(),
        report.world_size,
        report.size,
        report.launches,
        report.schedules,
        report.steps,
        secs
    );
}
