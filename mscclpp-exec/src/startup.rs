//! Start-up trace: with `MSCCLPP_TRACE_STARTUP=1`, one line on stderr per start-up phase, with the time since the
//! process started, so a slow start can be attributed (CUDA initialisation, the bootstrap, module loading, the
//! first collective's setup, teardown).
//!
//! The process's age at the first mark comes from `/proc` (10 ms resolution); later marks add a monotonic clock's
//! elapsed time to it, so the steps between marks are exact to the microsecond.

use std::sync::{Mutex, OnceLock};
use std::time::Instant;

/// `(age of the process at the first mark in ms, the instant of that mark, the instant of the last mark)`.
struct Clock {
    age_at_first_ms: Option<f64>,
    first: Instant,
    last: Instant,
}

fn enabled() -> bool {
    static ON: OnceLock<bool> = OnceLock::new();
    *ON.get_or_init(|| mscclpp_config::TRACE_STARTUP.get_or_default())
}

fn clock() -> &'static Mutex<Option<Clock>> {
    static CLOCK: OnceLock<Mutex<Option<Clock>>> = OnceLock::new();
    CLOCK.get_or_init(|| Mutex::new(None))
}

/// Milliseconds since this process started, from `/proc/self/stat` and `/proc/uptime` (Linux; `None` elsewhere).
fn process_age_ms() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // The command name (field 2) may hold spaces: fields are counted after its closing parenthesis.
    let after = stat.get(stat.rfind(')')? + 2..)?;
    // Field 22 (start time, in clock ticks since boot) is the 20th after the command name.
    let start_ticks: f64 = after.split_whitespace().nth(19)?.parse().ok()?;
    let uptime: f64 = std::fs::read_to_string("/proc/uptime").ok()?.split_whitespace().next()?.parse().ok()?;
    // The kernel reports start times in USER_HZ, 100 on every Linux ABI.
    Some((uptime - start_ticks / 100.0) * 1000.0)
}

/// Record that start-up reached `phase` (a no-op unless `MSCCLPP_TRACE_STARTUP` is set).
pub fn mark(phase: &str) {
    if !enabled() {
        return;
    }
    let now = Instant::now();
    let Ok(mut guard) = clock().lock() else { return };
    let c = guard.get_or_insert_with(|| Clock { age_at_first_ms: process_age_ms(), first: now, last: now });
    let since_first = now.duration_since(c.first).as_secs_f64() * 1000.0;
    let step = now.duration_since(c.last).as_secs_f64() * 1000.0;
    c.last = now;
    let at = match c.age_at_first_ms {
        Some(age) => format!("{:8.1} ms", age + since_first),
        None => format!("{since_first:8.1} ms after the first mark"),
    };
    eprintln!("startup pid {}: {phase:<30} at {at} (+{step:.1} ms)", std::process::id());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_process_age_is_positive_and_plausible() {
        let age = process_age_ms().expect("Linux /proc");
        // Clock ticks are 10 ms; a test process is younger than a day.
        assert!(age > -20.0 && age < 86_400_000.0, "{age}");
    }
}
