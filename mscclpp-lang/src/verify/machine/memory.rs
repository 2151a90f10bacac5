//! Simulated memory and its shadow state: the accesses that record themselves for race detection, delayed
//! remote writes, packet reads and writes, and the computation of the bytes an operation reference touches.

use std::rc::Rc;

use crate::plan::{BufferType, IterContext};
use crate::verify::clock::Clocks;
use crate::verify::finding::{Access, Agent, Detail, FindingKind};
use crate::verify::packet;
use crate::verify::resolve::{OpR, RefR, Target};
use crate::verify::shadow::{Acc, Conflict, ConflictKind};

use super::fault::Fault;
use super::{Inst, Machine, Pending, Place};

impl<'a> Machine<'a> {
    // ----------------------------------------------------------------------------------------------------
    // Instances and accesses

    pub(super) fn tb_threads(&self, r: usize, t: usize) -> std::ops::Range<usize> {
        let b = self.base[r][t];
        b..b + self.s.prog.ranks[r].tbs[t].sync_threads + 1
    }

    pub(super) fn new_inst(
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

    pub(super) fn ordered_with(clocks: &Clocks, insts: &[Inst], log: &[Acc], cur: u32, prev: u32, exe: bool) -> bool {
        let c = &insts[cur as usize];
        let p = &insts[log[prev as usize].inst as usize];
        c.thr.iter().all(|&(ct, _)| p.thr.iter().all(|&(pt, pe)| clocks.knows(ct as usize, pt as usize, pe, exe)))
    }

    pub(super) fn record(&mut self, p: &Place, inst: u32, write: bool, packet: bool, flag: u32) -> u32 {
        self.record_same(p, inst, write, packet, flag, false)
    }

    pub(super) fn record_same(
        &mut self,
        p: &Place,
        inst: u32,
        write: bool,
        packet: bool,
        flag: u32,
        same: bool,
    ) -> u32 {
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

    pub(super) fn report_conflict(&mut self, c: &Conflict, cur: u32) {
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
    pub(super) fn settle(&mut self, p: &Place, inst: u32) {
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

    pub(super) fn apply(&mut self, p: &Place, data: &[u8]) {
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
    pub(super) fn read(&mut self, p: &Place, inst: u32, packet: bool, out: &mut Vec<u8>) {
        self.read_mode(p, inst, packet, packet, out)
    }

    /// Reads `p`; `packet` records a packet access (ordered by flags), `decode` extracts the payload.
    pub(super) fn read_mode(&mut self, p: &Place, inst: u32, packet: bool, decode: bool, out: &mut Vec<u8>) {
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
    pub(super) fn write(&mut self, exec_rank: usize, p: &Place, inst: u32, data: &[u8], packet: Option<u32>) {
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
        if self.delayed && p.rank != exec_rank {
            self.pending.push(Pending { place: *p, acc, data: data.to_vec() });
        } else {
            self.apply(p, data);
        }
    }

    /// A raw copy of packet bytes (port-channel packet transfers); the flags travel with the data.
    pub(super) fn write_raw_packets(&mut self, p: &Place, inst: u32, data: &[u8], flag: u32) {
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
    pub(super) fn flag(&self, r: usize) -> u32 {
        self.flag_base + self.ranks[r].launch
    }

    pub(super) fn scratch_offset(&self, r: usize) -> u64 {
        if self.s.plan.double_scratch() && self.flag(r).is_multiple_of(2) { self.s.scratch_half[r] } else { 0 }
    }

    /// `(offset, bytes)` of a reference in payload bytes, after thread-block-group and pipeline slicing.
    pub(super) fn range(
        &self,
        er: usize,
        rf: &RefR,
        op: &OpR,
        it: Option<(IterContext, u64)>,
    ) -> Result<(u64, u64), Fault> {
        let layout = &self.s.layouts[er];
        let (off, bytes) = layout.range_tbg(rf.index, rf.size, op.tbg);
        match it {
            Some((ic, i)) if op.name.honours_pipeline_offset() => {
                layout.pipeline_slice(off, bytes, ic, i).ok_or(Fault::PipelineUnderflow {
                    iteration: i,
                    start: i * ic.unit_size,
                    bytes,
                    num_chunks: ic.num_chunks,
                })
            }
            _ => Ok((off, bytes)),
        }
    }

    pub(super) fn view(&self, r: usize, b: BufferType) -> (usize, u64, u64) {
        let pl = &self.s.placements[r];
        match b {
            BufferType::Input => (0, pl.input_offset, self.s.sizes.input),
            BufferType::Output => (if pl.shared { 0 } else { 1 }, pl.output_offset, self.s.sizes.output),
            BufferType::Scratch => (2, self.scratch_offset(r), self.s.scratch_half[r]),
        }
    }

    /// The bytes a reference touches: `off`/`len` in payload bytes, doubled for packet format.
    pub(super) fn places(&self, er: usize, rf: &RefR, off: u64, len: u64, packet: bool) -> Result<Vec<Place>, Fault> {
        let (off, len) = if packet { (off * 2, len * 2) } else { (off, len) };
        let one = |owner: usize, b: BufferType, local: bool| -> Result<Place, Fault> {
            let (alloc, _, view_len) = self.view(owner, b);
            let (base, limit) = match b {
                BufferType::Scratch => (self.scratch_offset(er), self.s.scratch_half[owner]),
                _ if local => (self.view(er, b).1, view_len),
                BufferType::Input => (self.s.placements[er].input_offset, self.s.placements[owner].input_alloc),
                BufferType::Output => (self.s.placements[er].output_offset, self.s.placements[owner].output_alloc),
            };
            let rel_end = if local || b == BufferType::Scratch { off + len } else { base + off + len };
            if rel_end > limit {
                return Err(Fault::OutsideBuffer {
                    packets: packet,
                    local,
                    start: if local || b == BufferType::Scratch { off } else { base + off },
                    end: rel_end,
                    owner,
                    buffer: b,
                    limit,
                    per_half: b == BufferType::Scratch && self.s.plan.double_scratch(),
                });
            }
            // Ranks may size their buffers differently (their chunk counts are the plan's): the view of one rank
            // applied to another's allocation must still fit it.
            let size = self.mem[owner][alloc].len() as u64;
            if base.saturating_add(off).saturating_add(len) > size {
                return Err(Fault::BeyondAllocation {
                    packets: packet,
                    start: base.saturating_add(off),
                    end: base.saturating_add(off).saturating_add(len),
                    owner,
                    buffer: b,
                    size,
                });
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

    pub(super) fn one(&self, r: usize, rf: &RefR, off: u64, len: u64, packet: bool) -> Result<Place, Fault> {
        let mut v = self.places(r, rf, off, len, packet)?;
        v.pop().ok_or(Fault::Unresolved)
    }
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
    if matches!(a.agent, Agent::Proxy { .. }) || matches!(b.agent, Agent::Proxy { .. }) {
        return "the proxy carries out a port-channel `put` some time after the thread block posted it: the \
                source may be reused (or refilled by the host for the next launch) only after a `flush` on that \
                channel, and the destination is visible to the peer only after a signal that follows the put; \
                use `put_with_signal_and_flush` (`pwsf`), or `put_with_signal` followed by `flush`"
            .to_string();
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
