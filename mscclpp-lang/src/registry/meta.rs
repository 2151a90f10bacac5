//! What the registry knows about a program: [`ProgramMeta`], emitted by `#[collective_program]`.

use std::collections::BTreeMap;

use serde::Serialize;

use super::error::RegistryError;
use super::shape::{BufferMode, RanksPerNode, SizeRange};
use crate::plan::{Collective, Plan, Protocol};
use crate::program::{ProgramError, ProgramSpec};

/// The builder the macro generates: runs the program function for a spec and lowers it to a plan.
pub type BuildFn = fn(&ProgramSpec) -> Result<Plan, ProgramError>;

/// An integer tag, as in `tags(default = 1)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Tag {
    /// The tag's name.
    pub key: &'static str,
    /// Its value.
    pub value: i64,
}

/// Everything the registry knows about one program. `#[collective_program]` emits one per function; the fields
/// are public so that the macro can build it in a `static`, but you rarely construct one by hand.
#[derive(Debug, Clone, Copy)]
pub struct ProgramMeta {
    /// Registry name; also the plan's `name`.
    pub name: &'static str,
    /// Rust path of the function.
    pub function: &'static str,
    /// The collective it implements.
    pub collective: Collective,
    /// Simple or LL, from the function's signature.
    pub protocol: Protocol,
    /// Supported world sizes.
    pub world_sizes: SizeRange,
    /// Supported ranks per node.
    pub ranks_per_node: RanksPerNode,
    /// Supported message sizes in bytes: the output size for all-gather, the input size otherwise (as the plan's
    /// `min_message_size`/`max_message_size`).
    pub message_sizes: SizeRange,
    /// In place, out of place or both.
    pub buffer_mode: BufferMode,
    /// Integer tags, e.g. `default = 1`.
    pub tags: &'static [Tag],
    /// One-line description (the doc comment's first paragraph unless given).
    pub description: &'static str,
    /// `(from message size, thread blocks per rank)`, sizes increasing: how much parallelism the program wants
    /// as messages grow. Empty means one instance at every size. See [`ProgramMeta::tuned_target`].
    pub thread_blocks: &'static [(u64, usize)],
    /// `(from message size, threads per block)` from the same table (0: the plan's own value, 1024 by
    /// default). Small LL messages run fastest with few threads per block: block launch and barriers cost less.
    pub threads_per_block: &'static [(u64, u32)],
    /// The function's tokens; part of the plan cache key.
    pub source: &'static str,
    /// The crate that defines the program.
    pub crate_name: &'static str,
    /// That crate's version; part of the plan cache key.
    pub crate_version: &'static str,
    /// A hash of the defining crate's sources, when its build script provides one (`MSCCLPP_PROGRAM_SOURCES`, as
    /// `mscclpp-algorithms/build.rs` does); part of the plan cache key. Empty otherwise: the key then covers the file the
    /// program was linked into ([`super::cache::cache_key`]).
    pub sources: &'static str,
    /// Source file of the attribute.
    pub file: &'static str,
    /// Line of the attribute.
    pub line: u32,
    /// Builds the plan for a spec.
    pub build: BuildFn,
}

/// Thread blocks per rank a tuned plan may use: one resident 1024-thread block per multiprocessor on the
/// smallest GPU targeted (H100 and H200 have 132 multiprocessors).
pub const MAX_RESIDENT_THREAD_BLOCKS: usize = 128;

/// Most thread blocks any rank of `plan` runs.
pub fn max_thread_blocks(plan: &Plan) -> usize {
    plan.gpus.iter().map(|g| g.threadblocks.len()).max().unwrap_or(0)
}

