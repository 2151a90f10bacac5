//! Tuned tables: the measured best configuration per message size, which [`super::select`] follows when one is
//! installed.
//!
//! A [`TunedTable`] holds, for one machine ([`TableKey`]: GPU model, world size, ranks per node, driver and library
//! version, format version), rows of `(collective, element type, placement, message size)` with the fastest of
//! our programs (name, instances, threads per block) and, when NCCL was timed too, whether NCCL was faster. The
//! runtime's autotuner writes it into the cache directory; the runtime's loader checks the key and installs it
//! with [`install_tuned_table`]. This module knows nothing of GPUs: the key is whatever the loader computes.
//!
//! Lookup ([`TunedTable::row_for`]): a message of `s` bytes takes the row of the smallest tuned size at or above
//! `s`; above the largest tuned size there is no row and the normal selection decides.

use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};

use serde::{Deserialize, Serialize};

use super::error::RegistryError;
use super::meta::{MAX_RESIDENT_THREAD_BLOCKS, ProgramMeta, Target, max_thread_blocks, splits};
use super::request::Request;
use crate::data::DataType;
use crate::plan::Collective;

/// The version of the table file's layout; a file of another version is ignored.
pub const TUNED_FORMAT: u32 = 1;

/// Thread blocks per rank the autotuner tries (powers of two; each program takes those its plan can reach with a
/// whole number of instances).
pub const TUNE_THREAD_BLOCKS: [usize; 8] = [1, 2, 4, 8, 16, 32, 64, 128];

/// The autotuner tries no instance count below the default's divided by this.
pub const MIN_INSTANCE_FRACTION: usize = 16;

/// Sizes of one tune at most this many times apart belong to one sweep ([`TunedTable::merge`]).
pub const SWEEP_STEP: u64 = 4;

/// The sweeps of the ascending `sizes`: `(smallest, largest)` of each run whose sizes are at most [`SWEEP_STEP`]
/// times apart.
fn sweeps(sizes: &[u64]) -> impl Iterator<Item = (u64, u64)> + '_ {
    let mut rest = sizes;
    std::iter::from_fn(move || {
        let (&lo, _) = rest.split_first()?;
        let len = rest.windows(2).take_while(|w| w[1] <= w[0].saturating_mul(SWEEP_STEP)).count() + 1;
        let hi = rest[len - 1];
        rest = &rest[len..];
        Some((lo, hi))
    })
}

/// Threads per block the autotuner tries.
pub const TUNE_THREADS: [u32; 4] = [256, 512, 768, 1024];

/// What a table was measured on; a table applies only where every field matches.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TableKey {
    /// [`TUNED_FORMAT`] when written.
    pub format: u32,
    /// GPU model, as the driver names it.
    pub gpu: String,
    /// Number of ranks.
    pub world_size: usize,
    /// Ranks per node.
    pub ranks_per_node: usize,
    /// CUDA driver version.
    pub driver: String,
    /// Version of the library that measured it.
    pub library: String,
}

impl TableKey {
    /// The file name of the table with this key: one file per GPU model, world size and ranks per node (a newer
    /// driver or library replaces the file).
    pub fn file_name(&self) -> String {
        let gpu: String =
            self.gpu.chars().map(|c| if c.is_ascii_alphanumeric() { c.to_ascii_lowercase() } else { '-' }).collect();
        format!("tuned-{}-w{}-r{}.json", gpu.trim_matches('-'), self.world_size, self.ranks_per_node)
    }
    /// The table's path inside a cache directory: `<dir>/tuned/<file name>`.
    pub fn path_in(&self, cache_dir: &Path) -> PathBuf {
        cache_dir.join("tuned").join(self.file_name())
    }
}

impl std::fmt::Display for TableKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}, {} ranks ({} per node), driver {}, library {}, format {}",
            self.gpu, self.world_size, self.ranks_per_node, self.driver, self.library, self.format
        )
    }
}

