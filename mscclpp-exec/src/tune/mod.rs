//! The autotuner: for each message size, time every configuration the registry admits and keep the fastest in a
//! tuned table that [`mscclpp_lang::registry::select`] then follows.
//!
//! [`tune`] runs on every rank of a job at once (it is collective). For each collective and each size it times,
//! in CUDA graphs, every candidate of [`registry::tune_candidates`]: each registered program that admits the size
//! × thread blocks per rank in [`registry::TUNE_THREAD_BLOCKS`] (those reachable with whole instances) × threads
//! per block in [`registry::TUNE_THREADS`]. Each candidate's result is checked against the reference once before
//! it is timed; a wrong one is never chosen. Ranks all-gather their times and take the largest, so every rank
//! ranks the candidates alike and picks the same one. An optional [`Baseline`] (NCCL, through whatever loader the
//! caller has) is timed the same way, and sizes where it is faster are marked so in the row
//! ([`registry::TunedRow::nccl_faster`]). [`TuneConfig::budget`] bounds the run: when it is spent the run stops
//! after the candidate in flight and keeps every size it finished.
//!
//! With `MSCCLPP_SHARED_GPU=1` (the ranks of a node share one GPU; correctness only) only candidates whose thread
//! blocks, times the ranks per node, stay within [`registry::MAX_RESIDENT_THREAD_BLOCKS`] are tried.
//!
//! [`table`] computes the machine's [`registry::TableKey`], and loads and installs the table from the cache
//! directory.
//!
//! ```no_run
//! # fn main() -> mscclpp_exec::Result<()> {
//! use std::sync::Arc;
//! use mscclpp_exec::{Communicator, tune};
//!
//! let (comm, _env) = Communicator::from_env()?;
//! let comm = Arc::new(comm);
//! let config = tune::TuneConfig { sizes: vec![1 << 10, 1 << 20], ..tune::TuneConfig::default() };
//! let outcome = tune::tune(&comm, &config, None, &mut |_p| {})?;
//! let path = tune::save(&comm, &outcome)?; // merged into the machine's table, installed for select
//! # Ok(()) }
//! ```

mod measure;
pub mod table;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use mscclpp_lang::data::{BufferSizes, DataType, FillPattern};
use mscclpp_lang::plan::Collective;
use mscclpp_lang::registry::{self, Request, TableKey, TableLoad, TuneCandidate, TunedRow, TunedTable};
use mscclpp_sys::driver::{DevicePtr, Stream};
use mscclpp_sys::interpreter::PacketType;

pub use measure::{
    count_wrong, median_and_min, out_of_tolerance, par_chunks, par_expected, par_fill, par_fill_into, time_graph,
    tolerance,
};
pub use table::{
    ShippedTable, TableSource, install_table_for, install_tuned_table, load_tuned_table, over_shipped, ranks_per_node,
    select, shipped_table_for, shipped_tables, table_for, table_key, warn_once,
};

use crate::executor::{ExecutionPlan, Executor};
use crate::{Communicator, Error, Result};

/// What to tune.
#[derive(Debug, Clone)]
pub struct TuneConfig {
    /// The collectives, each tuned over every size.
    pub collectives: Vec<Collective>,
    /// Message sizes in bytes: the output of an all-gather, the input otherwise.
    pub sizes: Vec<u64>,
    /// Element type.
    pub dtype: DataType,
    /// In place (default: out of place).
    pub inplace: bool,
    /// Timed graph replays per candidate; the figure is the median.
    pub runs: u32,
    /// Launches per graph.
    pub iters: u32,
    /// Longest the whole run may take (`None`: no bound).
    pub budget: Option<Duration>,
    /// Thread blocks per rank to try.
    pub thread_blocks: Vec<usize>,
    /// Threads per block to try.
    pub threads: Vec<u32>,
    /// LL packet format.
    pub packet: PacketType,
    /// Seed of the fill pattern.
    pub seed: u64,
    /// Ranks per node to tune for (`None`: the job's, from the ranks' host names). Setting it emulates nodes on
    /// one host, e.g. two network namespaces: plans are chosen and the table is keyed for that shape.
    pub ranks_per_node: Option<usize>,
}

