//! Staging buffers that grow on demand: an input and an output buffer of one size, replaced by larger ones when a
//! call needs more. Replaced buffers are kept (work queued on them, or a captured graph, may still use them).

use mscclpp_sys::driver::{Device, DevicePtr};

use crate::error::Result;
use crate::memory::GpuBuffer;

/// The smallest staging buffer allocated.
const MIN_BYTES: u64 = 1 << 20;

/// A pair of staging buffers and the ones they replaced.
#[derive(Debug, Default)]
pub(super) struct Staging {
    current: Option<(GpuBuffer, GpuBuffer)>,
    retired: Vec<(GpuBuffer, GpuBuffer)>,
    generation: u64,
}

impl Staging {
    /// Make each buffer hold at least `bytes` (the next power of two, at least 1 MiB, when it must grow).
    pub(super) fn reserve(&mut self, device: &Device, bytes: u64) -> Result<()> {
        if self.capacity() >= bytes {
            return Ok(());
        }
        let size = bytes.max(MIN_BYTES).checked_next_power_of_two().unwrap_or(bytes) as usize;
        let pair = (GpuBuffer::new(device, size)?, GpuBuffer::new(device, size)?);
        if let Some(old) = self.current.replace(pair) {
            self.retired.push(old);
        }
        self.generation += 1;
        Ok(())
    }

    /// Bytes each buffer holds (0 before the first [`Staging::reserve`]).
    pub(super) fn capacity(&self) -> u64 {
        self.current.as_ref().map_or(0, |(i, o)| i.len().min(o.len()) as u64)
    }

    /// The input buffer (0 before the first reserve).
    pub(super) fn input(&self) -> DevicePtr {
        self.current.as_ref().map_or(0, |(i, _)| i.ptr())
    }

    /// The output buffer (0 before the first reserve).
    pub(super) fn output(&self) -> DevicePtr {
        self.current.as_ref().map_or(0, |(_, o)| o.ptr())
    }

    /// How many times the buffers were replaced: launches bound on older ones must be bound again.
    pub(super) fn generation(&self) -> u64 {
        self.generation
    }
}
