//! The simulated machine: memory of every rank, the interpreter of every operation (the executor's semantics
//! with the fixes listed in docs/plan-format.md), the memory model (logical threads with vector clocks, delayed
//! visibility of remote writes) and the detection of findings.
//!
//! - this module: the machine's state, its construction and the recording of findings;
//! - [`memory`]: simulated memory, shadow state and the accesses that check it, address computation;
//! - [`launch`]: launch boundaries (host fill and check), thread-block progress, readiness and the reports of
//!   deadlocks and unbalanced synchronisation;
//! - [`interp`]: the interpreter of the operations that thread blocks run;
//! - [`proxy`]: port channels, whose transfers and flushes go through a per-rank proxy FIFO.

mod fault;
mod interp;
mod launch;
mod memory;
mod proxy;

use std::collections::{HashMap, HashSet};
use std::rc::Rc;

use crate::data::{BufferSizes, DataType, FillPattern, Placement};
use crate::location::SourceLocation;
use crate::plan::{ChannelType, Layout, OpName, Plan, ReduceOp};
use crate::verify::clock::{Clocks, Snap};
use crate::verify::finding::{Access, Agent, Detail, Finding, FindingKind};
use crate::verify::packet::PacketFormat;
use crate::verify::resolve::Prog;
use crate::verify::shadow::{Acc, Conflict, Shadow};

use proxy::Proxy;

/// Everything that is the same for every schedule.
pub(crate) struct Setup<'a> {
    pub prog: &'a Prog,
    pub plan: &'a Plan,
    pub layouts: Vec<Layout>,
    pub sizes: BufferSizes,
    pub placements: Vec<Placement>,
    pub scratch_total: Vec<u64>,
    pub scratch_half: Vec<u64>,
    pub fmt: PacketFormat,
    pub dtype: DataType,
    pub reduce: ReduceOp,
    pub pattern: FillPattern,
    pub launches: u32,
    /// `[rank][launch-1]`: the input the host writes.
    pub fills: Vec<Vec<Vec<u8>>>,
    /// `[rank]`: initial contents of the input and output allocations.
    pub poison: Vec<[Vec<u8>; 2]>,
    /// `[rank][launch-1]`: expected output (standard collectives).
    pub expected: Vec<Vec<Option<Vec<u8>>>>,
}

/// Observed buffers of a run: `[rank][launch-1]` = (output, input).
pub(crate) type Observed = Vec<Vec<(Vec<u8>, Vec<u8>)>>;

/// The simulated memory: per rank, the input, output (empty when in place) and scratch allocations.
pub(crate) type Memory = Vec<[Vec<u8>; 3]>;

/// Bytes of one allocation of one rank.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Place {
    pub rank: usize,
    pub alloc: usize,
    pub off: u64,
    pub len: u64,
}

#[derive(Debug, Clone)]
struct Inst {
    rank: usize,
    agent: Agent,
    op: Option<(usize, Option<usize>, OpName)>,
    iteration: Option<u64>,
    launch: u32,
    thr: Vec<(u32, u32)>,
    exe: Option<Rc<Vec<u32>>>,
}

#[derive(Debug, Clone, PartialEq)]
enum Phase {
    Idle,
    Sem(Vec<i64>),
    Barrier(u64),
    Flush(Vec<u64>),
}

#[derive(Debug, Clone)]
struct TbState {
    pc: usize,
    iter: u64,
    niter: u64,
    inner: usize,
    phase: Phase,
    done: bool,
    /// Packet readiness seen at rank generation `.0`: first stale packet at source `.1`, byte `.2`.
    cache: Option<(u64, usize, u64)>,
}

#[derive(Debug, Clone, Default)]
struct Token {
    count: u64,
    waited: u64,
    unpaired: u64,
    clock: Option<Snap>,
    /// What the signallers published with a full fence: everything before their launch started (a kernel
    /// boundary is a system-scope fence). A relaxed wait acquires this much.
    fenced: Option<Vec<u32>>,
}

#[derive(Debug, Clone)]
struct Sem {
    value: i64,
    clock: Snap,
}

#[derive(Debug, Clone, Default)]
struct Barrier {
    generation: u64,
    need: usize,
    arrived: Vec<usize>,
    acc: Option<Snap>,
    done: HashMap<u64, Snap>,
}

#[derive(Debug, Clone)]
struct Pending {
    place: Place,
    acc: u32,
    data: Vec<u8>,
}

