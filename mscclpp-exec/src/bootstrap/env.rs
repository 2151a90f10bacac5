//! Rank, world size and rendezvous address from the launcher's environment (mpirun, torchrun, Slurm, or our
//! own variables).

use std::net::SocketAddr;

use super::UniqueId;
use crate::error::{Error, Result};

/// What the launcher told this process.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LaunchEnv {
    /// Global rank.
    pub rank: usize,
    /// Number of ranks.
    pub world_size: usize,
    /// Rank on this host (selects the GPU and the InfiniBand HCA; see [`crate::env::local_rank`]).
    pub local_rank: usize,
    /// Which launcher was recognised (for messages).
    pub launcher: &'static str,
    /// Job identity used to derive the secret.
    pub job_id: String,
    /// Rendezvous address (rank 0 listens there).
    pub master: SocketAddr,
    /// Candidate ports from `master`'s port on: 1 when `MSCCLPP_MASTER_PORT` names the port, else 16 (a derived
    /// port may be taken, e.g. by an ephemeral connection of the launcher).
    pub port_span: u16,
}

fn var(name: &str) -> Option<String> {
    mscclpp_config::value_of(name)
}

fn parse_usize(name: &str) -> Result<Option<usize>> {
    match var(name) {
        None => Ok(None),
        Some(v) => v.trim().parse().map(Some).map_err(|_| Error::Config(format!("{name}={v:?} is not a number"))),
    }
}

/// Derive a job secret from the rendezvous address and a job id, so every rank of one job computes the same
/// secret and a process of another job (or a stray connection) does not.
pub fn job_secret(addr: &str, port: u16, job_id: &str) -> [u8; 32] {
    if let Some(s) = var("MSCCLPP_BOOTSTRAP_SECRET") {
        return blake3::derive_key("mscclpp bootstrap explicit secret v1", s.as_bytes());
    }
    let material = format!("{addr}\0{port}\0{job_id}");
    blake3::derive_key("mscclpp bootstrap job secret v1", material.as_bytes())
}

impl LaunchEnv {
    /// Recognise mpirun (`OMPI_COMM_WORLD_*`, `PMI_*`), torchrun (`RANK`, `WORLD_SIZE`, `LOCAL_RANK`), Slurm
    /// (`SLURM_PROCID`, `SLURM_NTASKS`) or `MSCCLPP_RANK`/`MSCCLPP_WORLD_SIZE`.
    ///
    /// The rendezvous is `MSCCLPP_MASTER_ADDR:MSCCLPP_MASTER_PORT`. Without them: torchrun's `MASTER_ADDR` and
    /// `MASTER_PORT + 1` (torchrun's own store owns `MASTER_PORT`); under Slurm the first host of
    /// `SLURM_STEP_NODELIST` (or `SLURM_JOB_NODELIST`, `SLURM_NODELIST`; see [`super::slurm`]); else
    /// `127.0.0.1`. The port, unless given, is derived from the job id (e.g. `SLURM_JOB_ID`).
    pub fn detect() -> Result<Self> {
        let candidates: [(&'static str, &str, &str); 5] = [
            ("mscclpp", "MSCCLPP_RANK", "MSCCLPP_WORLD_SIZE"),
            ("mpirun", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"),
            ("pmi", "PMI_RANK", "PMI_SIZE"),
            ("torchrun", "RANK", "WORLD_SIZE"),
            ("slurm", "SLURM_PROCID", "SLURM_NTASKS"),
        ];
        let mut found = None;
        for (launcher, r, s) in candidates {
            if let (Some(rank), Some(size)) = (parse_usize(r)?, parse_usize(s)?) {
                found = Some((launcher, rank, size));
                break;
            }
        }
        let (launcher, rank, world_size) = found.ok_or_else(|| {
            Error::Config(
                "no rank/world size in the environment: launch with mpirun, torchrun or srun, or set \
                 MSCCLPP_RANK and MSCCLPP_WORLD_SIZE"
                    .into(),
            )
        })?;
        if rank >= world_size {
            return Err(Error::Config(format!("{launcher}: rank {rank} >= world size {world_size}")));
        }
        let local_rank = crate::env::local_rank(rank);
        let job_id =
            ["MSCCLPP_JOB_ID", "TORCHELASTIC_RUN_ID", "OMPI_MCA_ess_base_jobid", "PMIX_NAMESPACE", "SLURM_JOB_ID"]
                .iter()
                .find_map(|n| var(n))
                .unwrap_or_else(|| "mscclpp-default-job".to_string());
        // Under Slurm with no address given: the first host of the step, where rank 0 runs.
        let master_addr = match var("MSCCLPP_MASTER_ADDR").or_else(|| var("MASTER_ADDR")) {
            Some(a) => a,
            None => super::slurm::first_host(var)?.unwrap_or_else(|| "127.0.0.1".to_string()),
        };
        let master_port: u16 = match (var("MSCCLPP_MASTER_PORT"), var("MASTER_PORT")) {
            (Some(p), _) => {
                p.trim().parse().map_err(|_| Error::Config(format!("MSCCLPP_MASTER_PORT={p:?} is not a port")))?
            }
            (None, Some(p)) => p
                .trim()
                .parse::<u16>()
                .map_err(|_| Error::Config(format!("MASTER_PORT={p:?} is not a port")))?
                .checked_add(1)
                .ok_or_else(|| Error::Config("MASTER_PORT is 65535; set MSCCLPP_MASTER_PORT".into()))?,
            (None, None) => {
                let h = blake3::hash(job_id.as_bytes());
                let b = h.as_bytes();
                20000 + (u16::from_le_bytes([b[0], b[1]]) % 20000)
            }
        };
        let master = UniqueId::parse_addr(&format!("{master_addr}:{master_port}"))?;
        let port_span = if var("MSCCLPP_MASTER_PORT").is_some() { 1 } else { 16 };
        Ok(LaunchEnv { rank, world_size, local_rank, launcher, job_id, master, port_span })
    }

    /// The unique id every rank of this job derives identically.
    pub fn unique_id(&self) -> Result<UniqueId> {
        let mut id = UniqueId::from_addr(self.master, &self.job_id);
        id.port_span = self.port_span;
        Ok(id)
    }
}
