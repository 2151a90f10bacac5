//! Bootstrap over MPI (feature `mpi`): rank and size from `MPI_COMM_WORLD`, tagged messages over MPI
//! point-to-point with bounded receives (probe loops with a deadline).

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use mpi::point_to_point::{Destination, MatchedReceiveVec, Source};
use mpi::topology::{Communicator as _, SimpleCommunicator};

use super::Bootstrap;
use crate::error::{Error, Result};

/// The single MPI tag our framed messages travel under.
const MPI_TAG: i32 = 0x6d73;

struct State {
    _universe: mpi::environment::Universe,
    world: SimpleCommunicator,
    mailbox: HashMap<(usize, u64), VecDeque<Vec<u8>>>,
}

/// [`Bootstrap`] over MPI. Create it once per process (MPI is initialised here and finalised on drop).
pub struct MpiBootstrap {
    state: Mutex<State>,
    rank: usize,
    size: usize,
    timeout: Duration,
}

// SAFETY: MPI is initialised with at least MPI_THREAD_SERIALIZED and every MPI call goes through `state`'s
// mutex, so calls never overlap, whichever thread makes them.
unsafe impl Send for MpiBootstrap {}
// SAFETY: see above.
unsafe impl Sync for MpiBootstrap {}

impl std::fmt::Debug for MpiBootstrap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MpiBootstrap").field("rank", &self.rank).field("size", &self.size).finish()
    }
}

impl MpiBootstrap {
    /// Initialise MPI and use `MPI_COMM_WORLD`; every wait is bounded by `timeout`.
    pub fn new(timeout: Duration) -> Result<Self> {
        let (universe, level) = mpi::initialize_with_threading(mpi::Threading::Serialized).ok_or_else(|| {
            Error::Config("MPI is already initialised in this process; create the MpiBootstrap once".into())
        })?;
        if level < mpi::Threading::Serialized {
            return Err(Error::Config(format!(
                "the MPI library grants only {level:?} threading; MPI_THREAD_SERIALIZED is needed"
            )));
        }
        let world = universe.world();
        let rank = world.rank() as usize;
        let size = world.size() as usize;
        Ok(MpiBootstrap {
            state: Mutex::new(State { _universe: universe, world, mailbox: HashMap::new() }),
            rank,
            size,
            timeout,
        })
    }

    fn lock(&self) -> Result<std::sync::MutexGuard<'_, State>> {
        self.state.lock().map_err(|_| Error::Poisoned { what: "the MPI bootstrap state" })
    }

    fn check_peer(&self, peer: usize) -> Result<()> {
        if peer >= self.size {
            return Err(Error::InvalidArgument(format!("peer rank {peer} is out of range for {} ranks", self.size)));
        }
        Ok(())
    }

    /// Move every message already arrived from `peer` into the mailbox.
    fn drain(state: &mut State, peer: usize) -> Result<()> {
        loop {
            let probe = state.world.process_at_rank(peer as i32).immediate_matched_probe_with_tag(MPI_TAG);
            let Some(matched) = probe else {
                return Ok(());
            };
            let (bytes, _) = matched.matched_receive_vec::<u8>();
            if bytes.len() < 8 {
                return Err(Error::Protocol { peer, reason: "MPI bootstrap frame shorter than its header".into() });
            }
            let tag = u64::from_le_bytes(bytes[..8].try_into().unwrap_or_default());
            state.mailbox.entry((peer, tag)).or_default().push_back(bytes[8..].to_vec());
        }
    }
}

impl Bootstrap for MpiBootstrap {
    fn rank(&self) -> usize {
        self.rank
    }

    fn size(&self) -> usize {
        self.size
    }

    fn send(&self, peer: usize, tag: u64, data: &[u8]) -> Result<()> {
        self.check_peer(peer)?;
        let mut state = self.lock()?;
        if peer == self.rank {
            state.mailbox.entry((peer, tag)).or_default().push_back(data.to_vec());
            return Ok(());
        }
        let mut frame = Vec::with_capacity(8 + data.len());
        frame.extend_from_slice(&tag.to_le_bytes());
        frame.extend_from_slice(data);
        state.world.process_at_rank(peer as i32).send_with_tag(&frame[..], MPI_TAG);
        Ok(())
    }

    fn recv(&self, peer: usize, tag: u64) -> Result<Vec<u8>> {
        self.check_peer(peer)?;
        let deadline = Instant::now() + self.timeout;
        loop {
            if let Some(m) = self.try_recv(peer, tag)? {
                return Ok(m);
            }
            if Instant::now() >= deadline {
                return Err(Error::BootstrapTimeout {
                    what: format!("rank {} waiting for tag {tag} from rank {peer} over MPI", self.rank),
                    missing: vec![peer],
                    millis: self.timeout.as_millis() as u64,
                });
            }
            std::thread::sleep(Duration::from_micros(50));
        }
    }

    fn try_recv(&self, peer: usize, tag: u64) -> Result<Option<Vec<u8>>> {
        self.check_peer(peer)?;
        let mut state = self.lock()?;
        if peer != self.rank {
            Self::drain(&mut state, peer)?;
        }
        Ok(state.mailbox.get_mut(&(peer, tag)).and_then(|q| q.pop_front()))
    }
}
