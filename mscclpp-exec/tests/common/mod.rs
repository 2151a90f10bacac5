//! Helpers shared by the runtime's integration tests: job ids on loopback, N bootstrap ranks on threads, and one
//! test of the current binary re-run in a child process with its own environment.

#![allow(dead_code, reason = "each test binary uses a part of these helpers")]

use std::net::{SocketAddr, TcpListener};
use std::time::Duration;

use mscclpp_exec::bootstrap::{TcpBootstrap, UniqueId};

/// A loopback address with a port that was free a moment ago.
pub fn free_addr() -> SocketAddr {
    let l = TcpListener::bind("127.0.0.1:0").expect("bind");
    l.local_addr().expect("addr")
}

/// A job id on a free loopback port for job `job`.
pub fn unique_id(job: &str) -> UniqueId {
    UniqueId::from_addr(free_addr(), job)
}

/// Run `f` on `n` ranks of job `id`, one thread each, with bootstrap timeout `timeout`; results by rank.
pub fn run_ranks<F>(n: usize, id: UniqueId, timeout: Duration, f: F) -> Vec<mscclpp_exec::Result<()>>
where
    F: Fn(TcpBootstrap) -> mscclpp_exec::Result<()> + Send + Sync + Clone + 'static,
{
    let handles: Vec<_> = (0..n)
        .map(|r| {
            let f = f.clone();
            std::thread::spawn(move || {
                let b = TcpBootstrap::new(r, n, &id, timeout)?;
                f(b)
            })
        })
        .collect();
    handles.into_iter().map(|h| h.join().expect("rank thread panicked")).collect()
}

/// Set in the environment of a child started by [`run_child`].
pub const CHILD_VAR: &str = "MSCCLPP_TEST_CHILD";

/// Whether this process is a child started by [`run_child`].
pub fn is_child() -> bool {
    std::env::var_os(CHILD_VAR).is_some()
}

/// Start test `test` of this test binary in a child process with `envs` added (and [`CHILD_VAR`] set); ignored
/// tests run too. Returns the child, its output piped.
pub fn spawn_child(test: &str, envs: &[(&str, &str)]) -> std::process::Child {
    let exe = std::env::current_exe().expect("test binary");
    let mut cmd = std::process::Command::new(exe);
    cmd.args(["--exact", test, "--nocapture", "--test-threads=1", "--include-ignored"]).env(CHILD_VAR, "1");
    for (k, v) in envs {
        cmd.env(k, v);
    }
    cmd.stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped()).spawn().expect("spawn a child")
}

/// Wait for a child of [`spawn_child`]; panics unless it succeeded and printed `marker`. Returns its stdout.
pub fn expect_child(child: std::process::Child, what: &str, marker: &str) -> String {
    let out = child.wait_with_output().expect("child output");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{what} failed:\n{stdout}\n{stderr}");
    assert!(stdout.contains(marker), "{what} did not check anything (no {marker:?}):\n{stdout}\n{stderr}");
    stdout
}
