//! `mscclpp bench`: the nccl-tests-style benchmark. One process per GPU (under mpirun or torchrun, like
//! `mscclpp test`) times a collective over a range of sizes, with the program the registry picks per size (or the
//! one named), checks each size against the reference result, and optionally times NCCL in the same run.

use std::io::IsTerminal as _;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, bail};
use indicatif::{ProgressBar, ProgressStyle};
use mscclpp_exec::Communicator;
use mscclpp_exec::executor::{ExecutionPlan, Executor};
use mscclpp_exec::sys::driver::{Event, Stream, pace};
use mscclpp_exec::sys::interpreter::{Graph, PacketType};
use mscclpp_lang::ParseError;
use mscclpp_lang::data::{BufferSizes, DataType, FillPattern};
use mscclpp_lang::plan::{Collective, Layout, Plan, ReduceOp};
use mscclpp_lang::registry::{self, Request, Target};

use crate::bench_nccl::Nccl;
use crate::bench_report::{Report, Row, Sizes, Timing, parse_collective, parse_sizes};
use crate::measure::{Buffers, count_wrong, median_and_min, par_expected};

fn sizes_arg(s: &str) -> Result<Sizes, ParseError> {
    parse_sizes(s).map(Sizes)
}

/// Arguments of `mscclpp bench`.
#[derive(Debug, clap::Args)]
pub struct BenchArgs {
    /// The collective: allreduce, allgather, reducescatter, alltoall or broadcast.
    #[arg(value_parser = parse_collective)]
    pub collective: Collective,
    /// Message sizes (the output of an allgather, the input otherwise): `A:B` doubling from A to B, `A:B:xF`
    /// multiplying by F, or a comma-separated list of sizes and ranges.
    #[arg(long, default_value = "1K:1G", value_parser = sizes_arg)]
    pub sizes: Sizes,
    /// Element type: f16, bf16, f32, i32, u32, u8.
    #[arg(long, default_value = "f16")]
    pub dtype: DataType,
    /// Reduction of allreduce and reducescatter (the registered programs sum).
    #[arg(long, default_value = "sum")]
    pub op: String,
    /// Time CUDA graphs of `--iters` launches (the default).
    #[arg(long, conflicts_with = "eager")]
    pub graph: bool,
    /// Time eager launches instead of CUDA graphs.
    #[arg(long)]
    pub eager: bool,
    /// Run in place (default: out of place).
    #[arg(long)]
    pub in_place: bool,
    /// The registered program to run at every size (default: the registry's choice per size).
    #[arg(long)]
    pub program: Option<String>,
    /// Also time NCCL (libnccl.so.2, or MSCCLPP_NCCL_LIB_PATH) in the same run, with the speed-up beside ours.
    #[arg(long)]
    pub nccl: bool,
    /// Write the rows as CSV to this file.
    #[arg(long)]
    pub csv: Option<PathBuf>,
    /// Write the report as JSON to this file.
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// Write PNG plots of latency and bus bandwidth against size to this file.
    #[arg(long)]
    pub plot: Option<PathBuf>,
    /// Timed runs per size (at least 20); the figure is the median run, the fastest beside it.
    #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u32).range(20..))]
    pub runs: u32,
    /// Launches per timed run (eager) or per graph (graph).
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u32).range(1..))]
    pub iters: u32,
    /// LL packet format: ll16 or ll8.
    #[arg(long, default_value = "ll16")]
    pub packet: String,
    /// Seed of the fill pattern.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Ranks per node of the plans (default: the job's, from the ranks' host names).
    #[arg(long)]
    pub ranks_per_node: Option<usize>,
}

/// Longest wait for one timed phase of the GPU.
const WAIT: Duration = Duration::from_secs(120);

/// What runs at one size: the plan chosen for it, or why none does.
enum Choice {
    Run(Box<Plan>),
    Skip(Option<String>, String),
}

