//! The interpreter's own cost: a program of the registry as a hand-written kernel (examples/interp_cost.cu, built
//! by the kernel launcher) against the interpreter running the program's plan, with the same thread blocks and
//! threads per block, f32 sum, in place: the LL programs `allreduce_oneshot_ll` (the default),
//! `allreduce_twoshot_ll`, `allgather_allpairs_ll`, `reducescatter_ll`, the Simple `allreduce_rsag` (the reduction
//! and the puts in one pass), `allreduce_twoshot` (the same in two passes, a barrier between them) and
//! `allreduce_staged` (writes only, through the peers' scratch), and the LL128 `allreduce_twoshot_ll128` and
//! `allreduce_oneshot_ll128`; 1 KiB to 256 KiB by default (a size outside the
//! program's range is skipped with a line saying so).
//!
//! ```text
//! mpirun -np 2 target/release/examples/interp_cost [SIZES] [PROGRAM] [INSTANCESxTHREADS]
//! ```
//!
//! SIZES e.g. 1K:256K, 4K,64K or 1M:64M:x4; INSTANCESxTHREADS (e.g. 1x256) runs that configuration at every size
//! instead of the tuned one.
//!
//! Each size: both are checked against the exact sum (an eager launch, then replays of a one-launch CUDA graph,
//! each on fresh inputs), then timed as replays of a CUDA graph of 20 launches (median per call of 20 replays,
//! the slowest rank's), and rank 0 prints one line per size with the interpreter's overhead in percent. When ranks
//! share a GPU (`MSCCLPP_SHARED_GPU=1`) the timings mean nothing: it checks correctness only and says so.

use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use mscclpp_algorithms as _;
use mscclpp_exec::executor::{ExecutionPlan, Executor};
use mscclpp_exec::sys::driver::{Event, KernelArgs, LaunchConfig, Stream};
use mscclpp_exec::sys::interpreter::{ElementType, Graph, PacketType};
use mscclpp_exec::{Communicator, DeviceArray, GpuBuffer, GpuContext, Kernel, KernelBuilder, MemoryChannel};
use mscclpp_lang::plan::Plan;
use mscclpp_lang::registry::{self, Target};

type Res<T> = Result<T, Box<dyn std::error::Error>>;

const SOURCE: &str = include_str!("interp_cost.cu");
/// Launches per captured graph, and timed replays per size.
const ITERS: usize = 20;
const RUNS: usize = 20;
/// Checked launches (eager, then graph replays) per size and implementation.
const CHECKS: u32 = 3;

fn main() -> ExitCode {
    match run() {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(e) => {
            eprintln!("interp_cost: error: {e}");
            ExitCode::from(2)
        }
    }
}

/// One program and its hand-written kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Program {
    OneShot,
    TwoShot,
    AllGather,
    ReduceScatter,
    /// The Simple two-shot: direct reads and writes of the peers' data, signals per thread block; the reduction and
    /// the puts in two passes.
    TwoShotSimple,
    /// The same algorithm as the registry's one-pass program (`allreduce_rsag`: the reduction and the puts fused).
    Rsag,
    /// The two-shot by writes only, staged through the peers' scratch (`allreduce_staged`).
    Staged,
    /// The LL two-shot with 128-byte line packets (`allreduce_twoshot_ll128`).
    TwoShotLl128,
    /// The LL one-shot with 128-byte line packets (`allreduce_oneshot_ll128`).
    OneShotLl128,
}

impl Program {
    const ALL: [Program; 9] = [
        Program::OneShot,
        Program::TwoShot,
        Program::AllGather,
        Program::ReduceScatter,
        Program::TwoShotSimple,
        Program::Rsag,
        Program::Staged,
        Program::TwoShotLl128,
        Program::OneShotLl128,
    ];

    /// A Simple program: the hand-written kernel reads and writes the peers' data directly.
    fn simple(self) -> bool {
        matches!(self, Program::TwoShotSimple | Program::Rsag | Program::Staged)
    }

