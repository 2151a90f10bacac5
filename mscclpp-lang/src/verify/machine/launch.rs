//! Launch boundaries (the host fills the input before a launch and checks the output after it), the progress
//! of thread blocks through their operations, readiness of blocked operations, and the reports of deadlocks,
//! step limits and unbalanced synchronisation.

use crate::data::first_mismatch;
use crate::location::Location;
use crate::location::SourceLocation;
use crate::plan::{BufferType, ChannelType, IterContext, OpName};
use crate::verify::diagnose;
use crate::verify::finding::{Agent, Blocked, Detail, FindingKind};
use crate::verify::packet;
use crate::verify::resolve::{OpR, RankProg, RefR};

use super::{Entity, Machine, Phase, Place, TbState, kind_index};

impl<'a> Machine<'a> {
    // Launches

    pub(super) fn start_launch(&mut self, r: usize) {
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

    pub(super) fn end_launch(&mut self, r: usize) {
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

    pub(super) fn compare(&mut self, r: usize, l: u32, buffer: &str, want: &[u8], got: &[u8], test: Option<()>) {
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
    pub(super) fn normalize(&mut self, r: usize, t: usize) {
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

    pub(super) fn advance(&mut self, r: usize, t: usize) {
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

    pub(super) fn current(&self, r: usize, t: usize) -> Option<(&'a OpR, Option<(IterContext, u64)>)> {
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

impl<'a> Machine<'a> {
    /// The packet sources an operation waits for.
    pub(super) fn packet_srcs(op: &OpR) -> &[RefR] {
        &op.srcs[op.name.packet_sources(op.srcs.len())]
    }

    /// The first packet source that is not ready: (place, packet index, flag found). `from` skips packets known
    /// to be valid: (source position, byte offset in it).
    pub(super) fn unready_packets(
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

    pub(super) fn ready(&mut self, r: usize, t: usize, op: &OpR, it: Option<(IterContext, u64)>) -> bool {
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
            (n, Phase::Idle) if n.reads_packets() => {
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
    pub(super) fn waits_for(&self, r: usize, t: usize) -> Option<Blocked> {
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
            (n, Phase::Idle) if n.reads_packets() => match self.unready_packets(r, op, it, (0, 0)) {
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
            location: Location::op(r, t, op.index, op.name.as_str()).inner(op.inner).with_source(&op.source),
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
            message.push_str(&format!("\n  {} (launch {}) waits for {}", b.location, b.launch, b.waits_for));
        }
        let done: Vec<String> =
            self.ranks.iter().enumerate().filter(|(_, s)| s.finished).map(|(r, _)| r.to_string()).collect();
        if !done.is_empty() {
            message.push_str(&format!("\n  ranks that finished all launches: {}", done.join(", ")));
        }
        let key = blocked.iter().map(|b| b.location.to_string()).collect::<Vec<_>>().join(";");
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
        let prog = self.s.prog;
        for (r, rp) in prog.ranks.iter().enumerate() {
            for (k, kind) in [ChannelType::Memory, ChannelType::Port].into_iter().enumerate() {
                for (c, tk) in self.tokens[r][k].iter().enumerate() {
                    let end = rp.chans(kind)[c];
                    let on = |o: &OpR, chan: usize| o.ctype == Some(kind) && o.chans.contains(&chan);
                    let signals = |o: &OpR, chan: usize| on(o, chan) && is_signal(o.name);
                    let waits =
                        |o: &OpR, chan: usize| on(o, chan) && matches!(o.name, OpName::Wait | OpName::RelaxedWait);
                    if tk.count != tk.waited {
                        let peer_signals = match (prog.ranks.get(end.peer), end.partner) {
                            (Some(peer), Some(partner)) => calls_of(peer, |o| signals(o, partner)),
                            _ => String::new(),
                        };
                        let calls = list_calls(&[("signals", peer_signals), ("waits", calls_of(rp, |o| waits(o, c)))]);
                        found.push((
                            r,
                            format!("{kind} channel {c}"),
                            format!(
                                "rank {r} {kind} channel {c} (paired with rank {}'s channel {}): {} signal(s) arrived \
                                 over {} launches but {} wait(s) consumed them; signals and waits must balance in \
                                 every launch{calls}",
                                end.peer,
                                end.partner.map_or("-".to_string(), |p| p.to_string()),
                                tk.count,
                                self.s.launches,
                                tk.waited
                            ),
                        ));
                    }
                    if tk.unpaired > 0 {
                        let calls = list_calls(&[("signals", calls_of(rp, |o| signals(o, c)))]);
                        found.push((
                            r,
                            format!("{kind} channel {c} unpaired"),
                            format!(
                                "rank {r} {kind} channel {c} to rank {} has no partner channel on rank {} (pairing \
                                 rule: the k-th channel A->B pairs with the k-th channel B->A); its {} signal(s) \
                                 are never waited for{calls}",
                                end.peer, end.peer, tk.unpaired
                            ),
                        ));
                    }
                }
            }
            for (i, sem) in self.sems[r].iter().enumerate() {
                let init = rp.sems[i];
                if sem.value != init {
                    let uses = |name: OpName| calls_of(rp, |o| o.name == name && o.sems.contains(&i));
                    let calls =
                        list_calls(&[("releases", uses(OpName::SemRelease)), ("acquires", uses(OpName::SemAcquire))]);
                    found.push((
                        r,
                        format!("semaphore {i}"),
                        format!(
                            "rank {r} device semaphore {i} ends at {} after {} launches, but starts at {init}: \
                             releases and acquires differ by {} (they must balance in every launch){calls}",
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
}

/// Whether `name` signals its channel's peer.
fn is_signal(name: OpName) -> bool {
    matches!(name, OpName::Signal | OpName::RelaxedSignal | OpName::PutWithSignal | OpName::PutWithSignalAndFlush)
}

/// The program source lines of the operations of a rank that `pick` chooses, each once in plan order:
/// "`wait` at src/lib.rs:14:9, `wait` at src/lib.rs:20:9"; empty when the plan carries none.
fn calls_of(rp: &RankProg, pick: impl Fn(&OpR) -> bool) -> String {
    let mut seen: Vec<&SourceLocation> = Vec::new();
    for op in rp.tbs.iter().flat_map(|tb| &tb.ops) {
        for o in std::iter::once(op).chain(op.pipeline.iter().flat_map(|(_, inner)| inner)) {
            if pick(o) {
                for s in &o.source {
                    if !seen.contains(&s) {
                        seen.push(s);
                    }
                }
            }
        }
    }
    seen.iter().map(ToString::to_string).collect::<Vec<_>>().join(", ")
}

/// " (signals at ...; waits at ...)" from the non-empty `(what, calls)` pairs; empty when all are.
fn list_calls(parts: &[(&str, String)]) -> String {
    let parts: Vec<String> =
        parts.iter().filter(|(_, calls)| !calls.is_empty()).map(|(what, calls)| format!("{what}: {calls}")).collect();
    if parts.is_empty() { String::new() } else { format!(" ({})", parts.join("; ")) }
}
