//! A collective call that needs a plan ([`Request`]) and whether a program can serve it.

use std::fmt;

use super::error::RegistryError;
use super::meta::{ProgramMeta, Target};
use super::shape::{BufferMode, RanksPerNode, SizeRange, human_bytes};
use crate::data::DataType;
use crate::plan::{Collective, Plan};

/// Tags that make a program opt-in: a program carrying some of them with a non-zero value is a candidate only when
/// the request names at least one of those tags. `nvls` marks programs that need NVLink multicast (NVLS) hardware; `example` marks
/// teaching programs that should not serve requests by default; `port` marks programs that move their data with the
/// copy engines through the host proxy (fewer SMs busy, a proxy thread per rank), which the caller chooses.
/// A request for a program by name asks for its opt-in tags ([`Request::naming`]).
pub const OPT_IN_TAGS: &[&str] = &["nvls", "example", "port"];

/// A collective call that needs a plan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    /// The collective.
    pub collective: Collective,
    /// Number of ranks.
    pub world_size: usize,
    /// Ranks per node.
    pub ranks_per_node: usize,
    /// Bytes of this rank's input buffer (the send buffer). All-gather compares this times the world size with a
    /// program's message range, as MSCCL++ does; every other collective compares it directly.
    pub message_size: u64,
    /// In place.
    pub inplace: bool,
    /// Element type.
    pub dtype: DataType,
    /// Required tags: a candidate must carry each with the same value.
    pub tags: Vec<(String, i64)>,
}

impl Request {
    /// A request on one node, out of place, `f32`, without tags.
    pub fn new(collective: Collective, world_size: usize, message_size: u64) -> Self {
        Request {
            collective,
            world_size,
            ranks_per_node: world_size,
            message_size,
            inplace: false,
            dtype: DataType::F32,
            tags: Vec::new(),
        }
    }
    /// Sets the ranks per node.
    pub fn ranks_per_node(mut self, ranks_per_node: usize) -> Self {
        self.ranks_per_node = ranks_per_node;
        self
    }
    /// Sets in place / out of place.
    pub fn inplace(mut self, inplace: bool) -> Self {
        self.inplace = inplace;
        self
    }
    /// Sets the element type.
    pub fn dtype(mut self, dtype: DataType) -> Self {
        self.dtype = dtype;
        self
    }
    /// Adds a required tag.
    pub fn tag(mut self, key: impl Into<String>, value: i64) -> Self {
        self.tags.push((key.into(), value));
        self
    }
    /// This request as a call of `program` by name: it asks for the program's opt-in tags (those of
    /// [`OPT_IN_TAGS`] the program carries with a non-zero value and the request does not name yet), so naming an
    /// opt-in program is enough to choose it.
    pub fn naming(mut self, program: &ProgramMeta) -> Self {
        for key in OPT_IN_TAGS {
            if let Some(v) = program.tag(key).filter(|v| *v != 0)
                && !self.tags.iter().any(|(k, _)| k == key)
            {
                self.tags.push(((*key).to_string(), v));
            }
        }
        self
    }
    /// The size compared with a program's message range.
    pub fn plan_message_size(&self) -> u64 {
        match self.collective {
            Collective::AllGather => self.message_size.saturating_mul(self.world_size as u64),
            _ => self.message_size,
        }
    }
    /// The target a selected program is built for.
    pub fn target(&self) -> Target {
        Target::new(self.world_size).ranks_per_node(self.ranks_per_node).inplace(self.inplace)
    }
    /// Why `meta` cannot serve this request, or `None` when it can.
    pub fn rejection(&self, meta: &ProgramMeta) -> Option<Rejection> {
        self.fit(meta).err()
    }
    /// The plan `meta` builds for this request (for [`Request::target`]) when it can serve the request, else why
    /// it cannot. Builds the plan only when every cheaper check passes.
    pub(super) fn fit(&self, meta: &ProgramMeta) -> Result<Plan, Rejection> {
        if meta.collective != self.collective {
            return Err(Rejection::Collective(meta.collective));
        }
        if !meta.supports_world_size(self.world_size) {
            return Err(Rejection::WorldSize(meta.world_sizes));
        }
        if !meta.ranks_per_node.accepts(self.world_size, self.ranks_per_node) {
            return Err(Rejection::RanksPerNode(meta.ranks_per_node));
        }
        if !meta.buffer_mode.accepts(self.inplace) {
            return Err(Rejection::BufferMode(meta.buffer_mode));
        }
        let size = self.plan_message_size();
        if !meta.message_sizes.contains(size) {
            return Err(Rejection::MessageSize { supported: meta.message_sizes, size });
        }
        for (k, v) in &self.tags {
            match meta.tag(k) {
                Some(t) if t == *v => {}
                Some(t) => return Err(Rejection::TagValue { key: k.clone(), has: t, wanted: *v }),
                None => return Err(Rejection::NoTag(k.clone())),
            }
        }
        let opt_in: Vec<&'static str> =
            OPT_IN_TAGS.iter().copied().filter(|key| meta.tag(key).is_some_and(|v| v != 0)).collect();
        if !opt_in.is_empty() && !self.tags.iter().any(|(k, _)| opt_in.contains(&k.as_str())) {
            return Err(Rejection::OptIn(opt_in));
        }
        // Last, as it builds the plan: the message must split into the plan's chunks.
        match meta.build_plan(&self.target()) {
            Ok(plan) if super::meta::splits(&plan, size) => Ok(plan),
            Ok(plan) => Err(Rejection::Split {
                size,
                chunks: plan.gpus.first().map_or(0, |g| g.input_chunks.max(g.output_chunks)) as u64,
                alignment: plan.alignment(),
            }),
            Err(e) => Err(Rejection::Build(Box::new(e))),
        }
    }
}