impl Default for TuneConfig {
    /// All-reduce, powers of two from 1 KiB to 1 GiB, f16, out of place, 20 replays of graphs of 10 launches,
    /// no budget, the registry's thread blocks and threads per block, LL16.
    fn default() -> Self {
        TuneConfig {
            collectives: vec![Collective::AllReduce],
            sizes: (10..=30).map(|p| 1u64 << p).collect(),
            dtype: DataType::F16,
            inplace: false,
            runs: 20,
            iters: 10,
            budget: None,
            thread_blocks: registry::TUNE_THREAD_BLOCKS.to_vec(),
            threads: registry::TUNE_THREADS.to_vec(),
            packet: PacketType::Ll16,
            seed: 1,
            ranks_per_node: None,
        }
    }
}

/// Where a run stands, for a progress display.
#[derive(Debug, Clone)]
pub struct Progress {
    /// The collective being tuned.
    pub collective: Collective,
    /// The size being tuned.
    pub size: u64,
    /// Candidates of this size finished.
    pub candidate: usize,
    /// Candidates of this size (the baseline counts as one).
    pub candidates: usize,
    /// (collective, size) steps finished.
    pub step: usize,
    /// (collective, size) steps in all.
    pub steps: usize,
    /// Time since the run began.
    pub elapsed: Duration,
}

/// A library to compare with, e.g. NCCL: it queues one collective call on a stream.
pub trait Baseline {
    /// Its name, for messages.
    fn name(&self) -> &str;
    /// Queues `collective` of `size` bytes (the output of an all-gather, the input otherwise) of `dtype` (sum for
    /// reductions, root 0) from `input` to `output` on `stream`.
    fn launch(
        &self,
        collective: Collective,
        dtype: DataType,
        size: u64,
        input: DevicePtr,
        output: DevicePtr,
        stream: &Stream,
    ) -> std::result::Result<(), Box<dyn std::error::Error + Send + Sync>>;
}

/// What a run found.
#[derive(Debug, Clone, Default)]
pub struct TuneOutcome {
    /// One row per finished (collective, size).
    pub rows: Vec<TunedRow>,
    /// The key of this machine's table.
    pub key: Option<TableKey>,
    /// Whether the budget ran out before every size was tuned.
    pub stopped_by_budget: bool,
    /// Candidates timed.
    pub timed: usize,
    /// Candidates whose result was wrong on some rank (never chosen; each is a note too).
    pub wrong_results: usize,
    /// What did not run or gave a wrong result, one line each (the error of a failed candidate is this rank's).
    pub notes: Vec<String>,
}

/// How one candidate went on one rank.
#[derive(Debug, Clone)]
enum Verdict {
    /// Checked and timed: µs per call.
    Timed(f64),
    /// The result differed from the reference.
    Wrong,
    /// It failed to build, launch or finish here.
    Failed(String),
    /// Fine here, not timed because another rank's check did not pass.
    Elsewhere,
}

/// Candidate result a rank shares with the others.
#[derive(Debug, Clone, Copy)]
struct Shared {
    us: f64,
    /// 0 timed, 1 wrong, 2 failed, 3 not timed for another rank.
    status: u8,
    over_budget: bool,
}

impl Shared {
    fn new(v: &Verdict, over_budget: bool) -> Shared {
        let (us, status) = match v {
            Verdict::Timed(us) => (*us, 0),
            Verdict::Wrong => (f64::NAN, 1),
            Verdict::Failed(_) => (f64::NAN, 2),
            Verdict::Elsewhere => (f64::NAN, 3),
        };
        Shared { us, status, over_budget }
    }
    fn encode(self) -> Vec<u8> {
        let mut v = self.us.to_le_bytes().to_vec();
        v.push(self.status);
        v.push(u8::from(self.over_budget));
        v
    }
}

/// What the ranks agree on about one candidate.
#[derive(Debug, Clone, Copy)]
struct Agreed {
    /// The largest time, NaN when some rank did not time it.
    us: f64,
    /// Some rank's result was wrong.
    wrong: bool,
    /// Some rank failed to run it.
    failed: bool,
    /// Some rank is over the budget.
    over_budget: bool,
}

