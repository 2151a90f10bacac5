//! Selection: which registered program serves a [`Request`].
//!
//! [`select`] first keeps the *candidates*, the programs that can serve the request at all (collective, world size,
//! ranks per node, buffer placement, message size, requested tags, opt-in tags). Then a user selector installed
//! with [`set_selector`] picks one of them; when there is none, or it returns `None`, [`default_selector`] does.

use std::fmt;
use std::sync::{Arc, RwLock};

use super::error::RegistryError;
use super::meta::{ProgramMeta, Target, human_bytes};
use super::programs;
use super::tuned::TunedTable;
use crate::data::DataType;
use crate::plan::{Collective, Plan};

/// Tags that make a program opt-in: a program carrying some of them with a non-zero value is a candidate only when
/// the request names at least one of those tags. `nvls` marks programs that need NVLink multicast (NVLS) hardware; `example` marks
/// teaching programs that should not serve requests by default.
pub const OPT_IN_TAGS: &[&str] = &["nvls", "example"];

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
    pub fn rejection(&self, meta: &ProgramMeta) -> Option<String> {
        self.fit(meta).err()
    }
    /// The plan `meta` builds for this request (for [`Request::target`]) when it can serve the request, else why
    /// it cannot. Builds the plan only when every cheaper check passes.
    fn fit(&self, meta: &ProgramMeta) -> Result<Plan, String> {
        if meta.collective != self.collective {
            return Err(format!("it is a {} program", meta.collective));
        }
        if !meta.supports_world_size(self.world_size) {
            return Err(format!("it supports world sizes {}", meta.world_sizes));
        }
        if !meta.ranks_per_node.accepts(self.world_size, self.ranks_per_node) {
            return Err(format!("it supports ranks per node {}", meta.ranks_per_node));
        }
        if !meta.buffer_mode.accepts(self.inplace) {
            return Err(format!("it runs {} only", meta.buffer_mode));
        }
        let size = self.plan_message_size();
        if !meta.message_sizes.contains(size) {
            return Err(format!(
                "it takes messages of {}, not {}",
                meta.message_sizes.display_bytes(),
                human_bytes(size)
            ));
        }
        for (k, v) in &self.tags {
            match meta.tag(k) {
                Some(t) if t == *v => {}
                Some(t) => return Err(format!("its tag `{k}` is {t}, not {v}")),
                None => return Err(format!("it has no tag `{k}`")),
            }
        }
        let opt_in: Vec<&str> =
            OPT_IN_TAGS.iter().copied().filter(|key| meta.tag(key).is_some_and(|v| v != 0)).collect();
        if !opt_in.is_empty() && !self.tags.iter().any(|(k, _)| opt_in.contains(&k.as_str())) {
            let names: Vec<String> = opt_in.iter().map(|k| format!("`{k}`")).collect();
            return Err(format!("it is opt-in: a request must ask for its tag {}", names.join(" or ")));
        }
        // Last, as it builds the plan: the message must split into the plan's chunks.
        match meta.build_plan(&self.target()) {
            Ok(plan) if super::meta::splits(&plan, size) => Ok(plan),
            Ok(plan) => Err(format!(
                "its plan cannot split {} into {} chunks of whole {}-byte units",
                human_bytes(size),
                plan.gpus.first().map_or(0, |g| g.input_chunks.max(g.output_chunks)),
                plan.alignment()
            )),
            Err(e) => Err(format!("it does not build for this request: {e}")),
        }
    }
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

