//! How long NVRTC takes to compile the plan interpreter on this machine, and how big the result is: the whole
//! module and one entry point alone, for each architecture given (default: the embedded set).
//!
//! `cargo run --release -p mscclpp-sys --example compile_times -- [--source FILE] [--runs N] [sm_90 ...]`
//!
//! `--source` compiles another version of `execution_kernel.cu` (e.g. an older one, from `git show`) with the
//! current headers, for a before/after comparison. Prints a markdown table; the median of `--runs` (default 3).

use std::time::Instant;

use mscclpp_sys::interpreter::{BlockSize, ElementType, PacketType, SOURCE, SOURCE_NAME, entry_defines};
use mscclpp_sys::nvrtc::{CompileOptions, Output, compile};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let mut source = SOURCE.to_string();
    let mut label = "current".to_string();
    let mut runs = 3usize;
    let mut archs = Vec::new();
    while let Some(a) = args.next() {
        match a.as_str() {
            "--source" => {
                let path = args.next().ok_or("--source needs a file")?;
                source = std::fs::read_to_string(&path)?;
                label = path;
            }
            "--runs" => runs = args.next().ok_or("--runs needs a number")?.parse()?,
            arch => archs.push(arch.to_string()),
        }
    }
    if archs.is_empty() {
        archs = ["sm_80", "sm_90", "sm_100", "sm_120"].iter().map(|s| s.to_string()).collect();
    }
    let (major, minor) = mscclpp_sys::nvrtc::version()?;
    println!("NVRTC {major}.{minor}, {} CPUs, source {label}, median of {runs}\n", num_cpus());
    println!("| arch | what | seconds | cubin bytes |\n|---|---|---:|---:|");
    for arch in &archs {
        let whole = CompileOptions::new(arch.clone());
        let mut one = CompileOptions::new(arch.clone());
        // The entry defines select one entry point in the current source; an older source ignores them and
        // compiles every entry point, which the size column shows.
        one.defines.extend(entry_defines(ElementType::F16, PacketType::Ll16, BlockSize::UpTo1024));
        for (what, opts) in [("all 36 entry points", &whole), ("f16/ll16 alone", &one)] {
            let mut times = Vec::new();
            let mut size = 0;
            for _ in 0..runs {
                let t = Instant::now();
                size = compile(SOURCE_NAME, &source, opts, Output::Cubin)?.len();
                times.push(t.elapsed().as_secs_f64());
            }
            times.sort_by(|a, b| a.total_cmp(b));
            println!("| {arch} | {what} | {:.1} | {size} |", times[times.len() / 2]);
        }
    }
    Ok(())
}

fn num_cpus() -> usize {
    std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1)
}
