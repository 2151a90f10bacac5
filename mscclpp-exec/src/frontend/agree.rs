//! Agreements: every rank contributes one small value for a call and gets every rank's. On one host they meet in
//! a shared memory page (a few hundred nanoseconds when the ranks issue the call together); across hosts, over
//! the bootstrap.
//!
//! The page holds one slot per rank: the number of agreements the rank has entered, and its values of the last
//! two (by parity). A rank may run at most one agreement ahead of another (it cannot finish an agreement
//! without every rank's value), so the parity slot a slow rank still has to read is never overwritten.

use std::fs::OpenOptions;
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crate::communicator::Communicator;
use crate::error::{Error, Result};

/// Bytes of one rank's slot (a cache line).
const SLOT: usize = 64;

/// The bootstrap tag space of agreements over the bootstrap (bits 48..56 = 0xfe, clear of executors' setups).
const AGREE_TAG: u64 = 0xfe << 48;

/// How the ranks of one communicator agree.
pub(super) struct Agreement {
    way: Way,
    rank: usize,
    world: usize,
    /// Agreements entered so far.
    count: u64,
}

enum Way {
    Shared(SharedPage),
    Bootstrap,
}

/// The mapped page of slots.
struct SharedPage {
    ptr: *mut u8,
    len: usize,
}

// SAFETY: the page is plain shared memory; every access goes through atomics.
unsafe impl Send for SharedPage {}

impl Drop for SharedPage {
    fn drop(&mut self) {
        // SAFETY: `ptr` and `len` are the mapping made in `SharedPage::open`, unmapped once.
        unsafe { libc::munmap(self.ptr.cast(), self.len) };
    }
}

impl SharedPage {
    /// Map `path` (`len` bytes; created and sized by the caller when `create`).
    fn open(path: &str, len: usize, create: bool) -> Result<SharedPage> {
        let io = |e: std::io::Error| Error::InvalidArgument(format!("agreement page {path}: {e}"));
        let file = OpenOptions::new().read(true).write(true).create_new(create).open(path).map_err(io)?;
        if create {
            file.set_len(len as u64).map_err(io)?;
        }
        // SAFETY: a shared read-write mapping of a file of at least `len` bytes; the result is checked.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                file.as_raw_fd(),
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(io(std::io::Error::last_os_error()));
        }
        Ok(SharedPage { ptr: ptr.cast(), len })
    }

    /// Word `word` (0: entered count, 1 and 2: values by parity) of `rank`'s slot.
    fn word(&self, rank: usize, word: usize) -> &AtomicU64 {
        debug_assert!((rank + 1) * SLOT <= self.len && word < SLOT / 8);
        // SAFETY: inside the mapping (every rank's slot fits: checked at creation), 8-byte aligned (the mapping is
        // page aligned and slots are 64 bytes), and only ever accessed atomically.
        unsafe { &*self.ptr.add(rank * SLOT + word * 8).cast::<AtomicU64>() }
    }
}

impl Agreement {
    /// Collective: every rank of `comm` calls it at the same point. A shared page when every rank is on this
    /// host (the page's file is removed once all have mapped it), else the bootstrap.
    pub(super) fn new(comm: &Communicator) -> Result<Agreement> {
        let (rank, world) = (comm.rank(), comm.size());
        let hosts = comm.bootstrap().host_ids()?;
        let one_host = hosts.iter().all(|h| *h == hosts[0]);
        let way = if one_host && world > 1 { Self::shared(comm)? } else { Way::Bootstrap };
        Ok(Agreement { way, rank, world, count: 0 })
    }

    fn shared(comm: &Communicator) -> Result<Way> {
        let len = (comm.size() * SLOT).next_multiple_of(4096);
        let mine = if comm.rank() == 0 {
            let mut nonce = [0u8; 8];
            getrandom(&mut nonce);
            let path = format!("/dev/shm/mscclpp-agree-{}-{:016x}", std::process::id(), u64::from_le_bytes(nonce));
            match SharedPage::open(&path, len, true) {
                Ok(p) => (Some(p), path),
                Err(_) => (None, String::new()),
            }
        } else {
            (None, String::new())
        };
        let named = comm.bootstrap().all_gather(mine.1.as_bytes())?;
        let path = String::from_utf8_lossy(&named[0]).into_owned();
        let page = match mine.0 {
            Some(p) => Ok(p),
            None if path.is_empty() => Err(Error::InvalidArgument("rank 0 could not make an agreement page".into())),
            None => SharedPage::open(&path, len, false),
        };
        // Everyone says whether it mapped the page; all use it only if all did.
        let ok = comm.bootstrap().all_gather(&[u8::from(page.is_ok())])?;
        if comm.rank() == 0 && !path.is_empty() {
            let _ = std::fs::remove_file(&path);
        }
        match page {
            Ok(p) if ok.iter().all(|v| v.first() == Some(&1)) => Ok(Way::Shared(p)),
            _ => Ok(Way::Bootstrap),
        }
    }

    /// Contribute `value`; every rank's value, by rank. Bounded by the bootstrap timeout: a rank that never
    /// enters this agreement is named in the error.
    pub(super) fn all(&mut self, comm: &Communicator, value: u64) -> Result<Vec<u64>> {
        self.count += 1;
        let k = self.count;
        match &self.way {
            Way::Bootstrap => {
                let tag = AGREE_TAG | (k & 0xffff_ffff_ffff);
                let all = comm.all_gather_tagged(tag, &value.to_le_bytes())?;
                Ok(all
                    .iter()
                    .map(|b| u64::from_le_bytes(b.get(..8).and_then(|s| s.try_into().ok()).unwrap_or([0; 8])))
                    .collect())
            }
            Way::Shared(page) => {
                let parity = 1 + (k % 2) as usize;
                page.word(self.rank, parity).store(value, Ordering::Relaxed);
                page.word(self.rank, 0).store(k, Ordering::Release);
                let timeout = crate::bootstrap::default_timeout();
                let start = Instant::now();
                let mut out = vec![0; self.world];
                for (peer, slot) in out.iter_mut().enumerate() {
                    let mut spins = 0u32;
                    while page.word(peer, 0).load(Ordering::Acquire) < k {
                        spins += 1;
                        if spins < 1 << 12 {
                            std::hint::spin_loop();
                        } else if spins < 1 << 14 {
                            std::thread::yield_now();
                        } else {
                            if start.elapsed() > timeout {
                                return Err(Error::InvalidArgument(format!(
                                    "rank {} waited {timeout:?} for rank {peer} to reach collective call agreement {k}; \
                                     rank {peer} stopped or issues its collectives in another order",
                                    self.rank
                                )));
                            }
                            std::thread::sleep(Duration::from_micros(20));
                        }
                    }
                    *slot = page.word(peer, parity).load(Ordering::Relaxed);
                }
                Ok(out)
            }
        }
    }
}

/// Random bytes from the OS (a page name nobody else picks); falls back to the clock.
fn getrandom(buf: &mut [u8]) {
    // SAFETY: `buf` is a valid writable slice of its length.
    let n = unsafe { libc::getrandom(buf.as_mut_ptr().cast(), buf.len(), 0) };
    if n != buf.len() as isize {
        let t = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64);
        for (b, v) in buf.iter_mut().zip(t.to_le_bytes()) {
            *b = v;
        }
    }
}