#[derive(Debug, Clone)]
struct RankState {
    launch: u32,
    running: usize,
    finished: bool,
}

/// A schedulable agent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Entity {
    Tb(usize, usize),
    Proxy(usize),
}

/// One run of all launches under one schedule.
pub(crate) struct Machine<'a> {
    s: &'a Setup<'a>,
    delayed: bool,
    test_ref: Option<&'a Observed>,
    /// Record the buffers after each launch (the reference run of a `test` plan).
    pub record: bool,
    pub observed: Observed,
    mem: Vec<[Vec<u8>; 3]>,
    shadow: Vec<[Shadow; 3]>,
    clocks: Clocks,
    log: Vec<Acc>,
    insts: Vec<Inst>,
    base: Vec<Vec<usize>>,
    host: Vec<usize>,
    proxy_tid: Vec<usize>,
    tbs: Vec<Vec<TbState>>,
    ranks: Vec<RankState>,
    tokens: Vec<[Vec<Token>; 2]>,
    sems: Vec<Vec<Sem>>,
    barriers: Vec<HashMap<usize, Barrier>>,
    proxies: Vec<Proxy>,
    pending: Vec<Pending>,
    pub findings: Vec<Finding>,
    keys: HashSet<String>,
    conflicts: Vec<Conflict>,
    generation: u64,
    tmp_a: Vec<u8>,
    tmp_b: Vec<u8>,
    pub entities: Vec<Entity>,
    per_kind: HashMap<FindingKind, usize>,
    launch_vis: Vec<Vec<u32>>,
    rank_gen: Vec<u64>,
    /// Flags of this run are `flag_base + launch`.
    pub flag_base: u32,
    /// Post the triggers of a port operation with several destinations last destination first. On the GPU each
    /// destination's thread posts its own trigger, in no fixed order; the schedules with delayed visibility take
    /// the order that most often breaks a plan that counts on it.
    pub reverse_triggers: bool,
}

const MAX_PER_KIND: usize = 12;

impl<'a> Machine<'a> {
    pub fn new(s: &'a Setup<'a>, delayed: bool, test_ref: Option<&'a Observed>, reuse: Option<Memory>) -> Self {
        let world = s.prog.ranks.len();
        let mut n = 0usize;
        let mut base = Vec::with_capacity(world);
        let mut host = Vec::with_capacity(world);
        let mut proxy_tid = Vec::with_capacity(world);
        let mut entities = Vec::new();
        for (r, rp) in s.prog.ranks.iter().enumerate() {
            let mut b = Vec::with_capacity(rp.tbs.len());
            for (t, tb) in rp.tbs.iter().enumerate() {
                b.push(n);
                n += tb.sync_threads + 1;
                entities.push(Entity::Tb(r, t));
            }
            base.push(b);
            host.push(n);
            proxy_tid.push(n + 1);
            n += 2;
        }
        for r in 0..world {
            entities.push(Entity::Proxy(r));
        }
        let mem = match reuse {
            Some(mut m) if m.len() == world => {
                for (r, allocs) in m.iter_mut().enumerate() {
                    // Out of place, the host's first fill overwrites the whole input allocation anyway.
                    if s.placements[r].shared {
                        allocs[0].copy_from_slice(&s.poison[r][0]);
                    }
                    allocs[1].copy_from_slice(&s.poison[r][1]);
                }
                m
            }
            _ => (0..world)
                .map(|r| [s.poison[r][0].clone(), s.poison[r][1].clone(), vec![0u8; s.scratch_total[r] as usize]])
                .collect(),
        };
        let tokens = s
            .prog
            .ranks
            .iter()
            .map(|rp| [vec![Token::default(); rp.mem.len()], vec![Token::default(); rp.port.len()]])
            .collect();
        let sems = s
            .prog
            .ranks
            .iter()
            .map(|rp| rp.sems.iter().map(|&v| Sem { value: v, clock: Snap::new(n) }).collect())
            .collect();
        let tbs = s
            .prog
            .ranks
            .iter()
            .map(|rp| {
                rp.tbs
                    .iter()
                    .map(|_| TbState {
                        pc: 0,
                        iter: 0,
                        niter: 0,
                        inner: 0,
                        phase: Phase::Idle,
                        done: false,
                        cache: None,
                    })
                    .collect()
            })
            .collect();
        Machine {
            s,
            delayed,
            test_ref,
            record: false,
            observed: vec![Vec::new(); world],
            mem,
            shadow: (0..world).map(|_| Default::default()).collect(),
            clocks: Clocks::new(n),
            log: Vec::new(),
            insts: Vec::new(),
            base,
            host,
            proxy_tid,
            tbs,
            ranks: (0..world).map(|_| RankState { launch: 1, running: 0, finished: false }).collect(),
            tokens,
            sems,
            barriers: vec![HashMap::new(); world],
            proxies: vec![Proxy::default(); world],
            pending: Vec::new(),
            findings: Vec::new(),
            keys: HashSet::new(),
            conflicts: Vec::new(),
            generation: 0,
            tmp_a: Vec::new(),
            tmp_b: Vec::new(),
            entities,
            per_kind: HashMap::new(),
            launch_vis: vec![Vec::new(); world],
            rank_gen: vec![0; world],
            flag_base: 0,
            reverse_triggers: false,
        }
    }

