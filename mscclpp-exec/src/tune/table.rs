//! The tuned table of this machine: its key (GPU model, world size, ranks per node, driver and library version),
//! its place in the cache directory, the tables shipped with the library, and the loader that installs them into
//! the registry.
//!
//! Two sources, merged: the tables shipped in `mscclpp-exec/tables/` (measured by `mscclpp tune` on the GPU
//! models and world sizes they name, embedded at build time, chosen by GPU model, world size and ranks per node;
//! the driver they were measured with does not matter), then the table `mscclpp tune` wrote into the cache
//! directory on this machine, whose rows replace the shipped ones within the span of sizes it tuned for each
//! (collective, element type, placement). A table that does not parse, or whose key names another machine, is ignored with a warning.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

use mscclpp_lang::registry::{self, TUNED_FORMAT, TableError, TableKey, TableLoad, TunedTable};

use crate::{Communicator, Error, Result};

/// The version of this library, part of every table's key.
pub const LIBRARY_VERSION: &str = env!("CARGO_PKG_VERSION");

/// Ranks per node of `comm`'s job: the fewest ranks any host holds (every rank computes the same value from the
/// host names all ranks exchange). Collective: every rank must call it.
pub fn ranks_per_node(comm: &Communicator) -> Result<usize> {
    let hosts = comm.bootstrap().host_ids()?;
    let mut counts: HashMap<&str, usize> = HashMap::new();
    for h in &hosts {
        *counts.entry(h.as_str()).or_default() += 1;
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

mod shipped {
    include!(concat!(env!("OUT_DIR"), "/shipped_tables.rs"));
}

/// A shipped table: its file name and the table, or why it does not parse.
pub type ShippedTable = (&'static str, std::result::Result<TunedTable, TableError>);

/// Every table shipped with the library, parsed once per process.
pub fn shipped_tables() -> &'static [ShippedTable] {
    static PARSED: OnceLock<Vec<ShippedTable>> = OnceLock::new();
    PARSED.get_or_init(|| shipped::SHIPPED.iter().map(|(name, text)| (*name, TunedTable::from_json(text))).collect())
}

/// The shipped table measured on `key`'s GPU model, world size and ranks per node (any driver and library
/// version), re-keyed to `key`; `None` when none was shipped for it. A shipped table that does not parse is
/// skipped with a warning.
pub fn shipped_table_for(key: &TableKey) -> Option<TunedTable> {
    for (name, table) in shipped_tables() {
        match table {
            Ok(t)
                if t.key.gpu == key.gpu
                    && t.key.world_size == key.world_size
                    && t.key.ranks_per_node == key.ranks_per_node =>
            {
                return Some(TunedTable { key: key.clone(), rows: t.rows.clone() });
            }
            Ok(_) => {}
            Err(e) => warn_once(&format!("shipped tuned table {name} ignored: {e}")),
        }
    }
    None
}

/// `local` (a table measured on this machine) merged over the shipped table for `key`, if one was shipped: for
/// every (collective, element type, placement) it holds, its rows replace the shipped rows within the sweeps of sizes
/// it tuned ([`TunedTable::merge`]); the shipped rows of other sizes stay.
pub fn over_shipped(key: &TableKey, local: TunedTable) -> TunedTable {
    match shipped_table_for(key) {
        Some(mut shipped) => {
            shipped.merge(local.rows);
            shipped
        }
        None => local,
    }
}

/// Where an installed table came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TableSource {
    /// The table `mscclpp tune` wrote on this machine (over the shipped one, if any).
    Tuned(PathBuf),
    /// Only the table shipped for this GPU model and world size (its file name).
    Shipped(String),
}

impl std::fmt::Display for TableSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TableSource::Tuned(p) => write!(f, "{}", p.display()),
            TableSource::Shipped(name) => write!(f, "{name} (shipped with the library)"),
        }
    }
}

/// The table for `key`: the shipped one for its GPU model and world size, with the rows of this machine's tuned
/// table in the cache directory merged over it (see the module documentation). A cache table that does not parse
/// or was measured elsewhere is ignored with one warning on stderr per file and process (also through `tracing`).
pub fn table_for(key: &TableKey) -> Result<Option<(TunedTable, TableSource)>> {
    Ok(table_in(&cache_dir()?, key))
}

/// [`table_for`] with the cache directory `dir`.
fn table_in(dir: &Path, key: &TableKey) -> Option<(TunedTable, TableSource)> {
    let path = key.path_in(dir);
    match TunedTable::load(&path, key) {
        TableLoad::Loaded(local) => return Some((over_shipped(key, local), TableSource::Tuned(path))),
        TableLoad::Missing => {}
        TableLoad::Ignored(why) => warn_once(&why),
    }
    shipped_table_for(key).map(|t| (t, TableSource::Shipped(key.file_name())))
}

/// Loads the table for `key` ([`table_for`]) and installs it for [`registry::select`]; returns where it came from
/// when one was installed.
pub fn install_table_for(key: &TableKey) -> Result<Option<TableSource>> {
    Ok(table_for(key)?.map(|(t, source)| {
        registry::install_tuned_table(Some(t));
        source
    }))
}

/// [`install_table_for`] with the key of `comm` (collective: every rank must call it).
pub fn install_tuned_table(comm: &Communicator) -> Result<Option<TableSource>> {
    let key = table_key(comm, ranks_per_node(comm)?)?;
    install_table_for(&key)
}

