//! Errors of the registry: each says what is supported and what to do next.

use super::shape::{BufferMode, RanksPerNode, SizeRange};
use crate::program::ProgramError;

/// An error of lookup, selection, compilation or the plan cache.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RegistryError {
    /// No program has this name.
    #[error("no collective program is named `{name}`; the registered programs are: {}. Run `mscclpp list` to see them with their metadata", known.join(", "))]
    UnknownProgram {
        /// The name asked for.
        name: String,
        /// Every registered name.
        known: Vec<String>,
    },
    /// The program does not support this world size.
    #[error(
        "program `{name}` supports world sizes {supported}, not {world_size}; pick a world size in that range or another program (`mscclpp list`)"
    )]
    UnsupportedWorldSize {
        /// The program.
        name: String,
        /// The world size asked for.
        world_size: usize,
        /// What it supports.
        supported: SizeRange,
    },
    /// The program does not support this number of ranks per node.
    #[error("program `{name}` does not support {ranks_per_node} ranks per node in a world of {world_size}: it supports {}", describe_rpn(*supported))]
    UnsupportedRanksPerNode {
        /// The program.
        name: String,
        /// The world size asked for.
        world_size: usize,
        /// The ranks per node asked for.
        ranks_per_node: usize,
        /// What it supports.
        supported: RanksPerNode,
    },
    /// The program does not support this buffer placement.
    #[error("program `{name}` runs {} only, not {}", mode_words(*supported), if *inplace { "in place" } else { "out of place" })]
    UnsupportedBufferMode {
        /// The program.
        name: String,
        /// The placement asked for.
        inplace: bool,
        /// What it supports.
        supported: BufferMode,
    },
    /// Zero instances were asked for.
    #[error("program `{name}` cannot be built with 0 instances; use 1 or more")]
    ZeroInstances {
        /// The program.
        name: String,
    },
    /// The program function or its lowering failed.
    #[error("program `{name}` failed to build for {world_size} ranks: {error}")]
    Build {
        /// The program.
        name: String,
        /// The world size it was built for.
        world_size: usize,
        /// What went wrong (part of this error's message, so not repeated as its source).
        error: Box<ProgramError>,
    },
    /// No registered program fits a request.
    #[error("no registered program fits {request}{}", if reasons.is_empty() { String::new() } else { format!(":\n  {}", reasons.join("\n  ")) })]
    NoProgram {
        /// The request, in words.
        request: String,
        /// Why each program of the same collective was passed over.
        reasons: Vec<String>,
    },
    /// A user selector returned an index beyond the candidate list.
    #[error(
        "the installed selector chose candidate {index}, but there are only {count} candidates; return an index below {count} or `None`"
    )]
    SelectorOutOfRange {
        /// The index returned.
        index: usize,
        /// Number of candidates.
        count: usize,
    },
    /// No cache directory could be determined.
    #[error("no plan cache directory: set MSCCLPP_CACHE_DIR (or HOME, for the default ~/.cache/mscclpp)")]
    NoCacheDir,
    /// A cache file or directory could not be written.
    #[error("plan cache {path}: {message}")]
    Cache {
        /// The file or directory.
        path: String,
        /// What the OS said, and what to do.
        message: String,
    },
}

fn describe_rpn(r: RanksPerNode) -> String {
    match r {
        RanksPerNode::World => "only one node holding all ranks (ranks per node = world size)".to_string(),
        RanksPerNode::Range(r) => format!("{r} ranks per node, dividing the world size"),
        RanksPerNode::Nodes(n) => format!("{n} nodes of equal size (world size / {n} ranks per node)"),
    }
}

fn mode_words(m: BufferMode) -> &'static str {
    match m {
        BufferMode::InPlace => "in place",
        BufferMode::OutOfPlace => "out of place",
        BufferMode::Both => "in place or out of place",
    }
}
