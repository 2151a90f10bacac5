//! The launcher's environment as `srun` sets it: a child process with only `SLURM_*` variables (no
//! `MSCCLPP_MASTER_ADDR`) finds its rank, world size and local rank, and takes the first host of the step's host
//! list as the rendezvous.

use std::process::{Command, Stdio};

use mscclpp_exec::bootstrap::LaunchEnv;

/// Set in the child (the variable `common::CHILD_VAR` of the other tests).
const CHILD: &str = "MSCCLPP_TEST_CHILD";

/// In the child: print what was detected.
fn print_detected_environment() {
    let env = LaunchEnv::detect().expect("detect");
    println!(
        "DETECTED launcher={} rank={} world={} local={} job={} master_ip={}",
        env.launcher,
        env.rank,
        env.world_size,
        env.local_rank,
        env.job_id,
        env.master.ip()
    );
}

#[test]
fn a_slurm_step_without_a_master_address_uses_its_first_host() {
    if std::env::var_os(CHILD).is_some() {
        return print_detected_environment();
    }
    let exe = std::env::current_exe().expect("test binary");
    let mut cmd = Command::new(exe);
    cmd.args([
        "--exact",
        "a_slurm_step_without_a_master_address_uses_its_first_host",
        "--nocapture",
        "--include-ignored",
    ])
    .env_clear();
    for keep in ["PATH", "HOME", "LD_LIBRARY_PATH"] {
        if let Some(v) = std::env::var_os(keep) {
            cmd.env(keep, v);
        }
    }
    cmd.envs([
        (CHILD, "1"),
        ("SLURM_PROCID", "1"),
        ("SLURM_NTASKS", "2"),
        ("SLURM_LOCALID", "1"),
        ("SLURM_NNODES", "1"),
        ("SLURM_JOB_ID", "4242"),
        ("SLURM_STEP_NODELIST", "localhost,gpu[01-04,07]"),
        ("SLURM_JOB_NODELIST", "localhost,gpu[01-04,07]"),
        ("SLURM_NODELIST", "localhost,gpu[01-04,07]"),
    ]);
    let out = cmd.stdout(Stdio::piped()).stderr(Stdio::piped()).output().expect("run the child");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    let line = stdout.lines().find_map(|l| l.split_once("DETECTED").map(|(_, d)| d)).expect("nothing detected");
    for want in ["launcher=slurm", "rank=1", "world=2", "local=1", "job=4242"] {
        assert!(line.contains(want), "{want} not in {line}");
    }
    let ip: std::net::IpAddr = line.rsplit("master_ip=").next().and_then(|s| s.parse().ok()).expect("an address");
    assert!(ip.is_loopback(), "localhost resolved to {ip}");
}
