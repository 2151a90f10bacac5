//! A fatal signal (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT) prints one line naming it and the native stack of the
//! thread that took it on standard error, then the process dies of that signal as before, so a crash is never
//! silent and its place can be found afterwards (`addr2line -e BINARY -f -C OFFSET` for the program's own frames).
//!
//! Only programs install this (the `mscclpp` command line calls [`install_reporter`] first thing, and so does a
//! user's binary through `user_main!`): the libraries never take over a process's signal handlers.

use std::os::raw::{c_int, c_void};

const SIGNALS: [(c_int, &str); 5] = [
    (libc::SIGSEGV, "SIGSEGV (invalid memory access)"),
    (libc::SIGBUS, "SIGBUS (bus error)"),
    (libc::SIGFPE, "SIGFPE (arithmetic fault)"),
    (libc::SIGILL, "SIGILL (illegal instruction)"),
    (libc::SIGABRT, "SIGABRT (abort)"),
];

/// Stack frames printed at most.
const FRAMES: usize = 64;
/// Alternate stack, so a stack overflow can still be reported.
const ALT_STACK: usize = 64 * 1024;

unsafe extern "C" {
    // glibc's <execinfo.h>; both are safe to call from a signal handler once `backtrace` has been called once
    // outside one (that first call loads libgcc).
    fn backtrace(buffer: *mut *mut c_void, size: c_int) -> c_int;
    fn backtrace_symbols_fd(buffer: *const *mut c_void, size: c_int, fd: c_int);
}

fn write_stderr(bytes: &[u8]) {
    // SAFETY: write(2) of a valid buffer to fd 2; async-signal-safe.
    unsafe {
        libc::write(2, bytes.as_ptr().cast(), bytes.len());
    }
}

extern "C" fn report(sig: c_int) {
    let name = SIGNALS.iter().find(|(s, _)| *s == sig).map_or("a fatal signal", |(_, n)| *n);
    write_stderr(b"\nmscclpp: fatal signal ");
    write_stderr(name.as_bytes());
    write_stderr(b"; native stack of the thread that took it:\n");
    let mut frames = [std::ptr::null_mut::<c_void>(); FRAMES];
    // SAFETY: `frames` holds FRAMES pointers; backtrace writes at most that many and returns the count, which
    // backtrace_symbols_fd reads back. Both were primed outside the handler (see `install_reporter`).
    unsafe {
        let n = backtrace(frames.as_mut_ptr(), FRAMES as c_int);
        backtrace_symbols_fd(frames.as_ptr(), n, 2);
    }
    write_stderr(b"mscclpp: this is a bug or a fault of the CUDA driver; please report it with the lines above\n");
    // SA_RESETHAND restored the default action: re-raising ends the process by the same signal.
    // SAFETY: raise(3) is async-signal-safe.
    unsafe {
        libc::raise(sig);
    }
}

/// Install the reporter for the fatal signals (once, at start-up). Failures leave the default actions in place.
pub fn install_reporter() {
    let mut prime = [std::ptr::null_mut::<c_void>(); 1];
    // SAFETY: one-slot buffer; primes glibc's unwinder outside any signal handler.
    unsafe {
        backtrace(prime.as_mut_ptr(), 1);
    }
    let stack = Box::leak(vec![0u8; ALT_STACK].into_boxed_slice());
    let ss = libc::stack_t { ss_sp: stack.as_mut_ptr().cast(), ss_flags: 0, ss_size: ALT_STACK };
    // SAFETY: `ss` describes a leaked buffer that lives as long as the process; this sets the calling thread's
    // alternate stack (other threads report on their own stacks).
    unsafe {
        libc::sigaltstack(&ss, std::ptr::null_mut());
    }
    for (sig, _) in SIGNALS {
        // SAFETY: a zeroed sigaction is a valid starting point; the handler is an extern "C" fn of one int that
        // only calls async-signal-safe functions.
        unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = report as extern "C" fn(c_int) as usize;
            sa.sa_flags = libc::SA_ONSTACK | libc::SA_RESETHAND;
            libc::sigemptyset(&mut sa.sa_mask);
            libc::sigaction(sig, &sa, std::ptr::null_mut());
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_segfault_is_reported_with_a_stack_and_still_kills_by_the_signal() {
        // Run this test binary again as a child that installs the reporter and faults.
        if std::env::var("CRASH_REPORT_TEST_CHILD").is_ok() {
            super::install_reporter();
            // SAFETY: deliberately raising SIGSEGV in the child process only.
            unsafe {
                libc::raise(libc::SIGSEGV);
            }
            return;
        }
        let exe = std::env::current_exe().expect("test binary path");
        let out = std::process::Command::new(exe)
            .args(["--exact", "crash::tests::a_segfault_is_reported_with_a_stack_and_still_kills_by_the_signal"])
            .arg("--nocapture")
            .env("CRASH_REPORT_TEST_CHILD", "1")
            .output()
            .expect("run the child");
        let err = String::from_utf8_lossy(&out.stderr);
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(out.status.signal(), Some(libc::SIGSEGV), "the child must still die of SIGSEGV; stderr: {err}");
        assert!(err.contains("mscclpp: fatal signal SIGSEGV"), "no report line: {err}");
        assert!(err.lines().filter(|l| l.contains("[0x")).count() >= 2, "no stack frames: {err}");
    }
}
