//! Which calls we take: the collectives, element types and reduction operators we can run, the size window per
//! collective and world size (a tuned table's, else the built-in one), the sizes a tuned table gives to NCCL,
//! the frontend's limits, and `MSCCLPP_FORCE_NCCL_FALLBACK_OPERATION`.

use std::sync::OnceLock;

use mscclpp_exec::frontend::{self, Settings};

use mscclpp_lang::data::DataType;
use mscclpp_lang::plan::{Collective, ReduceOp};
use mscclpp_sys::interpreter::ElementType;

use crate::abi::{self, NcclDataType, NcclRedOp};

/// The collectives this library may accelerate.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Op {
    /// `ncclAllReduce`.
    AllReduce = 0,
    /// `ncclAllGather`.
    AllGather = 1,
    /// `ncclReduceScatter`.
    ReduceScatter = 2,
    /// `ncclBroadcast` / `ncclBcast`.
    Broadcast = 3,
}

impl Op {
    /// Every operation, in counter order.
    pub const ALL: [Op; 4] = [Op::AllReduce, Op::AllGather, Op::ReduceScatter, Op::Broadcast];

    /// The name used in `MSCCLPP_FORCE_NCCL_FALLBACK_OPERATION` and in the log.
    pub fn name(self) -> &'static str {
        match self {
            Op::AllReduce => "allreduce",
            Op::AllGather => "allgather",
            Op::ReduceScatter => "reducescatter",
            Op::Broadcast => "broadcast",
        }
    }

    /// The plan collective.
    pub fn collective(self) -> Collective {
        match self {
            Op::AllReduce => Collective::AllReduce,
            Op::AllGather => Collective::AllGather,
            Op::ReduceScatter => Collective::ReduceScatter,
            Op::Broadcast => Collective::Broadcast,
        }
    }
}

/// The window of `op` on `world` ranks (bytes of one rank's piece): the tuned table's, else the built-in one
/// (`mscclpp_exec::frontend::window`, shared with the Python module).
pub fn window(op: Op, world: usize) -> u64 {
    frontend::window::window(op.collective(), world)
}

/// Whether calls NCCL runs faster (outside the window, or given to NCCL by the tuned table) go to it: only when a
/// real NCCL is loaded. Without one (the library on its own) every call this library can run is its own, whatever
/// the window and the table say.
pub fn faster_to_nccl() -> bool {
    crate::real::available()
}

/// Whether a piece of `piece_bytes` of `op` on `world` ranks is within [`window`] (without a table lookup when
/// it is within the built-in window: the check every call makes).
pub fn within_window(op: Op, world: usize, piece_bytes: u64) -> bool {
    frontend::window::within(op.collective(), world, piece_bytes)
}

/// The largest window for any world size: calls above it never reach our setup.
pub fn window_bound(_op: Op) -> u64 {
    frontend::window::TABLE_WINDOW
}

/// Whether the tuned table installed from `mscclpp tune` measured NCCL faster for `op` with `in_bytes` of input
/// per rank (`dtype`, `world` ranks on one node): its row at or above the size says so. Such calls go to NCCL.
pub fn tuned_to_nccl(op: Op, world: usize, in_bytes: u64, dtype: DataType) -> bool {
    frontend::window::table_prefers_fallback(op.collective(), world, in_bytes, dtype)
}

/// Whether NCCL takes a call of `op` because its piece is outside [`window`]: only with a real NCCL loaded. (The
/// caller makes the exception of a user plan that covers the size.) Checked per call.
pub fn outside_window(op: Op, world: usize, piece_bytes: u64) -> bool {
    faster_to_nccl() && !within_window(op, world, piece_bytes)
}

/// Whether NCCL takes a call because the tuned table measured it faster ([`tuned_to_nccl`]): only with a real
/// NCCL loaded. Checked once per plan key, after the user's plans.
pub fn table_to_nccl(op: Op, world: usize, in_bytes: u64, dtype: DataType) -> bool {
    faster_to_nccl() && tuned_to_nccl(op, world, in_bytes, dtype)
}

