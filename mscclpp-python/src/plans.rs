//! Plans: `mscclpp.plan(name, world_size=...)` from the registry, `mscclpp.ExecutionPlan(path)` for any MSCCL++
//! JSON plan, and the CPU verifier (`mscclpp.verify` in Python wraps `_verify_json`).

use std::sync::Arc;

use mscclpp_lang::registry::{self, Target};
use mscclpp_lang::verify::{PacketFormat, VerifyOptions, verify};
use pyo3::prelude::*;

use crate::buffer::data_type;
use crate::errors::{Res, err, guard, guard_detached};

/// An execution plan (MSCCL++'s JSON schema): read from a file, or made by `mscclpp.plan`.
#[pyclass(module = "mscclpp", frozen)]
pub struct ExecutionPlan {
    /// The plan.
    pub inner: Arc<mscclpp_exec::executor::ExecutionPlan>,
}

fn wrap(plan: mscclpp_lang::plan::Plan) -> Res<ExecutionPlan> {
    Ok(ExecutionPlan { inner: Arc::new(mscclpp_exec::executor::ExecutionPlan::new(plan)?) })
}

#[pymethods]
impl ExecutionPlan {
    /// Read and validate a JSON plan file.
    #[new]
    fn new(path: std::path::PathBuf) -> PyResult<Self> {
        guard(|| {
            if !path.is_file() {
                return Err(err(format!(
                    "plan file {} does not exist (write one with mscclpp plan NAME -o FILE)",
                    path.display()
                )));
            }
            let p = mscclpp_exec::executor::ExecutionPlan::from_file(&path)
                .map_err(|e| err(format!("plan file {}: {e}", path.display())))?;
            Ok(ExecutionPlan { inner: Arc::new(p) })
        })
    }

    /// A plan from its JSON text.
    #[staticmethod]
    fn from_json(text: &str) -> PyResult<Self> {
        guard(|| {
            let plan = mscclpp_lang::plan::parse_plan(text).map_err(|e| err(format!("plan JSON: {e}")))?;
            wrap(plan)
        })
    }

    /// The plan's name.
    #[getter]
    fn name(&self) -> String {
        self.inner.plan().name.clone()
    }

    /// Its collective (`allreduce`, ...).
    #[getter]
    fn collective(&self) -> &'static str {
        self.inner.plan().collective.as_str()
    }

    /// Number of ranks it is for.
    #[getter]
    fn world_size(&self) -> usize {
        self.inner.plan().world_size()
    }

    /// `Simple` or `LL`.
    #[getter]
    fn protocol(&self) -> String {
        self.inner.plan().protocol.to_string()
    }

    /// Whether it runs in place.
    #[getter]
    fn inplace(&self) -> bool {
        self.inner.plan().inplace
    }

    /// Message sizes it accepts in bytes, `(min, max)`.
    #[getter]
    fn message_range(&self) -> (u64, u64) {
        let p = self.inner.plan();
        (p.min_message(), p.max_message())
    }

    /// Thread blocks of the busiest rank.
    #[getter]
    fn thread_blocks(&self) -> usize {
        registry::max_thread_blocks(self.inner.plan())
    }

    /// The JSON text (MSCCL++'s schema).
    fn to_json(&self) -> PyResult<String> {
        guard(|| serde_json::to_string_pretty(self.inner.plan()).map_err(|e| err(format!("serializing the plan: {e}"))))
    }

    /// Write the JSON to `path`.
    fn save(&self, path: std::path::PathBuf) -> PyResult<()> {
        let text = self.to_json()?;
        guard(|| std::fs::write(&path, text).map_err(|e| err(format!("writing {}: {e}", path.display()))))
    }

    fn __repr__(&self) -> String {
        let p = self.inner.plan();
        format!(
            "ExecutionPlan(name={:?}, collective={:?}, world_size={})",
            p.name,
            p.collective.as_str(),
            p.world_size()
        )
    }
}

fn unknown_program(name: &str) -> crate::errors::PyErrKind {
    let mut names: Vec<&str> = registry::programs().iter().map(|m| m.name).collect();
    names.sort();
    let close: Vec<&str> = names.iter().copied().filter(|n| n.contains(name) || name.contains(*n)).take(8).collect();
    let hint = if close.is_empty() { names.join(", ") } else { close.join(", ") };
    err(format!("no program named {name:?} in the registry; known: {hint} (mscclpp.programs() lists them all)"))
}

/// The plan of registered program `name` for `world_size` ranks. `message_size` (bytes: the all-gather output,
/// the input otherwise) picks the instances and threads per block from the program's table, unless `instances`
/// or `threads_per_block` are given.
#[pyfunction]
#[pyo3(signature = (name, world_size, ranks_per_node=None, instances=None, inplace=None, threads_per_block=None,
                    message_size=None))]