/// A user selector: given the candidates (in registry order) and the request, the index of the one to use, or
/// `None` to let [`default_selector`] decide.
pub type Selector = dyn Fn(&[&'static ProgramMeta], &Request) -> Option<usize> + Send + Sync;

static SELECTOR: RwLock<Option<Arc<Selector>>> = RwLock::new(None);

/// Installs a selector for every later [`select`] call in this process, replacing any earlier one.
///
/// ```no_run
/// use mscclpp_lang::registry::{self, Request};
/// // Always prefer LL programs when there is one.
/// registry::set_selector(Box::new(|candidates: &[&registry::ProgramMeta], _req: &Request| {
///     candidates.iter().position(|m| m.protocol == mscclpp_lang::plan::Protocol::Ll)
/// }));
/// ```
pub fn set_selector(selector: Box<Selector>) {
    let mut guard = SELECTOR.write().unwrap_or_else(|e| e.into_inner());
    *guard = Some(Arc::from(selector));
}

/// Removes the selector installed with [`set_selector`]; [`default_selector`] decides again.
pub fn clear_selector() {
    let mut guard = SELECTOR.write().unwrap_or_else(|e| e.into_inner());
    *guard = None;
}

/// The default choice among candidates: the narrowest message range, then the highest `default` tag, then the
/// name (so the choice is deterministic).
pub fn default_selector(candidates: &[&'static ProgramMeta], _request: &Request) -> Option<usize> {
    candidates
        .iter()
        .enumerate()
        .min_by(|(_, a), (_, b)| {
            a.message_sizes
                .width()
                .cmp(&b.message_sizes.width())
                .then_with(|| b.tag("default").unwrap_or(0).cmp(&a.tag("default").unwrap_or(0)))
                .then_with(|| a.name.cmp(b.name))
        })
        .map(|(i, _)| i)
}

/// The programs that can serve `request`, in registry order.
pub fn candidates(request: &Request) -> Vec<&'static ProgramMeta> {
    programs().into_iter().filter(|m| request.rejection(m).is_none()).collect()
}

/// The program chosen for a request, and the target to build it for.
#[derive(Debug, Clone, Copy)]
pub struct Selected {
    /// The program.
    pub program: &'static ProgramMeta,
    /// World size, ranks per node, instances and placement.
    pub target: Target,
    /// Whether a user selector made the choice.
    pub by_user_selector: bool,
    /// Whether the row of a tuned table made the choice (program, instances and threads per block).
    pub by_tuned_table: bool,
    /// Whether a tuned table says NCCL is faster at this size (callers that can forward to NCCL should).
    pub nccl_faster: bool,
}

impl Selected {
    /// The plan, through the process-wide cache ([`super::compile_target`]).
    pub fn plan(&self) -> Result<std::sync::Arc<crate::plan::Plan>, RegistryError> {
        super::global_cache().compile(self.program, &self.target).map(|c| c.plan)
    }
}

/// Chooses a program for `request`: the installed selector's choice, else the installed tuned table's row (see
/// [`super::install_tuned_table`]), else [`default_selector`]'s.
///
/// The error lists, for each program of the requested collective, why it was passed over. Each program's plan is
/// built at most once for the request (and once per other instance count tried when tuning the chosen one).
pub fn select(request: &Request) -> Result<Selected, RegistryError> {
    select_with(request, super::tuned_table().as_deref())
}

/// [`select`] with `table` in place of the installed tuned table (`None`: no table).
///
/// A table row applies when the table was measured for the request's world size and ranks per node and has a row
/// at or above the message size (see [`TunedTable::row_for`]) naming a program that can serve the request;
/// its instances and threads per block are used when that plan splits the message, else the program's own
/// instance table.
pub fn select_with(request: &Request, table: Option<&TunedTable>) -> Result<Selected, RegistryError> {
    let mut cands = Vec::new();
    let mut plans = Vec::new();
    let mut reasons = Vec::new();
    for m in programs() {
        match request.fit(m) {
            Ok(plan) => {
                cands.push(m);
                plans.push(plan);
            }
            Err(r) if m.collective == request.collective => reasons.push(format!("{}: {r}", m.name)),
            Err(_) => {}
        }
    }
    let user = SELECTOR.read().unwrap_or_else(|e| e.into_inner()).clone();
    let mut by_user_selector = false;
    let mut index = None;
    if let Some(sel) = user
        && !cands.is_empty()
        && let Some(i) = sel(&cands, request)
    {
        if i >= cands.len() {
            return Err(RegistryError::SelectorOutOfRange { index: i, count: cands.len() });
        }
        index = Some(i);
        by_user_selector = true;
    }
    let row = table.and_then(|t| t.row_for_request(request));
    let nccl_faster = row.is_some_and(|r| r.nccl_faster());
    let mut tuned = None;
    if index.is_none()
        && let Some(r) = row
        && let Some(name) = &r.program
        && let Some(i) = cands.iter().position(|m| m.name == name)
    {
        index = Some(i);
        tuned = Some(r);
    }
    let index = match index.or_else(|| default_selector(&cands, request)) {
        Some(i) => i,
        None => return Err(RegistryError::NoProgram { request: request.to_string(), reasons }),
    };
    let program = cands[index];
    let plan = plans.swap_remove(index);
    let size = request.plan_message_size();
    if let Some(r) = tuned {
        let threads = (r.threads_per_block > 0).then_some(r.threads_per_block);
        let target = request.target().threads_per_block(threads);
        let wanted = target.instances(r.instances.max(1));
        let target = match program.build_plan(&wanted) {
            Ok(p) if super::meta::splits(&p, size) => wanted,
            _ => match program.finish_plan(plan, &target.instances(1)) {
                Ok(base) => program.tuned_instances(&base, target, size),
                Err(_) => target,
            },
        };
        return Ok(Selected { program, target, by_user_selector, by_tuned_table: true, nccl_faster });
    }
    // Instances sized to the message, tuned from the plan built above (with the tuned threads per block); a
    // program that fails to build so shows its error when the plan is compiled.
    let threaded = program.tuned_threads(request.target(), size);
    let target = match program.finish_plan(plan, &threaded.instances(1)) {
        Ok(base) => program.tuned_instances(&base, threaded, size),
        Err(_) => request.target(),
    };
    Ok(Selected { program, target, by_user_selector, by_tuned_table: false, nccl_faster })
}
