//! Work started ahead on a thread of its own and taken, once, by whoever needs it next: the interpreter's module
//! load, started when a communicator is made and taken by the first executor there ([`super::warm_up`]).

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

/// One piece of work: `None` until it is done, then its result.
type Slot<T> = Arc<(Mutex<Option<Result<T, String>>>, Condvar)>;

/// What [`Ahead::take`] found.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Taken<T> {
    /// Nothing was started for the key: do the work now.
    NotStarted,
    /// The work's result.
    Done(T),
    /// The work failed (why).
    Failed(String),
    /// The work did not finish within the bound.
    TimedOut,
}

/// Work under way or done, by key; each result is taken at most once.
pub(crate) struct Ahead<K, T> {
    slots: Mutex<HashMap<K, Slot<T>>>,
}

impl<K: Eq + Hash + Clone + Send + 'static, T: Send + 'static> Ahead<K, T> {
    pub(crate) fn new() -> Self {
        Ahead { slots: Mutex::new(HashMap::new()) }
    }

    /// Start `work` for `key` on a thread named `name`, unless work for the key is under way or waits to be taken;
    /// true when it was started.
    pub(crate) fn start(&self, key: K, name: &str, work: impl FnOnce() -> Result<T, String> + Send + 'static) -> bool {
        let slot: Slot<T> = Arc::new((Mutex::new(None), Condvar::new()));
        {
            let Ok(mut slots) = self.slots.lock() else { return false };
            if slots.contains_key(&key) {
                return false;
            }
            slots.insert(key.clone(), slot.clone());
        }
        let spawned = std::thread::Builder::new().name(name.to_string()).spawn(move || {
            let result = work();
            let (lock, ready) = &*slot;
            if let Ok(mut done) = lock.lock() {
                *done = Some(result);
            }
            ready.notify_all();
        });
        if spawned.is_err() {
            // No thread: whoever needs it does the work.
            if let Ok(mut slots) = self.slots.lock() {
                slots.remove(&key);
            }
            return false;
        }
        true
    }

    /// The result of the work started for `key`, waiting for it at most `limit`; the key is free again afterwards.
    pub(crate) fn take(&self, key: &K, limit: Duration) -> Taken<T> {
        let slot = match self.slots.lock() {
            Ok(mut slots) => slots.remove(key),
            Err(_) => None,
        };
        let Some(slot) = slot else { return Taken::NotStarted };
        let (lock, ready) = &*slot;
        let Ok(guard) = lock.lock() else { return Taken::Failed("the work's thread panicked".into()) };
        let Ok((mut done, _)) = ready.wait_timeout_while(guard, limit, |d| d.is_none()) else {
            return Taken::Failed("the work's thread panicked".into());
        };
        match done.take() {
            Some(Ok(t)) => Taken::Done(t),
            Some(Err(e)) => Taken::Failed(e),
            None => Taken::TimedOut,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    #[test]
    fn a_result_is_waited_for_and_taken_once() {
        let ahead = Ahead::new();
        assert!(ahead.start(1, "t", || {
            std::thread::sleep(Duration::from_millis(200));
            Ok(7u32)
        }));
        // A second start while the first waits to be taken does nothing.
        assert!(!ahead.start(1, "t", || Ok(8u32)));
        // The work is still asleep: `take` waits for it.
        assert_eq!(ahead.take(&1, Duration::from_secs(5)), Taken::Done(7));
        assert_eq!(ahead.take(&1, Duration::from_secs(5)), Taken::NotStarted);
        assert_eq!(ahead.take(&2, Duration::from_secs(5)), Taken::NotStarted);
        // Taken, the key can be started again.
        assert!(ahead.start(1, "t", || Ok(9u32)));
        assert_eq!(ahead.take(&1, Duration::from_secs(5)), Taken::Done(9));
    }

    #[test]
    fn a_failure_and_a_timeout_are_reported() {
        let ahead: Ahead<u8, u32> = Ahead::new();
        assert!(ahead.start(1, "t", || Err("no module".into())));
        assert_eq!(ahead.take(&1, Duration::from_secs(5)), Taken::Failed("no module".into()));
        assert!(ahead.start(2, "t", || {
            std::thread::sleep(Duration::from_millis(500));
            Ok(1)
        }));
        let t0 = Instant::now();
        assert_eq!(ahead.take(&2, Duration::from_millis(30)), Taken::TimedOut);
        assert!(t0.elapsed() < Duration::from_millis(400), "the wait was not bounded");
    }
}
