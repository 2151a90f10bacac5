//! `mscclpp test`: the executor test. Runs a plan on the GPUs of this job (one process per GPU, started by
//! mpirun or torchrun), checks launches against the reference result the CPU verifier uses
//! (`mscclpp_lang::data`): each launch before the timing and the output of the last timed launch, and prints µs
//! per call and bandwidth.

use std::ops::Range;
use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, bail};
use mscclpp_exec::Communicator;
use mscclpp_exec::executor::{ExecutionPlan, Executor, packet_format};
use mscclpp_exec::sys::driver::{Event, Stream, pace};
use mscclpp_exec::sys::interpreter::{Graph, PacketType};
use mscclpp_lang::data::{BufferSizes, DataType, FillPattern};
use mscclpp_lang::plan::{Collective, Layout, Plan, Protocol, SizeError, read_plan};
use mscclpp_lang::registry::{self, Target};

use crate::measure::{Buffers, compare, median_sorted, par_expected};

/// Arguments of `mscclpp test`.
#[derive(Debug, clap::Args)]
pub struct TestArgs {
    /// A JSON plan file, or the registry name of a program (see `mscclpp list`).
    pub plan: String,
    /// Message size: the output of an allgather, the input of every other collective (e.g. 1M, 4K+16, 1048624).
    /// A comma-separated list runs each size in turn.
    #[arg(long, value_delimiter = ',', value_parser = registry::parse_size, required = true)]
    pub size: Vec<u64>,
    /// Run in place (default: the plan's own mode).
    #[arg(long, conflicts_with = "out_of_place")]
    pub in_place: bool,
    /// Run out of place.
    #[arg(long)]
    pub out_of_place: bool,
    /// Run both in place and out of place (where the plan allows it).
    #[arg(long, conflicts_with_all = ["in_place", "out_of_place"])]
    pub both_placements: bool,
    /// Element type: f16, bf16, f32, i32, u32, u8 (a comma-separated list runs each in turn).
    #[arg(long, value_delimiter = ',', default_value = "f16")]
    pub dtype: Vec<String>,
    /// Run both eager and --graph.
    #[arg(long, conflicts_with = "graph")]
    pub eager_and_graph: bool,
    /// LL packet format.
    #[arg(long, default_value = "ll16")]
    pub packet: String,
    /// Checked launches, and launches per timing run (eager) or per graph (with --graph).
    #[arg(long, default_value_t = 10)]
    pub iters: u32,
    /// Time CUDA graphs of `iters` launches (one replay per timed run) instead of eager launches.
    #[arg(long)]
    pub graph: bool,
    /// Timed runs, each of `iters` launches (eager) or one replay of a graph of `iters` launches (--graph). The
    /// figure printed is the median over runs (with the fastest run as `us_min`).
    #[arg(long, alias = "graph-iters", default_value_t = 10)]
    pub runs: u32,
    /// Copies of a registered program interleaved over the buffers (more thread blocks; registry names only).
    /// Default: the tuned table's row when it names this program (`mscclpp tune`), else chosen per message size
    /// from the program's `thread_blocks` table.
    #[arg(long)]
    pub instances: Option<usize>,
    /// Seed of the fill pattern.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Skip the timing runs.
    #[arg(long)]
    pub no_timing: bool,
    /// Ranks per node of a registered program's plan (default: the job's, from the ranks' host names).
    #[arg(long)]
    pub ranks_per_node: Option<usize>,
}

fn load_plan(args: &TestArgs, world: usize, inplace: Option<bool>, size: u64) -> anyhow::Result<Option<Plan>> {
    if Path::new(&args.plan).exists() || args.plan.ends_with(".json") {
        return Ok(Some(read_plan(&args.plan).map_err(|e| anyhow::anyhow!("{e}"))?));
    }
    let meta = registry::find(&args.plan)?;
    let mut target = Target::new(world).ranks_per_node(args.ranks_per_node.unwrap_or(world));
    if let Some(i) = inplace {
        if !meta.buffer_mode.accepts(i) {
            return Ok(None);
        }
        target = target.inplace(i);
    }
    let target = match args.instances {
        Some(k) => target.instances(k.max(1)),
        None => match crate::tune::tuned_target_for(meta, target, first_dtype(args), size) {
            Some(t) => t,
            None => meta.tuned_target(target, size)?,
        },
    };
    Ok(Some(meta.build_plan(&target)?))
}