    /// The registry's name.
    fn name(self) -> &'static str {
        match self {
            Program::OneShot => "allreduce_oneshot_ll",
            Program::TwoShot => "allreduce_twoshot_ll",
            Program::AllGather => "allgather_allpairs_ll",
            Program::ReduceScatter => "reducescatter_ll",
            Program::TwoShotSimple => "allreduce_twoshot",
            Program::Rsag => "allreduce_rsag",
            Program::Staged => "allreduce_staged",
            Program::TwoShotLl128 => "allreduce_twoshot_ll128",
            Program::OneShotLl128 => "allreduce_oneshot_ll128",
        }
    }

    /// The hand-written kernel's entry point.
    fn kernel(self) -> &'static str {
        match self {
            Program::OneShot => "oneshot_ll_allreduce",
            Program::TwoShot => "twoshot_ll_allreduce",
            Program::AllGather => "allpairs_ll_allgather",
            Program::ReduceScatter => "ll_reducescatter",
            Program::TwoShotSimple => "twopass_allreduce",
            Program::Rsag => "twoshot_allreduce",
            Program::Staged => "staged_allreduce",
            Program::TwoShotLl128 => "twoshot_ll128_allreduce",
            Program::OneShotLl128 => "oneshot_ll128_allreduce",
        }
    }

    fn parse(s: &str) -> Res<Program> {
        Program::ALL.into_iter().find(|p| p.name() == s).ok_or_else(|| {
            let names: Vec<&str> = Program::ALL.iter().map(|p| p.name()).collect();
            format!("no hand-written kernel for `{s}`; one of {}", names.join(", ")).into()
        })
    }

    /// The interpreter's (input offset, input bytes, output offset, output bytes) in a buffer of `size` bytes
    /// (in place: the all-gather's input and the reduce-scatter's output are the rank's chunk of it).
    fn operands(self, rank: usize, world: usize, size: u64) -> (u64, u64, u64, u64) {
        let chunk = size / world as u64;
        let mine = rank as u64 * chunk;
        match self {
            Program::OneShot
            | Program::TwoShot
            | Program::TwoShotSimple
            | Program::Rsag
            | Program::Staged
            | Program::TwoShotLl128
            | Program::OneShotLl128 => (0, size, 0, size),
            Program::AllGather => (mine, chunk, 0, size),
            Program::ReduceScatter => (0, size, mine, chunk),
        }
    }

    /// The value element `i` must hold after launch `l` on `rank`, or `None` where the collective defines none
    /// (the reduce-scatter's other chunks).
    fn expected(self, rank: usize, world: usize, elems: usize, i: usize, l: u32) -> Option<f32> {
        let chunk = elems / world;
        let sum = || (0..world).map(|r| value(r, i, l)).sum();
        match self {
            Program::OneShot
            | Program::TwoShot
            | Program::TwoShotSimple
            | Program::Rsag
            | Program::Staged
            | Program::TwoShotLl128
            | Program::OneShotLl128 => Some(sum()),
            Program::AllGather => Some(value(i / chunk, i, l)),
            Program::ReduceScatter => (i / chunk == rank).then(sum),
        }
    }
}

/// The hand-written kernel and what it needs: channels to every peer over a scratch with room for `max` bytes,
/// and for the Simple kernels one channel per thread block and peer into the peer's data (`direct`; for the staged
/// kernel, `staged`: the scratch channels followed by those).
struct Hand {
    kernel: Kernel,
    chans: DeviceArray<mscclpp_exec::sys::handles::MemoryChannelDeviceHandle>,
    direct: Option<DeviceArray<mscclpp_exec::sys::handles::MemoryChannelDeviceHandle>>,
    staged: Option<DeviceArray<mscclpp_exec::sys::handles::MemoryChannelDeviceHandle>>,
    _keep: Vec<MemoryChannel>,
    scratch: GpuBuffer,
    flags: GpuBuffer,
    half: u64,
}

