//! Ethernet transport between hosts: data and semaphore updates travel as frames over the (authenticated)
//! bootstrap connections, staged through a pinned host buffer; a receiver thread per connection applies them to local
//! GPU memory in order. Only ranges this process exposed to peers (registrations it sent) may be written.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use mscclpp_sys::driver::{Device, DevicePtr, PinnedHostMemory};

use crate::bootstrap::Bootstrap;
use crate::error::{Error, Result};

const FRAME_DATA: u64 = 1;
const FRAME_FLAG: u64 = 2;
/// Largest payload of one data frame.
const CHUNK: usize = 4 << 20;

/// Device ranges of this process that peers may write through network transports.
#[derive(Debug, Default)]
pub struct ExposedRanges {
    ranges: Mutex<Vec<(u64, u64)>>,
}

impl ExposedRanges {
    /// Allow writes into `[ptr, ptr + size)`.
    pub fn add(&self, ptr: u64, size: u64) {
        if let Ok(mut r) = self.ranges.lock() {
            r.push((ptr, size));
        }
    }

    /// Whether `[ptr, ptr + len)` lies inside one exposed range.
    pub fn allows(&self, ptr: u64, len: u64) -> bool {
        let Some(end) = ptr.checked_add(len) else {
            return false;
        };
        self.ranges.lock().map(|r| r.iter().any(|(p, s)| ptr >= *p && end <= p + s)).unwrap_or(false)
    }
}

/// One direction of frames to a peer plus the receiver of the other direction.
pub struct EthernetLink {
    bootstrap: Arc<dyn Bootstrap>,
    peer: usize,
    tag: u64,
    device: Device,
    stop: Arc<AtomicBool>,
    failure: Arc<Mutex<Option<String>>>,
    /// Pinned staging buffer of one frame (header + up to CHUNK bytes).
    staging: Mutex<PinnedHostMemory>,
}

impl std::fmt::Debug for EthernetLink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EthernetLink").field("peer", &self.peer).field("tag", &self.tag).finish()
    }
}

fn header(kind: u64, ptr: u64, value: u64) -> Vec<u8> {
    let mut v = Vec::with_capacity(24);
    v.extend_from_slice(&kind.to_le_bytes());
    v.extend_from_slice(&ptr.to_le_bytes());
    v.extend_from_slice(&value.to_le_bytes());
    v
}

fn apply(device: &Device, exposed: &ExposedRanges, peer: usize, frame: &[u8]) -> Result<()> {
    if frame.len() < 24 {
        return Err(Error::Protocol { peer, reason: "Ethernet frame shorter than its header".into() });
    }
    let word = |i: usize| u64::from_le_bytes(frame[i * 8..i * 8 + 8].try_into().unwrap_or_default());
    let (kind, ptr, value) = (word(0), word(1), word(2));
    let payload = &frame[24..];
    match kind {
        FRAME_DATA => {
            if value != payload.len() as u64 || !exposed.allows(ptr, value) {
                return Err(Error::Protocol {
                    peer,
                    reason: format!("write of {value} bytes at {ptr:#x} is outside the memory exposed to it"),
                });
            }
            Ok(mscclpp_sys::driver::copy_to_device(device, ptr, payload.len(), payload)?)
        }
        FRAME_FLAG => {
            if !exposed.allows(ptr, 8) {
                return Err(Error::Protocol {
                    peer,
                    reason: format!("semaphore update at {ptr:#x} is outside the memory exposed to it"),
                });
            }
            Ok(mscclpp_sys::driver::copy_to_device(device, ptr, 8, &value.to_le_bytes())?)
        }
        other => Err(Error::Protocol { peer, reason: format!("unknown Ethernet frame kind {other}") }),
    }
}

impl EthernetLink {
    /// Start the link with `peer` under bootstrap tag `tag` (both sides use the same tag).
    pub fn new(
        bootstrap: Arc<dyn Bootstrap>,
        device: &Device,
        peer: usize,
        tag: u64,
        exposed: Arc<ExposedRanges>,
    ) -> Result<Self> {
        let stop = Arc::new(AtomicBool::new(false));
        let failure = Arc::new(Mutex::new(None));
        let (b, d, s, f) = (bootstrap.clone(), *device, stop.clone(), failure.clone());
        std::thread::Builder::new()
            .name(format!("mscclpp-eth-rx-{peer}"))
            .spawn(move || {
                if d.bind().is_err() {
                    return;
                }
                while !s.load(Ordering::Relaxed) {
                    match b.recv(peer, tag) {
                        Ok(frame) => {
                            if let Err(e) = apply(&d, &exposed, peer, &frame) {
                                tracing::error!("Ethernet receiver from rank {peer}: {e}");
                                if let Ok(mut slot) = f.lock() {
                                    *slot = Some(e.to_string());
                                }
                                return;
                            }
                        }
                        Err(Error::BootstrapTimeout { .. }) => continue,
                        Err(e) => {
                            if !s.load(Ordering::Relaxed) {
                                tracing::warn!("Ethernet receiver from rank {peer} stopped: {e}");
                            }
                            return;
                        }
                    }
                }
            })
            .map_err(|e| Error::io("spawning the Ethernet receiver", e))?;
        let staging = Mutex::new(PinnedHostMemory::zeroed(device, 24 + CHUNK)?);
        Ok(EthernetLink { bootstrap, peer, tag, device: *device, stop, failure, staging })
    }

    fn check(&self) -> Result<()> {
        match self.failure.lock().ok().and_then(|f| f.clone()) {
            Some(e) => Err(Error::Unsupported(format!("the Ethernet receiver failed: {e}"))),
            None => Ok(()),
        }
    }

    /// Send `size` bytes from local GPU address `src` to the peer's address `dst` (its own pointer).
    pub fn write(&self, dst: u64, src: DevicePtr, size: u64) -> Result<()> {
        self.check()?;
        let mut staging = self.staging.lock().map_err(|_| Error::Poisoned { what: "the Ethernet staging buffer" })?;
        let frame = staging.as_mut_slice();
        let mut off = 0u64;
        while off < size {
            let n = (size - off).min(CHUNK as u64) as usize;
            frame[..24].copy_from_slice(&header(FRAME_DATA, dst + off, n as u64));
            // Device to pinned host memory, then onto the socket.
            mscclpp_sys::driver::copy_from_device(&self.device, src + off, n, &mut frame[24..24 + n])?;
            self.bootstrap.send(self.peer, self.tag, &frame[..24 + n])?;
            off += n as u64;
        }
        Ok(())
    }

    /// Set the peer's token at its address `token` to `value` (after every earlier write of this link).
    pub fn update(&self, token: u64, value: u64) -> Result<()> {
        self.check()?;
        self.bootstrap.send(self.peer, self.tag, &header(FRAME_FLAG, token, value))
    }
}

impl Drop for EthernetLink {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::ExposedRanges;

    #[test]
    fn only_exposed_ranges_are_writable() {
        let r = ExposedRanges::default();
        r.add(0x1000, 0x100);
        assert!(r.allows(0x1000, 0x100));
        assert!(r.allows(0x1080, 8));
        assert!(!r.allows(0x10f9, 8));
        assert!(!r.allows(0x0ff8, 16));
        assert!(!r.allows(u64::MAX - 4, 8));
    }
}
