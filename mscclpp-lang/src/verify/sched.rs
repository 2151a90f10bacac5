//! The deterministic, seeded scheduler: one step advances one runnable thread block (or proxy) by one operation.

use super::finding::Finding;
use super::machine::{Machine, Memory, Observed, Setup};
use crate::data::SplitMix64;

/// How a schedule picks the next step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Strategy {
    /// Cycle through the agents; with immediate visibility this is the sequentially consistent reference run.
    RoundRobin,
    /// Uniformly random among the runnable agents.
    Random,
    /// The first runnable agent in a fixed priority order runs as far as it can, then the next.
    RunAhead(RunAheadOrder),
}

/// Priority orders of [`Strategy::RunAhead`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunAheadOrder {
    /// Thread blocks by rank and id, proxies last.
    Forward,
    /// The reverse.
    Reverse,
    /// A seeded random permutation.
    Shuffled,
}

/// One schedule: a strategy, whether remote writes become visible at the last legal moment, and a seed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Schedule {
    /// How the next step is picked.
    pub strategy: Strategy,
    /// Delay remote writes until an access that happens after them needs them.
    pub delayed_visibility: bool,
    /// Seed of the random choices.
    pub seed: u64,
}

impl Schedule {
    /// The k-th schedule of a run seeded with `seed`: 0 is the sequentially consistent round robin, then
    /// run-ahead forward, run-ahead reverse with delayed visibility, random with delayed visibility, and then
    /// random and shuffled run-ahead schedules, with and without delayed visibility.
    pub fn nth(k: u32, seed: u64) -> Schedule {
        let s = seed ^ (k as u64).wrapping_mul(0xD1B5_4A32_D192_ED03);
        let (strategy, delayed_visibility) = match k {
            0 => (Strategy::RoundRobin, false),
            1 => (Strategy::RunAhead(RunAheadOrder::Forward), false),
            2 => (Strategy::RunAhead(RunAheadOrder::Reverse), true),
            3 => (Strategy::Random, true),
            _ => match k % 4 {
                0 => (Strategy::Random, false),
                1 => (Strategy::RunAhead(RunAheadOrder::Shuffled), false),
                2 => (Strategy::Random, true),
                _ => (Strategy::RunAhead(RunAheadOrder::Shuffled), true),
            },
        };
        Schedule { strategy, delayed_visibility, seed: s }
    }

    /// A short description.
    pub fn describe(&self) -> String {
        let s = match &self.strategy {
            Strategy::RoundRobin => "round robin".to_string(),
            Strategy::Random => "random".to_string(),
            Strategy::RunAhead(RunAheadOrder::Forward) => "run-ahead".to_string(),
            Strategy::RunAhead(RunAheadOrder::Reverse) => "run-ahead reversed".to_string(),
            Strategy::RunAhead(RunAheadOrder::Shuffled) => "run-ahead shuffled".to_string(),
        };
        if self.delayed_visibility { format!("{s}, delayed visibility") } else { s }
    }
}

/// The result of one schedule.
pub(crate) struct Outcome {
    pub findings: Vec<Finding>,
    pub steps: u64,
    pub observed: Observed,
    pub complete: bool,
    /// The simulated memory, for reuse by the next schedule.
    pub mem: Memory,
}

/// Runs every launch under one schedule.
pub(crate) fn run(
    setup: &Setup<'_>,
    sched: &Schedule,
    test_ref: Option<&Observed>,
    record: bool,
    step_limit: u64,
    mem: Option<Memory>,
    flag_base: u32,
) -> Outcome {
    let mut m = Machine::new(setup, sched.delayed_visibility, test_ref, mem);
    m.record = record;
    m.flag_base = flag_base;
    m.reverse_triggers = sched.delayed_visibility;
    m.start();
    let ents = m.entities.clone();
    let mut rng = SplitMix64::new(sched.seed);
    let order: Vec<usize> = match &sched.strategy {
        Strategy::RunAhead(RunAheadOrder::Reverse) => (0..ents.len()).rev().collect(),
        Strategy::RunAhead(RunAheadOrder::Shuffled) => {
            let mut v: Vec<usize> = (0..ents.len()).collect();
            for i in (1..v.len()).rev() {
                let j = rng.below(i as u64 + 1) as usize;
                v.swap(i, j);
            }
            v
        }
        _ => (0..ents.len()).collect(),
    };
    let mut steps = 0u64;
    let mut rr = 0usize;
    let mut runnable = Vec::new();
    let mut complete = false;
    loop {
        if m.finished() {
            complete = true;
            break;
        }
        let pick = match &sched.strategy {
            Strategy::RoundRobin => {
                let n = ents.len();
                (0..n).map(|k| (rr + k) % n).find(|&i| m.runnable(ents[i]))
            }
            Strategy::RunAhead(_) => order.iter().copied().find(|&i| m.runnable(ents[i])),
            Strategy::Random => {
                runnable.clear();
                for (i, &e) in ents.iter().enumerate() {
                    if m.runnable(e) {
                        runnable.push(i);
                    }
                }
                if runnable.is_empty() { None } else { Some(runnable[rng.below(runnable.len() as u64) as usize]) }
            }
        };
        let Some(i) = pick else {
            m.report_deadlock();
            break;
        };
        rr = i + 1;
        m.step(ents[i]);
        steps += 1;
        if steps >= step_limit {
            m.report_step_limit(steps);
            break;
        }
    }
    m.flush_pending();
    if complete {
        m.check_balance();
    }
    let observed = std::mem::take(&mut m.observed);
    Outcome { findings: std::mem::take(&mut m.findings), steps, observed, complete, mem: m.into_memory() }
}
