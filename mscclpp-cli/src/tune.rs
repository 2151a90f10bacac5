//! `mscclpp tune`: the autotuner of [`mscclpp_exec::tune`] on the GPUs of this job (one process per GPU under
//! mpirun or torchrun). It times every admissible program × thread blocks × threads per block at each size, in
//! CUDA graphs, optionally beside NCCL, writes the winners into the machine's tuned table in the cache directory
//! (which `mscclpp bench`, `mscclpp test` and every `registry::select` of a runtime that loads it then follow) and
//! prints them.

use std::io::IsTerminal as _;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use indicatif::{ProgressBar, ProgressStyle};
use mscclpp_exec::Communicator;
use mscclpp_exec::sys::driver::{DevicePtr, Stream};
use mscclpp_exec::sys::interpreter::PacketType;
use mscclpp_exec::tune::{self, Baseline, Progress, TuneConfig, TuneOutcome};
use mscclpp_lang::ParseError;
use mscclpp_lang::data::DataType;
use mscclpp_lang::plan::Collective;
use mscclpp_lang::registry::{self, ProgramMeta, TableError, Target, TunedRow, TunedTable};

use crate::bench_nccl::Nccl;
use crate::bench_report::{Sizes, parse_collective, parse_sizes};

fn sizes_arg(s: &str) -> Result<Sizes, ParseError> {
    let sizes = parse_sizes(s)?;
    if sizes.is_empty() {
        return Err(ParseError::invalid(s, format!("`{s}` names no size; e.g. --sizes 1K:1G")));
    }
    Ok(Sizes(sizes))
}

fn thread_blocks_arg(s: &str) -> Result<usize, ParseError> {
    match s.trim().parse::<usize>() {
        Ok(n) if (1..=registry::MAX_RESIDENT_THREAD_BLOCKS).contains(&n) => Ok(n),
        _ => Err(ParseError::invalid(
            s,
            format!("`{s}` is not a thread-block count from 1 to {}", registry::MAX_RESIDENT_THREAD_BLOCKS),
        )),
    }
}

fn threads_arg(s: &str) -> Result<u32, ParseError> {
    match s.trim().parse::<u32>() {
        Ok(n) if (32..=1024).contains(&n) && n % 32 == 0 => Ok(n),
        _ => Err(ParseError::invalid(s, format!("`{s}` is not a thread count: a multiple of 32 from 32 to 1024"))),
    }
}

/// Arguments of `mscclpp tune`.
#[derive(Debug, clap::Args)]
pub struct TuneArgs {
    /// Collectives to tune: allreduce, allgather, reducescatter, alltoall, broadcast (default: allreduce).
    #[arg(value_parser = parse_collective)]
    pub collectives: Vec<Collective>,
    /// Message sizes (the output of an allgather, the input otherwise): `A:B` doubling from A to B, `A:B:xF`
    /// multiplying by F, or a comma-separated list.
    #[arg(long, default_value = "1K:1G", value_parser = sizes_arg)]
    pub sizes: Sizes,
    /// Element type: f16, bf16, f32, i32, u32, u8.
    #[arg(long, default_value = "f16")]
    pub dtype: DataType,
    /// Tune in place (default: out of place).
    #[arg(long)]
    pub in_place: bool,
    /// Stop after this many seconds, keeping every size finished by then.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    pub budget_s: Option<u64>,
    /// Also time NCCL (libnccl.so.2, or MSCCLPP_NCCL_LIB_PATH) at each size; a size where it is faster is recorded
    /// so callers that can forward to NCCL do.
    #[arg(long)]
    pub nccl: bool,
    /// Launches per CUDA graph.
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u32).range(1..))]
    pub iters: u32,
    /// Timed graph replays per candidate; the figure is the median.
    #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u32).range(3..))]
    pub runs: u32,
    /// Also write the machine's merged table to this file (JSON); it is always written into the cache directory.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Ranks per node to tune for (default: the job's, from the ranks' host names); e.g. 1 for two ranks in two
    /// network namespaces of one host, as two nodes.
    #[arg(long)]
    pub ranks_per_node: Option<usize>,
    /// Thread blocks per rank to try, comma-separated (each program takes those it reaches with whole instances).
    #[arg(long, value_delimiter = ',', default_value = "1,2,4,8,16,32,64,128", value_parser = thread_blocks_arg)]
    pub thread_blocks: Vec<usize>,
    /// Threads per block to try, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "256,512,768,1024", value_parser = threads_arg)]
    pub threads: Vec<u32>,
    /// LL packet format: ll16 or ll8.
    #[arg(long, default_value = "ll16", value_parser = ["ll16", "ll8"])]
    pub packet: String,
}