/// The first `--dtype` (f16 when it does not parse; `run` reports that).
fn first_dtype(args: &TestArgs) -> DataType {
    args.dtype.first().and_then(|d| d.parse().ok()).unwrap_or(DataType::F16)
}

/// Runs `mscclpp test`.
pub fn run(mut args: TestArgs) -> anyhow::Result<ExitCode> {
    mscclpp_exec::startup::mark("mscclpp test: start");
    let packet = match args.packet.to_ascii_lowercase().as_str() {
        "ll16" => PacketType::Ll16,
        "ll8" => PacketType::Ll8,
        other => bail!("unknown packet format `{other}`; use ll16 or ll8"),
    };
    let dtypes: Vec<DataType> = args
        .dtype
        .iter()
        .map(|d| d.parse::<DataType>().map_err(|e| anyhow::anyhow!(e)))
        .collect::<anyhow::Result<_>>()?;
    let (comm, _env) = Communicator::from_env().context(
        "`mscclpp test` runs one process per GPU under mpirun or torchrun, e.g. \
         `mpirun -np 2 mscclpp test PLAN --size 1M`",
    )?;
    let comm = Arc::new(comm);
    if comm.rank() == 0 {
        // First line of every log: what ran.
        println!("{}", crate::BUILD_INFO);
    }
    crate::measure::use_tuned_table(&comm);
    let world = comm.size();
    args.ranks_per_node = Some(crate::measure::ranks_per_node(&comm, args.ranks_per_node)?);
    let placements: Vec<Option<bool>> = if args.both_placements {
        vec![Some(true), Some(false)]
    } else if args.in_place {
        vec![Some(true)]
    } else if args.out_of_place {
        vec![Some(false)]
    } else {
        vec![None]
    };
    let modes: Vec<bool> = if args.eager_and_graph { vec![false, true] } else { vec![args.graph] };
    let mut all_ok = true;
    for &placement in &placements {
        for &size in &args.size {
            let Some(plan) = load_plan(&args, world, placement, size)? else {
                if comm.rank() == 0 {
                    println!("SKIP plan={} placement={placement:?}: the program does not support it", args.plan);
                }
                break;
            };
            let inplace = placement.unwrap_or(plan.inplace);
            let eplan = ExecutionPlan::new(plan.clone())?;
            let standard = BufferSizes::for_collective(plan.collective, world, size);
            let Some(sizes) = standard.or_else(|| unit_plan_sizes(&plan, size)) else {
                bail!(
                    "a {} of {size} bytes cannot be checked on {world} ranks (`test`/`custom` plans have no \
                     reference result; allgather/reducescatter sizes must split over the ranks)",
                    plan.collective
                )
            };
            // A plan without input or output chunks (the DSL's unit tests) runs with the message as one chunk.
            if let Err(e) = Layout::new(&plan, comm.rank(), sizes.input, sizes.output)
                && !matches!(e, SizeError::NoChunks { .. })
            {
                // One size asked for: a size the plan refuses is an error. In a list: skipped, and said so.
                if args.size.len() == 1 {
                    bail!("plan `{}`: {e}", plan.name);
                }
                if comm.rank() == 0 {
                    println!("SKIP plan={} size={size}: {e}", plan.name);
                }
                continue;
            }
            let case = Case { plan: &plan, eplan: &eplan, size, inplace, packet };
            let bufs = Buffers::new(&comm, &plan, sizes, inplace)?;
            mscclpp_exec::startup::mark("mscclpp test: buffers allocated");
            let exec = Executor::new(comm.clone())?;
            for &dtype in &dtypes {
                for &graph in &modes {
                    // A kernel that trapped on an expired wait surfaces wherever the host next touches CUDA (a
                    // graph replay, an event): report the wait itself.
                    all_ok &= run_one(&args, &comm, &exec, &bufs, &case, dtype, graph)
                        .map_err(|e| exec.device_report().map_or(e, anyhow::Error::from))?;
                    mscclpp_exec::startup::mark("mscclpp test: case done");
                }
            }
        }
    }
    Ok(if all_ok { ExitCode::SUCCESS } else { ExitCode::from(1) })
}

