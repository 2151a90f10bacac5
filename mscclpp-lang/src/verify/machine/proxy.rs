//! Port channels: a thread posts a trigger into its rank's proxy FIFO; the proxy later moves the data,
//! delivers the signal to the partner channel and completes flushes in FIFO order.

use std::collections::{HashMap, VecDeque};

use crate::plan::{IterContext, OpName};
use crate::verify::clock::Snap;
use crate::verify::finding::Agent;
use crate::verify::resolve::OpR;

use super::fault::Fault;
use super::{Machine, Phase, Place};

/// A trigger a thread posted: an optional transfer and an optional signal, completed in FIFO order.
#[derive(Debug, Clone)]
pub(super) struct Trigger {
    seq: u64,
    clock: Snap,
    tb: usize,
    op: (usize, Option<usize>, OpName),
    launch: u32,
    iteration: Option<u64>,
    data: Option<(Place, Place, bool, u32)>,
    flag_chan: Option<usize>,
}

/// The proxy of one rank: its FIFO of triggers and the clocks of the triggers it completed.
#[derive(Debug, Clone, Default)]
pub(super) struct Proxy {
    pub(super) fifo: VecDeque<Trigger>,
    next: u64,
    pub(super) done: u64,
    snaps: HashMap<u64, Snap>,
}

impl<'a> Machine<'a> {
    pub(super) fn finish_flush(&mut self, r: usize, t: usize, seqs: &[u64]) {
        let b = self.base[r][t];
        for (i, s) in seqs.iter().enumerate() {
            if let Some(snap) = self.proxies[r].snaps.get(s).cloned() {
                self.clocks.acquire(b + i, &snap, true);
            }
        }
    }

    #[allow(clippy::too_many_arguments)]
    pub(super) fn push_trigger(
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

    pub(super) fn step_proxy(&mut self, r: usize) {
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

    /// Port-channel transfers: thread i posts one trigger per destination (in reverse order under
    /// [`Machine::reverse_triggers`]); the proxy moves the data later.
    pub(super) fn exec_port(
        &mut self,
        r: usize,
        t: usize,
        op: &'a OpR,
        it: Option<(IterContext, u64)>,
    ) -> Result<bool, Fault> {
        use OpName::*;
        if let Phase::Flush(seqs) = self.tbs[r][t].phase.clone() {
            self.finish_flush(r, t, &seqs);
            return Ok(true);
        }
        let raw = op.name.uses_packets();
        if op.name == ReadPutPackets {
            // All threads wait for every local packet, then __syncthreads().
            let inst = self.new_inst(r, Agent::ThreadBlock { tb: t }, Some(op), it, self.tb_threads(r, t));
            let s = op.srcs.first().ok_or(Fault::Missing("source"))?;
            let (so, n) = self.range(r, s, op, it)?;
            let sp = self.one(r, s, so, n, true)?;
            let mut a = std::mem::take(&mut self.tmp_a);
            self.read(&sp, inst, true, &mut a);
            self.tmp_a = a;
            self.clocks.join_all(self.tb_threads(r, t));
        }
        let threads = self.sync_threads(r, t, op.dsts.len());
        let _ = self.new_inst(r, Agent::ThreadBlock { tb: t }, Some(op), it, threads.clone());
        // Thread i posts destination i's trigger; the threads race for the FIFO, so the order is not fixed.
        let n_dst = op.dsts.len();
        let mut seqs = vec![0; n_dst];
        for k in 0..n_dst {
            let i = if self.reverse_triggers { n_dst - 1 - k } else { k };
            let d = &op.dsts[i];
            let s = op.srcs.get(i).or(op.srcs.last()).ok_or(Fault::Missing("source"))?;
            let (so, n) = self.range(r, s, op, it)?;
            let (dof, _) = self.range(r, d, op, it)?;
            let sp = self.one(r, s, so, n, raw)?;
            let dp = self.one(r, d, dof, n, raw)?;
            let chan = op.chans.get(i).copied();
            let flag_chan = if op.name.is_put_with_signal() { chan } else { None };
            seqs[i] = self.push_trigger(r, t, op, it, threads.start + i, Some((sp, dp, raw)), flag_chan);
        }
        if op.name == PutWithSignalAndFlush {
            self.tbs[r][t].phase = Phase::Flush(seqs);
            return Ok(false);
        }
        Ok(true)
    }
}
