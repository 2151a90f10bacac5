//! The simulated machine: memory of every rank, the interpreter of every operation (the executor's semantics
//! with the fixes listed in docs/plan-format.md), the memory model (logical threads with vector clocks, delayed
//! visibility of remote writes) and the detection of findings.

use std::collections::{HashMap, HashSet, VecDeque};
use std::rc::Rc;

use super::clock::{Clocks, Snap};
use super::compile::{OpR, Prog, RefR, Target};
use super::diagnose;
use super::finding::{Access, Agent, Blocked, Detail, Finding, FindingKind};
use super::packet::{self, PacketFormat};
use super::shadow::{Acc, Conflict, ConflictKind, Shadow};
use crate::data::{BufferSizes, DataType, FillPattern, Placement, first_mismatch, reduce_into};
use crate::plan::{BufferType, ChannelType, IterContext, Layout, OpName, Plan, ReduceOp};

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
struct Trigger {
    seq: u64,
    clock: Snap,
    tb: usize,
    op: (usize, Option<usize>, OpName),
    launch: u32,
    iteration: Option<u64>,
    data: Option<(Place, Place, bool, u32)>,
    flag_chan: Option<usize>,
}

#[derive(Debug, Clone, Default)]
struct Proxy {
    fifo: VecDeque<Trigger>,
    next: u64,
    done: u64,
    snaps: HashMap<u64, Snap>,
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
        }
    }
}

impl<'a> Machine<'a> {
    // ----------------------------------------------------------------------------------------------------
    // Instances and accesses

    fn tb_threads(&self, r: usize, t: usize) -> std::ops::Range<usize> {
        let b = self.base[r][t];
        b..b + self.s.prog.ranks[r].tbs[t].sync_threads + 1
    }

    fn new_inst(
        &mut self,
        rank: usize,
        agent: Agent,
        op: Option<&OpR>,
        it: Option<(IterContext, u64)>,
        threads: impl IntoIterator<Item = usize>,
    ) -> u32 {
        let thr = threads.into_iter().map(|t| (t as u32, self.clocks.tick(t))).collect();
        self.insts.push(Inst {
            rank,
            agent,
            op: op.map(|o| (o.index, o.inner, o.name)),
            iteration: it.map(|x| x.1),
            launch: self.ranks[rank].launch,
            thr,
            exe: None,
        });
        (self.insts.len() - 1) as u32
    }

    fn ordered_with(clocks: &Clocks, insts: &[Inst], log: &[Acc], cur: u32, prev: u32, exe: bool) -> bool {
        let c = &insts[cur as usize];
        let p = &insts[log[prev as usize].inst as usize];
        c.thr.iter().all(|&(ct, _)| p.thr.iter().all(|&(pt, pe)| clocks.knows(ct as usize, pt as usize, pe, exe)))
    }

    fn record(&mut self, p: &Place, inst: u32, write: bool, packet: bool, flag: u32) -> u32 {
        self.record_same(p, inst, write, packet, flag, false)
    }

    fn record_same(&mut self, p: &Place, inst: u32, write: bool, packet: bool, flag: u32, same: bool) -> u32 {
        let id = self.log.len() as u32;
        self.log.push(Acc {
            inst,
            write,
            packet,
            flag,
            start: p.off,
            end: p.off + p.len,
            owner: p.rank,
            alloc: p.alloc,
            same,
        });
        let Machine { shadow, log, insts, clocks, conflicts, .. } = self;
        conflicts.clear();
        let mut ordered = |prev: u32, exe: bool| Self::ordered_with(clocks, insts, log, inst, prev, exe);
        shadow[p.rank][p.alloc].access(id, &log[id as usize], log, &mut ordered, conflicts);
        if !self.conflicts.is_empty() {
            let cs = std::mem::take(&mut self.conflicts);
            for c in &cs {
                self.report_conflict(c, id);
            }
            self.conflicts = cs;
        }
        id
    }

    fn report_conflict(&mut self, c: &Conflict, cur: u32) {
        let first = self.describe(c.prev);
        let second = self.describe(cur);
        let ident = |a: &Access| format!("{}:{:?}:{:?}:{:?}:{}", a.rank, a.agent, a.op, a.inner, a.write);
        let (x, y) = (ident(&first), ident(&second));
        let key = if x < y { format!("{x}|{y}") } else { format!("{y}|{x}") };
        let buffer = self.buffer_name(first.owner, self.log[cur as usize].alloc);
        let (kind, headline) = match c.kind {
            ConflictKind::Race => (
                FindingKind::DataRace,
                format!(
                    "data race on {} of rank {} bytes [{}, {}): no happens-before between",
                    buffer, second.owner, c.start, c.end
                ),
            ),
            ConflictKind::StalePacket => (
                FindingKind::StalePacket,
                format!(
                    "stale packet: packets in {} of rank {} bytes [{}, {}) are written twice with the same flag \
                     (launch {}) without ordering, so a reader may accept the older packet:",
                    buffer, second.owner, c.start, c.end, second.launch
                ),
            ),
        };
        let hint = race_hint(&first, &second);
        let message = format!("{headline}\n  first:  {first}\n  second: {second}\n  {hint}");
        self.add(
            kind,
            key,
            message,
            Detail::Race { first: Box::new(first), second: Box::new(second), overlap: [c.start, c.end] },
        );
    }

    /// Applies pending (delayed) writes to `p` that happen before instance `inst`.
    fn settle(&mut self, p: &Place, inst: u32) {
        if self.pending.is_empty() {
            return;
        }
        let (start, end) = (p.off, p.off + p.len);
        let mut i = 0;
        while i < self.pending.len() {
            let q = &self.pending[i];
            let overlaps = q.place.rank == p.rank
                && q.place.alloc == p.alloc
                && q.place.off < end
                && start < q.place.off + q.place.len;
            if overlaps && Self::ordered_with(&self.clocks, &self.insts, &self.log, inst, q.acc, false) {
                let q = self.pending.remove(i);
                self.apply(&q.place, &q.data);
            } else {
                i += 1;
            }
        }
    }

    fn apply(&mut self, p: &Place, data: &[u8]) {
        self.rank_gen[p.rank] += 1;
        let m = &mut self.mem[p.rank][p.alloc];
        let s = p.off as usize;
        let n = data.len().min(m.len().saturating_sub(s));
        m[s..s + n].copy_from_slice(&data[..n]);
    }

    /// Applies every pending write.
    pub fn flush_pending(&mut self) {
        for q in std::mem::take(&mut self.pending) {
            self.apply(&q.place, &q.data);
        }
    }

