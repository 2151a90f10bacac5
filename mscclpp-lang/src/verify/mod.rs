//! The CPU plan verifier: runs an MSCCL++ execution plan on simulated ranks with real data, over several launches
//! and many schedules, and reports wrong results, data races, deadlocks, out-of-bounds accesses, stale packets and
//! unbalanced synchronisation.
//!
//! The model (details in `docs/verifier.md`):
//! - every thread block is a few *logical threads*: thread i runs the i-th channel or semaphore of each sync
//!   operation, and every logical thread (plus one for the rest of the block) runs every data operation; a `nop`
//!   joins them, a `barrier` joins the participating blocks, a launch boundary joins the whole rank;
//! - happens-before is tracked with two vector clocks per logical thread: visibility (release/acquire edges:
//!   signal->wait, semaphores, barriers, port flush and put-with-signal) and execution order (also relaxed
//!   signal/wait and packet flags); a read after a write needs visibility, a write after a read only execution
//!   order;
//! - accesses are byte ranges checked against interval shadow memory;
//! - ranks are not synchronised between launches; the host refills inputs before and checks outputs after each
//!   launch of its rank; packet flags are the launch number, double scratch alternates halves by parity;
//! - schedules: round robin (sequentially consistent), run-ahead, random, each optionally with remote writes
//!   delayed to the last legal moment.
//!
//! ```
//! use mscclpp_lang::verify::{verify_text, VerifyOptions};
//! let plan = include_str!("../../../tests/corpus/mscclpp/generated/single_node__allgather__n2.json");
//! let report = verify_text(plan, &VerifyOptions { schedules: 8, ..VerifyOptions::default() });
//! assert!(report.ok(), "{}", report.render());
//! ```

mod clock;
mod diagnose;
mod finding;
mod machine;
mod packet;
mod resolve;
mod sched;
mod shadow;
mod writers;

use std::collections::HashMap;
use std::time::Instant;

pub use finding::{Access, Agent, Blocked, Detail, Finding, FindingKind, Report};
pub use packet::PacketFormat;
use sched::Schedule;
pub use writers::peers_writing_what_op_reads;

use crate::data::{BufferSizes, DataType, FillPattern, Placement, expected_output};
use crate::location::Location;
use crate::plan::{Collective, Layout, Plan, ReduceOp, parse_plan_unchecked, validate};
use crate::registry::human_bytes;
use machine::Setup;

/// Default message size in bytes when none is given.
pub const DEFAULT_SIZE: u64 = 256 * 1024;
/// Default bound of the simulated memory of one verification ([`VerifyOptions::max_memory`]).
pub const DEFAULT_MAX_MEMORY: u64 = 4 << 30;
/// Default bound of the simulation steps of one verification ([`VerifyOptions::max_steps`]).
pub const DEFAULT_MAX_STEPS: u64 = 4_000_000_000;

/// How to verify.
#[derive(Debug, Clone, PartialEq)]
pub struct VerifyOptions {
    /// Launches per schedule (at least 1; 3 or more catches missing closing syncs and double buffering).
    pub launches: u32,
    /// Schedules to run.
    pub schedules: u32,
    /// Element type of the data.
    pub dtype: DataType,
    /// Message size in bytes (the allgather output, the input of other collectives); `None` picks a default
    /// that fits the plan (and gives pipelines at least two iterations).
    pub size: Option<u64>,
    /// LL packet format.
    pub packet: PacketFormat,
    /// Seed of the data and the schedules.
    pub seed: u64,
    /// Bound of the memory the simulation may allocate (buffers of every rank for every launch, vector
    /// clocks): a plan that needs more is reported as invalid before anything is allocated, so an untrusted plan
    /// cannot exhaust the host.
    pub max_memory: u64,
    /// Bound of the simulation steps over all schedules (from each schedule's step limit): a plan that may need
    /// more is reported as invalid before it runs, so an untrusted plan cannot keep the verifier busy for ever.
    pub max_steps: u64,
}

