//! `mscclpp-fuzz`: runs fuzz campaigns with a hang guard and an allocation guard.
//!
//! ```text
//! mscclpp-fuzz TARGET|all [--seconds S] [--inputs N] [--seed X] [--max-len B] [--crashes DIR] [--hang-ms MS]
//! ```
//! Targets: plan, registry, verify, bootstrap. Prints one summary line per target (`key=value` pairs) and exits
//! non-zero when an input broke the contract. An input that runs past `--hang-ms`, or asks for one allocation
//! over 1 GiB (or more than 2 GiB live), is saved under the crash folder and the process exits with status 3
//! (hang: CPU time of the input, so a starved campaign is not a hang) or 4 (allocation). With
//! `FUZZ_DEBUG_PANICS` set, the panics of inputs are printed with their backtraces.

use std::alloc::{GlobalAlloc, Layout, System};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicPtr, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mscclpp_algorithms as _;
use mscclpp_fuzz::{Campaign, Target, driver, seeds};

/// Largest single allocation an input may cause.
const MAX_ALLOCATION: usize = 1 << 30;
/// Most live heap bytes.
const MAX_LIVE: usize = 2 << 30;

/// The current input, for the allocation guard (valid while `CURRENT_LEN` is non-zero).
static CURRENT: AtomicPtr<u8> = AtomicPtr::new(std::ptr::null_mut());
static CURRENT_LEN: AtomicUsize = AtomicUsize::new(0);
/// An open file the allocation guard writes the input to (-1: none).
static OOM_FD: AtomicI32 = AtomicI32::new(-1);
static LIVE: AtomicUsize = AtomicUsize::new(0);
/// Whether the campaign loop runs (its panics are the inputs' and are reported by the driver).
static IN_INPUT: AtomicBool = AtomicBool::new(false);

/// The system allocator with a bound: an allocation over the bound saves the current input and ends the process.
struct Guarded;

fn over_bound(size: usize) -> bool {
    size > MAX_ALLOCATION || LIVE.load(Ordering::Relaxed).saturating_add(size) > MAX_LIVE
}

fn oom_exit(size: usize) -> ! {
    let fd = OOM_FD.load(Ordering::Relaxed);
    let (p, n) = (CURRENT.load(Ordering::Acquire), CURRENT_LEN.load(Ordering::Acquire));
    let msg = b"mscclpp-fuzz: an input asked for an allocation over the bound; it is saved as oom-*.bin\n";
    // SAFETY: `msg` is a valid buffer of its length; writing to stderr (fd 2) has no other precondition.
    unsafe { libc::write(2, msg.as_ptr().cast(), msg.len()) };
    if fd >= 0 && !p.is_null() && n > 0 {
        // SAFETY: the driver publishes (pointer, length) of the input it is running and clears the length before
        // the input is dropped; the allocation that got here happens while that input runs.
        unsafe { libc::write(fd, p.cast(), n) };
    }
    let _ = size;
    // SAFETY: `_exit` ends the process without running anything that could allocate.
    unsafe { libc::_exit(4) }
}

// SAFETY: every method forwards to `System` with the same layout; the guard only counts bytes and may end the
// process before forwarding.
unsafe impl GlobalAlloc for Guarded {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if over_bound(layout.size()) {
            oom_exit(layout.size());
        }
        LIVE.fetch_add(layout.size(), Ordering::Relaxed);
        // SAFETY: forwarded with the caller's layout.
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if over_bound(layout.size()) {
            oom_exit(layout.size());
        }
        LIVE.fetch_add(layout.size(), Ordering::Relaxed);
        // SAFETY: forwarded with the caller's layout.
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        // SAFETY: forwarded: `ptr` came from this allocator with `layout`.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if new_size > layout.size() && over_bound(new_size - layout.size()) || new_size > MAX_ALLOCATION {
            oom_exit(new_size);
        }
        LIVE.fetch_add(new_size, Ordering::Relaxed);
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        // SAFETY: forwarded: `ptr` came from this allocator with `layout`.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOC: Guarded = Guarded;

struct Args {
    targets: Vec<Target>,
    seconds: u64,
    inputs: u64,
    seed: u64,
    max_len: usize,
    crashes: std::path::PathBuf,
    hang_ms: u64,
}

fn usage() -> String {
    "usage: mscclpp-fuzz TARGET|all [--seconds S] [--inputs N] [--seed X] [--max-len BYTES] [--crashes DIR] \
     [--hang-ms MS]; targets: plan, registry, verify, bootstrap"
        .into()
}

fn parse_args() -> Result<Args, String> {
    let mut it = std::env::args().skip(1);
    let which = it.next().ok_or_else(usage)?;
    let targets = if which == "all" {
        Target::ALL.to_vec()
    } else {
        vec![Target::from_name(&which).ok_or_else(|| format!("unknown target {which:?}; {}", usage()))?]
    };
    let mut a = Args {
        targets,
        seconds: 60,
        inputs: u64::MAX,
        seed: 1,
        max_len: 64 << 10,
        crashes: seeds::workspace_root().join("target").join("fuzz-crashes"),
        hang_ms: 20_000,
    };
    while let Some(flag) = it.next() {
        let v = it.next().ok_or_else(|| format!("{flag} needs a value; {}", usage()))?;
        let num = || v.parse::<u64>().map_err(|_| format!("{flag} {v:?} is not a number"));
        match flag.as_str() {
            "--seconds" => a.seconds = num()?,
            "--inputs" => a.inputs = num()?,
            "--seed" => a.seed = num()?,
            "--max-len" => a.max_len = num()? as usize,
            "--hang-ms" => a.hang_ms = num()?,
            "--crashes" => a.crashes = v.into(),
            _ => return Err(format!("unknown option {flag}; {}", usage())),
        }
    }
    Ok(a)
}