/// The plan for `size` bytes (`sizes` the buffers), or why there is none.
fn choose(args: &BenchArgs, world: usize, rank: usize, size: u64, sizes: BufferSizes) -> Choice {
    let (plan, name) = match &args.program {
        Some(name) => {
            let meta = match registry::find(name) {
                Ok(m) => m,
                Err(e) => return Choice::Skip(Some(name.clone()), e.to_string()),
            };
            let request = Request::new(args.collective, world, sizes.input)
                .ranks_per_node(args.ranks_per_node.unwrap_or(world))
                .inplace(args.in_place)
                .dtype(args.dtype);
            if let Some(why) = request.naming(meta).rejection(meta) {
                return Choice::Skip(Some(name.clone()), why.to_string());
            }
            let target = Target::new(world).ranks_per_node(args.ranks_per_node.unwrap_or(world)).inplace(args.in_place);
            match meta.tuned_target(target, size).and_then(|t| meta.build_plan(&t)) {
                Ok(p) => (p, name.clone()),
                Err(e) => return Choice::Skip(Some(name.clone()), e.to_string()),
            }
        }
        None => {
            let request = Request::new(args.collective, world, sizes.input)
                .ranks_per_node(args.ranks_per_node.unwrap_or(world))
                .inplace(args.in_place)
                .dtype(args.dtype);
            match mscclpp_exec::tune::select(&request).and_then(|s| s.plan()) {
                Ok(p) => {
                    let name = p.name.clone();
                    ((*p).clone(), name)
                }
                Err(_) => {
                    let per_node = args.ranks_per_node.unwrap_or(world);
                    return Choice::Skip(
                        None,
                        format!(
                            "no registered program admits {size} bytes on {world} ranks, {per_node} ranks per node \
                             (mscclpp list)"
                        ),
                    );
                }
            }
        }
    };
    if let Err(e) = Layout::new(&plan, rank, sizes.input, sizes.output) {
        return Choice::Skip(Some(name), e.to_string());
    }
    Choice::Run(Box::new(plan))
}

/// Runs `launch` (one collective call on `stream`) `runs` times `iters` times, as graphs of `iters` calls (the
/// autotuner's timing, [`mscclpp_exec::tune::time_graph`]) or eagerly, after one warm-up run; returns µs per call
/// of the median run and of the fastest.
fn time_calls(
    stream: &Stream,
    graph: bool,
    runs: u32,
    iters: u32,
    launch: &dyn Fn() -> anyhow::Result<()>,
    sync: &dyn Fn() -> anyhow::Result<()>,
    barrier: &dyn Fn() -> anyhow::Result<()>,
) -> anyhow::Result<(f64, f64)> {
    if graph {
        let exec_err = |e: anyhow::Error| mscclpp_exec::Error::InvalidArgument(format!("{e:#}"));
        let (l, s, b) = (|| launch().map_err(exec_err), || sync().map_err(exec_err), || barrier().map_err(exec_err));
        return Ok(mscclpp_exec::tune::time_graph(stream, runs, iters, &l, &s, &b)?);
    }
    let run = || -> anyhow::Result<()> {
        for _ in 0..iters {
            launch()?;
        }
        Ok(())
    };
    run()?;
    sync()?;
    barrier()?;
    let device = stream.device();
    let marks: Vec<Event> = (0..=runs).map(|_| Event::new(device)).collect::<Result<_, _>>()?;
    marks[0].record(stream)?;
    for (i, m) in marks.iter().enumerate().skip(1) {
        pace(&marks, i, WAIT)?;
        run()?;
        m.record(stream)?;
    }
    marks[runs as usize].synchronize(WAIT)?;
    sync()?;
    let mut per_call = Vec::with_capacity(runs as usize);
    for w in marks.windows(2) {
        per_call.push(f64::from(w[1].elapsed_ms_since(&w[0])?) * 1000.0 / f64::from(iters));
    }
    Ok(median_and_min(per_call))
}

