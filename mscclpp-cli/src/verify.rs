//! `mscclpp verify`: run plans on simulated ranks on the CPU and report wrong results, races, deadlocks,
//! out-of-bounds accesses, stale packets and unbalanced synchronisation.

use std::path::Path;
use std::process::ExitCode;

use anyhow::Context;
use mscclpp_lang::data::DataType;
use mscclpp_lang::registry::{self, ProgramMeta, Target};
use mscclpp_lang::verify::{PacketFormat, Report, VerifyOptions, verify, verify_text};

/// World sizes `NAME` and `--all` verify a program at (those it supports): 2 to 8.
pub const WORLD_SIZES: std::ops::RangeInclusive<usize> = 2..=8;
/// Instance counts `NAME` and `--all` verify.
pub const INSTANCES: [usize; 2] = [1, 2];

/// Arguments of `mscclpp verify`.
#[derive(Debug, clap::Args)]
pub struct VerifyArgs {
    /// A plan file (JSON), or the registry name of a program (see `mscclpp list`).
    #[arg(required_unless_present = "all", conflicts_with = "all")]
    pub target: Option<String>,
    /// Every registered program at every world size from 2 to 8 and every ranks per node it declares, instances
    /// 1 and 2, every buffer placement it supports.
    #[arg(long)]
    pub all: bool,
    /// Number of ranks (a program: only this world size; a file: must match the plan).
    #[arg(long, short = 'n')]
    pub world_size: Option<usize>,
    /// Ranks per node (a program: only this shape; default: every ranks per node it declares for each world size,
    /// one node included where it admits one).
    #[arg(long)]
    pub ranks_per_node: Option<usize>,
    /// Instances of a registered program (default: 1 and 2).
    #[arg(long)]
    pub instances: Option<usize>,
    /// Launches per schedule.
    #[arg(long, default_value_t = 3)]
    pub launches: u32,
    /// Schedules (interleavings) to explore.
    #[arg(long, default_value_t = 64)]
    pub schedules: u32,
    /// Element type: f16, bf16, f32, i32, u32, u8.
    #[arg(long, default_value = "f32")]
    pub dtype: DataType,
    /// Message size (the allgather output, the input otherwise), e.g. 1M, 4K+16, 1048576; default: a size that
    /// fits the plan.
    #[arg(long, value_parser = registry::parse_size)]
    pub size: Option<u64>,
    /// LL packet format: LL16 or LL8.
    #[arg(long, default_value = "LL16")]
    pub packet: PacketFormat,
    /// Seed of the data and of the schedules.
    #[arg(long)]
    pub seed: Option<u64>,
    /// Print the reports as JSON (one object for one plan, an array for several).
    #[arg(long)]
    pub json: bool,
}

/// Runs `mscclpp verify`: exit status 0 only when nothing was found.
pub fn run(args: VerifyArgs) -> anyhow::Result<ExitCode> {
    let started = std::time::Instant::now();
    let mut opts = VerifyOptions {
        launches: args.launches.max(1),
        schedules: args.schedules.max(1),
        dtype: args.dtype,
        size: args.size,
        packet: args.packet,
        ..VerifyOptions::default()
    };
    if let Some(seed) = args.seed {
        opts.seed = seed;
    }
    let mut reports: Vec<Report> = Vec::new();
    let mut errors: Vec<String> = Vec::new();
    let mut skipped: Vec<String> = Vec::new();
    let single_file = match &args.target {
        Some(t) if !args.all && is_file(t) => Some(t.clone()),
        _ => None,
    };
    if let Some(path) = single_file {
        let text = std::fs::read_to_string(&path).with_context(|| format!("reading plan file {path}"))?;
        let report = verify_text(&text, &opts);
        if let Some(n) = args.world_size
            && report.world_size != 0
            && report.world_size != n
        {
            anyhow::bail!("{path} is a plan for {} ranks, not {n}", report.world_size);
        }
        reports.push(report);
    } else {
        let metas: Vec<&'static ProgramMeta> = if args.all {
            registry::programs()
        } else {
            let name = args.target.as_deref().unwrap_or_default();
            vec![registry::find(name).with_context(|| format!("`{name}` is neither a plan file nor a program"))?]
        };
        if metas.is_empty() {
            anyhow::bail!("no program is registered");
        }
        for meta in metas {
            let shapes = shapes(meta, args.world_size, args.ranks_per_node);
            if shapes.is_empty() {
                let admits = format!(
                    "{} admits no shape asked for: it runs on {} ranks, {} ranks per node",
                    meta.name,
                    meta.world_sizes.display_bytes().replace(" B", ""),
                    meta.ranks_per_node
                );
                if !args.all {
                    anyhow::bail!("{admits}");
                }
                let line = format!("skipped: {admits}");
                if !args.json {
                    println!("{line}");
                }
                skipped.push(line);
                continue;
            }
            let instances: Vec<usize> = args.instances.map_or(INSTANCES.to_vec(), |i| vec![i]);
            for &(n, rpn) in &shapes {
                for &inst in &instances {
                    for inplace in [true, false] {
                        if !meta.buffer_mode.accepts(inplace) {
                            continue;
                        }
                        let target =
                            Target::new(n).ranks_per_node(rpn).instances(inst).inplace(inplace).source_locations(true);
                        let nodes = if rpn == n { String::new() } else { format!(", {rpn} ranks per node") };
                        let what = format!(
                            "{} (world size {n}{nodes}, {inst} instance(s), {})",
                            meta.name,
                            if inplace { "in place" } else { "out of place" }
                        );
                        match meta.build_plan(&target) {
                            Ok(plan) => {
                                let mut report = verify(&plan, &opts);
                                let nodes = if rpn == n { String::new() } else { format!(", per node={rpn}") };
                                report.plan = format!(
                                    "{} [n={n}{nodes}, instances={inst}, {}]",
                                    report.plan,
                                    if inplace { "in place" } else { "out of place" }
                                );
                                if !args.json {
                                    print!("{}", report.render());
                                }
                                reports.push(report);
                            }
                            Err(e) => {
                                let line = format!("{what}: cannot build the plan: {e}");
                                if !args.json {
                                    println!("{line}");
                                }
                                errors.push(line);
                            }
                        }
                    }
                }
            }
        }
    }
    let failed = reports.iter().filter(|r| !r.ok()).count();
    if args.json {
        let text = if reports.len() == 1 && errors.is_empty() {
            serde_json::to_string_pretty(&reports[0])?
        } else {
            serde_json::to_string_pretty(
                &serde_json::json!({ "reports": reports, "errors": errors, "skipped": skipped }),
            )?
        };
        println!("{text}");
    } else if reports.len() == 1 && errors.is_empty() && !args.all && args.target.as_deref().is_some_and(is_file) {
        print!("{}", reports[0].render());
    } else {
        let schedules: u64 = reports.iter().map(|r| u64::from(r.schedules)).sum();
        let steps: u64 = reports.iter().map(|r| r.steps).sum();
        println!(
            "verified {} plan(s): {} passed, {} with findings{}{} ({schedules} schedules, {steps} steps, {:.1} s)",
            reports.len(),
            reports.len() - failed,
            failed,
            if errors.is_empty() { String::new() } else { format!(", {} could not be built", errors.len()) },
            if skipped.is_empty() { String::new() } else { format!(", {} program(s) skipped", skipped.len()) },
            started.elapsed().as_secs_f64()
        );
    }
    Ok(if failed == 0 && errors.is_empty() { ExitCode::SUCCESS } else { ExitCode::from(1) })
}

