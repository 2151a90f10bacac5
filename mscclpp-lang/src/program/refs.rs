//! Plan buffer references of a program's chunks, and the checks the operations make on them.

use super::buffer::Chunk;
use super::error::ProgramError;
use super::ir::RankState;
use super::kinds::ChunkKind;
use crate::plan::{BufferRef, ChannelType};

/// A local reference to `c` (on the rank that runs the operation).
pub(crate) fn local_ref<K: ChunkKind>(c: &Chunk<'_, K>) -> BufferRef {
    BufferRef::local(c.buffer, c.index as u32, c.size as u32)
}

pub(crate) fn check_on_rank<K: ChunkKind>(
    c: &Chunk<'_, K>,
    rank: usize,
    op: &str,
    role: &str,
) -> Result<(), ProgramError> {
    if c.rank != rank {
        return Err(ProgramError::invalid(
            Some(rank),
            None,
            op,
            format!("the {role} chunk is on rank {}, but this operation runs on rank {rank}", c.rank),
        ));
    }
    Ok(())
}

pub(crate) fn check_same_size(a: usize, b: usize, rank: usize, op: &str, what: &str) -> Result<(), ProgramError> {
    if a != b {
        return Err(ProgramError::invalid(
            Some(rank),
            None,
            op,
            format!("{what}: {a} chunk(s) against {b}; both sides of an operation must have the same size"),
        ));
    }
    Ok(())
}

/// A reference to the peer's chunk `c` through thread block `t`'s remote buffer for it (registered on first use).
pub(crate) fn remote_ref<K: ChunkKind>(rs: &mut RankState, t: usize, kind: ChannelType, c: &Chunk<'_, K>) -> BufferRef {
    let id = rs.remote_buffer(c.rank, c.buffer, kind);
    BufferRef::remote(rs.tb(t).remote(kind, id), c.index as u32, c.size as u32)
}