impl TuneArgs {
    /// The collectives asked for (all-reduce when none).
    pub fn collectives(&self) -> Vec<Collective> {
        if self.collectives.is_empty() { vec![Collective::AllReduce] } else { self.collectives.clone() }
    }

    /// The library's configuration for these arguments.
    pub fn config(&self) -> TuneConfig {
        TuneConfig {
            collectives: self.collectives(),
            sizes: self.sizes.0.clone(),
            dtype: self.dtype,
            inplace: self.in_place,
            runs: self.runs,
            iters: self.iters,
            budget: self.budget_s.map(Duration::from_secs),
            thread_blocks: self.thread_blocks.clone(),
            threads: self.threads.clone(),
            packet: if self.packet == "ll8" { PacketType::Ll8 } else { PacketType::Ll16 },
            seed: 1,
            ranks_per_node: self.ranks_per_node,
        }
    }
}

/// NCCL as the tuner's baseline.
struct NcclBaseline(Nccl);

impl Baseline for NcclBaseline {
    fn name(&self) -> &str {
        "NCCL"
    }
    fn launch(
        &self,
        collective: Collective,
        dtype: DataType,
        size: u64,
        input: DevicePtr,
        output: DevicePtr,
        stream: &Stream,
    ) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
        let s = stream.raw() as *mut std::ffi::c_void;
        Ok(self.0.launch(collective, dtype, size, input, output, s)?)
    }
}

/// Runs `mscclpp tune`.
pub fn run(args: TuneArgs) -> anyhow::Result<ExitCode> {
    let (comm, _env) = Communicator::from_env().context(
        "`mscclpp tune` runs one process per GPU under mpirun or torchrun, e.g. \
         `mpirun -np 2 mscclpp tune allreduce --sizes 1K:1G --nccl`",
    )?;
    let comm = Arc::new(comm);
    let rank = comm.rank();
    if rank == 0 {
        println!("{}", crate::BUILD_INFO);
    }
    comm.device().bind()?;
    let nccl = if args.nccl { Some(NcclBaseline(Nccl::new(comm.bootstrap().as_ref())?)) } else { None };
    let config = args.config();
    let bar = if rank == 0 && std::io::stderr().is_terminal() {
        let b = ProgressBar::new((config.collectives.len() * config.sizes.len()) as u64);
        if let Ok(style) = ProgressStyle::with_template("{bar:40} {pos}/{len} sizes {msg} [{elapsed}]") {
            b.set_style(style);
        }
        b
    } else {
        ProgressBar::hidden()
    };
    let mut progress = |p: &Progress| {
        bar.set_position(p.step as u64);
        bar.set_message(format!(
            "{} {}: candidate {}/{}",
            p.collective,
            registry::human_bytes(p.size),
            p.candidate,
            p.candidates
        ));
    };
    let outcome = tune::tune(&comm, &config, nccl.as_ref().map(|n| n as &dyn Baseline), &mut progress)?;
    bar.finish_and_clear();
    let path = tune::save(&comm, &outcome)?;
    if rank == 0 {
        print!("{}", report(&outcome));
        println!("tuned table: {}", path.display());
        if let Some(out) = &args.out {
            let text = std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
            std::fs::write(out, text).with_context(|| format!("writing {}", out.display()))?;
            println!("copied to {}", out.display());
        }
    }
    if outcome.wrong_results > 0 {
        if rank == 0 {
            eprintln!("WRONG RESULTS: {} configuration(s) gave wrong results (see the notes)", outcome.wrong_results);
        }
        return Ok(ExitCode::from(1));
    }
    Ok(ExitCode::SUCCESS)
}