/// The largest of every rank's `(median, min)` and the sum of every rank's wrong elements.
fn gather(comm: &Communicator, us: (f64, f64), wrong: u64) -> anyhow::Result<(f64, f64, u64)> {
    let mut bytes = us.0.to_le_bytes().to_vec();
    bytes.extend(us.1.to_le_bytes());
    bytes.extend(wrong.to_le_bytes());
    let all = comm.bootstrap().all_gather(&bytes)?;
    let mut out = (0f64, 0f64, 0u64);
    for v in all {
        let get = |i: usize| v.get(i * 8..i * 8 + 8).and_then(|b| b.try_into().ok()).map(u64::from_le_bytes);
        let (Some(a), Some(b), Some(c)) = (get(0), get(1), get(2)) else {
            bail!("a rank sent a malformed timing ({} bytes)", v.len());
        };
        out = (out.0.max(f64::from_bits(a)), out.1.max(f64::from_bits(b)), out.2 + c);
    }
    Ok(out)
}

/// Whether every rank says `yes`.
fn all_agree(comm: &Communicator, yes: bool) -> anyhow::Result<bool> {
    Ok(comm.bootstrap().all_gather(&[u8::from(yes)])?.iter().all(|v| v.first() == Some(&1)))
}

/// Runs `mscclpp bench`.
pub fn run(mut args: BenchArgs) -> anyhow::Result<ExitCode> {
    if ReduceOp::Sum.as_str() != args.op.to_ascii_lowercase() {
        bail!("--op {}: the registered programs and the reference reduce with sum; use --op sum", args.op);
    }
    let packet = match args.packet.to_ascii_lowercase().as_str() {
        "ll16" => PacketType::Ll16,
        "ll8" => PacketType::Ll8,
        other => bail!("unknown packet format `{other}`; use ll16 or ll8"),
    };
    if args.sizes.0.is_empty() {
        bail!("--sizes names no size; e.g. --sizes 1K:1G");
    }
    let graph = !args.eager;
    let (comm, _env) = Communicator::from_env().context(
        "`mscclpp bench` runs one process per GPU under mpirun or torchrun, e.g. \
         `mpirun -np 2 mscclpp bench allreduce --sizes 1K:1G`",
    )?;
    let comm = Arc::new(comm);
    let rank = comm.rank();
    let world = comm.size();
    if rank == 0 {
        println!("{}", crate::BUILD_INFO);
    }
    crate::measure::use_tuned_table(&comm);
    args.ranks_per_node = Some(crate::measure::ranks_per_node(&comm, args.ranks_per_node)?);
    let device = *comm.device();
    device.bind()?;
    let nccl = if args.nccl { Some(Nccl::new(comm.bootstrap().as_ref())?) } else { None };
    let stream = Stream::new(&device)?;
    let es = args.dtype.size() as u64;
    let pattern = FillPattern::new(args.dtype, world, args.seed);
    let et = args.dtype;

    let bar = if rank == 0 && std::io::stderr().is_terminal() {
        let b = ProgressBar::new(args.sizes.0.len() as u64);
        if let Ok(style) = ProgressStyle::with_template("{bar:40} {pos}/{len} sizes {msg} [{elapsed}]") {
            b.set_style(style);
        }
        b
    } else {
        ProgressBar::hidden()
    };
    let mut rows = Vec::with_capacity(args.sizes.0.len());
    for &size in &args.sizes.0 {
        bar.set_message(registry::human_bytes(size));
        let mut row = Row {
            bytes: size,
            count: size / es,
            dtype: args.dtype.as_str().to_string(),
            program: None,
            thread_blocks: 0,
            threads: 0,
            ours: None,
            nccl: None,
            skipped: None,
        };
        let sizes = BufferSizes::for_collective(args.collective, world, size).filter(|_| size % es == 0);
        let Some(sizes) = sizes.filter(|s| s.input % es == 0 && s.output % es == 0) else {
            row.skipped = Some(format!(
                "{size} bytes do not split into whole {} elements over {world} ranks",
                args.dtype.as_str()
            ));
            rows.push(row);
            bar.inc(1);
            continue;
        };
        let choice = choose(&args, world, rank, size, sizes);
        let runs_here = matches!(choice, Choice::Run(_));
        // Every rank must take the same decision, or the ones that run would wait for the others.
        let runs_everywhere = all_agree(&comm, runs_here)?;
        let bufs = Buffers::for_collective(&comm, args.collective, sizes, args.in_place)?;
        // Check launch `launch_no` (fill, call, compare with the reference of `op` from `root`): wrong elements.
        let check = |launch_no: u32, op: ReduceOp, root: usize, call: &dyn Fn() -> anyhow::Result<()>| {
            bufs.fill(&pattern, rank, launch_no)?;
            comm.bootstrap().barrier()?;
            call()?;
            stream.synchronize(WAIT)?;
            match par_expected(args.collective, op, &pattern, rank, launch_no, sizes, root) {
                Some(want) => bufs.with_output(|got| count_wrong(args.dtype, &want, got, world)),
                None => Ok(0),
            }
        };
        let barrier = || -> anyhow::Result<()> { Ok(comm.bootstrap().barrier()?) };
        match choice {
            Choice::Run(plan) if runs_everywhere => {
                row.program = Some(plan.name.clone());
                row.thread_blocks = registry::max_thread_blocks(&plan);
                row.threads = plan.num_threads_per_block.unwrap_or(1024);
                let root = plan.root_rank();
                let op = mscclpp_lang::verify::plan_reduce_op(&plan);
                let eplan = ExecutionPlan::new(*plan)?;
                // One executor per size, as `mscclpp test` does: its resources go with the size.
                let exec = Executor::new(comm.clone())?;
                let launch = || -> anyhow::Result<()> {
                    let (i, o) = (bufs.input_ptr(), bufs.output_ptr());
                    Ok(exec.execute(&eplan, i, o, sizes.input, sizes.output, et, packet, &stream)?)
                };
                let sync = || -> anyhow::Result<()> { Ok(exec.synchronize(&stream)?) };
                let mut wrong = check(1, op, root, &|| {
                    launch()?;
                    sync()
                })?;
                if graph {
                    let one = Graph::capture(&stream, || launch().map_err(|e| to_sys_any(&e)))?;
                    wrong += check(2, op, root, &|| Ok(one.launch(&stream)?))?;
                }
                let us = time_calls(&stream, graph, args.runs, args.iters, &launch, &sync, &barrier)?;
                let (us, us_min, wrong) = gather(&comm, us, wrong)?;
                row.ours = Some(Timing::new(args.collective, world, size, us, us_min, Some(wrong)));
            }
            Choice::Run(plan) => {
                row.program = Some(plan.name.clone());
                row.skipped = Some("another rank's layout refuses this size".into());
            }
            Choice::Skip(program, why) => {
                row.program = program;
                row.skipped = Some(why);
            }
        }
        if let Some(n) = &nccl {
            let s = stream.raw() as *mut std::ffi::c_void;
            let launch = || n.launch(args.collective, args.dtype, size, bufs.input_ptr(), bufs.output_ptr(), s);
            let sync = || -> anyhow::Result<()> { Ok(stream.synchronize(WAIT)?) };
            let mut wrong = check(3, ReduceOp::Sum, 0, &launch)?;
            if graph {
                let one = Graph::capture(&stream, || launch().map_err(|e| to_sys_any(&e)))?;
                wrong += check(4, ReduceOp::Sum, 0, &|| Ok(one.launch(&stream)?))?;
            }
            let us = time_calls(&stream, graph, args.runs, args.iters, &launch, &sync, &barrier)?;
            let (us, us_min, wrong) = gather(&comm, us, wrong)?;
            row.nccl = Some(Timing::new(args.collective, world, size, us, us_min, Some(wrong)));
        }
        rows.push(row);
        bar.inc(1);
    }
    bar.finish_and_clear();

    let report = Report {
        collective: args.collective.as_str().to_string(),
        world,
        mode: if graph { "graph" } else { "eager" }.to_string(),
        in_place: args.in_place,
        build: crate::BUILD_INFO.to_string(),
        rows,
    };
    if rank == 0 {
        print!("{}", report.table());
        if let Some(p) = &args.csv {
            std::fs::write(p, report.csv()).with_context(|| format!("writing {}", p.display()))?;
        }
        if let Some(p) = &args.json {
            std::fs::write(p, report.json()?).with_context(|| format!("writing {}", p.display()))?;
        }
        if let Some(p) = &args.plot {
            crate::bench_plot::write_plot(&report, p)?;
        }
    }
    if !report.all_correct() {
        if rank == 0 {
            eprintln!("WRONG RESULTS: see the #wrong columns");
        }
        return Ok(ExitCode::from(1));
    }
    Ok(ExitCode::SUCCESS)
}

