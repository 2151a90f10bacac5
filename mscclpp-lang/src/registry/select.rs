//! Selection: which registered program serves a [`Request`].
//!
//! [`select`] first keeps the *candidates*, the programs that can serve the request at all (collective, world size,
//! ranks per node, buffer placement, message size, requested tags, opt-in tags). Then a user selector installed
//! with [`set_selector`] picks one of them; when there is none, or it returns `None`, [`default_selector`] does.

use std::sync::{Arc, RwLock};

use super::error::RegistryError;
use super::meta::{MAX_RESIDENT_THREAD_BLOCKS, ProgramMeta, Target, max_thread_blocks, splits};
use super::programs;
use super::request::Request;
use super::tuned::TunedTable;

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

/// The default choice among candidates: a default program (`default` tag above 0) before any other, then the
/// narrowest message range, then the highest `default` tag, then the name (so the choice is deterministic). A
/// program tagged `default = 0` is thus chosen only where no default serves the request (as
/// `allreduce_two_nodes` for two nodes), or by a tuned table's row or a user's selector.
pub fn default_selector(candidates: &[&'static ProgramMeta], _request: &Request) -> Option<usize> {
    let is_default = |m: &ProgramMeta| m.tag("default").is_some_and(|v| v > 0);
    candidates
        .iter()
        .enumerate()
        .min_by(|(_, a), (_, b)| {
            is_default(b)
                .cmp(&is_default(a))
                .then_with(|| a.message_sizes.width().cmp(&b.message_sizes.width()))
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
#[derive(Debug, Clone)]
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
    /// Something the caller should tell the user once: a tuned row whose grid was not used, and why (its plan
    /// needs more than [`MAX_RESIDENT_THREAD_BLOCKS`] thread blocks per rank, as a table measured before the
    /// program changed can); the program's own grid serves instead.
    pub warning: Option<String>,
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
/// its instances and threads per block are used when that plan splits the message and fits in
/// [`MAX_RESIDENT_THREAD_BLOCKS`] thread blocks per rank, else the program's own instance table (with
/// [`Selected::warning`] saying so when the row's grid was too large: the executor could not launch it).
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
        // Thread blocks per rank of the row's grid, when its plan splits the message.
        let row_blocks = program.build_plan(&wanted).ok().filter(|p| splits(p, size)).map(|p| max_thread_blocks(&p));
        let warning = row_blocks.filter(|&b| b > MAX_RESIDENT_THREAD_BLOCKS).map(|b| {
            format!(
                "the tuned row for {request} names {} with {} instances, {b} thread blocks per rank, more than the \
                 {MAX_RESIDENT_THREAD_BLOCKS} that can be resident; the program's own grid is used (the table was \
                 measured with another version of the program: run `mscclpp tune` again)",
                program.name, r.instances
            )
        });
        let target = match row_blocks {
            Some(b) if b <= MAX_RESIDENT_THREAD_BLOCKS => wanted,
            _ => match program.finish_plan(plan, &target.instances(1)) {
                Ok(base) => program.tuned_instances(&base, target, size),
                Err(_) => target,
            },
        };
        return Ok(Selected { program, target, by_user_selector, by_tuned_table: true, nccl_faster, warning });
    }
    // Instances sized to the message, tuned from the plan built above (with the tuned threads per block); a
    // program that fails to build so shows its error when the plan is compiled.
    let threaded = program.tuned_threads(request.target(), size);
    let target = match program.finish_plan(plan, &threaded.instances(1)) {
        Ok(base) => program.tuned_instances(&base, threaded, size),
        Err(_) => request.target(),
    };
    Ok(Selected { program, target, by_user_selector, by_tuned_table: false, nccl_faster, warning: None })
}