/// The winners, one line per size, with the key, the notes and whether the budget ran out.
pub fn report(outcome: &TuneOutcome) -> String {
    let mut out = String::new();
    if let Some(k) = &outcome.key {
        out.push_str(&format!("# tuned on {k}\n"));
    }
    out.push_str(&rows_table(&outcome.rows));
    out.push_str(&format!("{} configuration(s) timed", outcome.timed));
    if outcome.stopped_by_budget {
        out.push_str("; the budget ran out: sizes after the last row were not tuned");
    }
    out.push('\n');
    for n in &outcome.notes {
        out.push_str(&format!("note: {n}\n"));
    }
    out
}

/// Rows as a table: collective, type, placement, size, program, thread blocks × threads, instances, µs, NCCL µs,
/// speed-up and who wins.
pub fn rows_table(rows: &[TunedRow]) -> String {
    let header =
        ["COLLECTIVE", "TYPE", "PLACE", "SIZE", "PROGRAM", "TB x THREADS", "INST", "US", "NCCL_US", "SPEEDUP", "USE"];
    let cells: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            let us = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.2}"));
            vec![
                r.collective.to_string(),
                r.dtype.to_string(),
                if r.inplace { "in" } else { "out" }.to_string(),
                registry::human_bytes(r.size),
                r.program.clone().unwrap_or_else(|| "-".into()),
                if r.program.is_some() { format!("{} x {}", r.thread_blocks, r.threads_per_block) } else { "-".into() },
                if r.program.is_some() { r.instances.to_string() } else { "-".into() },
                us(r.us),
                us(r.nccl_us),
                match (r.us, r.nccl_us) {
                    (Some(o), Some(n)) if o > 0.0 => format!("{:.2}x", n / o),
                    _ => "-".into(),
                },
                if r.nccl_faster() { "nccl" } else { "ours" }.to_string(),
            ]
        })
        .collect();
    let mut widths: Vec<usize> = header.iter().map(|h| h.len()).collect();
    for row in &cells {
        for (w, c) in widths.iter_mut().zip(row) {
            *w = (*w).max(c.chars().count());
        }
    }
    let line = |row: &[String]| {
        let parts: Vec<String> = row.iter().zip(&widths).map(|(c, w)| format!("{c:<w$}")).collect();
        parts.join("  ").trim_end().to_string() + "\n"
    };
    let mut out = line(&header.map(String::from));
    for row in &cells {
        out.push_str(&line(row));
    }
    out
}

/// Every tuned table in the cache directory (`mscclpp list` shows them): path and table, or path and why it does
/// not parse.
pub fn tables_in_cache() -> Vec<(PathBuf, Result<TunedTable, TableError>)> {
    let Ok(dir) = registry::default_cache_dir() else { return Vec::new() };
    let Ok(entries) = std::fs::read_dir(dir.join("tuned")) else { return Vec::new() };
    let mut paths: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    paths.sort();
    paths
        .into_iter()
        .map(|p| {
            let t = std::fs::read_to_string(&p)
                .map_err(|e| TableError::Unreadable(e.to_string()))
                .and_then(|s| TunedTable::from_json(&s));
            (p, t)
        })
        .collect()
}

