//! The plan cache: compiled plans kept in memory and on disk, keyed by a content hash.
//!
//! A plan file is `<dir>/<blake3 hex>.json`; the hash covers this crate's version, the program's name, collective,
//! protocol, tags, source tokens and defining crate, and the target (world size, ranks per node, instances,
//! placement). Files are written atomically (a temporary file in the same directory, then a rename), so a reader
//! never sees half a plan. A file that does not parse, fails validation or does not match the program is ignored
//! and rewritten.
//!
//! What the program depends on beyond its own tokens (helpers, constants) enters the key too: the hash of the
//! defining crate's sources when its build script provides one (`MSCCLPP_PROGRAM_SOURCES`, see
//! `mscclpp-algorithms/build.rs`), else the identity (path, size, modification time) of the executable or shared library
//! the program was linked into, so a rebuild after any edit never reads a stale plan.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use super::error::RegistryError;
use super::meta::{ProgramMeta, Target};
use crate::plan::{Plan, emit_plan, parse_plan};

/// The environment variable naming the cache directory.
pub const CACHE_DIR_ENV: &str = mscclpp_config::CACHE_DIR.meta.name;

/// Where a compiled plan came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// This process compiled it earlier.
    Memory,
    /// Read from the cache directory.
    Disk,
    /// Compiled now.
    Built,
}

/// A plan from [`PlanCache::compile`].
#[derive(Debug, Clone)]
pub struct Compiled {
    /// The plan.
    pub plan: Arc<Plan>,
    /// Where it came from.
    pub origin: Origin,
    /// The cache key (hex).
    pub key: String,
    /// The cache file, when the cache has a directory.
    pub file: Option<PathBuf>,
    /// Why the cache file could not be written, if it could not (the plan is still good).
    pub write_error: Option<String>,
}

/// Compiled plans in memory and, optionally, in a directory.
#[derive(Debug, Default)]
pub struct PlanCache {
    dir: Option<PathBuf>,
    memory: Mutex<HashMap<String, Arc<Plan>>>,
}

impl PlanCache {
    /// A cache in `dir` (created on first write).
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        PlanCache { dir: Some(dir.into()), memory: Mutex::default() }
    }
    /// A cache in memory only.
    pub fn memory_only() -> Self {
        PlanCache { dir: None, memory: Mutex::default() }
    }
    /// A cache in [`default_cache_dir`], or in memory only when there is none.
    pub fn from_env() -> Self {
        match default_cache_dir() {
            Ok(dir) => PlanCache::new(dir),
            Err(_) => PlanCache::memory_only(),
        }
    }
    /// The directory, if any.
    pub fn dir(&self) -> Option<&Path> {
        self.dir.as_deref()
    }

    /// The plan of `meta` for `target`: from memory, else from disk, else compiled now and stored in both.
    pub fn compile(&self, meta: &ProgramMeta, target: &Target) -> Result<Compiled, RegistryError> {
        // Resolve the default placement first, so that "default" and the explicit choice share one entry.
        let spec = meta.spec(target)?;
        let target = Target { inplace: Some(spec.inplace), ..*target };
        let key = cache_key(meta, &target);
        let file = self.dir.as_ref().map(|d| d.join(format!("{key}.json")));
        if let Some(plan) = self.memory.lock().unwrap_or_else(|e| e.into_inner()).get(&key) {
            return Ok(Compiled { plan: plan.clone(), origin: Origin::Memory, key, file, write_error: None });
        }
        if let Some(path) = &file
            && let Some(plan) = read_cached(path, meta, &target)
        {
            let plan = Arc::new(plan);
            self.remember(&key, &plan);
            return Ok(Compiled { plan, origin: Origin::Disk, key, file, write_error: None });
        }
        let plan = Arc::new(meta.build_plan(&target)?);
        self.remember(&key, &plan);
        let write_error = match &file {
            Some(path) => write_atomic(path, emit_plan(&plan).as_bytes()).err().map(|e| e.to_string()),
            None => None,
        };
        Ok(Compiled { plan, origin: Origin::Built, key, file, write_error })
    }

    /// Forgets the plans held in memory (files stay).
    pub fn clear_memory(&self) {
        self.memory.lock().unwrap_or_else(|e| e.into_inner()).clear();
    }

    fn remember(&self, key: &str, plan: &Arc<Plan>) {
        self.memory.lock().unwrap_or_else(|e| e.into_inner()).insert(key.to_string(), plan.clone());
    }
}

/// `$MSCCLPP_CACHE_DIR`, or `~/.cache/mscclpp`.
pub fn default_cache_dir() -> Result<PathBuf, RegistryError> {
    if let Some(dir) = mscclpp_config::CACHE_DIR.get() {
        return Ok(dir);
    }
    std::env::home_dir()
        .filter(|h| !h.as_os_str().is_empty())
        .map(|h| h.join(".cache").join("mscclpp"))
        .ok_or(RegistryError::NoCacheDir)
}

