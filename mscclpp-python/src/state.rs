//! What one communicator of the Python module holds beside it: its executor and staged collectives, made on
//! first use.

use std::sync::{Arc, Mutex};

use mscclpp_exec::Communicator;
use mscclpp_exec::executor::Executor;

use crate::errors::{Res, err};
use crate::staged::Staged;

/// One communicator and its lazily made executor and staging buffers.
pub struct CommState {
    /// The communicator.
    pub comm: Arc<Communicator>,
    exec: Mutex<Option<Arc<Executor>>>,
    /// The staged collectives (made on first use).
    pub staged: Mutex<Option<Staged>>,
}

impl CommState {
    /// The state of `comm`, nothing made yet.
    pub fn new(comm: Communicator) -> Self {
        CommState { comm: Arc::new(comm), exec: Mutex::new(None), staged: Mutex::new(None) }
    }

    /// The executor of this communicator (made on first use; loads the interpreter).
    pub fn executor(&self) -> Res<Arc<Executor>> {
        let mut e = self.exec.lock().map_err(|_| err("executor lock poisoned by an earlier failure"))?;
        if let Some(x) = e.as_ref() {
            return Ok(x.clone());
        }
        let x = Arc::new(Executor::new(self.comm.clone())?);
        *e = Some(x.clone());
        Ok(x)
    }

    /// The staged collectives, made on first use with `bytes` per staging buffer.
    pub fn staged_with(&self, bytes: usize) -> Res<std::sync::MutexGuard<'_, Option<Staged>>> {
        let mut g = self.staged.lock().map_err(|_| err("staging lock poisoned by an earlier failure"))?;
        if g.is_none() {
            *g = Some(Staged::new(self.executor()?, bytes)?);
        }
        Ok(g)
    }
}