/// Whether every rank of `plan` can split a message of `message_size` bytes (the output of an all-gather, the
/// input otherwise) into whole chunks.
pub(crate) fn splits(plan: &Plan, message_size: u64) -> bool {
    plan.gpus.iter().enumerate().all(|(rank, g)| {
        let (ic, oc) = (g.input_chunks as u64, g.output_chunks as u64);
        let (input, output) = if plan.collective == crate::plan::Collective::AllGather {
            if oc == 0 {
                return false;
            }
            match message_size.checked_mul(ic) {
                Some(v) => (v / oc, message_size),
                None => return false,
            }
        } else {
            if ic == 0 {
                return false;
            }
            match message_size.checked_mul(oc) {
                Some(v) => (message_size, v / ic),
                None => return false,
            }
        };
        crate::plan::Layout::new(plan, rank, input, output).is_ok()
    })
}

/// What `#[collective_program]` submits to `inventory`.
#[doc(hidden)]
pub struct Registration(pub ProgramMeta);

inventory::collect!(Registration);

/// How to build a program: world size, ranks per node, instances and buffer placement.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Target {
    /// Number of ranks.
    pub world_size: usize,
    /// Ranks per node.
    pub ranks_per_node: usize,
    /// Copies of the program interleaved over the buffers.
    pub instances: usize,
    /// In place, out of place, or the program's default ([`BufferMode::default_inplace`]).
    pub inplace: Option<bool>,
    /// Threads per block written into the plan (`None`: the program's own value).
    pub threads_per_block: Option<u32>,
    /// Write the source lines of the program's eDSL calls into the plan (see
    /// [`ProgramSpec::source_locations`]; default false).
    pub source_locations: bool,
}

impl Target {
    /// One node of `world_size` ranks, one instance, the program's default placement.
    pub fn new(world_size: usize) -> Self {
        Target {
            world_size,
            ranks_per_node: world_size,
            instances: 1,
            inplace: None,
            threads_per_block: None,
            source_locations: false,
        }
    }
    /// Sets the ranks per node.
    pub fn ranks_per_node(mut self, ranks_per_node: usize) -> Self {
        self.ranks_per_node = ranks_per_node;
        self
    }
    /// Sets the number of instances.
    pub fn instances(mut self, instances: usize) -> Self {
        self.instances = instances;
        self
    }
    /// Sets the threads per block of the plan (`None`: the program's own value).
    pub fn threads_per_block(mut self, threads: Option<u32>) -> Self {
        self.threads_per_block = threads;
        self
    }
    /// Asks for the source lines of the program's eDSL calls in the plan, so that verifier findings name them.
    pub fn source_locations(mut self, on: bool) -> Self {
        self.source_locations = on;
        self
    }
    /// Asks for an in-place (`true`) or out-of-place (`false`) plan.
    pub fn inplace(mut self, inplace: bool) -> Self {
        self.inplace = Some(inplace);
        self
    }
}

impl ProgramMeta {
    /// The value of a tag, if the program has it.
    pub fn tag(&self, key: &str) -> Option<i64> {
        self.tags.iter().find(|t| t.key == key).map(|t| t.value)
    }

    /// Whether the program supports `world_size` ranks.
    pub fn supports_world_size(&self, world_size: usize) -> bool {
        self.world_sizes.contains(world_size as u64)
    }

    /// Checks that the program can be built for `target` and returns the spec it is built with.
    ///
    /// Errors say what the program supports.
    pub fn spec(&self, target: &Target) -> Result<ProgramSpec, RegistryError> {
        if !self.supports_world_size(target.world_size) {
            return Err(RegistryError::UnsupportedWorldSize {
                name: self.name.to_string(),
                world_size: target.world_size,
                supported: self.world_sizes,
            });
        }
        if !self.ranks_per_node.accepts(target.world_size, target.ranks_per_node) {
            return Err(RegistryError::UnsupportedRanksPerNode {
                name: self.name.to_string(),
                world_size: target.world_size,
                ranks_per_node: target.ranks_per_node,
                supported: self.ranks_per_node,
            });
        }
        if target.instances == 0 {
            return Err(RegistryError::ZeroInstances { name: self.name.to_string() });
        }
        let inplace = target.inplace.unwrap_or(self.buffer_mode.default_inplace());
        if !self.buffer_mode.accepts(inplace) {
            return Err(RegistryError::UnsupportedBufferMode {
                name: self.name.to_string(),
                inplace,
                supported: self.buffer_mode,
            });
        }
        Ok(ProgramSpec::new(self.name, self.collective, target.world_size)
            .ranks_per_node(target.ranks_per_node)
            .instances(target.instances)
            .inplace(inplace)
            .message_range(self.message_sizes.min, self.message_sizes.max)
            .source_locations(target.source_locations))
    }