/// One tuned message size.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TunedRow {
    /// The collective.
    pub collective: Collective,
    /// The element type it was tuned with.
    pub dtype: DataType,
    /// In place.
    pub inplace: bool,
    /// Message size in bytes: the output of an all-gather, the input otherwise (as [`Request::plan_message_size`]).
    pub size: u64,
    /// The fastest of our programs that gave the right result, or `None` when none did.
    pub program: Option<String>,
    /// Its instances.
    pub instances: usize,
    /// Its thread blocks per rank (instances times the thread blocks of one instance).
    pub thread_blocks: usize,
    /// Its threads per block.
    pub threads_per_block: u32,
    /// Its time per call in µs (median, largest over the ranks).
    pub us: Option<f64>,
    /// NCCL's time per call in µs, when it was timed.
    pub nccl_us: Option<f64>,
}

impl TunedRow {
    /// Whether NCCL was faster than every program of ours (or none of ours ran): a caller that can forward to NCCL
    /// should.
    pub fn nccl_faster(&self) -> bool {
        match (self.nccl_us, self.us) {
            (Some(n), Some(o)) => n < o,
            (Some(_), None) => true,
            (None, _) => false,
        }
    }
}

/// A tuned table: its key and rows.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TunedTable {
    /// What it was measured on.
    pub key: TableKey,
    /// The rows, in any order.
    pub rows: Vec<TunedRow>,
}

/// What [`TunedTable::load`] found.
#[derive(Debug, Clone, PartialEq)]
pub enum TableLoad {
    /// No file.
    Missing,
    /// A table with the expected key.
    Loaded(TunedTable),
    /// A file that does not parse or was measured elsewhere; the text says which and what to do.
    Ignored(String),
}

/// A tuned table that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TableError {
    /// The text is not a tuned table (the JSON error says where).
    #[error("not a tuned table: {0}")]
    NotATable(String),
    /// A table of another format version.
    #[error("format {found} (this library reads format {TUNED_FORMAT})")]
    Format {
        /// The table's format.
        found: u32,
    },
    /// The file could not be read.
    #[error("cannot read it: {0}")]
    Unreadable(String),
}

impl TunedTable {
    /// An empty table for `key`.
    pub fn new(key: TableKey) -> Self {
        TunedTable { key, rows: Vec::new() }
    }