/// Buffer sizes for a `test` or `custom` plan (the DSL's unit tests), which have no reference result: the input
/// is the message, the output has the plan's proportion of chunks to it (the message when either has none).
/// `None` for the standard collectives.
fn unit_plan_sizes(plan: &Plan, size: u64) -> Option<BufferSizes> {
    if !matches!(plan.collective, Collective::Test | Collective::Custom) {
        return None;
    }
    let g = plan.gpus.first()?;
    let (ic, oc) = (g.input_chunks as u64, g.output_chunks as u64);
    let output = if ic > 0 && oc > 0 { size / ic * oc } else { size };
    Some(BufferSizes { input: size, output, world: plan.world_size() })
}

/// Which launches of one case are checked, numbered as the fill pattern numbers launches (from 1): each checked
/// launch runs on inputs of its own, so a launch that leaves an earlier result in place is caught.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Checks {
    /// Checked launches per phase (eager launches; graph replays).
    per_phase: u32,
    /// Whether replays of a one-launch graph are checked after the eager launches.
    graph: bool,
}

impl Checks {
    /// `iters` checked launches per phase (two for messages of 64 MiB and more, whose fills and references take the
    /// host long; at least one).
    fn new(iters: u32, size: u64, graph: bool) -> Checks {
        let per_phase = if size >= 64 << 20 { iters.min(2) } else { iters }.max(1);
        Checks { per_phase, graph }
    }
    /// The eager launches checked before the timing.
    fn eager(&self) -> Range<u32> {
        1..self.per_phase + 1
    }
    /// The graph replays checked before the timing (none without `--graph`).
    fn replays(&self) -> Range<u32> {
        let start = self.eager().end;
        start..if self.graph { start + self.per_phase } else { start }
    }
    /// The number of the last timed launch, whose output is checked after the timing.
    fn last_timed(&self) -> u32 {
        self.replays().end
    }
    /// How many checks a case makes: the launches before the timing, and the last timed one when the timing ran.
    fn count(&self, timed: bool) -> u32 {
        self.eager().len() as u32 + self.replays().len() as u32 + u32::from(timed)
    }
}

struct Case<'a> {
    plan: &'a Plan,
    eplan: &'a ExecutionPlan,
    size: u64,
    inplace: bool,
    packet: PacketType,
}