/// Every rank's view of one candidate, combined.
fn agree(comm: &Communicator, mine: Shared) -> Result<Agreed> {
    let all = comm.bootstrap().all_gather(&mine.encode())?;
    let mut out = Agreed { us: 0.0, wrong: false, failed: false, over_budget: false };
    for (peer, v) in all.iter().enumerate() {
        let (Some(us), Some(&st), Some(&o)) =
            (v.get(..8).and_then(|b| b.try_into().ok()).map(f64::from_le_bytes), v.get(8), v.get(9))
        else {
            return Err(Error::Protocol { peer, reason: format!("a tuning result of {} bytes", v.len()) });
        };
        out.us = if us.is_nan() || out.us.is_nan() || st != 0 { f64::NAN } else { out.us.max(us) };
        out.wrong |= st == 1;
        out.failed |= st == 2;
        out.over_budget |= o != 0;
    }
    Ok(out)
}

/// Tunes every collective of `config` at every size on `comm`'s ranks (collective: every rank calls it with the
/// same configuration). `baseline`, when given, is timed at each size too. `progress` is called before each
/// candidate and after each size. Errors are those that stop every rank (bootstrap, allocation, a rank with
/// other candidates); a candidate that fails to build, launch or give the right result is skipped and noted.
pub fn tune(
    comm: &Arc<Communicator>,
    config: &TuneConfig,
    baseline: Option<&dyn Baseline>,
    progress: &mut dyn FnMut(&Progress),
) -> Result<TuneOutcome> {
    let start = Instant::now();
    let over = || config.budget.is_some_and(|b| start.elapsed() >= b);
    let world = comm.size();
    let rpn = match config.ranks_per_node {
        Some(r) if r == 0 || !world.is_multiple_of(r) => {
            return Err(Error::InvalidArgument(format!(
                "ranks per node {r} does not divide the world size {world} into equal nodes"
            )));
        }
        Some(r) => r,
        None => ranks_per_node(comm)?,
    };
    let shared = crate::env::shared_gpu();
    let mut outcome = TuneOutcome { key: Some(table_key(comm, rpn)?), ..TuneOutcome::default() };
    let device = *comm.device();
    device.bind()?;
    let stream = Stream::new(&device)?;
    let pattern = FillPattern::new(config.dtype, world, config.seed);
    let es = config.dtype.size() as u64;
    let steps = config.collectives.len() * config.sizes.len();
    let mut step = 0;
    'all: for &collective in &config.collectives {
        for &size in &config.sizes {
            let mut at =
                Progress { collective, size, candidate: 0, candidates: 0, step, steps, elapsed: start.elapsed() };
            if agree(comm, Shared { us: 0.0, status: 0, over_budget: over() })?.over_budget {
                outcome.stopped_by_budget = true;
                break 'all;
            }
            let sizes = BufferSizes::for_collective(collective, world, size)
                .filter(|s| size % es == 0 && s.input % es == 0 && s.output % es == 0);
            let Some(sizes) = sizes else {
                outcome.notes.push(format!(
                    "{collective} {}: does not split into whole {} elements over {world} ranks",
                    registry::human_bytes(size),
                    config.dtype
                ));
                step += 1;
                continue;
            };
            let request = Request::new(collective, world, sizes.input)
                .ranks_per_node(rpn)
                .inplace(config.inplace)
                .dtype(config.dtype);
            let mut cands = registry::tune_candidates(&request, &config.thread_blocks, &config.threads);
            if shared {
                // The ranks of a node share one GPU: together their thread blocks must stay resident.
                cands.retain(|c| c.thread_blocks * rpn <= registry::MAX_RESIDENT_THREAD_BLOCKS);
            }
            // What selection runs at this size without a new row goes first, so that a row the budget cuts short
            // is never slower than it.
            let selected = selection_first(&request, &mut cands);
            check_same_candidates(comm, &cands)?;
            at.candidates = cands.len() + usize::from(baseline.is_some());
            if at.candidates == 0 {
                outcome.notes.push(format!("{request}: no registered program admits it"));
                step += 1;
                continue;
            }
            let case = measure::Case::new(comm, collective, sizes, config.inplace, &pattern)?;
            let mut best: Option<(f64, &TuneCandidate)> = None;
            // Two rounds: first every program's default configuration and its other thread-block counts at the
            // default's threads per block; then the other threads per block of the two best (program, instances)
            // of the first round. Every rank agrees on every time, so every rank builds the same second round.
            let default_threads = |c: &TuneCandidate| {
                cands.iter().find(|d| d.default && d.program.name == c.program.name).map(|d| d.threads_per_block)
            };
            let first: Vec<usize> = (0..cands.len())
                .filter(|&i| cands[i].default || Some(cands[i].threads_per_block) == default_threads(&cands[i]))
                .collect();
            at.candidates = first.len() + usize::from(baseline.is_some());
            let mut times: Vec<Option<f64>> = vec![None; cands.len()];
            let mut queue = first.clone();
            let mut second_round = false;
            let mut stopped = false;
            loop {
                for &i in &queue {
                    let c = &cands[i];
                    at.elapsed = start.elapsed();
                    progress(&at);
                    let verdict = run_candidate(comm, config, &case, &stream, c)
                        .unwrap_or_else(|e| Verdict::Failed(e.to_string()));
                    // A kernel that stopped on an expired wait leaves this process's CUDA context unusable: every
                    // later candidate would fail on its first allocation. Stop with the failure itself.
                    if mscclpp_sys::driver::context_lost() {
                        let why = match &verdict {
                            Verdict::Failed(e) => e.clone(),
                            _ => "a kernel stopped".to_string(),
                        };
                        return Err(Error::InvalidArgument(format!(
                            "tuning {collective} {} stopped at {}: the GPU context was lost: {why}",
                            registry::human_bytes(size),
                            describe(c)
                        )));
                    }
                    let all = agree(comm, Shared::new(&verdict, over()))?;
                    at.candidate += 1;
                    let what = format!("{collective} {}: {}", registry::human_bytes(size), describe(c));
                    if all.wrong {
                        outcome.wrong_results += 1;
                        outcome.notes.push(format!("{what} gave a WRONG result on some rank; not chosen"));
                    } else if all.failed {
                        let here = match &verdict {
                            Verdict::Failed(e) => format!(" (here: {e})"),
                            _ => String::new(),
                        };
                        outcome.notes.push(format!("{what} failed on some rank{here}; not chosen"));
                    } else if all.us.is_nan() {
                        outcome.notes.push(format!("{what} was not timed; not chosen"));
                    } else {
                        outcome.timed += 1;
                        times[i] = Some(all.us);
                        if best.is_none_or(|(b, _)| all.us < b) {
                            best = Some((all.us, c));
                        }
                    }
                    if all.over_budget {
                        stopped = true;
                        break;
                    }
                }
                if stopped || second_round {
                    break;
                }
                second_round = true;
                queue = second_round_of(&cands, &first, &times);
                at.candidates += queue.len();
            }
            if stopped {
                outcome.stopped_by_budget = true;
                // Keep what this size found, when it timed what selection would run (first) or selection names
                // no candidate; otherwise the size keeps selection's own choice.
                if best.is_some() && (!selected || times.first().is_some_and(|t| t.is_some())) {
                    outcome.notes.push(format!(
                        "{collective} {}: the budget ran out after {} of its candidates; the row keeps the best of those",
                        registry::human_bytes(size),
                        at.candidate
                    ));
                    outcome.rows.push(row_of(collective, config, size, best, None));
                } else {
                    outcome.notes.push(format!(
                        "{collective} {}: the budget ran out before what selection runs was timed; no row",
                        registry::human_bytes(size)
                    ));
                }
                break 'all;
            }
            let mut nccl_us = None;
            if let Some(b) = baseline {
                at.elapsed = start.elapsed();
                progress(&at);
                let verdict = match time_baseline(comm, config, &case, &stream, b, collective, size) {
                    Ok(us) => Verdict::Timed(us),
                    Err(e) => Verdict::Failed(e.to_string()),
                };
                let all = agree(comm, Shared::new(&verdict, over()))?;
                if all.us.is_nan() {
                    let here = match &verdict {
                        Verdict::Failed(e) => format!(" (here: {e})"),
                        _ => String::new(),
                    };
                    outcome.notes.push(format!(
                        "{collective} {}: {} failed{here}",
                        registry::human_bytes(size),
                        b.name()
                    ));
                } else {
                    nccl_us = Some(all.us);
                }
                if all.over_budget {
                    outcome.stopped_by_budget = true;
                    break 'all;
                }
            }
            outcome.rows.push(row_of(collective, config, size, best, nccl_us));
            step += 1;
            at.step = step;
            at.candidate = at.candidates;
            at.elapsed = start.elapsed();
            progress(&at);
        }
    }
    Ok(outcome)
}

