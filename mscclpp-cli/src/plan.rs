//! `mscclpp plan`: compile a registered program into an MSCCL++ JSON execution plan.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use mscclpp_lang::plan::{emit_plan, emit_plan_compact};
use mscclpp_lang::registry::{self, Target};

/// Arguments of `mscclpp plan`.
#[derive(Debug, clap::Args)]
pub struct PlanArgs {
    /// The program's registry name (see `mscclpp list`).
    pub name: String,
    /// Number of ranks.
    #[arg(long, short = 'n')]
    pub world_size: usize,
    /// Ranks per node (default: the world size, one node).
    #[arg(long)]
    pub ranks_per_node: Option<usize>,
    /// Copies of the program interleaved over the buffers (default 1, or the tuned count with --size).
    #[arg(long)]
    pub instances: Option<usize>,
    /// Tune the plan for this message size (1M, 4K+16, ...: the output size of an all-gather, the input size
    /// otherwise): instances and threads per block from the program's `thread_blocks` table, as the runtime
    /// chooses them.
    #[arg(long, value_parser = registry::parse_size)]
    pub size: Option<u64>,
    /// Threads per block written into the plan (a multiple of 32 up to 1024; default: the program's choice).
    #[arg(long, value_parser = parse_threads)]
    pub threads_per_block: Option<u32>,
    /// Build the in-place variant.
    #[arg(long, conflicts_with = "out_of_place")]
    pub in_place: bool,
    /// Build the out-of-place variant.
    #[arg(long)]
    pub out_of_place: bool,
    /// Write the plan to this file (atomically) instead of standard output.
    #[arg(long, short = 'o')]
    pub output: Option<PathBuf>,
    /// One line of JSON instead of pretty-printed.
    #[arg(long)]
    pub compact: bool,
    /// Give every operation the program source lines that recorded it (the optional `source_locations` key,
    /// docs/plan-format.md; executors ignore it, `mscclpp verify FILE` names the lines in its findings).
    #[arg(long)]
    pub source_locations: bool,
}

fn parse_threads(s: &str) -> Result<u32, mscclpp_lang::ParseError> {
    match s.parse::<u32>() {
        Ok(t) if t > 0 && t <= 1024 && t % 32 == 0 => Ok(t),
        _ => Err(mscclpp_lang::ParseError::invalid(
            s,
            format!("`{s}` threads per block: give a multiple of 32 (a whole warp) between 32 and 1024"),
        )),
    }
}

/// Runs `mscclpp plan`. The plan is always compiled afresh (the cache is for `install` and the runtime).
pub fn run(args: PlanArgs) -> anyhow::Result<ExitCode> {
    let meta = registry::find(&args.name)?;
    let mut target = Target::new(args.world_size)
        .ranks_per_node(args.ranks_per_node.unwrap_or(args.world_size))
        .threads_per_block(args.threads_per_block)
        .source_locations(args.source_locations);
    if args.in_place {
        target = target.inplace(true);
    } else if args.out_of_place {
        target = target.inplace(false);
    }
    target = match (args.instances, args.size) {
        (Some(k), _) => target.instances(k),
        (None, Some(size)) => meta.tuned_target(target, size)?,
        (None, None) => target,
    };
    let plan = meta.build_plan(&target)?;
    let text = if args.compact { emit_plan_compact(&plan) } else { emit_plan(&plan) };
    match &args.output {
        None => println!("{text}"),
        Some(path) => {
            registry::write_atomic(path, format!("{text}\n").as_bytes())
                .with_context(|| format!("writing the plan to {}", path.display()))?;
            let tbs: usize = plan.gpus.iter().map(|g| g.threadblocks.len()).sum();
            eprintln!(
                "wrote {}: `{}` ({}, {}, {} ranks, {}, {} thread blocks in all, {} threads each)",
                path.display(),
                plan.name,
                plan.collective,
                plan.protocol,
                plan.world_size(),
                if plan.inplace { "in place" } else { "out of place" },
                tbs,
                plan.threads_per_block()
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}