    /// Reads `p` (raw bytes; packets decoded when `packet`) into `out`.
    fn read(&mut self, p: &Place, inst: u32, packet: bool, out: &mut Vec<u8>) {
        self.read_mode(p, inst, packet, packet, out)
    }

    /// Reads `p`; `packet` records a packet access (ordered by flags), `decode` extracts the payload.
    fn read_mode(&mut self, p: &Place, inst: u32, packet: bool, decode: bool, out: &mut Vec<u8>) {
        self.settle(p, inst);
        self.record(p, inst, false, packet, 0);
        let m = &self.mem[p.rank][p.alloc];
        let raw = &m[p.off as usize..(p.off + p.len) as usize];
        out.clear();
        if decode {
            out.resize(raw.len() / 2, 0);
            packet::read(self.s.fmt, raw, out);
        } else {
            out.extend_from_slice(raw);
        }
        if packet {
            // The flag orders the reader after the packet's writer (execution order only).
            let mut ws = Vec::new();
            self.shadow[p.rank][p.alloc].writers(p.off, p.off + p.len, &mut ws);
            let snaps: Vec<Rc<Vec<u32>>> =
                ws.iter().filter_map(|&w| self.insts[self.log[w as usize].inst as usize].exe.clone()).collect();
            let thr: Vec<usize> = self.insts[inst as usize].thr.iter().map(|x| x.0 as usize).collect();
            for sn in &snaps {
                for &t in &thr {
                    self.clocks.acquire_exe(t, sn);
                }
            }
        }
    }

    /// Writes `data` to `p`: as packets with `flag` when `packet` (then `p.len` is twice the payload), raw
    /// otherwise. Non-packet writes to another rank are delayed in delayed-visibility schedules.
    fn write(&mut self, exec_rank: usize, p: &Place, inst: u32, data: &[u8], packet: Option<u32>) {
        self.settle(p, inst);
        let flag = packet.unwrap_or(0);
        if packet.is_some() && self.insts[inst as usize].exe.is_none() {
            let s = self.clocks.snap_join(self.insts[inst as usize].thr.iter().map(|x| x.0 as usize));
            self.insts[inst as usize].exe = Some(Rc::new(s.exe));
        }
        if let Some(f) = packet {
            let fmt = self.s.fmt;
            let range = p.off as usize..(p.off + p.len) as usize;
            let same = packet::holds(fmt, &self.mem[p.rank][p.alloc][range.clone()], data, f);
            self.record_same(p, inst, true, true, flag, same);
            self.generation += 1;
            self.rank_gen[p.rank] += 1;
            packet::write(fmt, &mut self.mem[p.rank][p.alloc][range], data, f);
            return;
        }
        let acc = self.record(p, inst, true, false, flag);
        self.generation += 1;
        self.rank_gen[p.rank] += 1;
        if false {
        } else if self.delayed && p.rank != exec_rank {
            self.pending.push(Pending { place: *p, acc, data: data.to_vec() });
        } else {
            self.apply(p, data);
        }
    }

    /// A raw copy of packet bytes (port-channel packet transfers); the flags travel with the data.
    fn write_raw_packets(&mut self, p: &Place, inst: u32, data: &[u8], flag: u32) {
        self.settle(p, inst);
        if self.insts[inst as usize].exe.is_none() {
            let s = self.clocks.snap_join(self.insts[inst as usize].thr.iter().map(|x| x.0 as usize));
            self.insts[inst as usize].exe = Some(Rc::new(s.exe));
        }
        self.record(p, inst, true, true, flag);
        self.generation += 1;
        self.rank_gen[p.rank] += 1;
        self.apply(p, data);
    }

    // ----------------------------------------------------------------------------------------------------
    // Address computation (chunk indices to byte offsets, see `plan::layout`)

    /// The packet flag of rank `r`'s current launch: the executor's per-launch counter, which keeps counting
    /// across the schedules of one verification (scratch is not cleared between them, as on a GPU).
    fn flag(&self, r: usize) -> u32 {
        self.flag_base + self.ranks[r].launch
    }

    fn scratch_offset(&self, r: usize) -> u64 {
        if self.s.plan.double_scratch() && self.flag(r).is_multiple_of(2) { self.s.scratch_half[r] } else { 0 }
    }

    /// `(offset, bytes)` of a reference in payload bytes, after thread-block-group and pipeline slicing.
    fn range(&self, er: usize, rf: &RefR, op: &OpR, it: Option<(IterContext, u64)>) -> Result<(u64, u64), String> {
        let layout = &self.s.layouts[er];
        let (off, bytes) = layout.range_tbg(rf.index, rf.size, op.tbg);
        match it {
            Some((ic, i)) if honours_pipeline_offset(op.name) => {
                layout.pipeline_slice(off, bytes, ic, i).ok_or_else(|| {
                    format!(
                        "pipeline iteration {i} starts at byte {} of an operation spanning only {bytes} bytes \
                         (the reference kernel's remaining size underflows); the inner operation must span \
                         `num_chunks` = {} chunk(s)",
                        i * ic.unit_size,
                        ic.num_chunks
                    )
                })
            }
            _ => Ok((off, bytes)),
        }
    }

    fn view(&self, r: usize, b: BufferType) -> (usize, u64, u64) {
        let pl = &self.s.placements[r];
        match b {
            BufferType::Input => (0, pl.input_offset, self.s.sizes.input),
            BufferType::Output => (if pl.shared { 0 } else { 1 }, pl.output_offset, self.s.sizes.output),
            BufferType::Scratch => (2, self.scratch_offset(r), self.s.scratch_half[r]),
        }
    }

    /// The bytes a reference touches: `off`/`len` in payload bytes, doubled for packet format.
    fn places(&self, er: usize, rf: &RefR, off: u64, len: u64, packet: bool) -> Result<Vec<Place>, String> {
        let (off, len) = if packet { (off * 2, len * 2) } else { (off, len) };
        let one = |owner: usize, b: BufferType, local: bool| -> Result<Place, String> {
            let (alloc, _, view_len) = self.view(owner, b);
            let (base, limit) = match b {
                BufferType::Scratch => (self.scratch_offset(er), self.s.scratch_half[owner]),
                _ if local => (self.view(er, b).1, view_len),
                BufferType::Input => (self.s.placements[er].input_offset, self.s.placements[owner].input_alloc),
                BufferType::Output => (self.s.placements[er].output_offset, self.s.placements[owner].output_alloc),
            };
            let rel_end = if local || b == BufferType::Scratch { off + len } else { base + off + len };
            if rel_end > limit {
                return Err(format!(
                    "{}{} bytes [{}, {}) of rank {owner}'s {} buffer, which has {} bytes{}",
                    if packet { "packets: " } else { "" },
                    if local { "local" } else { "remote" },
                    if local || b == BufferType::Scratch { off } else { base + off },
                    rel_end,
                    b.long_name(),
                    limit,
                    if b == BufferType::Scratch && self.s.plan.double_scratch() { " per half" } else { "" },
                ));
            }
            Ok(Place { rank: owner, alloc, off: base + off, len })
        };
        match rf.target {
            Target::Local(b) => Ok(vec![one(er, b, true)?]),
            Target::Remote { owner, buffer } => Ok(vec![one(owner, buffer, false)?]),
            Target::Switch { chan } => {
                let decl = &self.s.prog.ranks[er].switch[chan];
                decl.members.iter().map(|&m| one(m, decl.buffer, false)).collect()
            }
        }
    }