/// Whether this library takes a call by policy alone — not forced to NCCL, not [`outside_window`], not
/// [`table_to_nccl`] — the same checks the call path makes apart (the forced list and the window per call, the
/// table once per plan key); user plans aside.
pub fn ours(op: Op, world: usize, piece_bytes: u64, in_bytes: u64, dtype: DataType) -> bool {
    !forced(op) && !outside_window(op, world, piece_bytes) && !table_to_nccl(op, world, in_bytes, dtype)
}

/// The frontend's limits: staging grows up to `MSCCLPP_NCCL_STAGING_MAX`.
pub fn settings() -> Settings {
    let staging_max = mscclpp_config::NCCL_STAGING_MAX.get().unwrap_or_else(|e| {
        eprintln!("mscclpp-nccl: {e}; using the default");
        mscclpp_config::NCCL_STAGING_MAX.default
    });
    Settings { staging_max, ..Settings::default() }
}

/// The operations forced to NCCL by `MSCCLPP_FORCE_NCCL_FALLBACK_OPERATION` (`all` or a comma list).
/// Unknown entries are reported once on stderr and ignored.
pub fn parse_forced(entries: &[String]) -> (Vec<Op>, Vec<String>) {
    let mut ops = Vec::new();
    let mut unknown = Vec::new();
    for e in entries {
        let e = e.to_ascii_lowercase();
        if e == "all" {
            ops.extend(Op::ALL);
        } else if let Some(op) = Op::ALL.into_iter().find(|o| o.name() == e) {
            ops.push(op);
        } else {
            unknown.push(e);
        }
    }
    (ops, unknown)
}

/// Whether `op` is forced to NCCL.
pub fn forced(op: Op) -> bool {
    static FORCED: OnceLock<Vec<Op>> = OnceLock::new();
    FORCED
        .get_or_init(|| {
            let entries = mscclpp_config::FORCE_NCCL_FALLBACK_OPERATION.get().unwrap_or_default();
            let (ops, unknown) = parse_forced(&entries);
            if !unknown.is_empty() {
                eprintln!(
                    "mscclpp-nccl: MSCCLPP_FORCE_NCCL_FALLBACK_OPERATION: ignoring {unknown:?}; use `all` or a comma \
                     list of allreduce, allgather, reducescatter, broadcast"
                );
            }
            ops
        })
        .contains(&op)
}

/// Our element type for an NCCL data type, when the interpreter has one.
pub fn element_type(dtype: NcclDataType) -> Option<ElementType> {
    match dtype {
        abi::FLOAT16 => Some(ElementType::F16),
        abi::BFLOAT16 => Some(ElementType::Bf16),
        abi::FLOAT32 => Some(ElementType::F32),
        abi::INT32 => Some(ElementType::I32),
        abi::UINT32 => Some(ElementType::U32),
        abi::UINT8 => Some(ElementType::U8),
        _ => None,
    }
}

/// A data type whose bytes only move (no arithmetic): all-gather and broadcast take any type as bytes.
pub fn byte_type(dtype: NcclDataType) -> Option<ElementType> {
    abi::element_bytes(dtype).map(|_| ElementType::U8)
}

