//! Buffers of a rank and chunks (slices of them).

use std::marker::PhantomData;
use std::ops::Range;

use super::error::ProgramError;
use super::kinds::{AnyBuffer, BufferKind, ChunkKind};
use super::state::Brand;
use crate::location::{Location, SourceLocation};
use crate::plan::BufferType;

/// A buffer of one rank, of kind `K` ([`Input`](super::Input), [`Output`](super::Output) or
/// [`Scratch`](super::Scratch)): a run of chunks to take slices from.
///
/// In-place collectives alias buffers as MSCCL++ does, so a `Buffer<Input>` may lie inside the output buffer; the
/// kind in the type is the role, the plan gets the buffer it really is.
#[derive(Clone, Copy)]
pub struct Buffer<'p, K: BufferKind> {
    rank: usize,
    buffer: BufferType,
    offset: usize,
    len: usize,
    _brand: Brand<'p>,
    _kind: PhantomData<K>,
}

impl<'p, K: BufferKind> std::fmt::Debug for Buffer<'p, K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Buffer(rank {}, {} [{}, {}))", self.rank, self.buffer, self.offset, self.offset + self.len)
    }
}

impl<'p, K: BufferKind> Buffer<'p, K> {
    pub(crate) fn new(rank: usize, buffer: BufferType, offset: usize, len: usize) -> Self {
        Buffer { rank, buffer, offset, len, _brand: PhantomData, _kind: PhantomData }
    }
    /// The owning rank.
    pub fn rank(&self) -> usize {
        self.rank
    }
    /// Number of chunks.
    pub fn len(&self) -> usize {
        self.len
    }
    /// Whether the buffer has no chunks.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    /// The plan buffer this lies in (for aliases of in-place collectives, the aliased one).
    pub fn buffer_type(&self) -> BufferType {
        self.buffer
    }
    /// First chunk of this buffer inside the plan buffer.
    pub fn offset(&self) -> usize {
        self.offset
    }
    /// Chunks `range` of this buffer.
    #[track_caller]
    pub fn slice(&self, range: Range<usize>) -> Result<Chunk<'p, K>, ProgramError> {
        if range.start >= range.end || range.end > self.len {
            return Err(ProgramError::ChunkOutOfBounds {
                site: Box::new(
                    Location::edsl_op(Some(self.rank), None, "slice")
                        .with_source(&[SourceLocation::at_line("slice", super::line::here())]),
                ),
                rank: self.rank,
                buffer: K::TYPE.long_name().to_string(),
                start: range.start,
                end: range.end,
                len: self.len,
            });
        }
        Ok(Chunk::new(self.rank, self.buffer, self.offset + range.start, range.end - range.start))
    }
    /// Chunk `i` of this buffer.
    #[track_caller]
    pub fn chunk(&self, i: usize) -> Result<Chunk<'p, K>, ProgramError> {
        self.slice(i..i + 1)
    }
    /// The whole buffer as one chunk.
    #[track_caller]
    pub fn all(&self) -> Result<Chunk<'p, K>, ProgramError> {
        self.slice(0..self.len)
    }
}

/// A run of consecutive chunks of one rank's buffer: what operations read and write.
///
/// `K` is the buffer kind operations check at compile time (e.g. packets land in [`Scratch`](super::Scratch)
/// only); [`Chunk::erase`] turns it into [`AnyBuffer`] for lists that mix kinds, and for choosing between
/// buffers at run time: `if p.inplace() { out.erase() } else { inp.erase() }` (without `erase` the two arms have
/// different types, error E0308).
///
/// A chunk belongs to the program that made it (the brand `'p`): keeping it after `build_plan` returns, or using
/// it in another program, is error E0521 "borrowed data escapes outside of closure" (docs/edsl.md, "What the types
/// forbid"). The same holds for [`Buffer`], [`Channel`](super::Channel), [`Rank`](super::Rank) and semaphores.
#[derive(Clone, Copy)]
pub struct Chunk<'p, K: ChunkKind> {
    pub(crate) rank: usize,
    pub(crate) buffer: BufferType,
    pub(crate) index: usize,
    pub(crate) size: usize,
    _brand: Brand<'p>,
    _kind: PhantomData<K>,
}

impl<'p, K: ChunkKind> std::fmt::Debug for Chunk<'p, K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Chunk(rank {}, {} [{}, {}))", self.rank, self.buffer, self.index, self.index + self.size)
    }
}

impl<'p, K: ChunkKind> PartialEq for Chunk<'p, K> {
    fn eq(&self, other: &Self) -> bool {
        (self.rank, self.buffer, self.index, self.size) == (other.rank, other.buffer, other.index, other.size)
    }
}

impl<'p, K: ChunkKind> Chunk<'p, K> {
    pub(crate) fn new(rank: usize, buffer: BufferType, index: usize, size: usize) -> Self {
        Chunk { rank, buffer, index, size, _brand: PhantomData, _kind: PhantomData }
    }
    /// The rank holding the chunk.
    pub fn rank(&self) -> usize {
        self.rank
    }
    /// The plan buffer the chunk lies in.
    pub fn buffer_type(&self) -> BufferType {
        self.buffer
    }
    /// Index of the first chunk in the plan buffer.
    pub fn index(&self) -> usize {
        self.index
    }
    /// Number of chunks.
    pub fn size(&self) -> usize {
        self.size
    }
    /// The same chunk with its kind erased, to mix kinds in one list or to pick one of two buffers at run time
    /// (e.g. the output in place, the input out of place) in one variable.
    pub fn erase(self) -> Chunk<'p, AnyBuffer> {
        Chunk::new(self.rank, self.buffer, self.index, self.size)
    }
    /// Sub-chunks `range` of this chunk.
    #[track_caller]
    pub fn slice(&self, range: Range<usize>) -> Result<Chunk<'p, K>, ProgramError> {
        if range.start >= range.end || range.end > self.size {
            return Err(ProgramError::ChunkOutOfBounds {
                site: Box::new(
                    Location::edsl_op(Some(self.rank), None, "slice")
                        .with_source(&[SourceLocation::at_line("slice", super::line::here())]),
                ),
                rank: self.rank,
                buffer: self.buffer.long_name().to_string(),
                start: self.index + range.start,
                end: self.index + range.end,
                len: self.index + self.size,
            });
        }
        Ok(Chunk::new(self.rank, self.buffer, self.index + range.start, range.end - range.start))
    }
}