impl Hand {
    /// `direct_blocks`: thread blocks of the Simple kernel's largest grid (0 for an LL program).
    fn new(comm: &Communicator, ctx: &GpuContext, data: &GpuBuffer, max: u64, direct_blocks: usize) -> Res<Hand> {
        let (rank, n) = (comm.rank(), comm.size());
        // INTERP_COST_HAND_SOURCE=FILE runs another build of the hand-written kernel (the same entry point and
        // arguments), e.g. one that stamps its phases.
        let source = match std::env::var_os("INTERP_COST_HAND_SOURCE") {
            Some(path) => std::fs::read_to_string(&path)
                .map_err(|e| format!("INTERP_COST_HAND_SOURCE={}: {e}", path.to_string_lossy()))?,
            None => SOURCE.to_string(),
        };
        let kernel = KernelBuilder::new("interp_cost.cu", &source).build(ctx)?;
        let half = (n as u64 - 1).max(1) * 2 * max;
        let scratch = GpuBuffer::new(comm.device(), 2 * half as usize)?;
        scratch.write(0, &vec![0u8; 2 * half as usize])?;
        let flags = GpuBuffer::new(comm.device(), 4 * 1024)?;
        flags.write(0, &[0u8; 4 * 1024])?;
        let data_reg = comm.register(data)?;
        let scratch_reg = comm.register(&scratch)?;
        let mut handles = Vec::new();
        let mut keep = Vec::new();
        let mut conns = Vec::new();
        for peer in (0..n).filter(|p| *p != rank) {
            let conn = comm.connect(peer, 7)?;
            let sem = comm.build_memory_semaphore(&conn, 7)?;
            let peer_scratch = comm.exchange_memory(&scratch_reg, peer, 7)?;
            let ch = MemoryChannel::new(sem, peer_scratch, &data_reg, Some(scratch.ptr()))?;
            handles.push(ch.device_handle());
            keep.push(ch);
            conns.push((peer, conn));
        }
        let chans = DeviceArray::from_slice(comm.device(), &handles)?;
        let mut direct = Vec::new();
        if direct_blocks > 0 {
            // The Simple kernel's channels reach the peers' data buffers over the same connections.
            let mut remote = Vec::new();
            for (peer, conn) in &conns {
                remote.push((conn, comm.exchange_memory(&data_reg, *peer, 8)?));
            }
            for b in 0..direct_blocks as u64 {
                for &(conn, ref peer_data) in &remote {
                    let sem = comm.build_memory_semaphore(conn, 100 + b)?;
                    let ch = MemoryChannel::new(sem, peer_data.clone(), &data_reg, None)?;
                    direct.push(ch.device_handle());
                    keep.push(ch);
                }
            }
        }
        let (direct, staged) = if direct.is_empty() {
            (None, None)
        } else {
            let staged: Vec<_> = handles.iter().chain(&direct).cloned().collect();
            (
                Some(DeviceArray::from_slice(comm.device(), &direct)?),
                Some(DeviceArray::from_slice(comm.device(), &staged)?),
            )
        };
        Ok(Hand { kernel, chans, direct, staged, _keep: keep, scratch, flags, half })
    }

    fn launch(
        &self,
        comm: &Communicator,
        stream: &Stream,
        data: &GpuBuffer,
        program: Program,
        size: u64,
        grid: (u32, u32),
    ) -> Res<()> {
        if grid.0 as usize > 1024 {
            return Err(format!("{} blocks: the flag array holds 1024", grid.0).into());
        }
        let (chans, extra) = match program {
            Program::Staged => (&self.staged, comm.size() - 1),
            _ => (&self.direct, 0),
        };
        let chans = if program.simple() {
            match chans {
                Some(d) if d.len() >= extra + grid.0 as usize * (comm.size() - 1) => d.ptr(),
                _ => return Err(format!("{} blocks: more than the direct channels were built for", grid.0).into()),
            }
        } else {
            self.chans.ptr()
        };
        let mut a = KernelArgs::new();
        a.push(chans)
            .push((comm.size() - 1) as i32)
            .push(comm.rank() as i32)
            .push(data.ptr())
            .push(size)
            .push(self.flags.ptr())
            .push(self.half);
        // SAFETY: the arguments match every kernel of interp_cost.cu (MemoryChannelDeviceHandle*, int, int, char*,
        // unsigned long long, unsigned int*, unsigned long long); the channels, data, scratch and flags live as
        // long as `self` and `data`, which outlive every launch (the caller synchronizes before dropping them); the
        // scratch holds two halves of (ranks - 1) * 2 * max bytes, what the two-shot's two regions of (ranks - 1)
        // packet slots of a chunk (max / ranks) need at most; the Simple kernel's channel array holds one channel per
        // block and peer of this grid (checked above), after the scratch channels for the staged kernel.
        unsafe { self.kernel.launch(program.kernel(), LaunchConfig::linear(grid.0, grid.1), stream, &a)? };
        Ok(())
    }

    /// Zero the scratch and the flags (while no launch runs, on every rank before any launches again): a new grid
    /// size gives blocks parts that other blocks, with other launch counts, wrote packets into.
    fn reset(&self) -> Res<()> {
        self.scratch.write(0, &vec![0u8; 2 * self.half as usize])?;
        self.flags.write(0, &[0u8; 4 * 1024])?;
        Ok(())
    }
}

/// Rank `r`'s element `i` before launch `l`: small integers, so that the f32 sum is exact.
fn value(r: usize, i: usize, l: u32) -> f32 {
    ((r * 3 + i + l as usize * 5) % 64) as f32
}

fn fill(data: &GpuBuffer, rank: usize, size: u64, l: u32) -> Res<()> {
    let bytes: Vec<u8> = (0..size as usize / 4).flat_map(|i| value(rank, i, l).to_le_bytes()).collect();
    data.write(0, &bytes)?;
    Ok(())
}

