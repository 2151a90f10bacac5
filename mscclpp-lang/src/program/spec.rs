//! [`ProgramSpec`]: what a program is built for (collective, world size, instances, options).

use crate::plan::{self, Collective};

/// How [`ProgramSpec::instances`] copies of a program share the buffers (lowering step 5, docs/edsl.md "Lowering").
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum ReplicationPolicy {
    /// Chunk range `[i, i+s)` becomes `[i·n, (i+s)·n)` and instance `k` owns its `k`-th piece of `s` chunks.
    #[default]
    Interleaved,
}

/// The parameters a program is built for. Options the program does not set itself come from here.
///
/// ```
/// use mscclpp_lang::prelude::*;
/// let spec = ProgramSpec::new("allgather_2gpu", Collective::AllGather, 2);
/// assert_eq!(spec.ranks_per_node, 2);
/// assert_eq!(spec.instances, 1);
/// assert!(spec.instr_fusion && spec.auto_sync);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProgramSpec {
    /// Plan name (also the executor's context key).
    pub name: String,
    /// The collective.
    pub collective: Collective,
    /// Number of ranks.
    pub world_size: usize,
    /// Ranks per node (for multi-node programs; default `world_size`).
    pub ranks_per_node: usize,
    /// Copies of the program, interleaved over the buffers (default 1).
    pub instances: usize,
    /// In place: the input aliases a slice of the output (or the other way round).
    pub inplace: bool,
    /// Chunks per rank of the collective's smaller buffer (default 1).
    pub chunk_factor: usize,
    /// Smallest message size in bytes the plan accepts (default 0).
    pub min_message_size: u64,
    /// Largest message size in bytes the plan accepts (default `u64::MAX`).
    pub max_message_size: u64,
    /// Threads per block (default 1024).
    pub num_threads_per_block: u32,
    /// Double the scratch buffer and alternate halves per launch (default false).
    pub use_double_scratch_buffer: bool,
    /// Granularity in bytes of the chunk math (default 16).
    pub buffer_alignment: u64,
    /// One executor context per plan regardless of buffers (default false).
    pub reuse_resources: bool,
    /// Fuse operations (lowering step 2, docs/edsl.md "Lowering"; default true).
    pub instr_fusion: bool,
    /// Insert `nop`s between conflicting local accesses (lowering step 4, docs/edsl.md "Lowering"; default true).
    pub auto_sync: bool,
    /// How instances share the buffers.
    pub replication: ReplicationPolicy,
    /// Input chunks per rank for `Test`/`Custom` collectives (default `chunk_factor`).
    pub input_chunks: Option<usize>,
    /// Output chunks per rank for `Test`/`Custom` collectives (default `chunk_factor`).
    pub output_chunks: Option<usize>,
    /// Root rank of a `Broadcast` (default 0).
    pub root: Option<usize>,
    /// Write the program source lines that recorded each operation into the plan (its optional
    /// `source_locations` key, docs/plan-format.md), so that verifier findings name them (default false: the plan
    /// is the same bytes as without this extension).
    pub source_locations: bool,
}

impl ProgramSpec {
    /// A spec with the defaults of the MSCCL++ DSL: one node, one instance, out of place, one chunk per rank,
    /// 1024 threads per block, alignment 16, fusion and automatic syncs on.
    pub fn new(name: impl Into<String>, collective: Collective, world_size: usize) -> Self {
        ProgramSpec {
            name: name.into(),
            collective,
            world_size,
            ranks_per_node: world_size,
            instances: 1,
            inplace: false,
            chunk_factor: 1,
            min_message_size: 0,
            max_message_size: u64::MAX,
            num_threads_per_block: plan::DEFAULT_THREADS_PER_BLOCK,
            use_double_scratch_buffer: false,
            buffer_alignment: plan::DEFAULT_BUFFER_ALIGNMENT,
            reuse_resources: false,
            instr_fusion: true,
            auto_sync: true,
            replication: ReplicationPolicy::Interleaved,
            input_chunks: None,
            output_chunks: None,
            root: None,
            source_locations: false,
        }
    }
    /// Sets `inplace`.
    pub fn inplace(mut self, inplace: bool) -> Self {
        self.inplace = inplace;
        self
    }
    /// Sets `instances`.
    pub fn instances(mut self, instances: usize) -> Self {
        self.instances = instances;
        self
    }
    /// Sets `ranks_per_node`.
    pub fn ranks_per_node(mut self, ranks_per_node: usize) -> Self {
        self.ranks_per_node = ranks_per_node;
        self
    }
    /// Sets `chunk_factor`.
    pub fn chunk_factor(mut self, chunk_factor: usize) -> Self {
        self.chunk_factor = chunk_factor;
        self
    }
    /// Sets the accepted message-size range in bytes.
    pub fn message_range(mut self, min: u64, max: u64) -> Self {
        self.min_message_size = min;
        self.max_message_size = max;
        self
    }
    /// Sets `source_locations`: whether each operation of the plan carries the source lines of the eDSL calls
    /// that recorded it.
    ///
    /// ```
    /// use mscclpp_lang::prelude::*;
    /// let spec = ProgramSpec::new("copy", Collective::SendRecv, 1).source_locations(true);
    /// let plan = build_plan::<Simple>(&spec, |p| {
    ///     p.rank(0)?.copy(p.output(0)?.chunk(0)?, p.input(0)?.chunk(0)?, 0)
    /// })
    /// .unwrap();
    /// let at = &plan.gpus[0].threadblocks[0].ops[0].sources()[0];
    /// assert_eq!((at.call.as_str(), at.line), ("copy", line!() - 4));
    /// ```
    pub fn source_locations(mut self, on: bool) -> Self {
        self.source_locations = on;
        self
    }
    /// Sets explicit input and output chunk counts per rank (for `Test` and `Custom` collectives).
    pub fn buffer_chunks(mut self, input: usize, output: usize) -> Self {
        self.input_chunks = Some(input);
        self.output_chunks = Some(output);
        self
    }

    /// Chunks per rank of the input and output buffers (before instance replication).
    pub fn collective_chunks(&self) -> (usize, usize) {
        let (i, o) = plan::collective_buffer_chunks(self.collective, self.world_size as u32, self.chunk_factor as u32);
        (self.input_chunks.unwrap_or(i as usize), self.output_chunks.unwrap_or(o as usize))
    }
}

impl Default for ProgramSpec {
    fn default() -> Self {
        ProgramSpec::new("program", Collective::Custom, 1)
    }
}
