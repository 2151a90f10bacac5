//! The tuned table of this machine: its key (GPU model, world size, ranks per node, driver and library version),
//! its place in the cache directory, and the loader that installs it into the registry.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Mutex, OnceLock};

use mscclpp_lang::registry::{self, TUNED_FORMAT, TableKey, TableLoad, TunedTable};

use crate::{Communicator, Error, Result};

/// The version of this library, part of every table's key.
pub const LIBRARY_VERSION: &str = env!("CARGO_PKG_VERSION");

/// Ranks per node of `comm`'s job: the fewest ranks any host holds (every rank computes the same value from the
/// host names all ranks exchange). Collective: every rank must call it.
pub fn ranks_per_node(comm: &Communicator) -> Result<usize> {
    let hosts = comm.bootstrap().all_gather(crate::env::host_id().as_bytes())?;
    let mut counts: HashMap<&[u8], usize> = HashMap::new();
    for h in &hosts {
        *counts.entry(h.as_slice()).or_default() += 1;
    }
    Ok(counts.values().copied().min().unwrap_or(1).max(1))
}

/// The key of tables measured on `comm`'s GPU with its world size and `ranks_per_node`.
pub fn table_key(comm: &Communicator, ranks_per_node: usize) -> Result<TableKey> {
    let driver = mscclpp_sys::driver::driver_version()?;
    Ok(TableKey {
        format: TUNED_FORMAT,
        gpu: comm.device().name()?,
        world_size: comm.size(),
        ranks_per_node,
        driver: format!("{}.{}", driver / 1000, (driver % 1000) / 10),
        library: LIBRARY_VERSION.to_string(),
    })
}

/// The cache directory tables live under (`$MSCCLPP_CACHE_DIR`, default `~/.cache/mscclpp`), in `tuned/`.
pub fn cache_dir() -> Result<PathBuf> {
    registry::default_cache_dir().map_err(|e| Error::InvalidArgument(e.to_string()))
}

/// Reads the table for `key` from the cache directory.
pub fn load_tuned_table(key: &TableKey) -> Result<TableLoad> {
    Ok(TunedTable::load(&key.path_in(&cache_dir()?), key))
}

/// Loads the table for `key` and installs it for [`registry::select`]; returns its path when one was installed.
/// A table that does not parse or was measured elsewhere is ignored with one warning on stderr per file and
/// process (the warning is also returned through `tracing`).
pub fn install_table_for(key: &TableKey) -> Result<Option<PathBuf>> {
    let path = key.path_in(&cache_dir()?);
    match TunedTable::load(&path, key) {
        TableLoad::Loaded(t) => {
            registry::install_tuned_table(Some(t));
            Ok(Some(path))
        }
        TableLoad::Missing => Ok(None),
        TableLoad::Ignored(why) => {
            warn_once(&path, &why);
            Ok(None)
        }
    }
}

/// [`install_table_for`] with the key of `comm` (collective: every rank must call it).
pub fn install_tuned_table(comm: &Communicator) -> Result<Option<PathBuf>> {
    let key = table_key(comm, ranks_per_node(comm)?)?;
    install_table_for(&key)
}

fn warn_once(path: &std::path::Path, why: &str) {
    static WARNED: OnceLock<Mutex<Vec<PathBuf>>> = OnceLock::new();
    let mut warned = WARNED.get_or_init(Mutex::default).lock().unwrap_or_else(|e| e.into_inner());
    if warned.iter().any(|p| p == path) {
        return;
    }
    warned.push(path.to_path_buf());
    tracing::warn!("{why}");
    eprintln!("mscclpp: warning: {why}");
}