/// An error inside a graph capture, as the driver's error type.
fn to_sys_any(e: &anyhow::Error) -> mscclpp_exec::sys::Error {
    mscclpp_exec::sys::Error::InvalidArgument(format!("{e:#}"))
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    // The default programs register at link time; the test binary names their crate so the linker keeps them.
    use mscclpp_algorithms as _;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        args: BenchArgs,
    }

    fn args(line: &[&str]) -> BenchArgs {
        Cli::try_parse_from(std::iter::once("bench").chain(line.iter().copied())).unwrap().args
    }

    fn pick(a: &BenchArgs, size: u64) -> Result<String, (Option<String>, String)> {
        let sizes = BufferSizes::for_collective(a.collective, 2, size).unwrap();
        match choose(a, 2, 0, size, sizes) {
            Choice::Run(p) => Ok(p.name.clone()),
            Choice::Skip(p, why) => Err((p, why)),
        }
    }

    #[test]
    fn ranks_per_node_shapes_the_choice() {
        // Two nodes of one rank: the two-node all-reduce is chosen; no all-gather admits that shape, and the reason
        // says so.
        assert_eq!(pick(&args(&["allreduce", "--ranks-per-node", "1"]), 1 << 20).unwrap(), "allreduce_two_nodes");
        let (program, why) = pick(&args(&["allgather", "--ranks-per-node", "1"]), 1 << 20).unwrap_err();
        assert!(program.is_none() && why.contains("ranks per node"), "{why}");
        let (_, why) = pick(&args(&["allreduce", "--program", "allreduce_twoshot", "--ranks-per-node", "1"]), 1 << 20)
            .unwrap_err();
        assert!(why.contains("ranks per node"), "{why}");
        assert!(pick(&args(&["allreduce", "--ranks-per-node", "2"]), 1 << 20).is_ok(), "one node of 2");
    }

    #[test]
    fn arguments_parse_with_their_defaults() {
        let a = args(&["all-reduce"]);
        assert_eq!(a.collective, Collective::AllReduce);
        assert_eq!(a.sizes.0.first(), Some(&1024));
        assert_eq!(a.sizes.0.last(), Some(&(1 << 30)));
        assert_eq!(a.sizes.0.len(), 21);
        assert_eq!((a.dtype, a.runs, a.eager, a.nccl, a.in_place), (DataType::F16, 20, false, false, false));
        let a = args(&["broadcast", "--sizes", "1K,1M", "--dtype", "bf16", "--eager", "--nccl", "--plot", "b.png"]);
        assert_eq!(a.sizes.0, vec![1024, 1 << 20]);
        assert_eq!((a.dtype, a.eager, a.nccl), (DataType::Bf16, true, true));
        assert_eq!(a.plot.as_deref(), Some(std::path::Path::new("b.png")));
    }

    #[test]
    fn the_registry_picks_per_size_and_a_size_no_program_admits_is_a_row_saying_so() {
        let a = args(&["allreduce"]);
        let small = pick(&a, 1 << 10).unwrap();
        let large = pick(&a, 256 << 20).unwrap();
        assert_ne!(small, large, "one program for 1 KiB and 256 MiB");
        // A named program outside its message range: skipped with the reason, not an error for the run.
        let a = args(&["allreduce", "--program", "allreduce_oneshot_ll"]);
        assert_eq!(pick(&a, 1 << 10).unwrap(), "allreduce_oneshot_ll");
        let (program, why) = pick(&a, 64 << 20).unwrap_err();
        assert_eq!(program.as_deref(), Some("allreduce_oneshot_ll"));
        assert!(!why.is_empty());
        // An unknown program: every size says so.
        let (_, why) = pick(&args(&["allreduce", "--program", "nope"]), 1 << 10).unwrap_err();
        assert!(why.contains("nope"), "{why}");
        // A program of another collective is refused.
        let (_, why) = pick(&args(&["allgather", "--program", "allreduce_twoshot"]), 1 << 10).unwrap_err();
        assert!(!why.is_empty());
    }
}