impl Default for VerifyOptions {
    fn default() -> Self {
        VerifyOptions {
            launches: 3,
            schedules: 64,
            dtype: DataType::F32,
            size: None,
            packet: PacketFormat::Ll16,
            seed: 0x006d_7363_636c_7070,
            max_memory: DEFAULT_MAX_MEMORY,
            max_steps: DEFAULT_MAX_STEPS,
        }
    }
}

/// Parses `text` (without rejecting it for out-of-range chunks, which the run reports as out-of-bounds
/// accesses) and verifies it. A plan that cannot be parsed gives a report with one `InvalidPlan` finding.
pub fn verify_text(text: &str, opts: &VerifyOptions) -> Report {
    match parse_plan_unchecked(text) {
        Ok(plan) => verify(&plan, opts),
        Err(e) => {
            let mut r = empty_report(None, opts);
            r.findings.push(invalid(e.to_string(), Location::plan()));
            r
        }
    }
}

fn invalid(message: String, location: Location) -> Finding {
    Finding {
        kind: FindingKind::InvalidPlan,
        message: format!("invalid plan: {message}"),
        detail: Detail::Invalid { location },
        schedules: 0,
        first_schedule: 0,
        strategy: String::new(),
        ranks: Vec::new(),
        key: String::new(),
        launch: 0,
    }
}

fn empty_report(plan: Option<&Plan>, opts: &VerifyOptions) -> Report {
    Report {
        plan: plan.map(|p| p.name.clone()).unwrap_or_default(),
        collective: plan.map(|p| p.collective.to_string()).unwrap_or_default(),
        protocol: plan.map(|p| p.protocol.to_string()).unwrap_or_default(),
        inplace: plan.is_some_and(|p| p.inplace),
        world_size: plan.map_or(0, |p| p.world_size()),
        launches: opts.launches,
        schedules: 0,
        dtype: opts.dtype.to_string(),
        size: 0,
        input_bytes: 0,
        output_bytes: 0,
        // The packet format is named only for plans whose operations use packets.
        packet_format: if plan.is_none_or(Plan::uses_packets) {
            format!("{} packets", opts.packet)
        } else {
            "no packets".to_string()
        },
        reduce_op: ReduceOp::Sum.to_string(),
        steps: 0,
        elapsed_ms: 0,
        findings: Vec::new(),
    }
}

/// The reduction operator the plan's reductions use (the first reduction found; sum when there is none). The
/// reference results of the verifier and of `mscclpp test` both use it.
pub fn plan_reduce_op(plan: &Plan) -> ReduceOp {
    for g in &plan.gpus {
        for tb in &g.threadblocks {
            for op in tb.ops.iter().flat_map(|o| std::iter::once(o).chain(o.inner())) {
                if op.name.is_reduction() {
                    return op.reduce();
                }
            }
        }
    }
    ReduceOp::Sum
}