    /// Builds the plan for `target`, without any cache, and checks it.
    pub fn build_plan(&self, target: &Target) -> Result<Plan, RegistryError> {
        let spec = self.spec(target)?;
        let built = |error| RegistryError::Build {
            name: self.name.to_string(),
            world_size: target.world_size,
            error: Box::new(error),
        };
        let plan = (self.build)(&spec).map_err(built)?;
        self.finish_plan(plan, target)
    }

    /// The checks of [`ProgramMeta::build_plan`] after the program ran: the threads per block of `target` written
    /// into `plan`, validation, and the world size and collective asked for. A plan built for `target` with other
    /// threads per block may come through here again for `target`, instead of being built again.
    pub(crate) fn finish_plan(&self, mut plan: Plan, target: &Target) -> Result<Plan, RegistryError> {
        let built = |error| RegistryError::Build {
            name: self.name.to_string(),
            world_size: target.world_size,
            error: Box::new(error),
        };
        if let Some(t) = target.threads_per_block {
            plan.num_threads_per_block = Some(t);
        }
        crate::plan::validate(&plan).map_err(|e| built(ProgramError::Plan(e)))?;
        if plan.world_size() != target.world_size || plan.collective != self.collective {
            return Err(built(ProgramError::custom(format!(
                "the program produced a {} plan for {} ranks, but {} for {} ranks was asked for",
                plan.collective,
                plan.world_size(),
                self.collective,
                target.world_size
            ))));
        }
        Ok(plan)
    }

    /// Threads per block the program asks for at `message_size` (see [`ProgramMeta::threads_per_block`]).
    pub fn wanted_threads_per_block(&self, message_size: u64) -> Option<u32> {
        self.threads_per_block
            .iter()
            .rev()
            .find(|(from, _)| *from <= message_size)
            .and_then(|&(_, t)| (t > 0).then_some(t))
    }

    /// Thread blocks per rank the program asks for at `message_size` (see [`ProgramMeta::thread_blocks`]).
    pub fn wanted_thread_blocks(&self, message_size: u64) -> usize {
        self.thread_blocks.iter().rev().find(|(from, _)| *from <= message_size).map_or(1, |&(_, b)| b)
    }

    /// `target` with the threads per block and the number of instances chosen for `message_size` (the output size
    /// of an all-gather, the input size otherwise). Threads per block: the program's table, unless `target`
    /// already names them. Instances: as many as [`ProgramMeta::thread_blocks`] asks for, at most
    /// [`MAX_RESIDENT_THREAD_BLOCKS`] thread blocks per rank (the interpreter needs every thread block resident),
    /// and no more than lets the plan split `message_size` into whole chunks. Falls back to one instance.
    pub fn tuned_target(&self, target: Target, message_size: u64) -> Result<Target, RegistryError> {
        let target = self.tuned_threads(target, message_size);
        let base = self.build_plan(&target.instances(1))?;
        Ok(self.tuned_instances(&base, target, message_size))
    }

    /// `target` with the threads per block the program's table names for `message_size`, unless `target` already
    /// names them (the first step of [`ProgramMeta::tuned_target`]).
    pub(crate) fn tuned_threads(&self, target: Target, message_size: u64) -> Target {
        match target.threads_per_block {
            Some(_) => target,
            None => target.threads_per_block(self.wanted_threads_per_block(message_size)),
        }
    }