    // ----------------------------------------------------------------------------------------------------
    // Launches

    fn start_launch(&mut self, r: usize) {
        let l = self.ranks[r].launch;
        let h = self.host[r];
        let inst = self.new_inst(r, Agent::HostFill, None, None, [h]);
        let (alloc, base, len) = self.view(r, BufferType::Input);
        let p = Place { rank: r, alloc, off: base, len };
        let data = std::mem::take(&mut self.tmp_a);
        let fill = &self.s.fills[r][(l - 1) as usize];
        self.settle(&p, inst);
        self.record(&p, inst, true, false, 0);
        let m = &mut self.mem[r][alloc];
        let end = (base as usize + fill.len()).min(m.len());
        m[base as usize..end].copy_from_slice(&fill[..end - base as usize]);
        self.tmp_a = data;
        let snap = self.clocks.snap(h);
        self.launch_vis[r] = snap.vis.clone();
        let ntb = self.s.prog.ranks[r].tbs.len();
        for t in 0..ntb {
            for th in self.tb_threads(r, t) {
                self.clocks.set(th, &snap);
            }
            self.tbs[r][t] =
                TbState { pc: 0, iter: 0, niter: 0, inner: 0, phase: Phase::Idle, done: false, cache: None };
        }
        self.ranks[r].running = ntb;
        for t in 0..ntb {
            self.normalize(r, t);
        }
        if self.ranks[r].running == 0 {
            self.end_launch(r);
        }
    }

    fn end_launch(&mut self, r: usize) {
        let l = self.ranks[r].launch;
        let h = self.host[r];
        for t in 0..self.s.prog.ranks[r].tbs.len() {
            let s = self.clocks.snap_join(self.tb_threads(r, t));
            self.clocks.set(h, &s);
        }
        let inst = self.new_inst(r, Agent::HostCheck, None, None, [h]);
        let mut views = [(0usize, 0u64, 0u64); 2];
        for (k, b) in [BufferType::Output, BufferType::Input].into_iter().enumerate() {
            let (alloc, base, len) = self.view(r, b);
            let p = Place { rank: r, alloc, off: base, len };
            self.settle(&p, inst);
            self.record(&p, inst, false, false, 0);
            views[k] = (alloc, base, len);
        }
        let slice = |m: &Self, k: usize| {
            let (alloc, base, len) = views[k];
            m.mem[r][alloc][base as usize..(base + len) as usize].to_vec()
        };
        let li = (l - 1) as usize;
        let expected: Option<&'a Vec<u8>> = self.s.expected.get(r).and_then(|v| v.get(li)).and_then(|x| x.as_ref());
        if let Some(want) = expected {
            let (alloc, base, len) = views[0];
            if self.mem[r][alloc][base as usize..(base + len) as usize] != want[..] {
                let got = slice(self, 0);
                self.compare(r, l, "output", want, &got, None);
            }
        } else if let Some((want_out, want_in)) = self.test_ref.and_then(|t| t.get(r)).and_then(|v| v.get(li)) {
            let (out, inp) = (slice(self, 0), slice(self, 1));
            self.compare(r, l, "output", want_out, &out, Some(()));
            self.compare(r, l, "input", want_in, &inp, Some(()));
        }
        if self.record {
            let (out, inp) = (slice(self, 0), slice(self, 1));
            self.observed[r].push((out, inp));
        }
        if l < self.s.launches {
            self.ranks[r].launch += 1;
            self.start_launch(r);
        } else {
            self.ranks[r].finished = true;
        }
    }

    fn compare(&mut self, r: usize, l: u32, buffer: &str, want: &[u8], got: &[u8], test: Option<()>) {
        let dt = self.s.dtype;
        let Some(first) = first_mismatch(dt, want, got) else { return };
        let es = dt.size();
        let wrong = want.chunks(es).zip(got.chunks(es)).filter(|(a, b)| a != b).count() as u64;
        let expected = dt.decode(&want[first * es..]);
        let value = dt.decode(&got[first * es..]);
        let explanation = if test.is_some() {
            vec!["the expected value is the result of a sequentially consistent run of this test plan".to_string()]
        } else {
            diagnose::explain(self.s, r, l, want, got)
        };
        let mut message = format!(
            "wrong result: rank {r} {buffer} after launch {l}: first bad element {first} (byte {}): expected {expected}, \
             got {value}; {wrong} of {} elements wrong",
            first * es,
            want.len() / es
        );
        for e in &explanation {
            message.push_str(&format!("\n  {e}"));
        }
        self.add(
            FindingKind::WrongResult,
            format!("{r}:{buffer}"),
            message,
            Detail::WrongResult {
                rank: r,
                launch: l,
                buffer: buffer.to_string(),
                element: first as u64,
                expected,
                got: value,
                wrong_elements: wrong,
                explanation,
            },
        );
    }

    /// Moves a thread block's pc onto a runnable position (entering or skipping pipelines); marks it done at
    /// the end of its operations.
    fn normalize(&mut self, r: usize, t: usize) {
        let ops = &self.s.prog.ranks[r].tbs[t].ops;
        loop {
            let st = &mut self.tbs[r][t];
            let Some(op) = ops.get(st.pc) else {
                if !st.done {
                    st.done = true;
                    self.ranks[r].running -= 1;
                }
                return;
            };
            if let Some((ic, body)) = &op.pipeline
                && st.niter == 0
            {
                let n = self.s.layouts[r].pipeline_iterations(*ic);
                if n == 0 || body.is_empty() {
                    st.pc += 1;
                    continue;
                }
                st.niter = n;
                st.iter = 0;
                st.inner = 0;
            }
            return;
        }
    }