/// Elements of `data` that differ from what `program` must leave after launch `l`.
fn wrong(data: &GpuBuffer, program: Program, rank: usize, world: usize, size: u64, l: u32) -> Res<usize> {
    let mut got = vec![0u8; size as usize];
    data.read(0, &mut got)?;
    let elems = got.len() / 4;
    Ok(got
        .chunks_exact(4)
        .enumerate()
        .filter(|(i, c)| {
            program
                .expected(rank, world, elems, *i, l)
                .is_some_and(|want| f32::from_le_bytes([c[0], c[1], c[2], c[3]]) != want)
        })
        .count())
}

/// Median µs per call of `RUNS` replays of a graph of `ITERS` launches, the slowest rank's.
fn time_graph(comm: &Communicator, stream: &Stream, graph: &Graph) -> Res<f64> {
    let mut per_call = Vec::with_capacity(RUNS);
    graph.launch(stream)?; // warm-up
    stream.synchronize(Duration::from_secs(60))?;
    for _ in 0..RUNS {
        comm.bootstrap().barrier()?;
        let (start, end) = (Event::new(comm.device())?, Event::new(comm.device())?);
        start.record(stream)?;
        graph.launch(stream)?;
        end.record(stream)?;
        end.synchronize(Duration::from_secs(60))?;
        per_call.push(f64::from(end.elapsed_ms_since(&start)?) * 1000.0 / ITERS as f64);
    }
    per_call.sort_by(f64::total_cmp);
    let median = per_call[RUNS / 2];
    let all = comm.bootstrap().all_gather(&median.to_le_bytes())?;
    Ok(all.iter().filter_map(|b| b.as_slice().try_into().ok().map(f64::from_le_bytes)).fold(0.0, f64::max))
}

/// The program's plan for `size` bytes as the registry tunes it, or `None` outside its message sizes.
/// With `config` (instances, threads per block), that configuration instead.
fn plan_for(program: Program, world: usize, size: u64, config: Option<(usize, u32)>) -> Res<Option<Plan>> {
    let meta = registry::find(program.name())?;
    if !meta.message_sizes.contains(size) {
        return Ok(None);
    }
    let base = Target::new(world).inplace(true);
    let target = match config {
        Some((instances, threads)) => base.instances(instances).threads_per_block(Some(threads)),
        None => meta.tuned_target(base, size)?,
    };
    Ok(Some(meta.build_plan(&target)?))
}

/// The optional third argument, `INSTANCESxTHREADS` (e.g. `1x256`): every size runs that configuration.
fn parse_config(arg: Option<String>) -> Res<Option<(usize, u32)>> {
    let Some(arg) = arg else { return Ok(None) };
    let bad = || format!("`{arg}` is not INSTANCESxTHREADS (e.g. 1x256)");
    let (i, t) = arg.split_once('x').ok_or_else(bad)?;
    let (i, t) = (i.parse::<usize>().map_err(|_| bad())?, t.parse::<u32>().map_err(|_| bad())?);
    if i == 0 || t == 0 || t > 1024 || t % 32 != 0 {
        return Err(format!("`{arg}`: at least one instance and 32 to 1024 threads, a multiple of 32").into());
    }
    Ok(Some((i, t)))
}

/// The plan's grid: its largest rank's thread blocks, and threads per block.
fn grid_of(plan: &Plan) -> (u32, u32) {
    (plan.gpus.iter().map(|g| g.threadblocks.len()).max().unwrap_or(1) as u32, plan.threads_per_block())
}