/// Why a program cannot serve a request (what [`Request::rejection`] says).
#[derive(Debug, thiserror::Error)]
pub enum Rejection {
    /// It runs another collective.
    #[error("it is a {0} program")]
    Collective(Collective),
    /// The world size is outside the ones it supports.
    #[error("it supports world sizes {0}")]
    WorldSize(SizeRange),
    /// The ranks per node are not a shape it supports.
    #[error("it supports ranks per node {0}")]
    RanksPerNode(RanksPerNode),
    /// The placement (in or out of place) is not one it runs.
    #[error("it runs {0} only")]
    BufferMode(BufferMode),
    /// The message size is outside its range.
    #[error("it takes messages of {}, not {}", .supported.display_bytes(), human_bytes(*.size))]
    MessageSize {
        /// The sizes it takes.
        supported: SizeRange,
        /// The request's size.
        size: u64,
    },
    /// A tag the request names has another value on it.
    #[error("its tag `{key}` is {has}, not {wanted}")]
    TagValue {
        /// The tag.
        key: String,
        /// Its value on the program.
        has: i64,
        /// The value the request asks for.
        wanted: i64,
    },
    /// A tag the request names is not on it.
    #[error("it has no tag `{0}`")]
    NoTag(String),
    /// It serves only requests that name one of these tags.
    #[error("it is opt-in: a request must ask for its tag {}", .0.iter().map(|k| format!("`{k}`")).collect::<Vec<_>>().join(" or "))]
    OptIn(Vec<&'static str>),
    /// Its plan cannot split the message into whole chunks.
    #[error("its plan cannot split {} into {chunks} chunks of whole {alignment}-byte units", human_bytes(*.size))]
    Split {
        /// The request's size.
        size: u64,
        /// The plan's chunks.
        chunks: u64,
        /// The plan's alignment.
        alignment: u64,
    },
    /// Its plan does not build for the request.
    #[error("it does not build for this request: {0}")]
    Build(Box<RegistryError>),
}

impl fmt::Display for Request {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} of {} per rank on {} ranks ({} per node), {}, {}",
            self.collective,
            human_bytes(self.message_size),
            self.world_size,
            self.ranks_per_node,
            if self.inplace { "in place" } else { "out of place" },
            self.dtype
        )?;
        if !self.tags.is_empty() {
            let tags: Vec<String> = self.tags.iter().map(|(k, v)| format!("{k}={v}")).collect();
            write!(f, ", tags {}", tags.join(","))?;
        }
        Ok(())
    }
}
