//! The campaign loop: mutate seeds, run the target, catch panics, keep inputs that reach a new outcome class,
//! and save every input that breaks the contract.

use std::collections::HashSet;
use std::panic::AssertUnwindSafe;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use crate::mutate::mutate;
use crate::rng::Rng;
use crate::targets::Target;

/// How a campaign runs.
#[derive(Clone, Debug)]
pub struct Campaign {
    /// The target.
    pub target: Target,
    /// Stop after this many inputs.
    pub max_inputs: u64,
    /// Stop after this long.
    pub max_time: Duration,
    /// Seed of the mutations.
    pub seed: u64,
    /// Largest input.
    pub max_len: usize,
    /// Where inputs that break the contract are saved (`None`: not saved).
    pub crash_dir: Option<PathBuf>,
    /// Most inputs kept for reaching a new outcome class.
    pub max_corpus: usize,
}

/// What a campaign did.
#[derive(Clone, Debug, Default)]
pub struct Stats {
    /// Inputs run (seeds included).
    pub inputs: u64,
    /// Inputs that ended in `Ok` of the code under test.
    pub accepted: u64,
    /// Inputs that ended in an error naming what is wrong.
    pub rejected: u64,
    /// Inputs that panicked or broke the contract (each saved when a crash folder is set).
    pub crashes: Vec<Crash>,
    /// Distinct outcome classes reached.
    pub classes: usize,
    /// Inputs in the working corpus at the end.
    pub corpus: usize,
    /// Time spent.
    pub elapsed: Duration,
    /// The slowest input's time.
    pub slowest: Duration,
}

/// One input that broke the contract.
#[derive(Clone, Debug)]
pub struct Crash {
    /// What happened (the panic message or the broken contract).
    pub what: String,
    /// Where the input was saved.
    pub saved: Option<PathBuf>,
}

/// A stable 64-bit hash (FNV-1a) of an input, for file names.
pub fn hash(data: &[u8]) -> u64 {
    data.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| (h ^ b as u64).wrapping_mul(0x100_0000_01b3))
}

fn panic_message(p: &(dyn std::any::Any + Send)) -> String {
    p.downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic without a message".into())
}

/// Runs one input, catching panics: `Ok(class)` or `Err(what broke)`.
pub fn run_one(target: Target, data: &[u8]) -> Result<String, String> {
    match std::panic::catch_unwind(AssertUnwindSafe(|| target.run(data))) {
        Ok(r) => r,
        Err(p) => Err(format!("panic: {}", panic_message(p.as_ref()))),
    }
}

/// Called before each input runs (the binary records it for its hang and allocation guards).
pub type Observer<'a> = &'a mut dyn FnMut(&[u8]);

/// Runs `c` from `seeds`; `before` sees each input before it runs.
pub fn run(c: &Campaign, seeds: &[Vec<u8>], before: Observer<'_>) -> Stats {
    let start = Instant::now();
    let mut rng = Rng::new(c.seed);
    let mut stats = Stats::default();
    let mut corpus: Vec<Vec<u8>> = Vec::new();
    let mut classes: HashSet<String> = HashSet::new();
    let mut record = |data: &[u8], r: Result<String, String>, stats: &mut Stats, corpus: &mut Vec<Vec<u8>>| {
        stats.inputs += 1;
        match r {
            Ok(class) => {
                if class.starts_with("accepted")
                    || class.starts_with("verified")
                    || class.contains("built")
                    || class.contains("selected")
                {
                    stats.accepted += 1;
                } else {
                    stats.rejected += 1;
                }
                if !classes.contains(&class) {
                    classes.insert(class);
                    if corpus.len() < c.max_corpus {
                        corpus.push(data.to_vec());
                    }
                }
            }
            Err(what) => {
                let saved = c.crash_dir.as_ref().and_then(|d| {
                    let p = d.join(format!("{}-{:016x}.bin", c.target.name(), hash(data)));
                    std::fs::create_dir_all(d).ok()?;
                    std::fs::write(&p, data).ok()?;
                    Some(p)
                });
                stats.crashes.push(Crash { what, saved });
            }
        }
    };
    let timed = |data: &[u8], before: &mut dyn FnMut(&[u8]), slowest: &mut Duration| {
        before(data);
        let t = Instant::now();
        let r = run_one(c.target, data);
        *slowest = (*slowest).max(t.elapsed());
        r
    };
    for s in seeds {
        if stats.inputs >= c.max_inputs {
            break;
        }
        let r = timed(s, before, &mut stats.slowest);
        record(s, r, &mut stats, &mut corpus);
        if !corpus.iter().any(|k| k == s) {
            corpus.push(s.clone());
        }
    }
    if corpus.is_empty() {
        corpus.push(Vec::new());
    }
    let mut data = Vec::with_capacity(c.max_len);
    while stats.inputs < c.max_inputs && start.elapsed() < c.max_time {
        let parent = &corpus[rng.below(corpus.len())];
        let other = &corpus[rng.below(corpus.len())];
        data.clear();
        data.extend_from_slice(parent);
        mutate(&mut rng, &mut data, other, c.max_len);
        let r = timed(&data, before, &mut stats.slowest);
        record(&data, r, &mut stats, &mut corpus);
    }
    stats.classes = classes.len();
    stats.corpus = corpus.len();
    stats.elapsed = start.elapsed();
    stats
}
