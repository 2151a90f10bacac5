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
    /// Copies of the program interleaved over the buffers.
    #[arg(long, default_value_t = 1)]
    pub instances: usize,
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
}

/// Runs `mscclpp plan`. The plan is always compiled afresh (the cache is for `install` and the runtime).
pub fn run(args: PlanArgs) -> anyhow::Result<ExitCode> {
    let meta = registry::find(&args.name)?;
    let mut target = Target::new(args.world_size)
        .ranks_per_node(args.ranks_per_node.unwrap_or(args.world_size))
        .instances(args.instances);
    if args.in_place {
        target = target.inplace(true);
    } else if args.out_of_place {
        target = target.inplace(false);
    }
    let plan = meta.build_plan(&target)?;
    let text = if args.compact { emit_plan_compact(&plan) } else { emit_plan(&plan) };
    match &args.output {
        None => println!("{text}"),
        Some(path) => {
            registry::write_atomic(path, format!("{text}\n").as_bytes())
                .with_context(|| format!("writing the plan to {}", path.display()))?;
            let tbs: usize = plan.gpus.iter().map(|g| g.threadblocks.len()).sum();
            eprintln!(
                "wrote {}: `{}` ({}, {}, {} ranks, {}, {} thread blocks in all)",
                path.display(),
                plan.name,
                plan.collective,
                plan.protocol,
                plan.world_size(),
                if plan.inplace { "in place" } else { "out of place" },
                tbs
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}