    /// Gives the simulated memory back for reuse.
    pub fn into_memory(self) -> Memory {
        self.mem
    }

    /// Fills every rank's input and starts launch 1 everywhere.
    pub fn start(&mut self) {
        for r in 0..self.ranks.len() {
            self.start_launch(r);
        }
    }

    /// Whether every rank ran every launch.
    pub fn finished(&self) -> bool {
        self.ranks.iter().all(|r| r.finished) && self.proxies.iter().all(|p| p.fifo.is_empty())
    }

    // ----------------------------------------------------------------------------------------------------
    // Findings

    fn add(&mut self, kind: FindingKind, key: String, message: String, detail: Detail) {
        let full = format!("{kind:?}|{key}");
        if self.keys.contains(&full) {
            return;
        }
        let c = self.per_kind.entry(kind).or_insert(0);
        if *c >= MAX_PER_KIND {
            return;
        }
        *c += 1;
        self.keys.insert(full.clone());
        let launch = match &detail {
            Detail::Race { first, second, .. } => first.launch.max(second.launch),
            Detail::WrongResult { launch, .. } => *launch,
            Detail::Deadlock { blocked } => blocked.iter().map(|b| b.launch).min().unwrap_or(0),
            _ => 0,
        };
        self.findings.push(Finding {
            kind,
            message,
            detail,
            schedules: 1,
            first_schedule: 0,
            strategy: String::new(),
            ranks: Vec::new(),
            key: full,
            launch,
        });
    }

    fn buffer_name(&self, rank: usize, alloc: usize) -> String {
        match alloc {
            2 => "scratch".into(),
            0 if self.s.placements[rank].shared => "in-place buffer".into(),
            0 => "input".into(),
            _ => "output".into(),
        }
    }

    fn describe(&self, acc: u32) -> Access {
        let a = &self.log[acc as usize];
        let i = &self.insts[a.inst as usize];
        let owner_alloc = (a.owner, a.alloc);
        Access {
            rank: i.rank,
            agent: i.agent.clone(),
            op: i.op.map(|o| o.0),
            inner: i.op.and_then(|o| o.1),
            iteration: i.iteration,
            op_name: i.op.map(|o| o.2.as_str().to_string()),
            launch: i.launch,
            write: a.write,
            packet: a.packet,
            owner: owner_alloc.0,
            buffer: self.buffer_name(owner_alloc.0, owner_alloc.1),
            start: a.start,
            end: a.end,
            source: self.op_source(i.rank, &i.agent, i.op),
        }
    }

    /// The source lines of the operation (or pipeline step) `op` run by `agent` of `rank`.
    fn op_source(&self, rank: usize, agent: &Agent, op: Option<(usize, Option<usize>, OpName)>) -> Vec<SourceLocation> {
        let (Agent::ThreadBlock { tb } | Agent::Proxy { tb }) = *agent else { return Vec::new() };
        let Some((o, inner, _)) = op else { return Vec::new() };
        let Some(op) = self.s.prog.ranks.get(rank).and_then(|r| r.tbs.get(tb)).and_then(|t| t.ops.get(o)) else {
            return Vec::new();
        };
        match inner {
            Some(i) => {
                op.pipeline.as_ref().and_then(|(_, ops)| ops.get(i)).map(|x| x.source.clone()).unwrap_or_default()
            }
            None => op.source.clone(),
        }
    }
}

/// Index of a channel kind in the per-rank token tables: memory 0, port 1.
fn kind_index(k: Option<ChannelType>) -> usize {
    if k == Some(ChannelType::Port) { 1 } else { 0 }
}