/// Moves the default configuration of the program selection picks for `request` to the front of `cands`; whether
/// there was one.
pub fn selection_first(request: &Request, cands: &mut Vec<TuneCandidate>) -> bool {
    let Ok(selected) = registry::select(request) else {
        return false;
    };
    let name = selected.program.name;
    match cands.iter().position(|c| c.default && c.program.name == name) {
        Some(i) => {
            let c = cands.remove(i);
            cands.insert(0, c);
            true
        }
        None => false,
    }
}

/// The row of one tuned size: the best candidate (if any) and NCCL's time (if timed).
fn row_of(
    collective: Collective,
    config: &TuneConfig,
    size: u64,
    best: Option<(f64, &TuneCandidate)>,
    nccl_us: Option<f64>,
) -> TunedRow {
    TunedRow {
        collective,
        dtype: config.dtype,
        inplace: config.inplace,
        size,
        program: best.map(|(_, c)| c.program.name.to_string()),
        instances: best.map_or(0, |(_, c)| c.target.instances),
        thread_blocks: best.map_or(0, |(_, c)| c.thread_blocks),
        threads_per_block: best.map_or(0, |(_, c)| c.threads_per_block),
        us: best.map(|(us, _)| us),
        nccl_us,
    }
}

/// The second round of a size: the candidates not in `first` that share program and instances with one of the two
/// fastest configurations of the first round (by the agreed `times`), in candidate order.
fn second_round_of(cands: &[TuneCandidate], first: &[usize], times: &[Option<f64>]) -> Vec<usize> {
    let mut ranked: Vec<(f64, usize)> = first.iter().filter_map(|&i| times[i].map(|t| (t, i))).collect();
    ranked.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    let mut top: Vec<(&str, usize)> = Vec::new();
    for (_, i) in ranked {
        let k = (cands[i].program.name, cands[i].target.instances);
        if !top.contains(&k) {
            top.push(k);
        }
        if top.len() == 2 {
            break;
        }
    }
    (0..cands.len())
        .filter(|i| !first.contains(i))
        .filter(|&i| top.contains(&(cands[i].program.name, cands[i].target.instances)))
        .collect()
}