    fn advance(&mut self, r: usize, t: usize) {
        let ops = &self.s.prog.ranks[r].tbs[t].ops;
        let st = &mut self.tbs[r][t];
        st.phase = Phase::Idle;
        st.cache = None;
        match ops.get(st.pc).and_then(|o| o.pipeline.as_ref()) {
            Some((_, body)) => {
                st.inner += 1;
                if st.inner >= body.len() {
                    st.inner = 0;
                    st.iter += 1;
                    if st.iter >= st.niter {
                        st.pc += 1;
                        st.iter = 0;
                        st.niter = 0;
                    }
                }
            }
            None => st.pc += 1,
        }
        self.normalize(r, t);
        if self.tbs[r][t].done && self.ranks[r].running == 0 {
            self.end_launch(r);
        }
    }

    fn current(&self, r: usize, t: usize) -> Option<(&'a OpR, Option<(IterContext, u64)>)> {
        let st = &self.tbs[r][t];
        if st.done {
            return None;
        }
        let ops: &'a [OpR] = &self.s.prog.ranks[r].tbs[t].ops;
        let op = ops.get(st.pc)?;
        match &op.pipeline {
            Some((ic, body)) => body.get(st.inner).map(|b| (b, Some((*ic, st.iter)))),
            None => Some((op, None)),
        }
    }
}

fn honours_pipeline_offset(name: OpName) -> bool {
    use OpName::*;
    matches!(
        name,
        Copy | Put
            | PutWithSignal
            | PutWithSignalAndFlush
            | Get
            | Reduce
            | ReduceSend
            | ReadReduce
            | ReadReduceSend
            | MultiLoadReduceStore
            | MultiLoadReduce
            | MultiStore
    )
}

fn race_hint(a: &Access, b: &Access) -> String {
    let same_tb = a.rank == b.rank
        && matches!((&a.agent, &b.agent), (Agent::ThreadBlock { tb: x }, Agent::ThreadBlock { tb: y }) if x == y);
    if same_tb {
        return format!(
            "both run in thread block {:?} of rank {}: operations of one thread block overlap unless a `nop` \
             (or a barrier) separates them; put a `nop` between op {:?} and op {:?}",
            a.agent,
            a.rank,
            a.op.unwrap_or(0),
            b.op.unwrap_or(0)
        );
    }
    if matches!(a.agent, Agent::HostCheck | Agent::HostFill) || matches!(b.agent, Agent::HostCheck | Agent::HostFill) {
        return "the host checks the output after a rank's launch and refills the input before the next one; an \
                access by a peer must happen before the owner's launch ends (the peer signals after it, with a \
                `nop` before the signal, and the owner waits, with a `nop` after the wait, before it finishes)"
            .to_string();
    }
    if a.rank == b.rank {
        return "different thread blocks of one rank: order them with a barrier, a device semaphore \
                (release after, acquire before, with `nop`s) or a signal/wait pair"
            .to_string();
    }
    "ranks are ordered only by a signal->wait pair on partner channels (a `nop` before the signal so the whole \
     block's writes are released, a `nop` after the wait so the whole block acquires), by a port flush/put with \
     signal, or by a packet's flag for that packet's payload; relaxed signal/wait orders execution but does not \
     make writes visible"
        .to_string()
}

fn kind_index(k: Option<ChannelType>) -> usize {
    if k == Some(ChannelType::Port) { 1 } else { 0 }
}

fn reads_packets(name: OpName) -> bool {
    use OpName::*;
    matches!(
        name,
        UnpackPackets
            | ReadPutPackets
            | MultiStorePackets
            | ReducePackets
            | ReduceSendPackets
            | ReduceCopyPackets
            | ReduceCopySendPackets
    )
}

impl<'a> Machine<'a> {
    /// The packet sources an operation waits for.
    fn packet_srcs(op: &OpR) -> &[RefR] {
        use OpName::*;
        match op.name {
            UnpackPackets | ReadPutPackets | MultiStorePackets => &op.srcs[..op.srcs.len().min(1)],
            ReducePackets | ReduceSendPackets | ReduceCopyPackets | ReduceCopySendPackets => {
                op.srcs.get(1..).unwrap_or(&[])
            }
            _ => &[],
        }
    }

    /// The first packet source that is not ready: (place, packet index, flag found). `from` skips packets known
    /// to be valid: (source position, byte offset in it).
    fn unready_packets(
        &self,
        r: usize,
        op: &OpR,
        it: Option<(IterContext, u64)>,
        from: (usize, u64),
    ) -> Option<(usize, Place, usize, u32)> {
        let flag = self.flag(r);
        let pkt = 2 * self.s.fmt.payload() as u64;
        for (k, rf) in Self::packet_srcs(op).iter().enumerate().skip(from.0) {
            let Ok((off, bytes)) = self.range(r, rf, op, it) else { return None };
            let Ok(places) = self.places(r, rf, off, bytes, true) else { return None };
            for p in places {
                let skip = if k == from.0 { from.1.min(p.len) / pkt * pkt } else { 0 };
                let raw = &self.mem[p.rank][p.alloc][(p.off + skip) as usize..(p.off + p.len) as usize];
                if let Some((i, f)) = packet::first_stale(self.s.fmt, raw, flag) {
                    return Some((k, p, i + (skip / pkt) as usize, f));
                }
            }
        }
        None
    }

    /// Whether entity `e` can take a step now.
    pub fn runnable(&mut self, e: Entity) -> bool {
        match e {
            Entity::Proxy(r) => !self.proxies[r].fifo.is_empty(),
            Entity::Tb(r, t) => {
                if self.ranks[r].finished || self.tbs[r][t].done {
                    return false;
                }
                let Some((op, it)) = self.current(r, t) else { return false };
                self.ready(r, t, op, it)
            }
        }
    }

    fn ready(&mut self, r: usize, t: usize, op: &OpR, it: Option<(IterContext, u64)>) -> bool {
        use OpName::*;
        let st = &self.tbs[r][t];
        match (&op.name, &st.phase) {
            (Wait | RelaxedWait, _) => {
                let k = kind_index(op.ctype);
                op.chans.iter().all(|&c| self.tokens[r][k].get(c).is_some_and(|tk| tk.count > tk.waited))
            }
            (SemAcquire, Phase::Sem(olds)) => {
                op.sems.iter().zip(olds).all(|(&s, &old)| old > 0 || self.sems[r][s].value >= old)
            }
            (Barrier, Phase::Barrier(g)) => self.barriers[r].get(&op.barrier.0).is_some_and(|b| b.generation > *g),
            (_, Phase::Flush(seqs)) => seqs.iter().all(|&s| self.proxies[r].done >= s),
            (n, Phase::Idle) if reads_packets(*n) => {
                let generation = self.rank_gen[r];
                let from = match st.cache {
                    Some((g, _, _)) if g == generation => return false,
                    Some((_, k, off)) => (k, off),
                    None => (0, 0),
                };
                // Packets before `from` were valid at an earlier look (a packet is only replaced by one with a
                // newer flag, which the race detector reports).
                match self.unready_packets(r, op, it, from) {
                    None => true,
                    Some((k, _, i, _)) => {
                        let pkt = 2 * self.s.fmt.payload() as u64;
                        self.tbs[r][t].cache = Some((generation, k, i as u64 * pkt));
                        false
                    }
                }
            }
            _ => true,
        }
    }