/// [`registry::select`], with its [`registry::Selected::warning`] (a tuned row whose grid was passed over) printed
/// once per process: what every caller that runs the chosen plan uses.
pub fn select(request: &registry::Request) -> std::result::Result<registry::Selected, registry::RegistryError> {
    let selected = registry::select(request)?;
    if let Some(w) = &selected.warning {
        warn_once(w);
    }
    Ok(selected)
}

/// Prints `why` on stderr (and through `tracing`) the first time this process sees it: a table ignored, or a
/// tuned row passed over ([`select`]).
pub fn warn_once(why: &str) {
    static WARNED: OnceLock<Mutex<HashSet<String>>> = OnceLock::new();
    let mut warned = WARNED.get_or_init(Mutex::default).lock().unwrap_or_else(|e| e.into_inner());
    if !warned.insert(why.to_string()) {
        return;
    }
    tracing::warn!("{why}");
    eprintln!("mscclpp: warning: {why}");
}

#[cfg(test)]
mod tests {
    use mscclpp_lang::plan::Collective;
    use mscclpp_lang::registry::TunedRow;

    use super::*;

    fn key(gpu: &str, world: usize) -> TableKey {
        TableKey {
            format: TUNED_FORMAT,
            gpu: gpu.into(),
            world_size: world,
            ranks_per_node: world,
            driver: "99.9".into(),
            library: "9.9.9".into(),
        }
    }

    #[test]
    fn every_shipped_table_parses_and_is_named_for_its_key() {
        let shipped = shipped_tables();
        assert!(!shipped.is_empty(), "mscclpp-exec/tables/ holds no table");
        for (name, table) in shipped {
            let t = table.as_ref().unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(t.key.file_name(), *name, "{name} is named for another machine: {}", t.key);
            assert!(!t.rows.is_empty(), "{name} has no rows");
            for c in [Collective::AllReduce, Collective::AllGather, Collective::ReduceScatter] {
                assert!(t.rows.iter().any(|r| r.collective == c && r.program.is_some()), "{name}: no {c} row");
            }
        }
    }

    #[test]
    fn a_shipped_table_serves_its_gpu_and_world_size_whatever_the_driver_and_library() {
        let (_, first) = shipped_tables().first().expect("a shipped table");
        let first = first.clone().expect("it parses");
        let k = key(&first.key.gpu, first.key.world_size);
        let got = shipped_table_for(&k).expect("the shipped table for its own GPU and world size");
        assert_eq!(got.key, k, "re-keyed to the machine");
        assert_eq!(got.rows, first.rows);
        assert!(shipped_table_for(&key("NVIDIA Some Other GPU", first.key.world_size)).is_none());
        assert!(shipped_table_for(&key(&first.key.gpu, 7)).is_none());
        assert!(shipped_table_for(&TableKey { ranks_per_node: 1, ..k }).is_none());
    }

    #[test]
    fn a_table_tuned_on_the_machine_is_merged_over_the_shipped_one() {
        let (_, first) = shipped_tables().first().expect("a shipped table");
        let first = first.clone().expect("it parses");
        let k = key(&first.key.gpu, first.key.world_size);
        let dir = tempfile::tempdir().expect("a temporary directory");
        // Nothing tuned here: the shipped table alone.
        match table_in(dir.path(), &k) {
            Some((t, TableSource::Shipped(name))) => {
                assert_eq!(name, k.file_name());
                assert_eq!(t.rows, first.rows);
            }
            other => panic!("{other:?}"),
        }
        // A local all-reduce row replaces the shipped row of its size, element type and placement only: the
        // shipped rows of the other sizes stay.
        let shipped_ar = first.rows.iter().find(|r| r.collective == Collective::AllReduce).expect("an all-reduce row");
        let local_row = TunedRow { program: Some("local_choice".into()), size: 1 << 10, ..shipped_ar.clone() };
        let mut local = TunedTable::new(k.clone());
        local.merge(vec![local_row.clone()]);
        let path = local.save(dir.path()).expect("saved");
        let (t, source) = table_in(dir.path(), &k).expect("a table");
        assert_eq!(source, TableSource::Tuned(path));
        let same = |r: &TunedRow| {
            r.collective == Collective::AllReduce && r.dtype == shipped_ar.dtype && r.inplace == shipped_ar.inplace
        };
        let at_1k =
            |rows: &[TunedRow]| rows.iter().filter(|r| same(r) && r.size == 1 << 10).cloned().collect::<Vec<_>>();
        assert_eq!(at_1k(&t.rows), vec![local_row]);
        let others = |rows: &[TunedRow]| rows.iter().filter(|r| !(same(r) && r.size == 1 << 10)).count();
        assert_eq!(others(&t.rows), others(&first.rows));
        assert!(t.rows.iter().any(|r| same(r) && r.size > 1 << 10), "the shipped rows above 1 KiB stay");
        assert!(others(&t.rows) > 0);
        // A local table measured elsewhere is ignored: the shipped one serves.
        let foreign = TunedTable { key: TableKey { driver: "1.0".into(), ..k.clone() }, rows: vec![] };
        std::fs::write(k.path_in(dir.path()), foreign.to_json()).expect("written");
        assert!(matches!(table_in(dir.path(), &k), Some((_, TableSource::Shipped(_)))));
    }
}