/// `program ×instances (thread blocks × threads)`.
fn describe(c: &TuneCandidate) -> String {
    format!("{} x{} ({} x {})", c.program.name, c.target.instances, c.thread_blocks, c.threads_per_block)
}

/// Every rank must time the same candidates in the same order, or the all-gathers pair unrelated results.
fn check_same_candidates(comm: &Communicator, cands: &[TuneCandidate]) -> Result<()> {
    let list: Vec<String> = cands.iter().map(describe).collect();
    let digest = blake3::hash(list.join("\n").as_bytes());
    let all = comm.bootstrap().all_gather(digest.as_bytes())?;
    if let Some(peer) = all.iter().position(|d| d.as_slice() != digest.as_bytes()) {
        return Err(Error::InvalidArgument(format!(
            "rank {peer} has other tuning candidates than rank {}: run the same binary with the same arguments on \
             every rank",
            comm.rank()
        )));
    }
    Ok(())
}

/// Checks candidate `c` once against the reference and times it. Every rank learns whether every rank's check
/// passed before any times, so a candidate that fails somewhere is timed nowhere. An error is a failure while
/// timing.
fn run_candidate(
    comm: &Arc<Communicator>,
    config: &TuneConfig,
    case: &measure::Case,
    stream: &Stream,
    c: &TuneCandidate,
) -> Result<Verdict> {
    let checked = check_candidate(comm, config, case, stream, c);
    let passed = matches!(checked, Ok(Some(_)));
    let everywhere = comm.bootstrap().all_gather(&[u8::from(passed)])?.iter().all(|v| v.first() == Some(&1));
    let (plan, exec) = match checked {
        Err(e) => return Ok(Verdict::Failed(e.to_string())),
        Ok(None) => return Ok(Verdict::Wrong),
        Ok(Some(_)) if !everywhere => return Ok(Verdict::Elsewhere),
        Ok(Some(pe)) => pe,
    };
    let et = config.dtype;
    let sizes = case.sizes;
    let launch = || {
        exec.execute(&plan, case.input_ptr(), case.output_ptr(), sizes.input, sizes.output, et, config.packet, stream)
    };
    let sync = || exec.synchronize(stream);
    let barrier = || comm.bootstrap().barrier();
    let timed = time_graph(stream, config.runs, config.iters, &launch, &sync, &barrier);
    // Every rank's last replay has finished before any rank drops the executor (and with it the scratch buffers
    // its peers write into).
    comm.bootstrap().all_gather(&[u8::from(timed.is_ok())])?;
    Ok(Verdict::Timed(timed?.0))
}

