//! `mscclpp install`: write the plans of every registered program for world sizes 2, 4 and 8 into the cache, and
//! warm the kernel cache for the local GPUs' architectures that have no embedded kernels (so the first collective
//! on such a GPU compiles nothing either).

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
    /// Ranks per node of the plans (default: one node of the whole world size); e.g. 4 with `--world-sizes 8` for
    /// two nodes of 4.
    #[arg(long)]
    pub ranks_per_node: Option<usize>,
    /// Architectures to warm the kernel cache for, comma-separated (e.g. `sm_89`); default: the local GPUs'.
    #[arg(long, value_delimiter = ',')]
    pub kernel_archs: Vec<String>,
    /// Do not touch the kernel cache.
    #[arg(long)]
    pub no_kernels: bool,
}

fn bar(len: u64) -> ProgressBar {
    if !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new(len);
    if let Ok(style) = ProgressStyle::with_template("{bar:30} {pos}/{len} {msg}") {
        bar.set_style(style);
    }
    bar
}

/// The local GPUs' architectures, deduplicated, or why there are none.
fn local_archs() -> Result<Vec<String>, String> {
    use mscclpp_exec::sys::driver::{Device, device_count};
    let n = device_count().map_err(|e| e.to_string())?;
    let mut archs = Vec::new();
    for i in 0..n {
        let arch = Device::open(i).and_then(|d| d.arch()).map_err(|e| format!("GPU {i}: {e}"))?;
        if !archs.contains(&arch) {
            archs.push(arch);
        }
    }
    if archs.is_empty() {
        return Err("the driver sees no GPU".into());
    }
    Ok(archs)
}

/// Compile what the kernel cache needs for `archs`: for an architecture without embedded kernels, every
/// interpreter entry point and the primitives. Returns one line per architecture.
fn warm_kernels(archs: &[String]) -> anyhow::Result<Vec<String>> {
    use mscclpp_exec::sys::interpreter::{self, BlockSize, ElementType, PacketType};
    use mscclpp_exec::sys::nvrtc::{CompileOptions, KernelCache};
    let cache = KernelCache::default().quiet(true);
    let Some(dir) = cache.dir().map(|d| d.display().to_string()) else {
        anyhow::bail!("the kernel cache is off (MSCCLPP_KERNEL_CACHE=0 or no HOME); nothing to warm");
    };
    let mut lines = Vec::new();
    // (architecture, entry point: element type, packet format, block size; `None`: the primitives)
    type Entry = (ElementType, PacketType, BlockSize);
    let mut jobs: Vec<(String, Option<Entry>)> = Vec::new();
    for arch in archs {
        if interpreter::embedded_for(arch) {
            lines.push(format!("kernels for {arch}: embedded in this binary, nothing to compile"));
            continue;
        }
        for p in PacketType::ALL {
            for t in ElementType::ALL {
                for b in BlockSize::ALL {
                    jobs.push((arch.clone(), Some((t, p, b))));
                }
            }
        }
        jobs.push((arch.clone(), None));
        lines.push(format!(
            "kernels for {arch}: {} interpreter entry points and the primitives compiled into {dir}",
            interpreter::kernel_names().len()
        ));
    }
    if jobs.is_empty() {
        return Ok(lines);
    }
    let bar = bar(jobs.len() as u64);
    bar.set_message("compiling kernels with NVRTC");
    let next = std::sync::atomic::AtomicUsize::new(0);
    let failures = std::sync::Mutex::new(Vec::new());
    let threads = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1).min(jobs.len());
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| {
                while let Some((arch, entry)) = jobs.get(next.fetch_add(1, std::sync::atomic::Ordering::SeqCst)) {
                    let r = match entry {
                        Some((t, p, b)) => interpreter::compile_entry(arch, *t, *p, *b, &cache).map(|_| ()),
                        None => cache
                            .cubin("primitives.cu", mscclpp_exec::sys::sources::PRIMITIVES, &CompileOptions::new(arch))
                            .map(|_| ()),
                    };
                    if let Err(e) = r
                        && let Ok(mut f) = failures.lock()
                    {
                        f.push(format!("{arch}: {e}"));
                    }
                    bar.inc(1);
                }
            });
        }
    });
    bar.finish_and_clear();
    let failures = failures.into_inner().unwrap_or_default();
    if let Some(first) = failures.first() {
        anyhow::bail!("warming the kernel cache failed ({} of {} compilations): {first}", failures.len(), jobs.len());
    }
    Ok(lines)
}

/// Runs `mscclpp install`.
pub fn run(args: InstallArgs) -> anyhow::Result<ExitCode> {
    let dir = match args.dir {
        Some(d) => d,
        None => registry::default_cache_dir()?,
    };
    let jobs = registry::install_jobs_with(&args.world_sizes, args.ranks_per_node);
    if jobs.is_empty() {
        anyhow::bail!(
            "no registered program supports world sizes {:?}; see `mscclpp list` for what each supports",
            args.world_sizes
        );
    }
    let bar = bar(jobs.len() as u64);
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
    if args.no_kernels {
        return Ok(ExitCode::SUCCESS);
    }
    let archs = if args.kernel_archs.is_empty() {
        match local_archs() {
            Ok(a) => a,
            Err(why) => {
                println!(
                    "kernel cache not warmed: no local GPU ({why}); pass --kernel-archs sm_XY to warm it for \
                     another machine's GPUs"
                );
                return Ok(ExitCode::SUCCESS);
            }
        }
    } else {
        args.kernel_archs.clone()
    };
    for line in warm_kernels(&archs)? {
        println!("{line}");
    }
    Ok(ExitCode::SUCCESS)
}