/// The cache key of `meta` built for `target`: a blake3 hash, in hex.
pub fn cache_key(meta: &ProgramMeta, target: &Target) -> String {
    let mut h = blake3::Hasher::new();
    let mut field = |name: &str, value: &[u8]| {
        h.update(name.as_bytes());
        h.update(&(value.len() as u64).to_le_bytes());
        h.update(value);
    };
    field("format", b"mscclpp plan cache 1");
    field("mscclpp-lang", env!("CARGO_PKG_VERSION").as_bytes());
    field("name", meta.name.as_bytes());
    field("collective", meta.collective.as_str().as_bytes());
    field("protocol", meta.protocol.as_str().as_bytes());
    let mut tags: Vec<String> = meta.tags.iter().map(|t| format!("{}={}", t.key, t.value)).collect();
    tags.sort();
    field("tags", tags.join(",").as_bytes());
    field("messages", format!("{}..={}", meta.message_sizes.min, meta.message_sizes.max).as_bytes());
    field("source", blake3::hash(meta.source.as_bytes()).as_bytes());
    field("sources", build_identity(meta).as_bytes());
    field("crate", format!("{} {}", meta.crate_name, meta.crate_version).as_bytes());
    field("world_size", &(target.world_size as u64).to_le_bytes());
    field("ranks_per_node", &(target.ranks_per_node as u64).to_le_bytes());
    field("instances", &(target.instances as u64).to_le_bytes());
    field("inplace", &[target.inplace.map_or(2, u8::from)]);
    field("threads_per_block", &target.threads_per_block.unwrap_or(0).to_le_bytes());
    if target.source_locations {
        // The plan names source lines: where the program is matters too.
        field("source_locations", format!("{}:{}", meta.file, meta.line).as_bytes());
    }
    h.finalize().to_hex().to_string()
}

/// What identifies the code a program was built from beyond its own tokens: the hash of its crate's sources
/// (`ProgramMeta::sources`), else the file its build function was linked into ([`linked_file`]) with its size and
/// modification time, else nothing (a platform without `/proc/self/maps`: the key covers the tokens only).
pub fn build_identity(meta: &ProgramMeta) -> String {
    if !meta.sources.is_empty() {
        return format!("sources {}", meta.sources);
    }
    // Once per build function: every compile computes a key, and `/proc/self/maps` is read only the first time.
    static IDS: std::sync::OnceLock<Mutex<HashMap<usize, String>>> = std::sync::OnceLock::new();
    let address = meta.build as usize;
    match IDS.get_or_init(Mutex::default).lock() {
        Ok(mut ids) => ids.entry(address).or_insert_with(|| file_identity(address)).clone(),
        Err(_) => file_identity(address),
    }
}

/// The file mapped at `address` with its size and modification time; empty when there is none.
fn file_identity(address: usize) -> String {
    let Some(path) = linked_file(address) else {
        return String::new();
    };
    match std::fs::metadata(&path) {
        Ok(m) => {
            let modified = m
                .modified()
                .ok()
                .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                .map_or(0, |d| d.as_nanos());
            format!("file {} {} {modified}", path.display(), m.len())
        }
        Err(_) => format!("file {}", path.display()),
    }
}

/// The executable or shared library mapped at `address` in this process (from `/proc/self/maps`), if any.
pub fn linked_file(address: usize) -> Option<PathBuf> {
    let maps = std::fs::read_to_string("/proc/self/maps").ok()?;
    maps.lines().find_map(|line| {
        // start-end perms offset dev inode path
        let mut parts = line.split_whitespace();
        let (start, end) = parts.next()?.split_once('-')?;
        let (start, end) = (usize::from_str_radix(start, 16).ok()?, usize::from_str_radix(end, 16).ok()?);
        let path = parts.nth(4)?;
        (start <= address && address < end && path.starts_with('/')).then(|| PathBuf::from(path))
    })
}

/// Reads a cached plan; `None` (to be rebuilt) when it is missing, corrupt or for another program.
fn read_cached(path: &Path, meta: &ProgramMeta, target: &Target) -> Option<Plan> {
    let text = std::fs::read_to_string(path).ok()?;
    let plan = parse_plan(&text).ok()?;
    let matches = plan.name == meta.name
        && plan.collective == meta.collective
        && plan.protocol == meta.protocol
        && plan.world_size() == target.world_size
        && Some(plan.inplace) == target.inplace
        && target.threads_per_block.is_none_or(|t| plan.num_threads_per_block == Some(t));
    matches.then_some(plan)
}

/// Writes `bytes` to `path` atomically: a temporary file in the same directory, then a rename over `path`.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), RegistryError> {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let err = |p: &Path, e: std::io::Error, what: &str| RegistryError::Cache {
        path: p.display().to_string(),
        message: format!("{what}: {e}; check that the directory is writable or point MSCCLPP_CACHE_DIR elsewhere"),
    };
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(|e| err(dir, e, "cannot create the directory"))?;
    let file_name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let tmp = dir.join(format!(".{file_name}.{}.{}.tmp", std::process::id(), COUNTER.fetch_add(1, Ordering::Relaxed)));
    if let Err(e) = std::fs::write(&tmp, bytes) {
        let _ = std::fs::remove_file(&tmp);
        return Err(err(&tmp, e, "cannot write"));
    }
    std::fs::rename(&tmp, path).map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        err(path, e, "cannot rename the temporary file into place")
    })
}
