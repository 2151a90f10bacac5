//! Symmetric windows: ranges of device memory every rank registered alike (NCCL's `ncclCommWindowRegister`
//! with `NCCL_WIN_COLL_SYMMETRIC`, torch's `register_mem_pool(pool, symm=True)`). A call whose buffers lie inside
//! windows runs any plan on them, zero copy, with no agreement between the ranks: the window's contract is that
//! every rank registers windows of the same sizes in the same order and passes buffers at the same offsets of
//! them, so a peer's buffer is at the caller's offset in the peer's window.
//!
//! Registering a window is local and cheap (a range remembered); the memory is registered with the peers when a
//! plan first runs on it (collectively, at the same call on every rank, by the window's contract).

use mscclpp_sys::driver::DevicePtr;

use crate::error::{Error, Result};
use crate::executor::Within;

/// One window: `[base, base + size)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Window {
    /// First byte.
    pub base: DevicePtr,
    /// Bytes.
    pub size: u64,
}

impl Window {
    fn holds(&self, ptr: DevicePtr, bytes: u64) -> bool {
        ptr >= self.base && bytes <= self.size && ptr - self.base <= self.size - bytes
    }

    fn range(&self) -> (DevicePtr, u64) {
        (self.base, self.size)
    }
}

/// The windows of one communicator, by start address.
#[derive(Debug, Default)]
pub struct Windows {
    /// Sorted by `base`, never overlapping.
    list: Vec<Window>,
}

impl Windows {
    /// Remember `[base, base + size)`. Errors: an empty range, or one overlapping a window already registered
    /// (NCCL refuses those too).
    pub fn add(&mut self, base: DevicePtr, size: u64) -> Result<Window> {
        let w = Window { base, size };
        if size == 0 || base.checked_add(size).is_none() {
            return Err(Error::InvalidArgument(format!("window of {size} B at {base:#x}: not a range of memory")));
        }
        let at = self.list.partition_point(|x| x.base < base);
        let overlaps = |x: &Window| x.base < base + size && base < x.base + x.size;
        if self.list.get(at).is_some_and(overlaps) || at > 0 && overlaps(&self.list[at - 1]) {
            return Err(Error::InvalidArgument(format!(
                "window of {size} B at {base:#x} overlaps a window already registered; deregister that one first"
            )));
        }
        self.list.insert(at, w);
        Ok(w)
    }

    /// Forget the window starting at `base` (returned, if there was one).
    pub fn remove(&mut self, base: DevicePtr) -> Option<Window> {
        let at = self.list.binary_search_by_key(&base, |w| w.base).ok()?;
        Some(self.list.remove(at))
    }

    /// The window holding `bytes` at `ptr`.
    pub fn find(&self, ptr: DevicePtr, bytes: u64) -> Option<Window> {
        let at = self.list.partition_point(|w| w.base <= ptr);
        let w = *self.list.get(at.checked_sub(1)?)?;
        w.holds(ptr, bytes).then_some(w)
    }

    /// Where a call's input (`bytes_in` at `input`) and output lie, when both lie inside windows.
    pub fn within(&self, input: DevicePtr, bytes_in: u64, output: DevicePtr, bytes_out: u64) -> Option<Within> {
        if self.list.is_empty() {
            return None;
        }
        let i = self.find(input, bytes_in)?;
        let o = self.find(output, bytes_out)?;
        Some(Within { input: i.range(), output: o.range() })
    }

    /// Whether no window is registered.
    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calls_inside_windows_find_them_and_calls_across_their_ends_do_not() {
        let mut w = Windows::default();
        assert!(w.within(0x1000, 16, 0x1000, 16).is_none());
        w.add(0x10000, 0x1000).unwrap();
        w.add(0x20000, 0x2000).unwrap();
        assert_eq!(w.find(0x10000, 0x1000), Some(Window { base: 0x10000, size: 0x1000 }));
        assert_eq!(w.find(0x10800, 0x800).map(|x| x.base), Some(0x10000));
        // One byte past the end, before the start, in the gap between two windows.
        assert_eq!(w.find(0x10800, 0x801), None);
        assert_eq!(w.find(0xffff, 2), None);
        assert_eq!(w.find(0x18000, 16), None);
        let c = w.within(0x10100, 256, 0x20100, 512).unwrap();
        assert_eq!((c.input, c.output), ((0x10000, 0x1000), (0x20000, 0x2000)));
        assert!(w.within(0x10100, 256, 0x30000, 16).is_none());
    }

    #[test]
    fn overlapping_and_empty_windows_are_refused_and_removal_forgets_them() {
        let mut w = Windows::default();
        w.add(0x10000, 0x1000).unwrap();
        for (base, size) in [(0x10800, 0x1000), (0xf000, 0x1001), (0x10000, 16), (0xf000, 0x10000)] {
            let e = w.add(base, size).unwrap_err().to_string();
            assert!(e.contains("overlaps"), "{base:#x}+{size:#x}: {e}");
        }
        assert!(w.add(0x30000, 0).is_err());
        // Adjacent is fine.
        w.add(0x11000, 0x1000).unwrap();
        w.add(0xf000, 0x1000).unwrap();
        assert_eq!(w.remove(0x10000), Some(Window { base: 0x10000, size: 0x1000 }));
        assert_eq!(w.remove(0x10000), None);
        assert_eq!(w.find(0x10000, 16), None);
        assert_eq!(w.find(0x11000, 16).map(|x| x.base), Some(0x11000));
    }
}