    /// What a blocked thread block waits for.
    fn waits_for(&self, r: usize, t: usize) -> Option<Blocked> {
        use OpName::*;
        let (op, it) = self.current(r, t)?;
        let st = &self.tbs[r][t];
        let rp = &self.s.prog.ranks[r];
        let what = match (&op.name, &st.phase) {
            (Wait | RelaxedWait, _) => {
                let k = kind_index(op.ctype);
                let mut parts = Vec::new();
                for (i, &c) in op.chans.iter().enumerate() {
                    let Some(tk) = self.tokens[r][k].get(c) else { continue };
                    if tk.count > tk.waited {
                        continue;
                    }
                    let end = rp.chans(op.ctype.unwrap_or(ChannelType::Memory))[c];
                    let partner = match end.partner {
                        Some(p) => {
                            format!("rank {}'s {} channel {p}", end.peer, op.ctype.unwrap_or(ChannelType::Memory))
                        }
                        None => format!("rank {} (which declares no partner channel back to rank {r})", end.peer),
                    };
                    parts.push(format!(
                        "thread {i}: signal #{} on {} channel {c} from {partner} ({} signal(s) arrived so far)",
                        tk.waited + 1,
                        op.ctype.unwrap_or(ChannelType::Memory),
                        tk.count
                    ));
                }
                parts.join("; ")
            }
            (SemAcquire, Phase::Sem(olds)) => op
                .sems
                .iter()
                .zip(olds)
                .filter(|(s, old)| **old <= 0 && self.sems[r][**s].value < **old)
                .map(|(s, _)| format!("a release of device semaphore {s} (value {})", self.sems[r][*s].value))
                .collect::<Vec<_>>()
                .join("; "),
            (Barrier, Phase::Barrier(_)) => {
                let b = self.barriers[r].get(&op.barrier.0);
                format!(
                    "barrier {}: {} of {} thread blocks arrived ({:?})",
                    op.barrier.0,
                    b.map_or(0, |b| b.arrived.len()),
                    op.barrier.1,
                    b.map(|b| b.arrived.clone()).unwrap_or_default()
                )
            }
            (_, Phase::Flush(_)) => "the proxy to complete the flushed transfers".to_string(),
            (n, Phase::Idle) if reads_packets(*n) => match self.unready_packets(r, op, it, (0, 0)) {
                Some((_, p, i, f)) => format!(
                    "packet {i} at {} of rank {} bytes [{}, {}) to carry flag {} (it holds flag {f}{})",
                    self.buffer_name(p.rank, p.alloc),
                    p.rank,
                    p.off,
                    p.off + p.len,
                    self.flag(r),
                    if f <= self.flag_base { ": never written in this run" } else { "" }
                ),
                None => "packets".to_string(),
            },
            _ => "nothing (runnable)".to_string(),
        };
        Some(Blocked {
            rank: r,
            tb: t,
            op: op.index,
            inner: op.inner,
            op_name: op.name.as_str().to_string(),
            launch: self.ranks[r].launch,
            waits_for: what,
        })
    }

    /// Records a deadlock: every blocked thread block and what it waits for.
    pub fn report_deadlock(&mut self) {
        let mut blocked = Vec::new();
        for r in 0..self.ranks.len() {
            if self.ranks[r].finished {
                continue;
            }
            for t in 0..self.tbs[r].len() {
                if let Some(b) = self.waits_for(r, t) {
                    blocked.push(b);
                }
            }
        }
        let mut message = format!("deadlock: {} thread block(s) wait forever:", blocked.len());
        for b in &blocked {
            message.push_str(&format!(
                "\n  rank {} thread block {} op {}{} `{}` (launch {}) waits for {}",
                b.rank,
                b.tb,
                b.op,
                b.inner.map(|i| format!(".{i}")).unwrap_or_default(),
                b.op_name,
                b.launch,
                b.waits_for
            ));
        }
        let done: Vec<String> =
            self.ranks.iter().enumerate().filter(|(_, s)| s.finished).map(|(r, _)| r.to_string()).collect();
        if !done.is_empty() {
            message.push_str(&format!("\n  ranks that finished all launches: {}", done.join(", ")));
        }
        let key =
            blocked.iter().map(|b| format!("{}:{}:{}:{:?}", b.rank, b.tb, b.op, b.inner)).collect::<Vec<_>>().join(",");
        self.add(FindingKind::Deadlock, key, message, Detail::Deadlock { blocked });
    }

    /// Records a step-limit finding.
    pub fn report_step_limit(&mut self, steps: u64) {
        self.add(
            FindingKind::StepLimit,
            String::new(),
            format!("the run did not finish within {steps} steps"),
            Detail::StepLimit { steps },
        );
    }

    /// After all launches: signals equal waits on every channel, semaphores back at their initial values.
    pub fn check_balance(&mut self) {
        let mut found = Vec::new();
        for (r, rp) in self.s.prog.ranks.iter().enumerate() {
            for (k, kind) in [ChannelType::Memory, ChannelType::Port].into_iter().enumerate() {
                for (c, tk) in self.tokens[r][k].iter().enumerate() {
                    let end = rp.chans(kind)[c];
                    if tk.count != tk.waited {
                        found.push((
                            r,
                            format!("{kind} channel {c}"),
                            format!(
                                "rank {r} {kind} channel {c} (paired with rank {}'s channel {}): {} signal(s) arrived \
                                 over {} launches but {} wait(s) consumed them; signals and waits must balance in \
                                 every launch",
                                end.peer,
                                end.partner.map_or("-".to_string(), |p| p.to_string()),
                                tk.count,
                                self.s.launches,
                                tk.waited
                            ),
                        ));
                    }
                    if tk.unpaired > 0 {
                        found.push((
                            r,
                            format!("{kind} channel {c} unpaired"),
                            format!(
                                "rank {r} {kind} channel {c} to rank {} has no partner channel on rank {} (pairing \
                                 rule: the k-th channel A->B pairs with the k-th channel B->A); its {} signal(s) \
                                 are never waited for",
                                end.peer, end.peer, tk.unpaired
                            ),
                        ));
                    }
                }
            }
            for (i, sem) in self.sems[r].iter().enumerate() {
                let init = rp.sems[i];
                if sem.value != init {
                    found.push((
                        r,
                        format!("semaphore {i}"),
                        format!(
                            "rank {r} device semaphore {i} ends at {} after {} launches, but starts at {init}: \
                             releases and acquires differ by {} (they must balance in every launch)",
                            sem.value,
                            self.s.launches,
                            sem.value - init
                        ),
                    ));
                }
            }
        }
        for (r, what, message) in found {
            self.add(
                FindingKind::Unbalanced,
                format!("{r}:{what}"),
                format!("unbalanced: {message}"),
                Detail::Unbalanced { rank: r, what },
            );
        }
    }