fn plan(
    name: &str,
    world_size: usize,
    ranks_per_node: Option<usize>,
    instances: Option<usize>,
    inplace: Option<bool>,
    threads_per_block: Option<u32>,
    message_size: Option<u64>,
) -> PyResult<ExecutionPlan> {
    guard(|| {
        let meta = registry::find(name).map_err(|_| unknown_program(name))?;
        if world_size == 0 || !meta.supports_world_size(world_size) {
            return Err(crate::errors::unsupported(format!(
                "program {name:?} runs on {} ranks, not {world_size}",
                meta.world_sizes.display_bytes().replace(" B", "")
            )));
        }
        if instances == Some(0) {
            return Err(err("instances must be at least 1"));
        }
        let mut t = Target::new(world_size).threads_per_block(threads_per_block);
        if let Some(r) = ranks_per_node {
            t = t.ranks_per_node(r);
        }
        if let Some(i) = inplace {
            t = t.inplace(i);
        }
        t = match (instances, message_size) {
            (Some(i), _) => t.instances(i),
            (None, Some(s)) => meta.tuned_target(t, s)?,
            (None, None) => t,
        };
        wrap(meta.build_plan(&t)?)
    })
}

/// Verify a plan on the CPU; the report as JSON text (`mscclpp.verify` turns it into objects).
#[pyfunction]
#[pyo3(signature = (plan, size=None, dtype=None, schedules=None, launches=None, packet=None))]
fn _verify_json(
    py: Python<'_>,
    plan: &ExecutionPlan,
    size: Option<u64>,
    dtype: Option<&Bound<'_, PyAny>>,
    schedules: Option<u32>,
    launches: Option<u32>,
    packet: Option<&str>,
) -> PyResult<String> {
    let mut opts = VerifyOptions::default();
    if let Some(d) = dtype {
        opts.dtype = data_type(d)?.lang();
    }
    opts.size = size;
    if let Some(s) = schedules {
        opts.schedules = s.max(1);
    }
    if let Some(l) = launches {
        opts.launches = l.max(1);
    }
    if let Some(p) = packet {
        opts.packet = match p.to_ascii_lowercase().as_str() {
            "ll8" => PacketFormat::Ll8,
            "ll16" => PacketFormat::Ll16,
            _ => return guard(|| Err(err(format!("packet {p:?}: use \"ll8\" or \"ll16\"")))),
        };
    }
    let p = plan.inner.clone();
    guard_detached(py, move || {
        let report = verify(p.plan(), &opts);
        serde_json::to_string(&report).map_err(|e| err(format!("serializing the report: {e}")))
    })
}

/// Write the default plans (every registered program at each of `world_sizes`, as `mscclpp install` does) into
/// `<dir>/default/` (default: the cache directory, `MSCCLPP_CACHE_DIR` or `~/.cache/mscclpp`); returns the
/// directory and the number of plans. `python3 -m mscclpp --install` calls it.
#[pyfunction]
#[pyo3(signature = (world_sizes=None, dir=None))]
fn _install_plans(
    py: Python<'_>,
    world_sizes: Option<Vec<usize>>,
    dir: Option<std::path::PathBuf>,
) -> PyResult<(String, usize)> {
    guard_detached(py, move || {
        let sizes = world_sizes.unwrap_or_else(|| mscclpp_lang::registry::DEFAULT_WORLD_SIZES.to_vec());
        let dir = match dir {
            Some(d) => d,
            None => mscclpp_lang::registry::default_cache_dir()?,
        };
        let jobs = mscclpp_lang::registry::install_jobs(&sizes);
        if jobs.is_empty() {
            return Err(err(format!("no registered program supports world sizes {sizes:?}")));
        }
        let installed = mscclpp_lang::registry::install(&dir, &jobs, &mut |_| {})?;
        Ok((installed.dir.display().to_string(), installed.plans.len()))
    })
}

/// Build the plan of a program recorded by `mscclpp.language` (MSCCL++'s Python DSL; the recording's JSON, see
/// `mscclpp_lang::dsl`): the plan as MSCCL++'s JSON text, indented by two spaces. An error names the Python file
/// and line of the call that caused it.
#[pyfunction]
fn _dsl_plan_json(py: Python<'_>, recording: String) -> PyResult<String> {
    guard_detached(py, move || {
        let program = mscclpp_lang::dsl::parse(&recording).map_err(|e| err(e.to_string()))?;
        let plan = mscclpp_lang::dsl::build(&program).map_err(|e| err(e.to_string()))?;
        serde_json::to_string_pretty(&plan).map_err(|e| err(format!("serializing the plan: {e}")))
    })
}

/// The `mscclpp` command line (`list`, `plan`, `verify`, `bench`, ...) on `argv` (the program name first), in this
/// process; returns its exit status. The wheel's `mscclpp` console script calls it.
#[pyfunction]
fn _cli_main(py: Python<'_>, argv: Vec<String>) -> i32 {
    py.detach(|| mscclpp_cli::run_args(argv))
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(_cli_main, m)?)?;
    m.add_class::<ExecutionPlan>()?;
    m.add_function(wrap_pyfunction!(plan, m)?)?;
    m.add_function(wrap_pyfunction!(_verify_json, m)?)?;
    m.add_function(wrap_pyfunction!(_install_plans, m)?)?;
    m.add_function(wrap_pyfunction!(_dsl_plan_json, m)?)?;
    Ok(())
}