/// Our reduction for an NCCL operator (sum, min, max; the rest go to NCCL).
pub fn reduce_op(op: NcclRedOp) -> Option<ReduceOp> {
    match op {
        abi::SUM => Some(ReduceOp::Sum),
        abi::MIN => Some(ReduceOp::Min),
        abi::MAX => Some(ReduceOp::Max),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_a_real_nccl_every_size_is_ours() {
        // A 4 GiB all-reduce is outside every window: NCCL's when it is loaded, else ours (nothing else runs it).
        let ours = crate::mscclpp_nccl_would_run(0, 2, 4 << 30, abi::FLOAT16);
        assert_eq!(ours, if crate::real::available() { 0 } else { 1 }, "real NCCL: {}", crate::real::origin());
        assert_eq!(crate::mscclpp_nccl_would_run(9, 2, 1024, abi::FLOAT16), -1, "an unknown collective");
    }

    #[test]
    fn sizes_a_tuned_table_gives_to_nccl_go_there() {
        use mscclpp_lang::registry::{self, TUNED_FORMAT, TableKey, TunedRow, TunedTable};
        let key = TableKey {
            format: TUNED_FORMAT,
            gpu: "test".into(),
            world_size: 2,
            ranks_per_node: 2,
            driver: "13.0".into(),
            library: "test".into(),
        };
        // A row with no program of ours: selection itself is unchanged for the other tests of this binary.
        let nccl_row = TunedRow {
            collective: Collective::AllReduce,
            dtype: DataType::F16,
            inplace: false,
            size: 1 << 20,
            program: None,
            instances: 0,
            thread_blocks: 0,
            threads_per_block: 0,
            us: None,
            nccl_us: Some(10.0),
        };
        let mut table = TunedTable::new(key);
        table.merge(vec![nccl_row]);
        registry::install_tuned_table(Some(table));
        let f16 = DataType::F16;
        let verdicts = [
            tuned_to_nccl(Op::AllReduce, 2, 512 << 10, f16),
            tuned_to_nccl(Op::AllReduce, 2, 1 << 20, f16),
            tuned_to_nccl(Op::AllReduce, 2, 2 << 20, f16),
            tuned_to_nccl(Op::AllReduce, 4, 1 << 20, f16),
            tuned_to_nccl(Op::AllGather, 2, 1 << 10, f16),
        ];
        // The table decides up to its window only for the collectives it has rows for; the others keep the
        // built-in window (a broadcast the table never timed is not taken up to 1 GiB).
        let windows = Op::ALL.map(|op| window(op, 2));
        // The call path's verdict: the table's NCCL row counts only where a real NCCL is loaded to take the call.
        let real = faster_to_nccl();
        let table = table_to_nccl(Op::AllReduce, 2, 1 << 20, f16);
        let taken = [ours(Op::AllReduce, 2, 1 << 20, 1 << 20, f16), ours(Op::AllReduce, 2, 2 << 20, 2 << 20, f16)];
        registry::install_tuned_table(None);
        assert_eq!(verdicts, [true, true, false, false, false]);
        assert_eq!(table, real, "real NCCL: {}", crate::real::origin());
        assert_eq!(taken, [!real, true], "1 MiB is NCCL's by the table when NCCL is loaded; 2 MiB is ours");
        let builtin = frontend::window::builtin_window(2);
        assert_eq!(windows, [frontend::window::TABLE_WINDOW, builtin, builtin, builtin]);
        assert!(!tuned_to_nccl(Op::AllReduce, 2, 512 << 10, f16));
    }

    #[test]
    fn the_fallback_list_parses() {
        let (ops, unknown) = parse_forced(&["AllReduce".into(), "broadcast".into(), "alltoall".into()]);
        assert_eq!(ops, vec![Op::AllReduce, Op::Broadcast]);
        assert_eq!(unknown, vec!["alltoall".to_string()]);
        let (ops, unknown) = parse_forced(&["all".into()]);
        assert_eq!(ops, Op::ALL.to_vec());
        assert!(unknown.is_empty());
        assert!(parse_forced(&[]).0.is_empty());
    }

    #[test]
    fn types_and_operators_map_to_what_the_interpreter_runs() {
        assert_eq!(element_type(abi::FLOAT16), Some(ElementType::F16));
        assert_eq!(element_type(abi::BFLOAT16), Some(ElementType::Bf16));
        assert_eq!(element_type(abi::INT32), Some(ElementType::I32));
        assert!(element_type(abi::FLOAT64).is_none());
        assert!(element_type(abi::INT64).is_none());
        assert_eq!(byte_type(abi::FLOAT64), Some(ElementType::U8));
        assert!(byte_type(42).is_none());
        assert_eq!(reduce_op(abi::SUM), Some(ReduceOp::Sum));
        assert_eq!(reduce_op(abi::MAX), Some(ReduceOp::Max));
        assert!(reduce_op(abi::AVG).is_none());
        assert!(reduce_op(abi::PROD).is_none());
        assert!(reduce_op(7).is_none());
    }

    #[test]
    fn windows_cover_the_zero_copy_programs_without_a_table() {
        // World sizes no test installs a table for (one test installs a 2-rank table for a moment).
        for world in [4, 8] {
            for op in Op::ALL {
                assert_eq!(window(op, world), frontend::window::builtin_window(world), "{}", op.name());
                assert!(window(op, world) <= window_bound(op));
            }
        }
        assert_eq!(window(Op::AllReduce, 4), 4 << 20);
        assert_eq!(window(Op::AllReduce, 8), 256 << 10);
    }
}