/// The (world size, ranks per node) shapes to verify `meta` at: `world` (or every world size from 2 to 8) that it
/// supports, times `per_node` (or every ranks per node it declares that divides the world size).
fn shapes(meta: &ProgramMeta, world: Option<usize>, per_node: Option<usize>) -> Vec<(usize, usize)> {
    let worlds: Vec<usize> = match world {
        Some(n) => vec![n],
        None => WORLD_SIZES.collect(),
    };
    let mut out = Vec::new();
    for n in worlds.into_iter().filter(|&n| meta.supports_world_size(n)) {
        let candidates: Vec<usize> = match per_node {
            Some(r) => vec![r],
            None => (1..=n).filter(|r| n.is_multiple_of(*r)).collect(),
        };
        out.extend(candidates.into_iter().filter(|&r| meta.ranks_per_node.accepts(n, r)).map(|r| (n, r)));
    }
    out
}

fn is_file(t: &str) -> bool {
    let p = Path::new(t);
    p.is_file() || t.ends_with(".json")
}

#[cfg(test)]
mod tests {
    use super::*;
    use mscclpp_lang::registry::{RanksPerNode, SizeRange};

    #[test]
    fn shapes_cover_every_declared_world_size_and_ranks_per_node() {
        let nodes = ProgramMeta {
            world_sizes: SizeRange { min: 2, max: 8 },
            ranks_per_node: RanksPerNode::Nodes(2),
            ..*registry::find("allreduce_oneshot_ll").expect("a default program")
        };
        assert_eq!(shapes(&nodes, None, None), vec![(2, 1), (4, 2), (6, 3), (8, 4)], "two equal nodes");
        // One node: every world size from 2 to 8 it supports, ranks per node = world size.
        let one_node = *registry::find("allreduce_oneshot_ll").expect("a default program");
        assert_eq!(shapes(&one_node, None, None), (2..=8).map(|n| (n, n)).collect::<Vec<_>>());
        assert_eq!(shapes(&one_node, Some(4), None), vec![(4, 4)]);
        assert!(shapes(&one_node, Some(4), Some(2)).is_empty(), "one node only");
        // Nodes of 2 to 4 ranks: every divisor of the world size in that range.
        let multi = ProgramMeta {
            world_sizes: SizeRange { min: 4, max: 8 },
            ranks_per_node: RanksPerNode::Range(SizeRange { min: 2, max: 4 }),
            ..one_node
        };
        let got = shapes(&multi, None, None);
        assert_eq!(got, vec![(4, 2), (4, 4), (6, 2), (6, 3), (8, 2), (8, 4)]);
        assert_eq!(shapes(&multi, Some(8), Some(4)), vec![(8, 4)]);
        assert!(shapes(&multi, Some(8), Some(8)).is_empty());
        assert!(shapes(&multi, Some(2), None).is_empty(), "world size 2 is not supported");
    }
}
