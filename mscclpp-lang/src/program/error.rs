//! Errors of program construction and lowering: each names the rank, thread block and operation concerned.

use crate::location::{Location, SourceLocation};
use crate::plan::PlanError;

/// An error of a collective program: a broken run-time rule of the eDSL, a resource limit, or an invalid plan.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ProgramError {
    /// A rank that does not exist.
    #[error("{}: rank {rank} does not exist in a world of {world_size} ranks; use ranks 0..{world_size}", .site.within("program"))]
    RankOutOfRange {
        /// Where.
        site: Box<Location>,
        /// The rank asked for.
        rank: usize,
        /// Number of ranks.
        world_size: usize,
    },
    /// A slice beyond the end of a buffer.
    #[error(
        "{}: chunks [{start}, {end}) are out of bounds: the {buffer} buffer of rank {rank} has {len} chunk(s)",
        .site.within("program")
    )]
    ChunkOutOfBounds {
        /// Where.
        site: Box<Location>,
        /// The buffer's rank.
        rank: usize,
        /// Which buffer (`input`, `output`, `scratch`).
        buffer: String,
        /// First chunk asked for (relative to the buffer).
        start: usize,
        /// One past the last chunk asked for.
        end: usize,
        /// Chunks in the buffer.
        len: usize,
    },
    /// Signals and waits that do not pair up (lowering step 1, docs/edsl.md "Lowering").
    #[error(
        "unbalanced signal/wait over {channel} channels from rank {src} to rank {dst}: rank {src} signals {signals} time(s) but rank {dst} waits {waits} time(s){calls}; every signal needs exactly one wait on the peer's channel"
    )]
    UnpairedSignal {
        /// Channel type (`memory` or `port`).
        channel: String,
        /// Signalling rank.
        src: usize,
        /// Waiting rank.
        dst: usize,
        /// Signals sent.
        signals: usize,
        /// Waits performed.
        waits: usize,
        /// Where the program signals and waits, e.g. " (signals: `signal` at src/lib.rs:12:9 (2 times); waits:
        /// `wait` at src/lib.rs:15:9)"; empty when there are none.
        calls: String,
    },
    /// Signals and waits balance between two ranks in total, but not on the channels that pair: the k-th channel
    /// of a type from rank `a` to rank `b` pairs with the k-th channel of that type from `b` to `a`, and a signal
    /// on one is seen only by a wait on the other (lowering step 1, docs/edsl.md "Lowering").
    #[error(
        "mispaired {channel} channels: {signaller} pairs with {pair}, but rank {src} signals {signals} time(s) on it and rank {dst} waits {waits} time(s) on its pair; a signal is seen only by a wait on the paired channel (the k-th channel a → b pairs with the k-th channel b → a, in creation order). When two channels reach the same peer (at 2 ranks a ring's next and prev do), create one channel per peer and use it both ways"
    )]
    MispairedChannel {
        /// Channel type (`memory` or `port`).
        channel: String,
        /// The signalling rank.
        src: usize,
        /// The waiting rank.
        dst: usize,
        /// The channel's position among `src`'s channels of this type to `dst` (0-based).
        k: usize,
        /// The signalling rank's channel, e.g. "rank 0's memory channel 0 to rank 1 (created at src/lib.rs:9:5,
        /// signalled at src/lib.rs:12:9)".
        signaller: String,
        /// The paired channel, e.g. "rank 1's memory channel 0 to rank 0 (created at src/lib.rs:9:5; rank 1 waits
        /// for rank 0 instead on rank 1's memory channel 1 to rank 0 (created at src/lib.rs:10:5, waited on at
        /// src/lib.rs:14:9))", or
        /// "no channel: rank 1 has only 1 memory channel(s) to rank 0".
        pair: String,
        /// Signals sent on the signalling rank's channel.
        signals: usize,
        /// Waits performed on the paired channel.
        waits: usize,
    },
    /// A hardware limit of the interpreter.
    #[error("{}: {message}", .site.within("program"))]
    Limit {
        /// Where.
        site: Box<Location>,
        /// What is exceeded and what to do.
        message: String,
    },
    /// Any other broken rule of the eDSL.
    #[error("{}: {message}", .site.within("program"))]
    Invalid {
        /// Where.
        site: Box<Location>,
        /// What is wrong and what to do.
        message: String,
    },
    /// The lowered plan fails validation (a bug in the lowering, or a program the schema cannot express).
    #[error("the lowered plan is invalid: {0}")]
    Plan(#[from] PlanError),
    /// An error raised by the program itself.
    #[error("{0}")]
    Custom(String),
}

impl ProgramError {
    /// An error for a broken rule at `rank`, thread block `tb`, operation `op`.
    pub fn invalid(rank: Option<usize>, tb: Option<usize>, op: &str, message: impl Into<String>) -> Self {
        ProgramError::Invalid { site: Box::new(Location::edsl_op(rank, tb, op)), message: message.into() }
    }
    /// An error a program raises itself, e.g. for a world size it does not support.
    ///
    /// ```
    /// use mscclpp_lang::prelude::*;
    /// let e = ProgramError::custom("this algorithm needs an even number of ranks");
    /// assert_eq!(e.to_string(), "this algorithm needs an even number of ranks");
    /// ```
    pub fn custom(message: impl Into<String>) -> Self {
        ProgramError::Custom(message.into())
    }
    pub(crate) fn limit(rank: usize, tb: usize, op: Option<&str>, message: impl Into<String>) -> Self {
        ProgramError::Limit {
            site: Box::new(Location {
                rank: Some(rank),
                tb: Some(tb),
                op_name: op.map(str::to_string),
                ..Location::default()
            }),
            message: message.into(),
        }
    }
    /// Fills in the rank and thread block of the site where they are not known yet.
    pub(crate) fn located(mut self, rank: Option<usize>, tb: Option<usize>) -> Self {
        if let ProgramError::RankOutOfRange { site, .. }
        | ProgramError::ChunkOutOfBounds { site, .. }
        | ProgramError::Limit { site, .. }
        | ProgramError::Invalid { site, .. } = &mut self
        {
            site.rank = site.rank.or(rank);
            site.tb = site.tb.or(tb);
        }
        self
    }
    /// Names the program source line `at` of the eDSL call `call` at the error's site, where it names none yet.
    pub(crate) fn at_call(mut self, call: &str, at: super::line::Line) -> Self {
        if let ProgramError::RankOutOfRange { site, .. }
        | ProgramError::ChunkOutOfBounds { site, .. }
        | ProgramError::Limit { site, .. }
        | ProgramError::Invalid { site, .. } = &mut self
            && site.source.is_empty()
        {
            site.source = vec![SourceLocation::at_line(call, at)];
        }
        self
    }
    /// The site the error names, if any.
    pub fn site(&self) -> Option<&Location> {
        match self {
            ProgramError::RankOutOfRange { site, .. }
            | ProgramError::ChunkOutOfBounds { site, .. }
            | ProgramError::Limit { site, .. }
            | ProgramError::Invalid { site, .. } => Some(site),
            _ => None,
        }
    }
}
