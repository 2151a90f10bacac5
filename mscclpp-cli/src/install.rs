//! `mscclpp install`: write the plans of every registered program for world sizes 2, 4 and 8 into the cache.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;

use indicatif::{ProgressBar, ProgressStyle};
use mscclpp_lang::registry::{self, DEFAULT_WORLD_SIZES};

/// Arguments of `mscclpp install`.
#[derive(Debug, clap::Args)]
pub struct InstallArgs {
    /// The cache directory (default: $MSCCLPP_CACHE_DIR, else ~/.cache/mscclpp); plans go to its `default/`.
    #[arg(long)]
    pub dir: Option<PathBuf>,
    /// World sizes to write plans for, comma-separated.
    #[arg(long, value_delimiter = ',', default_values_t = DEFAULT_WORLD_SIZES)]
    pub world_sizes: Vec<usize>,
}

/// Runs `mscclpp install`.
pub fn run(args: InstallArgs) -> anyhow::Result<ExitCode> {
    let dir = match args.dir {
        Some(d) => d,
        None => registry::default_cache_dir()?,
    };
    let jobs = registry::install_jobs(&args.world_sizes);
    if jobs.is_empty() {
        anyhow::bail!(
            "no registered program supports world sizes {:?}; see `mscclpp list` for what each supports",
            args.world_sizes
        );
    }
    let bar = if std::io::stderr().is_terminal() {
        let bar = ProgressBar::new(jobs.len() as u64);
        if let Ok(style) = ProgressStyle::with_template("{bar:30} {pos}/{len} {msg}") {
            bar.set_style(style);
        }
        bar
    } else {
        ProgressBar::hidden()
    };
    let installed = registry::install(&dir, &jobs, &mut |job| {
        bar.set_message(job.file_name.clone());
        bar.inc(1);
    });
    bar.finish_and_clear();
    let installed = installed?;
    let mut programs: Vec<&str> = installed.plans.iter().map(|p| p.name.as_str()).collect();
    programs.dedup();
    println!(
        "installed {} plans of {} programs for world sizes {:?} into {} (manifest: index.json)",
        installed.plans.len(),
        programs.len(),
        args.world_sizes,
        installed.dir.display()
    );
    Ok(ExitCode::SUCCESS)
}