#[allow(clippy::too_many_arguments)]
fn run_one(
    args: &TestArgs,
    comm: &Arc<Communicator>,
    exec: &Executor,
    bufs: &Buffers,
    case: &Case<'_>,
    dtype: DataType,
    graph: bool,
) -> anyhow::Result<bool> {
    let plan = case.plan;
    let eplan = case.eplan;
    let packet = case.packet;
    let inplace = case.inplace;
    let rank = comm.rank();
    let world = comm.size();
    let collective = plan.collective;
    let sizes = bufs.sizes;
    let device = comm.device();
    let stream = Stream::new(device)?;
    let pattern = FillPattern::new(dtype, world, args.seed);
    let op = mscclpp_lang::verify::plan_reduce_op(plan);
    let et = dtype;
    let root = plan.root_rank();
    let size = case.size;
    let launch = |exec: &Executor| {
        exec.execute(eplan, bufs.input_ptr(), bufs.output_ptr(), sizes.input, sizes.output, et, packet, &stream)
    };
    let checks = Checks::new(args.iters, size, graph);
    let bit_exact = std::cell::Cell::new(true);
    let failure: std::cell::RefCell<Option<String>> = std::cell::RefCell::new(None);
    // Compare the output with the reference result of launch `launch_no`; remember the first mismatch.
    let verify = |launch_no: u32, what: &str| -> anyhow::Result<()> {
        if let Some(want) = par_expected(collective, op, &pattern, rank, launch_no, sizes, root) {
            let (msg, exact) = bufs.with_output(|got| compare(dtype, &want, got, world))?;
            bit_exact.set(bit_exact.get() && exact);
            if let Some(m) = msg
                && failure.borrow().is_none()
            {
                *failure.borrow_mut() = Some(format!("{what}: {m}"));
            }
        }
        Ok(())
    };
    let check_one = |launch_no: u32, run: &dyn Fn() -> mscclpp_exec::Result<()>| -> anyhow::Result<()> {
        bufs.fill(&pattern, rank, launch_no)?;
        comm.bootstrap().barrier()?;
        run()?;
        exec.synchronize(&stream)?;
        verify(launch_no, &format!("launch {launch_no}"))
    };
    // Eager launches, each checked.
    for l in checks.eager() {
        check_one(l, &|| launch(exec))?;
    }
    // Graph: replays of a one-launch graph, each checked (packet flags must advance in device memory).
    let single = if graph {
        Some(Graph::capture(&stream, || launch(exec).map_err(mscclpp_exec::sys::Error::from))?)
    } else {
        None
    };
    if let Some(g) = &single {
        for l in checks.replays() {
            check_one(l, &|| g.launch(&stream).map_err(Into::into))?;
        }
    }

    // Timing: `runs` timed runs of `iters` launches each; the median per call is reported. Every rank must take
    // the same decision (a rank that skipped the timing would leave its peers waiting in their kernels), so a
    // failed check anywhere skips it everywhere.
    let mut us_per_call = f64::NAN;
    let mut us_min = f64::NAN;
    let failed_here = [u8::from(failure.borrow().is_some())];
    let failed_somewhere = comm.bootstrap().all_gather(&failed_here)?.iter().any(|v| v.first() == Some(&1));
    let timed = !args.no_timing && !failed_somewhere;
    if timed {
        let runs = args.runs.max(1) as usize;
        let iters = args.iters.max(1);
        // The timed launches are checked too, through the output of the last one. They run back to back without
        // fills, and a launch may change its own input (in place, or a plan that uses its input as scratch), so
        // the output after many launches is not a reference result. Hence the last run restores the input before
        // its last launch: after its first `iters - 1` launches the ranks wait for each other (no peer still
        // reads or writes this rank's buffers), the stream poisons the output and copies in the fresh input of
        // launch `last` staged here, and the last launch runs. The time of that run leaves out the wait and the
        // restoring (between the events `gap`); like the first run, its last launch starts right after a barrier.
        let last = checks.last_timed();
        let staged = bufs.stage(&pattern, rank, last)?;
        let marks: Vec<Event> = (0..=runs).map(|_| Event::new(device)).collect::<Result<_, _>>()?;
        let gap = [Event::new(device)?, Event::new(device)?];
        // With --graph, a graph of `n` launches (none for no launch); eager runs launch one by one.
        let capture = |n: u32| -> anyhow::Result<Option<Graph>> {
            if !graph || n == 0 {
                return Ok(None);
            }
            Ok(Some(Graph::capture(&stream, || {
                for _ in 0..n {
                    launch(exec).map_err(mscclpp_exec::sys::Error::from)?;
                }
                Ok(())
            })?))
        };
        let graph_all = capture(iters)?;
        let graph_head = capture(iters - 1)?;
        // `n` launches: one replay of `g`, the graph of `n` launches, or `n` eager launches.
        let launches = |n: u32, g: &Option<Graph>| -> anyhow::Result<()> {
            match g {
                Some(g) => g.launch(&stream)?,
                None => {
                    for _ in 0..n {
                        launch(exec)?;
                    }
                }
            }
            Ok(())
        };
        launches(iters, &graph_all)?; // warm-up
        exec.synchronize(&stream)?;
        comm.bootstrap().barrier()?;
        marks[0].record(&stream)?;
        for (i, m) in marks.iter().enumerate().take(runs).skip(1) {
            pace(&marks, i, Duration::from_secs(60))?;
            launches(iters, &graph_all)?;
            m.record(&stream)?;
        }
        pace(&marks, runs, Duration::from_secs(60))?;
        launches(iters - 1, &graph_head)?;
        gap[0].record(&stream)?;
        exec.synchronize(&stream)?;
        comm.bootstrap().barrier()?;
        bufs.restore(&stream, &staged)?;
        gap[1].record(&stream)?;
        launches(1, &single)?;
        marks[runs].record(&stream)?;
        exec.synchronize(&stream)?;
        marks[runs].synchronize(Duration::from_secs(60))?;
        let gap_ms = f64::from(gap[1].elapsed_ms_since(&gap[0])?);
        let mut per_call = Vec::with_capacity(runs);
        for (i, w) in marks.windows(2).enumerate() {
            let mut ms = f64::from(w[1].elapsed_ms_since(&w[0])?);
            if i + 1 == runs {
                ms -= gap_ms;
            }
            per_call.push(ms * 1000.0 / f64::from(iters));
        }
        per_call.sort_by(f64::total_cmp);
        us_per_call = median_sorted(&per_call);
        us_min = per_call.first().copied().unwrap_or(f64::NAN);
        verify(last, &format!("last timed launch (launch {last})"))?;
    }

    // Gather the verdicts.
    let verdict =
        format!("{}|{}|{us_min}|{us_per_call}", failure.borrow().clone().unwrap_or_default(), bit_exact.get() as u8);
    let all = comm.bootstrap().all_gather(verdict.as_bytes())?;
    let mut ok = true;
    let mut exact_all = true;
    let mut worst_us = 0f64;
    let mut worst_min = 0f64;
    for (r, v) in all.iter().enumerate() {
        let v = String::from_utf8_lossy(v);
        let mut parts = v.rsplitn(4, '|');
        let us: f64 = parts.next().and_then(|s| s.parse().ok()).unwrap_or(f64::NAN);
        let us_lo: f64 = parts.next().and_then(|s| s.parse().ok()).unwrap_or(f64::NAN);
        let exact = parts.next() == Some("1");
        let fail = parts.next().unwrap_or("");
        if !fail.is_empty() {
            ok = false;
            if rank == 0 {
                eprintln!("rank {r}: WRONG RESULT {fail}");
            }
        }
        exact_all &= exact;
        if us.is_finite() {
            worst_us = worst_us.max(us);
        }
        if us_lo.is_finite() {
            worst_min = worst_min.max(us_lo);
        }
    }
    // `test`/`custom` plans have no reference result: they ran (no error, no hang), nothing was compared.
    let checked = !matches!(collective, Collective::Test | Collective::Custom);
    if rank == 0 {
        let bytes = size as f64;
        let factor = crate::bench_report::bus_factor(collective, world);
        let algbw = if worst_us > 0.0 { bytes / (worst_us * 1e3) } else { 0.0 };
        println!(
            "{} plan={} coll={} ranks={} size={} dtype={} packet={} mode={} {} checks={} result={}{} us_per_call={:.2} us_min={:.2} algbw_GBps={:.2} busbw_GBps={:.2}",
            if ok { "PASS" } else { "FAIL" },
            plan.name,
            collective,
            world,
            size,
            dtype.as_str(),
            packet_shown(plan, packet),
            if inplace { "in-place" } else { "out-of-place" },
            if graph {
                format!("graph({}x{})", args.iters, args.runs)
            } else {
                format!("eager({}x{})", args.iters, args.runs)
            },
            checks.count(timed),
            match (ok, checked) {
                (true, true) => "ok",
                (true, false) => "ran,unchecked",
                (false, _) => "wrong",
            },
            if exact_all && checked { ",bit-exact" } else { "" },
            worst_us,
            worst_min,
            algbw,
            algbw * factor
        );
    }
    Ok(ok)
}