    fn oob(&mut self, r: usize, t: usize, op: &OpR, what: String) {
        let message = format!(
            "out-of-bounds access: rank {r} thread block {t} op {}{} `{}` (launch {}): {what}",
            op.index,
            op.inner.map(|i| format!(".{i}")).unwrap_or_default(),
            op.name,
            self.ranks[r].launch
        );
        self.add(
            FindingKind::OutOfBounds,
            format!("{r}:{t}:{}:{:?}", op.index, op.inner),
            message,
            Detail::OutOfBounds { rank: r, tb: t, op: op.index, op_name: op.name.as_str().to_string(), what },
        );
    }

    // ----------------------------------------------------------------------------------------------------
    // Stepping

    /// Runs one step of entity `e` (which must be runnable).
    pub fn step(&mut self, e: Entity) {
        match e {
            Entity::Proxy(r) => self.step_proxy(r),
            Entity::Tb(r, t) => {
                let Some((op, it)) = self.current(r, t) else { return };
                let finished = match self.exec(r, t, op, it) {
                    Ok(f) => f,
                    Err(what) => {
                        self.oob(r, t, op, what);
                        true
                    }
                };
                if finished {
                    self.advance(r, t);
                }
            }
        }
    }

    fn sync_threads(&self, r: usize, t: usize, n: usize) -> std::ops::Range<usize> {
        let b = self.base[r][t];
        b..b + n
    }

    /// Executes (part of) an operation; `Ok(true)` when it completed.
    fn exec(&mut self, r: usize, t: usize, op: &'a OpR, it: Option<(IterContext, u64)>) -> Result<bool, String> {
        use OpName::*;
        let flag = self.flag(r);
        let all = self.tb_threads(r, t);
        match op.name {
            Nop => {
                self.clocks.join_all(all);
                Ok(true)
            }
            Pipeline => Ok(true),
            Barrier => {
                let phase = self.tbs[r][t].phase.clone();
                match phase {
                    Phase::Idle => {
                        self.clocks.join_all(all.clone());
                        let snap = self.clocks.snap(all.start);
                        let b = self.barriers[r].entry(op.barrier.0).or_default();
                        if b.arrived.is_empty() {
                            b.need = op.barrier.1.max(1);
                        }
                        b.arrived.push(t);
                        match &mut b.acc {
                            Some(a) => a.join(&snap, true),
                            None => b.acc = Some(snap),
                        }
                        let g = b.generation;
                        if b.arrived.len() >= b.need {
                            let acc = b.acc.take().unwrap_or_default();
                            b.done.insert(g, acc);
                            b.arrived.clear();
                            b.generation += 1;
                        }
                        self.tbs[r][t].phase = Phase::Barrier(g);
                        Ok(false)
                    }
                    Phase::Barrier(g) => {
                        let snap = self.barriers[r].get(&op.barrier.0).and_then(|b| b.done.get(&g).cloned());
                        if let Some(s) = snap {
                            for th in all {
                                self.clocks.set(th, &s);
                            }
                        }
                        Ok(true)
                    }
                    _ => Ok(true),
                }
            }
            Signal | RelaxedSignal => {
                let release = op.name == Signal;
                let threads = self.sync_threads(r, t, op.chans.len());
                let _ = self.new_inst(r, Agent::ThreadBlock { tb: t }, Some(op), it, threads.clone());
                let k = kind_index(op.ctype);
                for (i, &c) in op.chans.iter().enumerate() {
                    let th = threads.start + i;
                    if k == 1 {
                        self.push_trigger(r, t, op, it, th, None, Some(c));
                        continue;
                    }
                    let end = self.s.prog.ranks[r].mem[c];
                    let snap = self.clocks.snap(th);
                    let fenced = self.launch_vis[r].clone();
                    let tok = match end.partner {
                        Some(p) => &mut self.tokens[end.peer][0][p],
                        None => {
                            self.tokens[r][0][c].unpaired += 1;
                            continue;
                        }
                    };
                    tok.count += 1;
                    match &mut tok.fenced {
                        Some(f) => super::clock::max_into(f, &fenced),
                        None => tok.fenced = Some(fenced),
                    }
                    let mut s = snap;
                    if !release {
                        s.vis.iter_mut().for_each(|v| *v = 0);
                    }
                    match &mut tok.clock {
                        Some(x) => x.join(&s, true),
                        None => tok.clock = Some(s),
                    }
                }
                Ok(true)
            }
            Wait | RelaxedWait => {
                let release = op.name == Wait;
                let threads = self.sync_threads(r, t, op.chans.len());
                let _ = self.new_inst(r, Agent::ThreadBlock { tb: t }, Some(op), it, threads.clone());
                let k = kind_index(op.ctype);
                for (i, &c) in op.chans.iter().enumerate() {
                    let tok = &mut self.tokens[r][k][c];
                    tok.waited += 1;
                    let fenced = tok.fenced.clone();
                    if let Some(s) = tok.clock.clone() {
                        self.clocks.acquire(threads.start + i, &s, release);
                    }
                    if let Some(f) = fenced {
                        self.clocks.acquire_vis(threads.start + i, &f);
                    }
                }
                Ok(true)
            }
            Flush => match self.tbs[r][t].phase.clone() {
                Phase::Idle => {
                    let threads = self.sync_threads(r, t, op.chans.len());
                    let _ = self.new_inst(r, Agent::ThreadBlock { tb: t }, Some(op), it, threads.clone());
                    let mut seqs = Vec::new();
                    for (i, _) in op.chans.iter().enumerate() {
                        seqs.push(self.push_trigger(r, t, op, it, threads.start + i, None, None));
                    }
                    self.tbs[r][t].phase = Phase::Flush(seqs);
                    Ok(false)
                }
                Phase::Flush(seqs) => {
                    self.finish_flush(r, t, &seqs);
                    Ok(true)
                }
                _ => Ok(true),
            },
            SemRelease => {
                let threads = self.sync_threads(r, t, op.sems.len());
                let _ = self.new_inst(r, Agent::ThreadBlock { tb: t }, Some(op), it, threads.clone());
                for (i, &s) in op.sems.iter().enumerate() {
                    let snap = self.clocks.snap(threads.start + i);
                    let sem = &mut self.sems[r][s];
                    sem.value += 1;
                    sem.clock.join(&snap, true);
                }
                Ok(true)
            }
            SemAcquire => match self.tbs[r][t].phase.clone() {
                Phase::Idle => {
                    let threads = self.sync_threads(r, t, op.sems.len());
                    let _ = self.new_inst(r, Agent::ThreadBlock { tb: t }, Some(op), it, threads);
                    let olds = op
                        .sems
                        .iter()
                        .map(|&s| {
                            let sem = &mut self.sems[r][s];
                            sem.value -= 1;
                            sem.value + 1
                        })
                        .collect();
                    self.tbs[r][t].phase = Phase::Sem(olds);
                    Ok(false)
                }
                _ => {
                    let threads = self.sync_threads(r, t, op.sems.len());
                    for (i, &s) in op.sems.iter().enumerate() {
                        let snap = self.sems[r][s].clock.clone();
                        self.clocks.acquire(threads.start + i, &snap, true);
                    }
                    Ok(true)
                }
            },
            _ => self.exec_data(r, t, op, it, flag),
        }
    }

