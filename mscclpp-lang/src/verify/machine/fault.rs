//! What stops an operation on the simulated machine: a reference outside its buffer, an operand the plan leaves
//! out. Each becomes an out-of-bounds finding at the operation ([`super::Machine::oob`]), with this text.

use crate::plan::BufferType;

/// An operation the machine cannot carry out as the plan writes it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum Fault {
    /// Bytes outside the buffer view the reference addresses.
    #[error(
        "{}{} bytes [{start}, {end}) of rank {owner}'s {} buffer, which has {limit} bytes{}",
        if *.packets { "packets: " } else { "" },
        if *.local { "local" } else { "remote" },
        .buffer.long_name(),
        if *.per_half { " per half" } else { "" }
    )]
    OutsideBuffer {
        /// In packet format (offsets doubled).
        packets: bool,
        /// This rank's own buffer.
        local: bool,
        /// First byte.
        start: u64,
        /// One past the last byte.
        end: u64,
        /// The rank that owns the buffer.
        owner: usize,
        /// Which buffer.
        buffer: BufferType,
        /// Its size (of one half, for a double scratch buffer).
        limit: u64,
        /// Whether `limit` is per half of a double scratch buffer.
        per_half: bool,
    },
    /// Bytes beyond the owner's allocation (ranks that size their buffers differently).
    #[error(
        "{}bytes [{start}, {end}) of rank {owner}'s {} buffer, beyond its allocation of {size} bytes",
        if *.packets { "packets: " } else { "" },
        .buffer.long_name()
    )]
    BeyondAllocation {
        /// In packet format.
        packets: bool,
        /// First byte.
        start: u64,
        /// One past the last byte.
        end: u64,
        /// The rank that owns the buffer.
        owner: usize,
        /// Which buffer.
        buffer: BufferType,
        /// The allocation's size.
        size: u64,
    },
    /// A pipeline iteration that starts past the end of its operation.
    #[error(
        "pipeline iteration {iteration} starts at byte {start} of an operation spanning only {bytes} bytes (the \
         reference kernel's remaining size underflows); the inner operation must span `num_chunks` = {num_chunks} \
         chunk(s)"
    )]
    PipelineUnderflow {
        /// The iteration.
        iteration: u64,
        /// Its first byte.
        start: u64,
        /// The operation's bytes.
        bytes: u64,
        /// The pipeline's chunk count.
        num_chunks: u32,
    },
    /// An operation without the operand it needs.
    #[error("no {0} buffer")]
    Missing(&'static str),
    /// A reference that resolves to no buffer.
    #[error("a reference resolves to no buffer")]
    Unresolved,
    /// A port-channel operation on another kind of channel.
    #[error("`{0}` needs a port channel")]
    NeedsPortChannel(String),
}