/// Builds candidate `c` and runs it once on a freshly filled input: the plan and executor when this rank's result
/// matches the reference, `None` when it does not.
fn check_candidate(
    comm: &Arc<Communicator>,
    config: &TuneConfig,
    case: &measure::Case,
    stream: &Stream,
    c: &TuneCandidate,
) -> Result<Option<(ExecutionPlan, Executor)>> {
    let plan =
        registry::global_cache().compile(c.program, &c.target).map_err(|e| Error::InvalidArgument(e.to_string()))?.plan;
    let plan = ExecutionPlan::new((*plan).clone())?;
    let exec = Executor::new(comm.clone())?;
    let sizes = case.sizes;
    case.restore(stream)?;
    exec.synchronize(stream)?;
    comm.bootstrap().barrier()?;
    exec.execute(
        &plan,
        case.input_ptr(),
        case.output_ptr(),
        sizes.input,
        sizes.output,
        config.dtype,
        config.packet,
        stream,
    )?;
    exec.synchronize(stream)?;
    Ok((case.wrong_elements(comm.size())? == 0).then_some((plan, exec)))
}

/// Times the baseline at `size` as [`run_candidate`] times ours (no correctness check).
fn time_baseline(
    comm: &Communicator,
    config: &TuneConfig,
    case: &measure::Case,
    stream: &Stream,
    b: &dyn Baseline,
    collective: Collective,
    size: u64,
) -> Result<f64> {
    let launch = || {
        b.launch(collective, config.dtype, size, case.input_ptr(), case.output_ptr(), stream)
            .map_err(|e| Error::InvalidArgument(format!("{}: {e}", b.name())))
    };
    let sync = || stream.synchronize(measure::WAIT).map_err(Error::from);
    let barrier = || comm.bootstrap().barrier();
    case.restore(stream)?;
    sync()?;
    barrier()?;
    Ok(time_graph(stream, config.runs, config.iters, &launch, &sync, &barrier)?.0)
}

/// Merges `outcome`'s rows into this machine's table in the cache directory (rank 0 writes it, atomically; a
/// table there with another key is replaced), installs the result for [`registry::select`] on every rank, and
/// returns the path. Collective: every rank must call it.
pub fn save(comm: &Communicator, outcome: &TuneOutcome) -> Result<PathBuf> {
    let key = match &outcome.key {
        Some(k) => k.clone(),
        None => table_key(comm, ranks_per_node(comm)?)?,
    };
    let dir = table::cache_dir()?;
    let mut t = match TunedTable::load(&key.path_in(&dir), &key) {
        TableLoad::Loaded(t) => t,
        _ => TunedTable::new(key.clone()),
    };
    t.merge(outcome.rows.clone());
    let mut written = Ok(key.path_in(&dir));
    if comm.rank() == 0 {
        written = t.save(&dir).map_err(|e| Error::InvalidArgument(e.to_string()));
    }
    let ok = comm.bootstrap().all_gather(&[u8::from(written.is_ok())])?;
    // What selection follows from now on: the shipped table of this machine, if any, under the rows just saved.
    registry::install_tuned_table(Some(table::over_shipped(&key, t)));
    if ok.iter().any(|v| v.first() != Some(&1)) && comm.rank() != 0 {
        return Err(Error::InvalidArgument("rank 0 could not write the tuned table (see its error)".into()));
    }
    written
}