/// The CPU clock of the calling thread (the campaign's), readable from other threads: the hang guard counts the
/// CPU time an input used, so a campaign that the scheduler starves (e.g. under `nice`) does not count as a hang.
fn thread_cpu_clock() -> libc::clockid_t {
    let mut id: libc::clockid_t = libc::CLOCK_MONOTONIC;
    // SAFETY: `pthread_self` is always valid; `id` is a valid place for the result.
    let rc = unsafe { libc::pthread_getcpuclockid(libc::pthread_self(), &mut id) };
    if rc == 0 { id } else { libc::CLOCK_MONOTONIC }
}

/// Milliseconds on `clock`.
fn clock_ms(clock: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid timespec to write to; an invalid clock only makes the call fail.
    let rc = unsafe { libc::clock_gettime(clock, &mut ts) };
    if rc != 0 {
        return 0;
    }
    ts.tv_sec as u64 * 1000 + ts.tv_nsec as u64 / 1_000_000
}

/// Watches the running input; past `hang_ms` of CPU time it saves the input and ends the process.
fn watchdog(
    current: Arc<Mutex<Vec<u8>>>,
    started: Arc<AtomicU64>,
    clock: libc::clockid_t,
    hang_ms: u64,
    file: std::path::PathBuf,
) {
    std::thread::spawn(move || {
        loop {
            std::thread::sleep(Duration::from_millis(100));
            let s = started.load(Ordering::Acquire);
            if s == 0 {
                continue;
            }
            let now = clock_ms(clock) + 1;
            if now.saturating_sub(s) > hang_ms {
                let data = current.lock().map(|d| d.clone()).unwrap_or_default();
                let _ = std::fs::write(&file, &data);
                eprintln!(
                    "mscclpp-fuzz: an input used more than {hang_ms} ms of CPU time; saved as {}",
                    file.display()
                );
                std::process::exit(3);
            }
        }
    });
}

fn main() -> ExitCode {
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    // Panics of inputs are caught and counted by the driver; their default report would flood the log.
    let default_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if !IN_INPUT.load(Ordering::Relaxed) || std::env::var_os("FUZZ_DEBUG_PANICS").is_some() {
            default_hook(info);
        }
    }));
    if let Err(e) = std::fs::create_dir_all(&args.crashes) {
        eprintln!("creating {}: {e}", args.crashes.display());
        return ExitCode::from(2);
    }
    let mut failed = false;
    for target in &args.targets {
        let oom = args.crashes.join(format!("oom-{}.bin", target.name()));
        if let Ok(f) = std::fs::File::create(&oom) {
            use std::os::fd::IntoRawFd;
            OOM_FD.store(f.into_raw_fd(), Ordering::Relaxed);
        }
        let current = Arc::new(Mutex::new(Vec::new()));
        let started = Arc::new(AtomicU64::new(0));
        let clock = thread_cpu_clock();
        watchdog(
            current.clone(),
            started.clone(),
            clock,
            args.hang_ms,
            args.crashes.join(format!("hang-{}.bin", target.name())),
        );
        let seeds = seeds::seeds(*target, args.max_len);
        let c = Campaign {
            target: *target,
            max_inputs: args.inputs,
            max_time: Duration::from_secs(args.seconds),
            seed: args.seed,
            max_len: args.max_len,
            crash_dir: Some(args.crashes.clone()),
            max_corpus: 4096,
        };
        let mut before = |data: &[u8]| {
            if let Ok(mut cur) = current.lock() {
                cur.clear();
                cur.extend_from_slice(data);
                CURRENT_LEN.store(0, Ordering::Release);
                CURRENT.store(cur.as_mut_ptr(), Ordering::Release);
                CURRENT_LEN.store(cur.len(), Ordering::Release);
            }
            started.store(clock_ms(clock) + 1, Ordering::Release);
            IN_INPUT.store(true, Ordering::Relaxed);
        };
        let stats = driver::run(&c, &seeds, &mut before);
        started.store(0, Ordering::Release);
        IN_INPUT.store(false, Ordering::Relaxed);
        let _ = std::fs::remove_file(&oom);
        println!(
            "target={} inputs={} accepted={} rejected={} crashes={} classes={} corpus={} seeds={} seconds={:.1} \
             inputs_per_second={:.0} slowest_ms={} seed={}",
            target.name(),
            stats.inputs,
            stats.accepted,
            stats.rejected,
            stats.crashes.len(),
            stats.classes,
            stats.corpus,
            seeds.len(),
            stats.elapsed.as_secs_f64(),
            stats.inputs as f64 / stats.elapsed.as_secs_f64().max(1e-9),
            stats.slowest.as_millis(),
            args.seed,
        );
        for (i, c) in stats.crashes.iter().enumerate().take(20) {
            let saved = c.saved.as_ref().map(|p| p.display().to_string()).unwrap_or_else(|| "not saved".into());
            println!("  crash {i}: {} ({saved})", c.what);
        }
        failed |= !stats.crashes.is_empty();
    }
    if failed { ExitCode::FAILURE } else { ExitCode::SUCCESS }
}