/// The installed table's target for program `meta` at `size` bytes (`dtype`, placement from `target`), when its
/// row at or above `size` names that program and the plan splits the message: what `mscclpp test` runs when no
/// `--instances` is given.
pub fn tuned_target_for(meta: &ProgramMeta, target: Target, dtype: DataType, size: u64) -> Option<Target> {
    let table = registry::tuned_table()?;
    if table.key.world_size != target.world_size || table.key.ranks_per_node != target.ranks_per_node {
        return None;
    }
    let inplace = target.inplace.unwrap_or(meta.buffer_mode.default_inplace());
    let row = table.row_for(meta.collective, dtype, inplace, size)?;
    if row.program.as_deref() != Some(meta.name) {
        return None;
    }
    let threads = (row.threads_per_block > 0).then_some(row.threads_per_block);
    let t = target.instances(row.instances.max(1)).threads_per_block(threads);
    meta.build_plan(&t).ok().filter(|p| registry::splits_message(p, size)).map(|_| t)
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    use mscclpp_algorithms as _;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        args: TuneArgs,
    }

    fn args(line: &[&str]) -> Result<TuneArgs, String> {
        Cli::try_parse_from(std::iter::once("tune").chain(line.iter().copied()))
            .map(|c| c.args)
            .map_err(|e| e.to_string())
    }

    #[test]
    fn arguments_parse_with_their_defaults() {
        let a = args(&[]).unwrap();
        assert_eq!(a.collectives(), vec![Collective::AllReduce]);
        let c = a.config();
        assert_eq!(c.sizes.len(), 21);
        assert_eq!((c.sizes[0], c.sizes[20]), (1 << 10, 1 << 30));
        assert_eq!((c.dtype, c.inplace, c.iters, c.runs, c.budget), (DataType::F16, false, 10, 20, None));
        assert!(!a.nccl && a.out.is_none());
        assert_eq!(
            (c.thread_blocks, c.threads),
            (registry::TUNE_THREAD_BLOCKS.to_vec(), registry::TUNE_THREADS.to_vec())
        );
        let a = args(&[
            "allgather",
            "reducescatter",
            "--sizes",
            "4K,64K:256K",
            "--dtype",
            "bf16",
            "--budget-s",
            "30",
            "--nccl",
            "--iters",
            "5",
            "--out",
            "t.json",
            "--in-place",
            "--thread-blocks",
            "4,16",
            "--threads",
            "512",
        ])
        .unwrap();
        assert_eq!(a.collectives(), vec![Collective::AllGather, Collective::ReduceScatter]);
        let c = a.config();
        assert_eq!(c.sizes, vec![4 << 10, 64 << 10, 128 << 10, 256 << 10]);
        assert_eq!((c.dtype, c.inplace, c.iters, c.budget), (DataType::Bf16, true, 5, Some(Duration::from_secs(30))));
        assert!(a.nccl);
        assert_eq!((c.thread_blocks, c.threads), (vec![4, 16], vec![512]));
        assert_eq!(a.out.as_deref(), Some(std::path::Path::new("t.json")));
    }

    #[test]
    fn bad_arguments_say_what_is_wrong() {
        let cases: [(&[&str], &str); 8] = [
            (&["--thread-blocks", "4,256"], "256"),
            (&["--threads", "500"], "multiple of 32"),
            (&["sendrecv"], "sendrecv"),
            (&["--sizes", "8K:1K"], "runs backwards"),
            (&["--dtype", "f64"], "f64"),
            (&["--budget-s", "0"], "budget-s"),
            (&["--iters", "0"], "iters"),
            (&["--packet", "ll4"], "ll4"),
        ];
        for (line, want) in cases {
            let e = args(line).unwrap_err();
            assert!(e.contains(want), "{line:?}: {e}");
        }
    }

    fn row(size: u64, program: Option<&str>, us: Option<f64>, nccl_us: Option<f64>) -> TunedRow {
        TunedRow {
            collective: Collective::AllReduce,
            dtype: DataType::F16,
            inplace: false,
            size,
            program: program.map(String::from),
            instances: 2,
            thread_blocks: 8,
            threads_per_block: 512,
            us,
            nccl_us,
        }
    }

    #[test]
    fn the_winners_table_names_program_shape_and_who_wins() {
        let rows = vec![
            row(1 << 10, Some("allreduce_oneshot_ll"), Some(4.0), Some(6.0)),
            row(1 << 20, Some("allreduce_twoshot"), Some(12.0), Some(10.0)),
            row(1 << 30, None, None, Some(3000.0)),
        ];
        let outcome = TuneOutcome {
            rows,
            key: None,
            stopped_by_budget: true,
            timed: 7,
            wrong_results: 0,
            notes: vec!["n1".into()],
        };
        let text = report(&outcome);
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines[0].starts_with("COLLECTIVE"), "{text}");
        assert!(
            lines[1].contains("allreduce_oneshot_ll") && lines[1].contains("8 x 512") && lines[1].contains("1.50x")
        );
        assert!(lines[1].trim_end().ends_with("ours"), "{text}");
        assert!(lines[2].trim_end().ends_with("nccl"), "{text}");
        assert!(lines[3].contains("1 GiB") && lines[3].trim_end().ends_with("nccl"), "{text}");
        assert!(
            text.contains("7 configuration(s) timed") && text.contains("budget ran out") && text.contains("note: n1")
        );
    }
}