fn run() -> Res<bool> {
    let sizes = mscclpp_cli::bench_report::parse_sizes(&std::env::args().nth(1).unwrap_or_else(|| "1K:256K".into()))?;
    let program = Program::parse(&std::env::args().nth(2).unwrap_or_else(|| Program::OneShot.name().into()))?;
    let config = parse_config(std::env::args().nth(3))?;
    if sizes.is_empty() {
        return Err("no sizes to run".into());
    }
    let (comm, _) = Communicator::from_env()?;
    let comm = Arc::new(comm);
    let (rank, world) = (comm.rank(), comm.size());
    if world < 2 {
        return Err("run it with at least 2 ranks (mpirun -np 2)".into());
    }
    let shared = mscclpp_exec::env::shared_gpu();
    let ctx = GpuContext::new(*comm.device(), rank)?;
    let stream = Stream::new(comm.device())?;
    let max = sizes.iter().copied().max().unwrap_or(0);
    let data = GpuBuffer::new(comm.device(), max as usize)?;
    let mut direct_blocks = 0;
    if program.simple() {
        for &size in &sizes {
            if let Some(plan) = plan_for(program, world, size, config)? {
                direct_blocks = direct_blocks.max(grid_of(&plan).0 as usize);
            }
        }
    }
    let hand = Hand::new(&comm, &ctx, &data, max, direct_blocks)?;
    let exec = Executor::new(comm.clone())?;
    if rank == 0 {
        println!(
            "# interp_cost: {}, f32 in place, {world} ranks; hand-written kernel vs the interpreter ({})",
            program.name(),
            if shared { "ranks share a GPU: correctness only, no timings" } else { "CUDA graphs of 20 launches" }
        );
        println!("# size  grid  hand_us  interp_us  overhead");
    }
    let mut ok = true;
    for &size in &sizes {
        comm.bootstrap().barrier()?;
        hand.reset()?;
        let unit = if program.simple() { 16 } else { 8 };
        if size % (unit * world as u64) != 0 {
            return Err(format!("{size} B do not split into {world} chunks of whole {unit}-byte units").into());
        }
        let Some(plan) = plan_for(program, world, size, config)? else {
            if rank == 0 {
                println!("SKIP size={size}: outside the message sizes of {}", program.name());
            }
            continue;
        };
        let grid = grid_of(&plan);
        let eplan = ExecutionPlan::new(plan)?;
        let (in_off, in_bytes, out_off, out_bytes) = program.operands(rank, world, size);
        let interp = || {
            let (input, output) = (data.ptr() + in_off, data.ptr() + out_off);
            exec.execute(&eplan, input, output, in_bytes, out_bytes, ElementType::F32, PacketType::Ll16, &stream)
        };
        let to_sys = mscclpp_exec::sys::Error::from;
        let hand_one = || hand.launch(&comm, &stream, &data, program, size, grid);
        // Checks: an eager launch, then replays of a one-launch graph, each on fresh inputs.
        let mut bad = Vec::new();
        for (name, is_hand) in [("hand", true), ("interp", false)] {
            // The graph is captured after the eager launch: the executor sets its context up on the first call.
            let mut one = None;
            for l in 1..=CHECKS {
                fill(&data, rank, size, l)?;
                comm.bootstrap().barrier()?;
                if l == 1 {
                    if is_hand { hand_one()? } else { interp()? }
                } else {
                    if one.is_none() {
                        one = Some(Graph::capture(&stream, || {
                            if is_hand {
                                hand_one().map_err(|e| mscclpp_exec::sys::Error::InvalidArgument(e.to_string()))
                            } else {
                                interp().map_err(to_sys)
                            }
                        })?);
                    }
                    if let Some(g) = &one {
                        g.launch(&stream)?;
                    }
                }
                if is_hand {
                    ctx.synchronize(&stream)?
                } else {
                    exec.synchronize(&stream)?
                }
                let w = wrong(&data, program, rank, world, size, l)?;
                if w > 0 {
                    bad.push(format!("{name} launch {l}: {w} wrong elements"));
                }
            }
        }
        let verdicts = comm.bootstrap().all_gather(bad.join("; ").as_bytes())?;
        let failures: Vec<String> = verdicts
            .iter()
            .enumerate()
            .filter(|(_, v)| !v.is_empty())
            .map(|(r, v)| format!("rank {r}: {}", String::from_utf8_lossy(v)))
            .collect();
        if !failures.is_empty() {
            ok = false;
            if rank == 0 {
                println!("FAIL size={size} {}", failures.join("; "));
            }
            continue;
        }
        if shared {
            if rank == 0 {
                println!(
                    "PASS size={size} grid={}x{} checks={} (timings skipped: ranks share a GPU)",
                    grid.0,
                    grid.1,
                    2 * CHECKS
                );
            }
            continue;
        }
        let hand_graph = Graph::capture(&stream, || {
            (0..ITERS)
                .try_for_each(|_| hand_one().map_err(|e| mscclpp_exec::sys::Error::InvalidArgument(e.to_string())))
        })?;
        let interp_graph = Graph::capture(&stream, || (0..ITERS).try_for_each(|_| interp().map_err(to_sys)))?;
        let hand_us = time_graph(&comm, &stream, &hand_graph)?;
        let interp_us = time_graph(&comm, &stream, &interp_graph)?;
        if rank == 0 {
            let overhead = (interp_us / hand_us - 1.0) * 100.0;
            println!(
                "PASS size={size} grid={}x{} checks={} hand_us={hand_us:.2} interp_us={interp_us:.2} overhead_pct={overhead:.1}",
                grid.0,
                grid.1,
                2 * CHECKS
            );
            println!("RESULT interp_cost_overhead_{}_{size} {overhead:.3} %", program.name());
        }
    }
    exec.synchronize(&stream)?;
    ctx.synchronize(&stream)?;
    Ok(ok)
}
