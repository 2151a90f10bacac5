//! Installing the registered programs' plans into the cache directory, the counterpart of
//! `python3 -m mscclpp --install`.
//!
//! Plans go to `<cache dir>/default/<name>_n<world size>_<inplace|outofplace>.json`, with an `index.json`
//! manifest beside them; the directory's old `.json` files are removed first. Each plan is also stored under its
//! content hash in the cache directory, where [`super::PlanCache`] finds it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::cache::{cache_key, write_atomic};
use super::error::RegistryError;
use super::meta::{ProgramMeta, Target};
use super::programs;
use super::shape::BufferMode;
use crate::plan::emit_plan;

/// The world sizes `mscclpp install` writes plans for.
pub const DEFAULT_WORLD_SIZES: [usize; 3] = [2, 4, 8];

/// One plan to install.
#[derive(Debug, Clone)]
pub struct InstallJob {
    /// The program.
    pub program: &'static ProgramMeta,
    /// What to build it for.
    pub target: Target,
    /// File name inside `default/`.
    pub file_name: String,
}

/// One line of `default/index.json`.
#[derive(Debug, Clone, Serialize)]
pub struct InstalledPlan {
    /// File name inside `default/`.
    pub file: String,
    /// Program (and plan) name.
    pub name: String,
    /// Collective.
    pub collective: String,
    /// `Simple` or `LL`.
    pub protocol: String,
    /// Number of ranks.
    pub world_size: usize,
    /// Ranks per node.
    pub ranks_per_node: usize,
    /// In place.
    pub inplace: bool,
    /// Smallest message size in bytes.
    pub min_message_size: u64,
    /// Largest message size in bytes.
    pub max_message_size: u64,
    /// The program's tags.
    pub tags: BTreeMap<String, i64>,
}

/// What [`install`] wrote.
#[derive(Debug, Clone)]
pub struct Installed {
    /// The `default/` directory.
    pub dir: PathBuf,
    /// The plans, in order.
    pub plans: Vec<InstalledPlan>,
}

/// Every (program, world size, placement) to install: each registered program at each of `world_sizes` it
/// supports, on one node, one instance; both placements for programs that run both ways.
pub fn install_jobs(world_sizes: &[usize]) -> Vec<InstallJob> {
    install_jobs_with(world_sizes, None)
}

/// [`install_jobs`] for nodes of `ranks_per_node` ranks (`None`: one node of the whole world). A world size that
/// the nodes do not divide is skipped; the file names of a multi-node shape carry `_rpn<R>`.
pub fn install_jobs_with(world_sizes: &[usize], ranks_per_node: Option<usize>) -> Vec<InstallJob> {
    let mut jobs = Vec::new();
    for program in programs() {
        for &ws in world_sizes {
            let rpn = ranks_per_node.unwrap_or(ws);
            if rpn == 0 || !ws.is_multiple_of(rpn) {
                continue;
            }
            let target = Target::new(ws).ranks_per_node(rpn);
            if !program.supports_world_size(ws) || !program.ranks_per_node.accepts(ws, rpn) {
                continue;
            }
            let shape = if rpn == ws { String::new() } else { format!("_rpn{rpn}") };
            let placements: &[bool] = match program.buffer_mode {
                BufferMode::InPlace => &[true],
                BufferMode::OutOfPlace => &[false],
                BufferMode::Both => &[true, false],
            };
            for &inplace in placements {
                let placement = if inplace { "inplace" } else { "outofplace" };
                let file_name = format!("{}_n{ws}{shape}_{placement}.json", program.name);
                jobs.push(InstallJob { program, target: target.inplace(inplace), file_name });
            }
        }
    }
    jobs
}

/// Builds and writes every job into `<cache_dir>/default/`, calling `progress` before each; see the module docs.
pub fn install(
    cache_dir: &Path,
    jobs: &[InstallJob],
    progress: &mut dyn FnMut(&InstallJob),
) -> Result<Installed, RegistryError> {
    let dir = cache_dir.join("default");
    std::fs::create_dir_all(&dir).map_err(|e| RegistryError::Cache {
        path: dir.display().to_string(),
        message: format!("cannot create the directory: {e}; point MSCCLPP_CACHE_DIR at a writable directory"),
    })?;
    clear_json_files(&dir)?;
    let mut plans = Vec::with_capacity(jobs.len());
    for job in jobs {
        progress(job);
        let plan = job.program.build_plan(&job.target)?;
        let text = emit_plan(&plan);
        write_atomic(&dir.join(&job.file_name), text.as_bytes())?;
        write_atomic(&cache_dir.join(format!("{}.json", cache_key(job.program, &job.target))), text.as_bytes())?;
        plans.push(InstalledPlan {
            file: job.file_name.clone(),
            name: plan.name.clone(),
            collective: plan.collective.as_str().to_string(),
            protocol: plan.protocol.as_str().to_string(),
            world_size: plan.world_size(),
            ranks_per_node: job.target.ranks_per_node,
            inplace: plan.inplace,
            min_message_size: plan.min_message(),
            max_message_size: plan.max_message(),
            tags: job.program.tags.iter().map(|t| (t.key.to_string(), t.value)).collect(),
        });
    }
    let index = serde_json::to_string_pretty(&plans).unwrap_or_default();
    write_atomic(&dir.join("index.json"), index.as_bytes())?;
    Ok(Installed { dir, plans })
}

/// Removes the `.json` files of `dir` (and nothing else).
fn clear_json_files(dir: &Path) -> Result<(), RegistryError> {
    let err = |p: &Path, e: std::io::Error| RegistryError::Cache {
        path: p.display().to_string(),
        message: format!("cannot clear old plans: {e}"),
    };
    for entry in std::fs::read_dir(dir).map_err(|e| err(dir, e))? {
        let path = entry.map_err(|e| err(dir, e))?.path();
        if path.is_file() && path.extension().is_some_and(|x| x == "json") {
            std::fs::remove_file(&path).map_err(|e| err(&path, e))?;
        }
    }
    Ok(())
}