/// The packet format a run of `plan` moves its packets in, as the result line shows it: the executor's
/// ([`packet_format`]) for a plan with packets, none for a Simple plan.
fn packet_shown(plan: &Plan, asked: PacketType) -> &'static str {
    match plan.protocol {
        Protocol::Simple => "none",
        Protocol::Ll | Protocol::Ll128 => packet_format(plan, asked).map_or("invalid", PacketType::name),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_result_line_names_the_packet_format_the_plan_runs() {
        let build = |name: &str| registry::find(name).unwrap().build_plan(&Target::new(2)).unwrap();
        assert_eq!(packet_shown(&build("allreduce_twoshot_ll128"), PacketType::Ll16), "ll128");
        assert_eq!(packet_shown(&build("allreduce_oneshot_ll"), PacketType::Ll8), "ll8");
        assert_eq!(packet_shown(&build("allreduce_staged"), PacketType::Ll16), "none");
        // LL128 lines serve only LL128 plans: the executor refuses the pair, and the line says so.
        assert_eq!(packet_shown(&build("allreduce_oneshot_ll"), PacketType::Ll128), "invalid");
    }

    #[test]
    fn unit_plans_get_buffer_sizes_the_executor_accepts() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/corpus/mscclpp/generated");
        let names = ["flush_test", "flush_fuse_test", "put_with_signal_test", "put_with_signal_and_flush_test"];
        for name in names {
            let plan = read_plan(format!("{dir}/unit__{name}__n2.json")).unwrap();
            assert_eq!(plan.collective, Collective::Test);
            for size in [64 << 10, 1 << 20] {
                let sizes = unit_plan_sizes(&plan, size).unwrap();
                assert_eq!(sizes.input, size, "{name}");
                for rank in 0..2 {
                    match Layout::new(&plan, rank, sizes.input, sizes.output) {
                        Ok(_) | Err(SizeError::NoChunks { .. }) => {}
                        Err(e) => panic!("{name} rank {rank} at {size}: {e}"),
                    }
                }
            }
        }
        // Standard collectives keep their own sizes.
        let allreduce = registry::find("allreduce_twoshot").unwrap().build_plan(&Target::new(2)).unwrap();
        assert!(unit_plan_sizes(&allreduce, 1 << 20).is_none());
    }

    #[test]
    fn median_of_runs() {
        assert_eq!(median_sorted(&[1.0, 2.0, 9.0]), 2.0);
        assert_eq!(median_sorted(&[1.0, 2.0, 4.0, 9.0]), 3.0);
        assert!(median_sorted(&[]).is_nan());
    }

    #[test]
    fn the_count_of_checks_is_the_number_of_checks_made() {
        // Without timing (--no-timing, or a failed check), only the launches before it are checked.
        let eager = Checks::new(10, 1 << 20, false);
        assert_eq!((eager.count(false), eager.count(true)), (10, 11));
        assert_eq!(eager.replays().len(), 0);
        let graph = Checks::new(10, 1 << 20, true);
        assert_eq!((graph.count(false), graph.count(true)), (20, 21));
        // Large messages: two per phase; at least one launch per phase however few iterations.
        assert_eq!(Checks::new(10, 64 << 20, true).count(false), 4);
        assert_eq!(Checks::new(10, (64 << 20) - 1, false).count(false), 10);
        assert_eq!(Checks::new(0, 1024, false).count(true), 2);
        assert_eq!(Checks::new(1, 1024, true).count(true), 3);
        // Each check compares a launch of its own inputs: distinct launch numbers, none of them the poison (0),
        // as many as counted.
        let cases: Vec<Checks> = [0, 1, 2, 10]
            .into_iter()
            .flat_map(|iters| {
                [1 << 10, 64 << 20].into_iter().flat_map(move |size| [false, true].map(|g| Checks::new(iters, size, g)))
            })
            .collect();
        assert!(!cases.is_empty());
        for c in cases {
            for timed in [false, true] {
                let mut launches: Vec<u32> = c.eager().chain(c.replays()).collect();
                if timed {
                    launches.push(c.last_timed());
                }
                assert_eq!(launches.len() as u32, c.count(timed), "{c:?}");
                assert!(!launches.contains(&0), "{c:?}");
                launches.sort_unstable();
                launches.dedup();
                assert_eq!(launches.len() as u32, c.count(timed), "{c:?}: launch numbers repeat");
            }
        }
    }

    #[test]
    fn parallel_reference_equals_the_serial_one() {
        use mscclpp_lang::data::expected_output;
        use mscclpp_lang::plan::{Collective, ReduceOp};
        // Outputs of several 4 MiB pieces, an odd element count, f16 and f32, every rank: the parallel reference
        // must equal the verifier's serial one byte for byte, for the reductions and the copying collectives.
        let cases = [
            (Collective::ReduceScatter, 10u64 << 20),
            (Collective::AllReduce, (9 << 20) + 6),
            (Collective::AllGather, (12 << 20) + 12),
            (Collective::AllToAll, 12 << 20),
            (Collective::Broadcast, (9 << 20) + 2),
            (Collective::SendRecv, 5 << 20),
        ];
        for (collective, size) in cases {
            for dtype in [DataType::F16, DataType::F32] {
                let Some(sizes) = BufferSizes::for_collective(collective, 3, size) else { continue };
                let pattern = FillPattern::new(dtype, 3, 7);
                for rank in 0..3 {
                    let serial = expected_output(collective, ReduceOp::Sum, &pattern, rank, 2, sizes, 1);
                    assert!(serial.is_some(), "{collective:?} has a reference");
                    let par = par_expected(collective, ReduceOp::Sum, &pattern, rank, 2, sizes, 1);
                    assert!(par == serial, "{collective:?} {dtype:?} rank {rank} size {size}");
                }
            }
        }
    }
}
