//! The chunk math of a plan: how chunk indices become byte offsets and sizes (all buffers share one chunk size;
//! chunk boundary `k` is the balanced split of the buffer into alignment units, thread-block groups split an
//! operation's range again the same way).
//!
//! One implementation, shared by the CPU verifier and the GPU executor.

use super::schema::{Collective, Gpu, IterContext, Plan, TbgInfo};

/// Why a message size does not fit a plan.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SizeError {
    /// Outside `[min_message_size, max_message_size]`.
    #[error("message size {size} B is outside the plan's range [{min}, {max}] B; pick another plan or size")]
    OutOfRange {
        /// The checked size.
        size: u64,
        /// Plan minimum.
        min: u64,
        /// Plan maximum.
        max: u64,
    },
    /// Not a multiple of the alignment.
    #[error("{buffer} size {size} B is not a multiple of the plan's buffer alignment ({align} B)")]
    Unaligned {
        /// Which buffer.
        buffer: &'static str,
        /// Its size.
        size: u64,
        /// Plan alignment.
        align: u64,
    },
    /// Cannot be split into the plan's chunks.
    #[error(
        "{buffer} size {size} B cannot be split into {chunks} chunks of whole {align}-byte units; use a multiple of {} B",
        chunks.saturating_mul(*align)
    )]
    Indivisible {
        /// Which buffer.
        buffer: &'static str,
        /// Its size.
        size: u64,
        /// Chunk count.
        chunks: u64,
        /// Plan alignment.
        align: u64,
    },
    /// Input and output imply different chunk sizes.
    #[error(
        "input {input} B in {input_chunks} chunks and output {output} B in {output_chunks} chunks give different chunk sizes; for this collective the output must be {} B",
        input / (*input_chunks as u64).max(1) * (*output_chunks as u64)
    )]
    Mismatch {
        /// Input size.
        input: u64,
        /// Input chunks.
        input_chunks: u32,
        /// Output size.
        output: u64,
        /// Output chunks.
        output_chunks: u32,
    },
    /// Neither buffer has chunks.
    #[error("rank {rank} has neither input nor output chunks")]
    NoChunks {
        /// The rank.
        rank: usize,
    },
    /// Offsets beyond 32 bits.
    #[error("buffers of {size} B exceed the interpreter's 32-bit offsets (4 GiB)")]
    TooLarge {
        /// The size.
        size: u64,
    },
}

/// Byte layout of one rank's buffers for given input and output sizes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Layout {
    /// Alignment unit in bytes.
    pub align: u64,
    /// Units in the reference buffer.
    units: u64,
    /// Chunks of the reference buffer.
    chunks: u64,
}

impl Layout {
    /// Checks `input_size`/`output_size` against the plan (range, alignment, divisibility) and returns the layout
    /// of rank `rank`.
    pub fn new(plan: &Plan, rank: usize, input_size: u64, output_size: u64) -> Result<Layout, SizeError> {
        let checked = if plan.collective == Collective::AllGather { output_size } else { input_size };
        if checked < plan.min_message() || checked > plan.max_message() {
            return Err(SizeError::OutOfRange { size: checked, min: plan.min_message(), max: plan.max_message() });
        }
        let gpu = plan.gpus.get(rank).ok_or(SizeError::NoChunks { rank })?;
        Self::for_gpu(gpu, rank, plan.alignment(), input_size, output_size)
    }

    /// As [`Layout::new`] without the message-range check.
    pub fn for_gpu(gpu: &Gpu, rank: usize, align: u64, input_size: u64, output_size: u64) -> Result<Layout, SizeError> {
        let align = align.max(1);
        for (buffer, size, chunks) in
            [("input", input_size, gpu.input_chunks), ("output", output_size, gpu.output_chunks)]
        {
            if chunks == 0 {
                continue;
            }
            if size % align != 0 {
                return Err(SizeError::Unaligned { buffer, size, align });
            }
            if !(size / align).is_multiple_of(chunks as u64) {
                return Err(SizeError::Indivisible { buffer, size, chunks: chunks as u64, align });
            }
        }
        let (size, chunks) = match (gpu.input_chunks, gpu.output_chunks) {
            (0, 0) => return Err(SizeError::NoChunks { rank }),
            (0, oc) => (output_size, oc),
            (ic, 0) => (input_size, ic),
            (ic, oc) => {
                if input_size as u128 * oc as u128 != output_size as u128 * ic as u128 {
                    return Err(SizeError::Mismatch {
                        input: input_size,
                        input_chunks: ic,
                        output: output_size,
                        output_chunks: oc,
                    });
                }
                (input_size, ic)
            }
        };
        Ok(Layout { align, units: size / align, chunks: chunks as u64 })
    }

    /// Byte offset of chunk boundary `k`: `align * (k*floor(n/C) + min(k, n mod C))`.
    pub fn boundary(&self, k: u64) -> u64 {
        let c = self.chunks.max(1);
        self.align * (k * (self.units / c) + k.min(self.units % c))
    }

    /// Bytes of one chunk (the first one; all are equal once the size checks pass).
    pub fn chunk_size(&self) -> u64 {
        self.boundary(1)
    }

    /// Largest chunk in bytes: `ceil(n/C) * align`.
    pub fn upper_chunk(&self) -> u64 {
        let c = self.chunks.max(1);
        self.units.div_ceil(c) * self.align
    }