    /// The instances step of [`ProgramMeta::tuned_target`], given `base`, the plan of one instance built for
    /// `target`.
    pub(crate) fn tuned_instances(&self, base: &Plan, target: Target, message_size: u64) -> Target {
        let per_instance = max_thread_blocks(base).max(1);
        let wanted = self.wanted_thread_blocks(message_size).min(MAX_RESIDENT_THREAD_BLOCKS);
        let most = (wanted / per_instance).clamp(1, (MAX_RESIDENT_THREAD_BLOCKS / per_instance).max(1));
        target.instances(self.largest_splitting_instances(target, most, message_size))
    }

    /// The largest instance count from `most` down to 1 whose plan for `target` splits `message_size` into whole
    /// chunks (1 when none above it does). Searched downwards because one instance of a world of `n` often has
    /// `n - 1` thread blocks, and `wanted / (n - 1)` instances rarely split a power-of-two message.
    pub(crate) fn largest_splitting_instances(&self, target: Target, most: usize, message_size: u64) -> usize {
        (2..=most)
            .rev()
            .find(|&k| self.build_plan(&target.instances(k)).is_ok_and(|plan| splits(&plan, message_size)))
            .unwrap_or(1)
    }

    /// An owned, serializable summary (what `mscclpp list --json` prints).
    pub fn info(&self) -> ProgramInfo {
        ProgramInfo {
            name: self.name.to_string(),
            collective: self.collective.as_str().to_string(),
            protocol: self.protocol.as_str().to_string(),
            world_sizes: RangeInfo::from(self.world_sizes),
            ranks_per_node: match self.ranks_per_node {
                RanksPerNode::World => RanksPerNodeInfo::World("world".to_string()),
                RanksPerNode::Range(r) => RanksPerNodeInfo::Range(RangeInfo::from(r)),
                RanksPerNode::Nodes(n) => RanksPerNodeInfo::Nodes { nodes: n },
            },
            message_sizes: RangeInfo::from(self.message_sizes),
            buffer_mode: self.buffer_mode.as_str().to_string(),
            tags: self.tags.iter().map(|t| (t.key.to_string(), t.value)).collect(),
            description: self.description.to_string(),
            function: self.function.to_string(),
            location: format!("{}:{}", self.file, self.line),
        }
    }
}

/// A range in [`ProgramInfo`]; `max` is `null` when unbounded.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RangeInfo {
    /// Smallest value.
    pub min: u64,
    /// Largest value, or `None` when unbounded.
    pub max: Option<u64>,
}

impl From<SizeRange> for RangeInfo {
    fn from(r: SizeRange) -> Self {
        RangeInfo { min: r.min, max: r.upper() }
    }
}

/// Ranks per node in [`ProgramInfo`]: the string `"world"`, a range, or `{"nodes": N}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum RanksPerNodeInfo {
    /// `"world"`.
    World(String),
    /// A range.
    Range(RangeInfo),
    /// A number of equal nodes.
    Nodes {
        /// How many.
        nodes: u64,
    },
}

/// A program's metadata as plain data, for JSON output.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ProgramInfo {
    /// Registry name.
    pub name: String,
    /// Collective.
    pub collective: String,
    /// `Simple` or `LL`.
    pub protocol: String,
    /// Supported world sizes.
    pub world_sizes: RangeInfo,
    /// Supported ranks per node.
    pub ranks_per_node: RanksPerNodeInfo,
    /// Supported message sizes in bytes.
    pub message_sizes: RangeInfo,
    /// `in_place`, `out_of_place` or `both`.
    pub buffer_mode: String,
    /// Tags.
    pub tags: BTreeMap<String, i64>,
    /// One-line description.
    pub description: String,
    /// Rust path of the function.
    pub function: String,
    /// `file:line` of the attribute.
    pub location: String,
}