/// Picks input and output sizes: chunk size from the message size, adjusted to the plan's alignment, message
/// range and pipelines. Returns the sizes, the message size and the chunk size.
fn choose_sizes(plan: &Plan, opts: &VerifyOptions) -> Result<(BufferSizes, u64, u64), ChunkMismatch> {
    let world = plan.world_size();
    let n = world.max(1) as u64;
    let g = &plan.gpus[0];
    let (ic, oc) = (g.input_chunks as u64, g.output_chunks as u64);
    let align = plan.alignment().max(1);
    let coll = plan.collective;
    let standard = !matches!(coll, Collective::Test | Collective::Custom);
    // Chunks of the buffer the message size measures (allgather: output; others: input), when the plan has it.
    let (count, per_message) = match coll {
        Collective::AllGather if oc > 0 => (oc, 1),
        Collective::AllGather if ic > 0 => (ic, n),
        Collective::ReduceScatter if ic == 0 && oc > 0 => (oc, n),
        _ if ic > 0 => (ic, 1),
        _ if oc > 0 => (oc, 1),
        // No input or output chunks (some DSL unit tests): the reference executor cannot size such a plan
        // (modulo by zero); run it with the message size spread over the scratch chunks.
        _ => ((g.scratch_chunks as u64).max(1), 1),
    };
    let units = count * per_message;
    // Saturating: the plan's numbers are untrusted; absurd sizes end at the memory bound below.
    let chunk = |s: u64| (s / units / align).max(1).saturating_mul(align);
    let mut c = chunk(opts.size.unwrap_or(DEFAULT_SIZE));
    if opts.size.is_none() {
        // Give pipelines two iterations where that keeps a rank's buffers within 8 MiB.
        let cap = ((8u64 << 20) / (ic.max(oc).max(1) * n.clamp(1, 8)) / align).max(1).saturating_mul(align);
        for tb in plan.gpus.iter().flat_map(|g| &g.threadblocks) {
            for op in &tb.ops {
                if let Some(it) = op.iter_context {
                    let need = it
                        .unit_size
                        .saturating_mul(2)
                        .div_ceil(it.num_chunks.max(1) as u64)
                        .div_ceil(align)
                        .saturating_mul(align);
                    c = c.max(need.min(cap));
                }
            }
        }
        let (lo, hi) = (plan.min_message(), plan.max_message());
        if c.saturating_mul(units) < lo {
            c = lo.div_ceil(units).div_ceil(align).saturating_mul(align);
        }
        if c.saturating_mul(units) > hi {
            c = chunk(hi);
        }
    }
    let derived = |other: u64| -> u64 {
        // The size of a buffer without chunks, from the other one and the collective.
        match coll {
            Collective::AllGather if ic == 0 => other / n,
            Collective::AllGather => other.saturating_mul(n),
            Collective::ReduceScatter if ic == 0 => other.saturating_mul(n),
            Collective::ReduceScatter => other / n,
            _ if standard => other,
            _ => 0,
        }
    };
    let sizes = match (ic, oc) {
        (0, 0) => BufferSizes { input: 0, output: 0, world },
        (i, 0) => BufferSizes { input: i.saturating_mul(c), output: derived(i.saturating_mul(c)), world },
        (0, o) => BufferSizes { input: derived(o.saturating_mul(c)), output: o.saturating_mul(c), world },
        (i, o) => BufferSizes { input: i.saturating_mul(c), output: o.saturating_mul(c), world },
    };
    if !sizes.fits(coll) {
        return Err(ChunkMismatch { input_chunks: ic, output_chunks: oc, collective: coll, world });
    }
    let message = if coll == Collective::AllGather { sizes.output } else { sizes.input.max(sizes.output) };
    Ok((sizes, message, c))
}

/// Chunk counts that cannot describe the plan's collective (the plan is invalid).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "rank 0 has {input_chunks} input and {output_chunks} output chunks, which do not fit a {collective} over {world} ranks"
)]
struct ChunkMismatch {
    input_chunks: u64,
    output_chunks: u64,
    collective: Collective,
    world: usize,
}

/// An upper estimate of the bytes one verification allocates: every rank's buffers (inputs for every launch,
/// expected outputs, poison, the live copy, shadow state) and the vector clocks of every logical thread.
fn simulated_memory(prog: &resolve::Prog, placements: &[Placement], scratch: &[u64], launches: u32) -> u64 {
    let buffers: u64 = placements
        .iter()
        .zip(scratch)
        .map(|(p, s)| {
            (p.input_alloc.saturating_add(p.output_alloc))
                .saturating_mul(3 + 2 * launches as u64)
                .saturating_add(s.saturating_mul(2))
        })
        .fold(0u64, u64::saturating_add);
    let threads: u64 =
        prog.ranks.iter().map(|rp| rp.tbs.iter().map(|tb| tb.sync_threads as u64 + 1).sum::<u64>() + 2).sum();
    let sems: u64 = prog.ranks.iter().map(|rp| rp.sems.len() as u64).sum();
    let clocks = threads.saturating_mul(threads).saturating_mul(8).saturating_add(sems.saturating_mul(threads) * 8);
    buffers.saturating_add(clocks)
}

