//! The interpreter of the operations a thread block runs: synchronisation (nop, barrier, signal/wait,
//! semaphores, flush) and data movement (copies, puts, gets, reductions, packets, switch operations).

use crate::data::reduce_into;
use crate::location::Location;
use crate::plan::{ChannelType, IterContext, OpName};
use crate::verify::finding::{Agent, Detail, FindingKind};
use crate::verify::resolve::OpR;

use super::fault::Fault;
use super::{Entity, Machine, Phase, kind_index};

impl<'a> Machine<'a> {
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

    /// Records an operation that touches bytes outside a buffer.
    pub(super) fn oob(&mut self, r: usize, t: usize, op: &OpR, what: Fault) {
        let location = Location::op(r, t, op.index, op.name.as_str()).inner(op.inner).with_source(&op.source);
        let message = format!("out-of-bounds access: {location} (launch {}): {what}", self.ranks[r].launch);
        self.add(
            FindingKind::OutOfBounds,
            format!("{r}:{t}:{}:{:?}", op.index, op.inner),
            message,
            Detail::OutOfBounds { location, what: what.to_string() },
        );
    }

    pub(super) fn sync_threads(&self, r: usize, t: usize, n: usize) -> std::ops::Range<usize> {
        let b = self.base[r][t];
        b..b + n
    }

    /// Executes (part of) an operation; `Ok(true)` when it completed.
    pub(super) fn exec(
        &mut self,
        r: usize,
        t: usize,
        op: &'a OpR,
        it: Option<(IterContext, u64)>,
    ) -> Result<bool, Fault> {
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
                        Some(f) => crate::verify::clock::max_into(f, &fenced),
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

    pub(super) fn exec_data(
        &mut self,
        r: usize,
        t: usize,
        op: &'a OpR,
        it: Option<(IterContext, u64)>,
        flag: u32,
    ) -> Result<bool, Fault> {
        if op.ctype == Some(ChannelType::Port) && op.name.is_put() {
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
    pub(super) fn data_body(
        &mut self,
        r: usize,
        op: &'a OpR,
        it: Option<(IterContext, u64)>,
        flag: u32,
        inst: u32,
        a: &mut Vec<u8>,
        b: &mut Vec<u8>,
    ) -> Result<(), Fault> {
        use OpName::*;
        let dt = self.s.dtype;
        let red = op.reduce;
        let src = |i: usize| op.srcs.get(i).or(op.srcs.last()).ok_or(Fault::Missing("source"));
        let dst = |i: usize| op.dsts.get(i).or(op.dsts.last()).ok_or(Fault::Missing("destination"));
        match op.name {
            Copy | Put | CopyPackets | UnpackPackets | PutPackets => {
                let (src_packet, dst_packet) = (op.name.reads_packets(), op.name.writes_packets());
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
                let packet_srcs = op.name.packet_sources(op.srcs.len());
                let packet_dsts = op.name.packet_destinations(op.dsts.len());
                let s0 = src(0)?;
                let (so, n) = self.range(r, s0, op, it)?;
                let sp = self.one(r, s0, so, n, false)?;
                self.read(&sp, inst, false, a);
                for (i, s) in op.srcs.iter().enumerate().skip(1) {
                    let packets = packet_srcs.contains(&i);
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
                    let packet_out = packet_dsts.contains(&k);
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
                return Err(Fault::NeedsPortChannel(op.name.to_string()));
            }
            _ => {}
        }
        Ok(())
    }
}