    fn finish_flush(&mut self, r: usize, t: usize, seqs: &[u64]) {
        let b = self.base[r][t];
        for (i, s) in seqs.iter().enumerate() {
            if let Some(snap) = self.proxies[r].snaps.get(s).cloned() {
                self.clocks.acquire(b + i, &snap, true);
            }
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn push_trigger(
        &mut self,
        r: usize,
        t: usize,
        op: &OpR,
        it: Option<(IterContext, u64)>,
        thread: usize,
        data: Option<(Place, Place, bool)>,
        flag_chan: Option<usize>,
    ) -> u64 {
        let p = &mut self.proxies[r];
        p.next += 1;
        let seq = p.next;
        let clock = self.clocks.snap(thread);
        let launch = self.ranks[r].launch;
        self.proxies[r].fifo.push_back(Trigger {
            seq,
            clock,
            tb: t,
            op: (op.index, op.inner, op.name),
            launch,
            iteration: it.map(|x| x.1),
            data: data.map(|(a, b, raw)| (a, b, raw, launch + self.flag_base)),
            flag_chan,
        });
        seq
    }

    fn step_proxy(&mut self, r: usize) {
        let Some(tr) = self.proxies[r].fifo.pop_front() else { return };
        let pt = self.proxy_tid[r];
        self.clocks.acquire(pt, &tr.clock, true);
        if let Some((src, dst, raw, flag)) = tr.data {
            let inst = self.new_inst(r, Agent::Proxy { tb: tr.tb }, None, None, [pt]);
            self.insts[inst as usize].op = Some(tr.op);
            self.insts[inst as usize].launch = tr.launch;
            self.insts[inst as usize].iteration = tr.iteration;
            let mut buf = std::mem::take(&mut self.tmp_a);
            self.read_mode(&src, inst, raw, false, &mut buf);
            if raw {
                self.write_raw_packets(&dst, inst, &buf, flag);
            } else {
                self.write(r, &dst, inst, &buf, None);
            }
            self.tmp_a = buf;
        } else {
            self.clocks.tick(pt);
        }
        if let Some(c) = tr.flag_chan {
            let end = self.s.prog.ranks[r].port[c];
            let snap = self.clocks.snap(pt);
            match end.partner {
                Some(p) => {
                    let tok = &mut self.tokens[end.peer][1][p];
                    tok.count += 1;
                    match &mut tok.clock {
                        Some(x) => x.join(&snap, true),
                        None => tok.clock = Some(snap),
                    }
                }
                None => self.tokens[r][1][c].unpaired += 1,
            }
        }
        let snap = self.clocks.snap(pt);
        self.proxies[r].snaps.insert(tr.seq, snap);
        self.proxies[r].done = tr.seq;
    }
}

impl<'a> Machine<'a> {
    fn one(&self, r: usize, rf: &RefR, off: u64, len: u64, packet: bool) -> Result<Place, String> {
        let mut v = self.places(r, rf, off, len, packet)?;
        v.pop().ok_or_else(|| "a reference resolves to no buffer".to_string())
    }

    fn exec_data(
        &mut self,
        r: usize,
        t: usize,
        op: &'a OpR,
        it: Option<(IterContext, u64)>,
        flag: u32,
    ) -> Result<bool, String> {
        use OpName::*;
        if op.ctype == Some(ChannelType::Port)
            && matches!(op.name, Put | PutWithSignal | PutWithSignalAndFlush | PutPackets | ReadPutPackets)
        {
            return self.exec_port(r, t, op, it);
        }
        let inst = self.new_inst(r, Agent::ThreadBlock { tb: t }, Some(op), it, self.tb_threads(r, t));
        let mut a = std::mem::take(&mut self.tmp_a);
        let mut b = std::mem::take(&mut self.tmp_b);
        let res = self.data_body(r, op, it, flag, inst, &mut a, &mut b);
        self.tmp_a = a;
        self.tmp_b = b;
        res.map(|_| true)
    }

    #[allow(clippy::too_many_arguments)]
    fn data_body(
        &mut self,
        r: usize,
        op: &'a OpR,
        it: Option<(IterContext, u64)>,
        flag: u32,
        inst: u32,
        a: &mut Vec<u8>,
        b: &mut Vec<u8>,
    ) -> Result<(), String> {
        use OpName::*;
        let dt = self.s.dtype;
        let red = op.reduce;
        let src = |i: usize| op.srcs.get(i).or(op.srcs.last()).ok_or_else(|| "no source buffer".to_string());
        let dst = |i: usize| op.dsts.get(i).or(op.dsts.last()).ok_or_else(|| "no destination buffer".to_string());
        match op.name {
            Copy | Put | CopyPackets | UnpackPackets | PutPackets => {
                let (src_packet, dst_packet) = match op.name {
                    CopyPackets | PutPackets => (false, true),
                    UnpackPackets => (true, false),
                    _ => (false, false),
                };
                let pairs = if matches!(op.name, Put | PutPackets) { op.dsts.len() } else { 1 };
                for i in 0..pairs {
                    let (s, d) = (src(i)?, dst(i)?);
                    let (so, n) = self.range(r, s, op, it)?;
                    let (dof, _) = self.range(r, d, op, it)?;
                    let sp = self.one(r, s, so, n, src_packet)?;
                    let dps = self.places(r, d, dof, n, dst_packet)?;
                    self.read(&sp, inst, src_packet, a);
                    for dp in dps {
                        self.write(r, &dp, inst, a, dst_packet.then_some(flag));
                    }
                }
            }
            Get => {
                for i in 0..op.srcs.len() {
                    let (s, d) = (src(i)?, dst(i)?);
                    let (so, n) = self.range(r, s, op, it)?;
                    let (dof, _) = self.range(r, d, op, it)?;
                    let sp = self.one(r, s, so, n, false)?;
                    let dp = self.one(r, d, dof, n, false)?;
                    self.read(&sp, inst, false, a);
                    self.write(r, &dp, inst, a, None);
                }
            }
            ReadPutPackets => {
                let s = src(0)?;
                let (so, n) = self.range(r, s, op, it)?;
                let sp = self.one(r, s, so, n, true)?;
                self.read(&sp, inst, true, a);
                for d in &op.dsts {
                    let (dof, _) = self.range(r, d, op, it)?;
                    for dp in self.places(r, d, dof, n, true)? {
                        self.write(r, &dp, inst, a, Some(flag));
                    }
                }
            }
            Reduce
            | ReduceSend
            | ReadReduce
            | ReadReduceSend
            | ReducePackets
            | ReduceSendPackets
            | ReduceCopyPackets
            | ReduceCopySendPackets => {
                let packets = op.name.uses_packets();
                let s0 = src(0)?;
                let (so, n) = self.range(r, s0, op, it)?;
                let sp = self.one(r, s0, so, n, false)?;
                self.read(&sp, inst, false, a);
                for s in op.srcs.iter().skip(1) {
                    let (o, _) = self.range(r, s, op, it)?;
                    let p = self.one(r, s, o, n, packets)?;
                    if packets {
                        self.read(&p, inst, true, b);
                        reduce_into(dt, red, a, b);
                    } else {
                        self.settle(&p, inst);
                        self.record(&p, inst, false, false, 0);
                        let m = &self.mem[p.rank][p.alloc];
                        reduce_into(dt, red, a, &m[p.off as usize..(p.off + p.len) as usize]);
                    }
                }
                for (k, d) in op.dsts.iter().enumerate() {
                    let packet_out = match op.name {
                        ReduceSendPackets | ReduceCopyPackets | ReduceCopySendPackets => k >= 1,
                        _ => false,
                    };
                    if op.name == ReducePackets && k >= 1 || op.name == ReduceCopyPackets && k >= 2 {
                        break;
                    }
                    if matches!(op.name, Reduce | ReadReduce) && k >= 1 {
                        break;
                    }
                    let (o, _) = self.range(r, d, op, it)?;
                    for dp in self.places(r, d, o, n, packet_out)? {
                        self.write(r, &dp, inst, a, packet_out.then_some(flag));
                    }
                }
            }
            MultiLoadReduceStore | MultiLoadReduce => {
                let s0 = src(0)?;
                let (so, n) = self.range(r, s0, op, it)?;
                let sps = self.places(r, s0, so, n, false)?;
                for (k, p) in sps.iter().enumerate() {
                    if k == 0 {
                        self.read(p, inst, false, a);
                    } else {
                        self.read(p, inst, false, b);
                        reduce_into(dt, red, a, b);
                    }
                }
                let d = dst(0)?;
                let (dof, _) = self.range(r, d, op, it)?;
                for dp in self.places(r, d, dof, n, false)? {
                    self.write(r, &dp, inst, a, None);
                }
            }
            MultiStore | MultiStorePackets => {
                let packet = op.name == MultiStorePackets;
                let s0 = src(0)?;
                let (so, n) = self.range(r, s0, op, it)?;
                let sp = self.one(r, s0, so, n, packet)?;
                self.read(&sp, inst, packet, a);
                let d = dst(0)?;
                let (dof, _) = self.range(r, d, op, it)?;
                for dp in self.places(r, d, dof, n, packet)? {
                    self.write(r, &dp, inst, a, packet.then_some(flag));
                }
            }
            PutWithSignal | PutWithSignalAndFlush => {
                return Err(format!("`{}` needs a port channel", op.name));
            }
            _ => {}
        }
        Ok(())
    }

    /// Port-channel transfers: thread i posts one trigger per destination; the proxy moves the data later.
    fn exec_port(&mut self, r: usize, t: usize, op: &'a OpR, it: Option<(IterContext, u64)>) -> Result<bool, String> {
        use OpName::*;
        if let Phase::Flush(seqs) = self.tbs[r][t].phase.clone() {
            self.finish_flush(r, t, &seqs);
            return Ok(true);
        }
        let raw = matches!(op.name, PutPackets | ReadPutPackets);
        if op.name == ReadPutPackets {
            // All threads wait for every local packet, then __syncthreads().
            let inst = self.new_inst(r, Agent::ThreadBlock { tb: t }, Some(op), it, self.tb_threads(r, t));
            let s = op.srcs.first().ok_or_else(|| "no source buffer".to_string())?;
            let (so, n) = self.range(r, s, op, it)?;
            let sp = self.one(r, s, so, n, true)?;
            let mut a = std::mem::take(&mut self.tmp_a);
            self.read(&sp, inst, true, &mut a);
            self.tmp_a = a;
            self.clocks.join_all(self.tb_threads(r, t));
        }
        let threads = self.sync_threads(r, t, op.dsts.len());
        let _ = self.new_inst(r, Agent::ThreadBlock { tb: t }, Some(op), it, threads.clone());
        let mut seqs = Vec::new();
        for (i, d) in op.dsts.iter().enumerate() {
            let s = op.srcs.get(i).or(op.srcs.last()).ok_or_else(|| "no source buffer".to_string())?;
            let (so, n) = self.range(r, s, op, it)?;
            let (dof, _) = self.range(r, d, op, it)?;
            let sp = self.one(r, s, so, n, raw)?;
            let dp = self.one(r, d, dof, n, raw)?;
            let chan = op.chans.get(i).copied();
            let flag_chan = if matches!(op.name, PutWithSignal | PutWithSignalAndFlush) { chan } else { None };
            let seq = self.push_trigger(r, t, op, it, threads.start + i, Some((sp, dp, raw)), flag_chan);
            seqs.push(seq);
        }
        if op.name == PutWithSignalAndFlush {
            self.tbs[r][t].phase = Phase::Flush(seqs);
            return Ok(false);
        }
        Ok(true)
    }
}