/// Verifies a plan: runs `opts.schedules` schedules of `opts.launches` launches each and aggregates findings.
pub fn verify(plan: &Plan, opts: &VerifyOptions) -> Report {
    let t0 = Instant::now();
    let mut report = empty_report(Some(plan), opts);
    let fail = |mut report: Report, f: Finding| {
        report.findings.push(f);
        report.elapsed_ms = t0.elapsed().as_millis() as u64;
        report
    };
    if plan.gpus.is_empty() {
        return fail(report, invalid("the plan has no ranks".into(), Location::plan()));
    }
    let prog = match resolve::resolve(plan) {
        Ok(p) => p,
        Err(e) => return fail(report, invalid(e.message, *e.location)),
    };
    // Chunk ranges beyond a buffer are reported by the run as out-of-bounds accesses; other rule violations
    // stop here.
    let validation = validate(plan).err().filter(|e| !e.to_string().contains("out of range"));
    if let Some(e) = validation {
        let location = e.location().cloned().unwrap_or_default();
        return fail(report, invalid(e.to_string(), location));
    }
    let (sizes, message, chunk) = match choose_sizes(plan, opts) {
        Ok(s) => s,
        Err(m) => return fail(report, invalid(m.to_string(), Location::plan())),
    };
    report.size = message;
    report.input_bytes = sizes.input;
    report.output_bytes = sizes.output;
    let world = plan.world_size();
    let mut layouts = Vec::with_capacity(world);
    for r in 0..world {
        let g = &plan.gpus[r];
        let layout = if g.input_chunks == 0 && g.output_chunks == 0 {
            let mut one = g.clone();
            one.input_chunks = 1;
            Layout::for_gpu(&one, r, plan.alignment(), chunk, 0)
        } else {
            Layout::for_gpu(g, r, plan.alignment(), sizes.input, sizes.output)
        };
        match layout {
            Ok(l) => layouts.push(l),
            Err(e) => return fail(report, invalid(format!("rank {r}: {e}"), Location::rank(r))),
        }
    }
    let reduce = plan_reduce_op(plan);
    report.reduce_op = reduce.to_string();
    let pattern = FillPattern::new(opts.dtype, world, opts.seed);
    let launches = opts.launches.max(1);
    let placements: Vec<Placement> =
        (0..world).map(|r| Placement::new(plan.collective, plan.inplace, r, sizes)).collect();
    let scratch_total: Vec<u64> = (0..world).map(|r| layouts[r].scratch_alloc_bytes(plan, &plan.gpus[r])).collect();
    let need = simulated_memory(&prog, &placements, &scratch_total, launches);
    if need > opts.max_memory {
        return fail(
            report,
            invalid(
                format!(
                    "verifying it at {} needs about {} of simulated memory, over the bound of {}: verify it at a \
                     smaller --size, or check the plan's chunk counts and thread blocks",
                    human_bytes(message),
                    human_bytes(need),
                    human_bytes(opts.max_memory)
                ),
                Location::plan(),
            ),
        );
    }
    let scratch_half: Vec<u64> = scratch_total.iter().map(|&t| if plan.double_scratch() { t / 2 } else { t }).collect();
    let fills =
        (0..world).map(|r| (1..=launches).map(|l| pattern.buffer(r, l, 0, sizes.input as usize)).collect()).collect();
    let poison = (0..world)
        .map(|r| {
            let p = &placements[r];
            [
                pattern.buffer(r, 0, 1 << 40, p.input_alloc as usize),
                if p.shared { Vec::new() } else { pattern.buffer(r, 0, 1 << 41, p.output_alloc as usize) },
            ]
        })
        .collect();
    // Every rank of an allreduce expects the same result: compute it once per launch.
    let shared: Vec<Option<Vec<u8>>> = if plan.collective == Collective::AllReduce {
        (1..=launches).map(|l| expected_output(plan.collective, reduce, &pattern, 0, l, sizes, 0)).collect()
    } else {
        Vec::new()
    };
    let expected = (0..world)
        .map(|r| {
            (1..=launches)
                .map(|l| match shared.get((l - 1) as usize) {
                    Some(e) => e.clone(),
                    None => expected_output(plan.collective, reduce, &pattern, r, l, sizes, plan.root_rank()),
                })
                .collect()
        })
        .collect();
    let setup = Setup {
        prog: &prog,
        plan,
        layouts,
        sizes,
        placements,
        scratch_total,
        scratch_half,
        fmt: opts.packet,
        dtype: opts.dtype,
        reduce,
        pattern,
        launches,
        fills,
        poison,
        expected,
    };
    let total_ops: u64 = plan
        .gpus
        .iter()
        .enumerate()
        .flat_map(|(r, g)| g.threadblocks.iter().map(move |tb| (r, tb)))
        .map(|(r, tb)| {
            tb.ops
                .iter()
                .map(|o| match o.iter_context {
                    Some(ic) => setup.layouts[r].pipeline_iterations(ic).max(1) * (o.inner().len() as u64 + 1),
                    None => 1,
                })
                .sum::<u64>()
        })
        .sum();
    let step_limit = total_ops.saturating_mul(4).saturating_add(64).saturating_mul(launches as u64 * 4) + 10_000;
    let budget = step_limit.saturating_mul(opts.schedules.max(1) as u64);
    if budget > opts.max_steps {
        return fail(
            report,
            invalid(
                format!(
                    "verifying it at {} may take {budget} simulation steps ({total_ops} operation steps per launch, \
                     pipelines included), over the bound of {}: verify it at a smaller --size or with fewer \
                     --schedules, or check the plan's pipeline unit sizes",
                    human_bytes(message),
                    opts.max_steps
                ),
                Location::plan(),
            ),
        );
    }
    let mut merged: Vec<Finding> = Vec::new();
    let mut index: HashMap<String, usize> = HashMap::new();
    let mut reference = None;
    let is_test = matches!(plan.collective, Collective::Test | Collective::Custom);
    let mut mem = None;
    for k in 0..opts.schedules.max(1) {
        let sched = Schedule::nth(k, opts.seed);
        let record = is_test && reference.is_none();
        let test_ref = if is_test { reference.as_ref() } else { None };
        let out = sched::run(&setup, &sched, test_ref, record, step_limit, mem, k * launches);
        mem = Some(out.mem);
        report.steps += out.steps;
        report.schedules += 1;
        if is_test && reference.is_none() && out.complete {
            reference = Some(out.observed);
        }
        for mut f in out.findings {
            match index.get(&f.key) {
                Some(&i) => {
                    merged[i].schedules += 1;
                    merged[i].launch = merged[i].launch.min(f.launch);
                }
                None => {
                    f.first_schedule = k;
                    f.strategy = sched.describe();
                    index.insert(f.key.clone(), merged.len());
                    merged.push(f);
                }
            }
        }
    }
    // Most fundamental first; a wrong result comes before the races and stale packets that may cause it, as it
    // says what the plan computes wrong. Races and stale packets that only involve the second launch on, in a plan whose
    // signals or semaphores do not balance, are symptoms of the imbalance (a surplus signal lets a later wait
    // pass early): then the imbalance comes first.
    let imbalance_first = merged.iter().any(|f| f.kind == FindingKind::Unbalanced)
        && merged
            .iter()
            .filter(|f| matches!(f.kind, FindingKind::DataRace | FindingKind::StalePacket))
            .all(|f| f.launch >= 2);
    let rank = |k: FindingKind| match k {
        FindingKind::InvalidPlan => 0,
        FindingKind::OutOfBounds => 1,
        FindingKind::Deadlock => 2,
        FindingKind::Unbalanced if imbalance_first => 3,
        FindingKind::WrongResult => 4,
        FindingKind::StalePacket => 5,
        FindingKind::DataRace => 6,
        FindingKind::Unbalanced => 7,
        FindingKind::StepLimit => 8,
    };
    merged.sort_by_key(|f| rank(f.kind));
    report.findings = finding::collapse_across_ranks(merged, world);
    report.elapsed_ms = t0.elapsed().as_millis() as u64;
    report
}