    /// The table as pretty JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_default()
    }

    /// Parses a table; the error names what is wrong.
    pub fn from_json(text: &str) -> Result<TunedTable, TableError> {
        let table: TunedTable = serde_json::from_str(text).map_err(|e| TableError::NotATable(e.to_string()))?;
        if table.key.format != TUNED_FORMAT {
            return Err(TableError::Format { found: table.key.format });
        }
        Ok(table)
    }

    /// Reads the table at `path` and keeps it only when its key is `expected`.
    pub fn load(path: &Path, expected: &TableKey) -> TableLoad {
        let text = match std::fs::read_to_string(path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return TableLoad::Missing,
            Err(e) => return TableLoad::Ignored(format!("tuned table {}: cannot read it: {e}", path.display())),
        };
        let retune = "run `mscclpp tune` again to replace it";
        match TunedTable::from_json(&text) {
            Err(e) => TableLoad::Ignored(format!("tuned table {} ignored: {e}; {retune}", path.display())),
            Ok(t) if t.key != *expected => TableLoad::Ignored(format!(
                "tuned table {} ignored: it was measured on {}, this is {}; {retune}",
                path.display(),
                t.key,
                expected
            )),
            Ok(t) => TableLoad::Loaded(t),
        }
    }

    /// Writes the table into `cache_dir` (at [`TableKey::path_in`]) atomically; returns the path.
    pub fn save(&self, cache_dir: &Path) -> Result<PathBuf, RegistryError> {
        let path = self.key.path_in(cache_dir);
        super::write_atomic(&path, self.to_json().as_bytes())?;
        Ok(path)
    }

    /// Adds `rows`, replacing for each `(collective, dtype, placement)` they hold the rows whose size lies within
    /// a span they cover; rows outside every span stay. A span is a run of their sizes each at most
    /// `SWEEP_STEP` times the one before (one sweep, as `mscclpp tune --sizes A:B` or `A:B:x4` measures), from
    /// its smallest to its largest size; sizes farther apart are separate sweeps, and the rows between them stay.
    /// A tune of a few sizes over a full table (a machine's table over the shipped one, or a second run over a
    /// first) so changes only the sizes it measured and keeps the rows of the sizes it did not, even when the
    /// machine's table holds two tunes of one collective far apart (1-4 KiB and 128-256 MiB).
    pub fn merge(&mut self, rows: Vec<TunedRow>) {
        let group =
            |a: &TunedRow, b: &TunedRow| a.collective == b.collective && a.dtype == b.dtype && a.inplace == b.inplace;
        // The new rows' sweeps, computed once per (collective, type, placement): a row of the group, and the span.
        let mut spans: Vec<(&TunedRow, u64, u64)> = Vec::new();
        for (i, first) in rows.iter().enumerate() {
            if rows[..i].iter().any(|seen| group(seen, first)) {
                continue;
            }
            let mut sizes: Vec<u64> = rows.iter().filter(|n| group(n, first)).map(|n| n.size).collect();
            sizes.sort_unstable();
            spans.extend(sweeps(&sizes).map(|(lo, hi)| (first, lo, hi)));
        }
        self.rows.retain(|old| !spans.iter().any(|(g, lo, hi)| group(g, old) && (*lo..=*hi).contains(&old.size)));
        self.rows.extend(rows);
        self.rows.sort_by(|a, b| {
            (a.collective.as_str(), a.dtype.as_str(), a.inplace, a.size).cmp(&(
                b.collective.as_str(),
                b.dtype.as_str(),
                b.inplace,
                b.size,
            ))
        });
    }

    /// The row for a message of `size` bytes: among the rows of `collective` and placement `inplace` (or, when the
    /// table has none of that placement, of the other) with element type `dtype` (or, when there are none, of any
    /// element type), the one of the smallest size at or above `size`. `None` above the largest tuned size.
    pub fn row_for(&self, collective: Collective, dtype: DataType, inplace: bool, size: u64) -> Option<&TunedRow> {
        let placed = self.rows.iter().any(|r| r.collective == collective && r.inplace == inplace);
        let inplace = if placed { inplace } else { !inplace };
        let same = |r: &&TunedRow| r.collective == collective && r.inplace == inplace;
        let exact = self.rows.iter().filter(same).any(|r| r.dtype == dtype);
        self.rows
            .iter()
            .filter(same)
            .filter(|r| !exact || r.dtype == dtype)
            .filter(|r| r.size >= size)
            .min_by_key(|r| r.size)
    }

    /// The row for `request`, when this table was measured for its world size and ranks per node.
    pub fn row_for_request(&self, request: &Request) -> Option<&TunedRow> {
        if self.key.world_size != request.world_size || self.key.ranks_per_node != request.ranks_per_node {
            return None;
        }
        self.row_for(request.collective, request.dtype, request.inplace, request.plan_message_size())
    }
}

/// Whether every rank of `plan` can split a message of `size` bytes (the output of an all-gather, the input
/// otherwise) into whole chunks: whether a table row's instances still fit a smaller size.
pub fn splits_message(plan: &crate::plan::Plan, size: u64) -> bool {
    splits(plan, size)
}

static TABLE: RwLock<Option<Arc<TunedTable>>> = RwLock::new(None);

/// Installs `table` for every later [`super::select`] in this process (`None` removes it). The runtime's loader
/// calls this after checking the key against the machine.
pub fn install_tuned_table(table: Option<TunedTable>) {
    let mut guard = TABLE.write().unwrap_or_else(|e| e.into_inner());
    *guard = table.map(Arc::new);
}

/// The installed table, if any.
pub fn tuned_table() -> Option<Arc<TunedTable>> {
    TABLE.read().unwrap_or_else(|e| e.into_inner()).clone()
}

/// Whether the installed table says NCCL is faster for `request` (callers that can forward to NCCL then do).
pub fn tuned_prefers_nccl(request: &Request) -> bool {
    tuned_table().and_then(|t| t.row_for_request(request).map(TunedRow::nccl_faster)).unwrap_or(false)
}

