//! Bootstrap: how ranks find each other and exchange small messages before GPU channels exist.
//!
//! [`Bootstrap`] is the interface; [`TcpBootstrap`] implements it over TCP (rank 0 hosts the rendezvous),
//! configured from a [`UniqueId`], an `ip:port` / `ifname:ip:port` string, or the launcher's environment
//! ([`LaunchEnv`]: mpirun, torchrun, Slurm). Feature `mpi` adds `MpiBootstrap`.

mod env;
#[cfg(feature = "mpi")]
mod mpi;
pub mod slurm;
mod tcp;
pub mod wire;

pub use env::{LaunchEnv, job_secret};
#[cfg(feature = "mpi")]
pub use mpi::MpiBootstrap;
pub(crate) use tcp::random_bytes;
pub use tcp::{HANDSHAKE_TIMEOUT, MAX_PENDING_HANDSHAKES, TcpBootstrap, UniqueId};

use std::time::Duration;

use crate::error::{Error, Result};

/// Tags at or above this value are reserved for the bootstrap's own collectives.
pub const RESERVED_TAG_BASE: u64 = 1 << 62;
const TAG_ALLGATHER: u64 = RESERVED_TAG_BASE + 1;
const TAG_BROADCAST: u64 = RESERVED_TAG_BASE + 2;

/// Default bound of every bootstrap wait (`MSCCLPP_BOOTSTRAP_TIMEOUT_MS` overrides it).
pub fn default_timeout() -> Duration {
    mscclpp_config::BOOTSTRAP_TIMEOUT_MS.get_or_default()
}

/// The all-gather of [`Bootstrap::all_gather`] and [`Bootstrap::all_gather_tagged`] under `tag`. A timeout names
/// every rank whose contribution had not arrived when the first wait ran out.
fn gather_under<B: Bootstrap + ?Sized>(b: &B, tag: u64, data: &[u8]) -> Result<Vec<Vec<u8>>> {
    let (me, n) = (b.rank(), b.size());
    for p in (0..n).filter(|p| *p != me) {
        b.send(p, tag, data)?;
    }
    let mut out = Vec::with_capacity(n);
    for p in 0..n {
        if p == me {
            out.push(data.to_vec());
            continue;
        }
        match b.recv(p, tag) {
            Ok(m) => out.push(m),
            Err(Error::BootstrapTimeout { millis, .. }) => {
                // The wait for `p` used up the timeout: every later rank that has not arrived by now is late too.
                let mut missing = vec![p];
                for q in (p + 1..n).filter(|q| *q != me) {
                    if b.try_recv(q, tag)?.is_none() {
                        missing.push(q);
                    }
                }
                return Err(Error::BootstrapTimeout {
                    what: format!("rank {me} in all-gather/barrier"),
                    missing,
                    millis,
                });
            }
            Err(e) => return Err(e),
        }
    }
    Ok(out)
}

/// Rank-to-rank messaging for setup. Every blocking call is bounded by the bootstrap's timeout and names the
/// rank that did not answer.
pub trait Bootstrap: Send + Sync {
    /// This process's rank.
    fn rank(&self) -> usize;
    /// Number of ranks.
    fn size(&self) -> usize;
    /// Send `data` to `peer` under `tag` (FIFO per (peer, tag)). Sending to oneself is allowed.
    fn send(&self, peer: usize, tag: u64, data: &[u8]) -> Result<()>;
    /// Receive the next message from `peer` under `tag`.
    fn recv(&self, peer: usize, tag: u64) -> Result<Vec<u8>>;
    /// Non-blocking: the next message from `peer` under `tag` if it has arrived.
    fn try_recv(&self, peer: usize, tag: u64) -> Result<Option<Vec<u8>>>;
    /// Every rank contributes `data`; returns all contributions by rank. A timeout names every rank whose
    /// contribution had not arrived when the first wait ran out.
    fn all_gather(&self, data: &[u8]) -> Result<Vec<Vec<u8>>> {
        gather_under(self, TAG_ALLGATHER, data)
    }
    /// As [`Bootstrap::all_gather`], under `tag` (below [`RESERVED_TAG_BASE`]): concurrent all-gathers with
    /// different tags, e.g. from two threads, each get their own contributions.
    fn all_gather_tagged(&self, tag: u64, data: &[u8]) -> Result<Vec<Vec<u8>>> {
        if tag >= RESERVED_TAG_BASE {
            return Err(Error::InvalidArgument(format!(
                "all-gather tag {tag:#x} is reserved (tags from {RESERVED_TAG_BASE:#x} are the bootstrap's own)"
            )));
        }
        gather_under(self, tag, data)
    }
    /// `root`'s `data` is returned on every rank.
    fn broadcast(&self, root: usize, data: &[u8]) -> Result<Vec<u8>> {
        if root >= self.size() {
            return Err(Error::InvalidArgument(format!("peer rank {root} is out of range for {} ranks", self.size())));
        }
        if self.rank() == root {
            for p in (0..self.size()).filter(|p| *p != root) {
                self.send(p, TAG_BROADCAST, data)?;
            }
            Ok(data.to_vec())
        } else {
            self.recv(root, TAG_BROADCAST)
        }
    }
    /// Return once every rank has entered.
    fn barrier(&self) -> Result<()> {
        self.all_gather(&[]).map(|_| ())
    }
    /// The host identity of every rank (`MSCCLPP_HOSTID` or the hostname), by rank.
    fn host_ids(&self) -> Result<Vec<String>> {
        let mine = crate::env::host_id();
        self.all_gather(mine.as_bytes())?
            .into_iter()
            .map(|b| String::from_utf8(b).map_err(|_| crate::Error::InvalidArgument("host id is not UTF-8".into())))
            .collect()
    }
    /// Number of ranks on this rank's host.
    fn ranks_per_host(&self) -> Result<usize> {
        let ids = self.host_ids()?;
        let me = &ids[self.rank()];
        Ok(ids.iter().filter(|h| *h == me).count())
    }
}
