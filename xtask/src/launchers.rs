//! The `launchers` part: one all-reduce job through each way of starting ranks, on 2 ranks (sharing GPU 0 when
//! the host has one GPU): `mpirun` with the `mpi`-feature binary (the MPI bootstrap), `torchrun --no-python`
//! starting the `mscclpp` binary, a Slurm-style launch (only the variables `srun` sets, the rendezvous found from
//! the node list), and two network namespaces joined by a veth pair (the bootstrap and the Ethernet transport
//! across a real interface, with a bandwidth figure). Each step is a bash script (`xtask/scripts/`) bounded by
//! `timeout`; one that cannot run here (no mpirun, no torchrun, not root) fails with a `SKIP launchers ...` line
//! saying why, never a silent pass.

use crate::context::Context;
use crate::step::Step;

/// Shared by every script: the binaries' folder, shared-GPU mode, no leaked launcher variables.
const COMMON: &str = include_str!("../scripts/launchers_common.sh");

/// The steps: (name, time limit in seconds, script).
const SCRIPTS: [(&str, u64, &str); 4] = [
    ("mpirun -np 2 (MPI bootstrap, mpi feature)", 240, include_str!("../scripts/launchers_mpi.sh")),
    ("torchrun --no-python --nproc-per-node 2", 240, include_str!("../scripts/launchers_torchrun.sh")),
    ("Slurm-style (SLURM_* only, rendezvous from the node list)", 300, include_str!("../scripts/launchers_slurm.sh")),
    (
        "two network namespaces over a veth pair (Ethernet transport)",
        420,
        include_str!("../scripts/launchers_netns.sh"),
    ),
];

/// The steps of the `launchers` part.
pub fn steps(ctx: &Context) -> Vec<Step> {
    SCRIPTS
        .iter()
        .map(|(name, limit, body)| {
            let argv = vec![
                "bash".to_string(),
                "-c".to_string(),
                format!("{COMMON}\n{body}"),
                "launchers".to_string(),
                ctx.bin.display().to_string(),
            ];
            Step::new(format!("launchers {name}"), *limit, argv)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_launcher_has_a_bounded_step_whose_script_parses() {
        let s = steps(&crate::tests::context(2));
        assert_eq!(s.len(), SCRIPTS.len());
        for (step, (name, limit, _)) in s.iter().zip(SCRIPTS) {
            assert!(step.name.contains(name));
            assert!(limit <= 480, "{name}: {limit} s does not fit a part of 8 minutes");
            assert_eq!(step.argv.last().map(String::as_str), Some("/b"), "{name}: the binaries' folder");
            let out = std::process::Command::new("bash").args(["-n", "-c", &step.argv[2]]).output().expect("bash");
            assert!(out.status.success(), "{name}: {}", String::from_utf8_lossy(&out.stderr));
            assert!(step.argv[2].contains("timeout "), "{name}: a launch without a time bound");
        }
    }

    #[test]
    fn a_launch_that_cannot_run_says_why_and_the_namespaces_are_always_removed() {
        let (_, _, netns) = SCRIPTS[3];
        assert!(netns.contains("trap cleanup EXIT") && netns.contains("$V down"), "no clean-up on exit");
        assert!(netns.contains("cannot netns \"no pyroute2 wheel"), "no reason line without pyroute2");
        assert!(netns.contains("cannot netns \"needs root"), "no reason line without root");
        assert!(COMMON.contains("SKIP launchers $1: $2") && COMMON.contains("exit 3"), "a skip must not pass");
        let (_, _, slurm) = SCRIPTS[2];
        assert!(slurm.contains("gpu[02-04,07]") && !slurm.contains("export MSCCLPP_MASTER_ADDR"));
        assert!(COMMON.contains("unset MSCCLPP_RANK") && COMMON.contains("MASTER_ADDR"));
    }
}