/// One configuration the autotuner times: a program, its instances and threads per block.
#[derive(Debug, Clone, Copy)]
pub struct TuneCandidate {
    /// The program.
    pub program: &'static ProgramMeta,
    /// The target to build it for (instances and threads per block set).
    pub target: Target,
    /// Thread blocks per rank of that plan.
    pub thread_blocks: usize,
    /// Threads per block.
    pub threads_per_block: u32,
    /// Whether this is the configuration the registry would run without a tuned table (the program's own
    /// `thread_blocks` table, [`ProgramMeta::tuned_target`]): the autotuner times these first, so that a row never
    /// records a configuration slower than the one it replaces.
    pub default: bool,
}

/// Every configuration to time for `request`: for each program that can serve it (see [`super::candidates`]),
/// its default configuration (what [`ProgramMeta::tuned_target`] picks, flagged [`TuneCandidate::default`]) and,
/// for each total of `thread_blocks`, the largest whole number of instances at or below it whose plan still splits
/// the message (at most [`MAX_RESIDENT_THREAD_BLOCKS`] thread blocks per rank, and no fewer instances than the
/// default's over [`MIN_INSTANCE_FRACTION`]), × each of `threads`. Instance
/// counts are searched downwards because one instance of a world of `n` often has `n - 1` thread blocks: at 4
/// ranks, 64 thread blocks would be 21 instances, which cannot split a power-of-two message, while 16 can.
/// Defaults come first (in program-name order), then the rest by program name, thread blocks and threads.
///
/// Programs tagged `port` (copy-engine variants, opt-in) are left out: with several instances in CUDA graphs they
/// have stopped with an unspecified launch failure on one shared H100, which leaves the process's CUDA context
/// unusable and would end the whole tuning run.
pub fn tune_candidates(request: &Request, thread_blocks: &[usize], threads: &[u32]) -> Vec<TuneCandidate> {
    let size = request.plan_message_size();
    let mut defaults = Vec::new();
    let mut out = Vec::new();
    for program in super::candidates(request).into_iter().filter(|p| p.tag("port").is_none_or(|v| v == 0)) {
        let base = request.target();
        let Ok(one) = program.build_plan(&base.instances(1)) else { continue };
        let per_instance = max_thread_blocks(&one).max(1);
        // The default configuration: the program's instances and threads per block for this size.
        let chosen = program.tuned_instances(&one, program.tuned_threads(base, size), size);
        let chosen_threads = chosen.threads_per_block.unwrap_or(one.threads_per_block());
        defaults.push(TuneCandidate {
            program,
            target: chosen.threads_per_block(Some(chosen_threads)),
            thread_blocks: chosen.instances * per_instance,
            threads_per_block: chosen_threads,
            default: true,
        });
        let mut counts: Vec<usize> = Vec::new();
        for &t in thread_blocks {
            let most = t.min(MAX_RESIDENT_THREAD_BLOCKS) / per_instance;
            if most >= 1 {
                counts.push(program.largest_splitting_instances(base, most, size));
            }
        }
        counts.sort_unstable();
        counts.dedup();
        // Fewer than a sixteenth of the default's instances cannot fill what the default fills (a large message on
        // one thread block would take most of the budget): not tried.
        counts.retain(|&k| k * MIN_INSTANCE_FRACTION >= chosen.instances);
        for k in counts {
            for &t in threads {
                if k == chosen.instances && t == chosen_threads {
                    continue;
                }
                out.push(TuneCandidate {
                    program,
                    target: base.instances(k).threads_per_block(Some(t)),
                    thread_blocks: k * per_instance,
                    threads_per_block: t,
                    default: false,
                });
            }
        }
    }
    defaults.extend(out);
    defaults
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key() -> TableKey {
        TableKey {
            format: TUNED_FORMAT,
            gpu: "NVIDIA H200".into(),
            world_size: 2,
            ranks_per_node: 2,
            driver: "13.0".into(),
            library: "0.1.0".into(),
        }
    }

    fn row(collective: Collective, dtype: DataType, size: u64, program: &str) -> TunedRow {
        TunedRow {
            collective,
            dtype,
            inplace: false,
            size,
            program: Some(program.into()),
            instances: 1,
            thread_blocks: 4,
            threads_per_block: 512,
            us: Some(5.0),
            nccl_us: None,
        }
    }

    fn table() -> TunedTable {
        let mut t = TunedTable::new(key());
        t.merge(vec![
            row(Collective::AllReduce, DataType::F16, 1 << 10, "a"),
            row(Collective::AllReduce, DataType::F16, 4 << 10, "b"),
            row(Collective::AllReduce, DataType::F16, 1 << 20, "c"),
            row(Collective::AllGather, DataType::F32, 1 << 10, "g"),
        ]);
        t
    }

    #[test]
    fn a_size_takes_the_row_at_or_above_it_and_none_beyond_the_last() {
        let t = table();
        let at = |size| t.row_for(Collective::AllReduce, DataType::F16, false, size).map(|r| r.program.clone());
        assert_eq!(at(1), Some(Some("a".into())));
        assert_eq!(at(1 << 10), Some(Some("a".into())));
        assert_eq!(at((1 << 10) + 2), Some(Some("b".into())));
        assert_eq!(at(4 << 10), Some(Some("b".into())));
        assert_eq!(at(8 << 10), Some(Some("c".into())));
        assert_eq!(at((1 << 20) + 2), None);
        // A placement with no rows of its own takes the other placement's. Other element type with none of its
        // own: the rows of any type.
        assert_eq!(t.row_for(Collective::AllReduce, DataType::F16, true, 1024).map(|r| r.inplace), Some(false));
        let mut both = table();
        both.merge(vec![TunedRow { inplace: true, ..row(Collective::AllReduce, DataType::F16, 1 << 10, "i") }]);
        let placed = |inplace, size| both.row_for(Collective::AllReduce, DataType::F16, inplace, size);
        assert_eq!(placed(true, 1 << 10).and_then(|r| r.program.clone()), Some("i".into()));
        assert!(placed(true, 4 << 10).is_none(), "in-place rows exist: the out-of-place ones no longer apply");
        assert_eq!(placed(false, 4 << 10).and_then(|r| r.program.clone()), Some("b".into()));
        assert_eq!(t.row_for(Collective::AllReduce, DataType::Bf16, false, 1024).map(|r| r.size), Some(1024));
        assert!(t.row_for(Collective::ReduceScatter, DataType::F16, false, 1024).is_none());
    }

    #[test]
    fn a_request_of_another_world_or_node_shape_has_no_row() {
        let t = table();
        let r = Request::new(Collective::AllReduce, 2, 1024).dtype(DataType::F16);
        assert!(t.row_for_request(&r).is_some());
        assert!(t.row_for_request(&Request::new(Collective::AllReduce, 4, 1024)).is_none());
        assert!(t.row_for_request(&r.clone().ranks_per_node(1)).is_none());
        // All-gather rows are keyed by the output size: 512 B per rank on 2 ranks is the 1 KiB row.
        assert!(t.row_for_request(&Request::new(Collective::AllGather, 2, 512).dtype(DataType::F32)).is_some());
    }

    #[test]
    fn merging_replaces_the_rows_within_the_span_tuned_again_only() {
        let names = |t: &TunedTable| t.rows.iter().filter_map(|r| r.program.clone()).collect::<Vec<_>>();
        let mut t = table();
        // One size between two rows: both stay, beside it.
        t.merge(vec![row(Collective::AllReduce, DataType::F16, 2 << 10, "z")]);
        assert_eq!(names(&t), vec!["g", "a", "z", "b", "c"]);
        // 1-4 KiB tuned again: the rows in that span go, the 1 MiB row and the all-gather stay.
        t.merge(vec![
            row(Collective::AllReduce, DataType::F16, 1 << 10, "x"),
            row(Collective::AllReduce, DataType::F16, 4 << 10, "y"),
        ]);
        assert_eq!(names(&t), vec!["g", "x", "y", "c"]);
        assert_eq!(
            t.row_for(Collective::AllReduce, DataType::F16, false, 64 << 10).and_then(|r| r.program.clone()),
            Some("c".into())
        );
        // Another element type leaves these alone.
        t.merge(vec![row(Collective::AllReduce, DataType::Bf16, 1 << 20, "w")]);
        assert_eq!(names(&t).len(), 5);
    }

    #[test]
    fn two_sweeps_far_apart_keep_the_rows_between_them() {
        let names = |t: &TunedTable| t.rows.iter().filter_map(|r| r.program.clone()).collect::<Vec<_>>();
        let f16 = |size, name| row(Collective::AllReduce, DataType::F16, size, name);
        let mut shipped = TunedTable::new(key());
        shipped.merge((10..=28).map(|p| f16(1 << p, "s")).collect());
        assert_eq!(names(&shipped).len(), 19);
        // 1-4 KiB and 128-256 MiB in one table (two tunes on the machine), merged over the shipped rows at once.
        shipped.merge(vec![
            f16(1 << 10, "lo"),
            f16(2 << 10, "lo"),
            f16(4 << 10, "lo"),
            f16(128 << 20, "hi"),
            f16(256 << 20, "hi"),
        ]);
        let sizes = |name: &str| shipped.rows.iter().filter(|r| r.program.as_deref() == Some(name)).count();
        assert_eq!((sizes("lo"), sizes("hi"), sizes("s")), (3, 2, 14), "8 KiB-64 MiB stay shipped");
        let at =
            |size| shipped.row_for(Collective::AllReduce, DataType::F16, false, size).and_then(|r| r.program.clone());
        assert_eq!(at(1 << 20), Some("s".into()));
        assert_eq!(at(3 << 10), Some("lo".into()));
        assert_eq!(at(200 << 20), Some("hi".into()));
        // Within one sweep (at most four times apart) the rows between its sizes go.
        assert_eq!(sweeps(&[1, 4, 8, 64, 65, 1000]).collect::<Vec<_>>(), vec![(1, 8), (64, 65), (1000, 1000)]);
        assert_eq!(sweeps(&[]).count(), 0);
    }

    #[test]
    fn nccl_is_preferred_only_where_it_was_faster() {
        let mut r = row(Collective::AllReduce, DataType::F16, 1024, "a");
        assert!(!r.nccl_faster());
        r.nccl_us = Some(6.0);
        assert!(!r.nccl_faster());
        r.nccl_us = Some(4.0);
        assert!(r.nccl_faster());
        r.program = None;
        r.us = None;
        assert!(r.nccl_faster());
    }

    #[test]
    fn a_table_round_trips_through_its_file_and_a_foreign_or_malformed_one_is_ignored() {
        let dir = tempfile::tempdir().unwrap();
        let t = table();
        let path = t.save(dir.path()).unwrap();
        assert_eq!(path, dir.path().join("tuned").join("tuned-nvidia-h200-w2-r2.json"));
        assert_eq!(TunedTable::load(&path, &key()), TableLoad::Loaded(t.clone()));
        // Every field of the key must match.
        let others = [
            TableKey { gpu: "NVIDIA H100 80GB HBM3".into(), ..key() },
            TableKey { world_size: 4, ..key() },
            TableKey { ranks_per_node: 1, ..key() },
            TableKey { driver: "12.8".into(), ..key() },
            TableKey { library: "0.2.0".into(), ..key() },
        ];
        for other in &others {
            match TunedTable::load(&path, other) {
                TableLoad::Ignored(why) => {
                    assert!(why.contains("measured on") && why.contains("mscclpp tune"), "{why}")
                }
                got => panic!("{other}: {got:?}"),
            }
        }
        // Another format version, truncated JSON, and something else entirely.
        let mut newer = t.clone();
        newer.key.format = TUNED_FORMAT + 1;
        let bad = [newer.to_json(), t.to_json()[..40].to_string(), "[1, 2]".to_string()];
        for text in bad {
            std::fs::write(&path, &text).unwrap();
            match TunedTable::load(&path, &key()) {
                TableLoad::Ignored(why) => assert!(why.contains("ignored") && why.contains("mscclpp tune"), "{why}"),
                got => panic!("{text}: {got:?}"),
            }
        }
        assert_eq!(TunedTable::load(&dir.path().join("none.json"), &key()), TableLoad::Missing);
    }
}