    /// `(offset, bytes)` of chunks `[index, index+size)`.
    pub fn range(&self, index: u32, size: u32) -> (u64, u64) {
        let a = self.boundary(index as u64);
        let b = self.boundary(index as u64 + size as u64);
        (a, b - a)
    }

    /// `(offset, bytes)` of chunks `[index, index+size)`, narrowed to a thread-block-group slice.
    pub fn range_tbg(&self, index: u32, size: u32, tbg: Option<TbgInfo>) -> (u64, u64) {
        let (off, bytes) = self.range(index, size);
        match tbg {
            None => (off, bytes),
            Some(g) => {
                let (o, b) = split_balanced(bytes, self.align, g.tbg_size as u64, g.tb_id as u64);
                (off + o, b)
            }
        }
    }

    /// Payload bytes of the scratch buffer (per half when double buffered): chunk size × scratch chunks.
    pub fn scratch_payload_bytes(&self, gpu: &Gpu) -> u64 {
        self.upper_chunk().saturating_mul(gpu.scratch_chunks as u64)
    }

    /// Bytes to allocate for scratch: payload, ×2 for LL packets, ×2 for double buffering.
    pub fn scratch_alloc_bytes(&self, plan: &Plan, gpu: &Gpu) -> u64 {
        plan.scratch_alloc_for(self.scratch_payload_bytes(gpu))
    }

    /// Iterations of a pipeline: `ceil(num_chunks * upper_chunk / unit_size)`.
    pub fn pipeline_iterations(&self, ic: IterContext) -> u64 {
        (ic.num_chunks as u64).saturating_mul(self.upper_chunk()).div_ceil(ic.unit_size.max(1))
    }

    /// `(offset, bytes)` of iteration `i` of a pipelined operation spanning `(off, bytes)`: shifted by
    /// `i * unit_size` and clamped to `unit_size` (as the executor's `pipeline` operation does). `None` when the
    /// iteration starts beyond the operation's bytes (the reference kernel's remaining size would underflow).
    pub fn pipeline_slice(&self, off: u64, bytes: u64, ic: IterContext, i: u64) -> Option<(u64, u64)> {
        let start = i.checked_mul(ic.unit_size)?;
        if start > bytes {
            return None;
        }
        Some((off + start, (bytes - start).min(ic.unit_size)))
    }
}

/// Balanced split of `bytes` into `parts` aligned slices; returns `(offset, bytes)` of slice `k`.
pub fn split_balanced(bytes: u64, align: u64, parts: u64, k: u64) -> (u64, u64) {
    let align = align.max(1);
    let parts = parts.max(1);
    let n = bytes / align;
    let at = |i: u64| align * (i * (n / parts) + i.min(n % parts));
    let start = at(k);
    let end = if k + 1 >= parts { bytes } else { at(k + 1) };
    (start, end.saturating_sub(start))
}

/// Element count a collective's input and output hold, in chunks per rank: `factor` per rank for
/// the side that holds one rank's share, `world * factor` for the side that holds everyone's.
pub fn collective_buffer_chunks(collective: Collective, world: u32, factor: u32) -> (u32, u32) {
    match collective {
        Collective::AllGather => (factor, world * factor),
        Collective::AllReduce | Collective::AllToAll => (world * factor, world * factor),
        Collective::ReduceScatter => (world * factor, factor),
        Collective::SendRecv | Collective::Broadcast | Collective::Test | Collective::Custom => (factor, factor),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gpu(ic: u32, oc: u32, sc: u32) -> Gpu {
        Gpu {
            id: 0,
            input_chunks: ic,
            output_chunks: oc,
            scratch_chunks: sc,
            threadblocks: vec![],
            channels: vec![],
            remote_buffers: vec![],
            semaphores: None,
        }
    }

    #[test]
    fn chunk_boundaries_are_balanced() {
        let l = Layout::for_gpu(&gpu(4, 4, 0), 0, 16, 1024, 1024).unwrap();
        assert_eq!(l.range(1, 2), (256, 512));
        assert_eq!(l.chunk_size(), 256);
    }

    #[test]
    fn allgather_uses_input_chunk_size() {
        let l = Layout::for_gpu(&gpu(1, 2, 0), 0, 16, 1 << 20, 2 << 20).unwrap();
        assert_eq!(l.range(1, 1), (1 << 20, 1 << 20));
    }

    #[test]
    fn indivisible_sizes_are_refused() {
        let e = Layout::for_gpu(&gpu(2, 2, 0), 0, 16, 48, 48).unwrap_err();
        assert!(matches!(e, SizeError::Indivisible { .. }), "{e}");
        let e = Layout::for_gpu(&gpu(2, 2, 0), 0, 16, 40, 40).unwrap_err();
        assert!(matches!(e, SizeError::Unaligned { .. }), "{e}");
        let e = Layout::for_gpu(&gpu(1, 2, 0), 0, 16, 64, 64).unwrap_err();
        assert!(matches!(e, SizeError::Mismatch { .. }), "{e}");
    }

    #[test]
    fn tbg_slices_cover_the_range() {
        let l = Layout::for_gpu(&gpu(1, 1, 0), 0, 16, 1008, 1008).unwrap();
        let mut next = 0;
        for k in 0..4 {
            let (o, b) = l.range_tbg(0, 1, Some(TbgInfo { tb_id: k, tbg_size: 4 }));
            assert_eq!(o, next);
            assert_eq!(b % 16, 0);
            next = o + b;
        }
        assert_eq!(next, 1008);
    }
}
