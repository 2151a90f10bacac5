//! Which calls we take: the collectives, element types and reduction operators we can run, the size window per
//! collective (built in, or a tuned table installed through [`install_tuned`]), the sizes a tuned table gives to
//! NCCL, and
//! `MSCCLPP_FORCE_NCCL_FALLBACK_OPERATION`.

use std::sync::OnceLock;

use mscclpp_lang::data::DataType;
use mscclpp_lang::plan::{Collective, ReduceOp};
use mscclpp_lang::registry::{self, Request};
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

/// The built-in windows: the largest piece (bytes of one rank's part: an all-reduce's or broadcast's message,
/// an all-gather's send buffer, a reduce-scatter's receive buffer) we take per collective on one node, for any
/// world size, where no tuned table says otherwise ([`TunedWindows`]).
///
/// From results/executor-figures-2xH200.md (2×H200, CUDA graph, in place): the registry's one-shot LL
/// all-reduce beats NCCL 2.28 by 1.31–1.46× from 1 to 64 KiB; between 64 KiB and 1 MiB nothing is measured;
/// at 1 MiB NCCL is ahead (14.4 against 15.5 µs), and from 64 MiB the two-shot plan is ahead again (1.13–1.21×),
/// but that plan maps its peers' buffers and so runs through the staging buffers, whose two copies would cost
/// more than it wins. The windows stop at 256 KiB, where every collective's plan is an LL plan that runs zero
/// copy on the application's buffers in its usual placement (the all-gather on 8 ranks, and the reduce-scatter
/// at 256 KiB pieces on 8 ranks, are staged), rather than at 64 KiB, since zero copy removed the two device
/// copies the staging path adds. Measuring 64 KiB–1 MiB (the `nccl` GPU-suite part's timing table) is what
/// moves them; a tuned table replaces them without a rebuild.
pub const WINDOWS: [(Op, u64); 4] = [
    (Op::AllReduce, 256 << 10),
    (Op::AllGather, 256 << 10),
    (Op::ReduceScatter, 256 << 10),
    (Op::Broadcast, 256 << 10),
];

/// Windows from a tuning run (`mscclpp tune`'s table, once a loader installs it with [`install_tuned`]): per
/// collective and world size, the largest piece at which the registry's programs beat NCCL. Every rank of a
/// job must see the same table (one file on one node), since the windows decide which calls are ours.
pub trait TunedWindows: Send + Sync {
    /// The window of `op` on `world` ranks, or `None` where the table has no entry (the built-in one applies).
    fn window(&self, op: Op, world: usize) -> Option<u64>;
    /// The largest window of `op` the table holds for any world size (0 if none): a bound checked before a
    /// communicator is set up, when its world size is not known yet.
    fn largest(&self, op: Op) -> u64;
}

static TUNED: OnceLock<Box<dyn TunedWindows>> = OnceLock::new();

/// Install the tuned windows, once per process and before the first accelerated call (the staging buffers of
/// a communicator are sized from the windows when it is set up). False when a table is installed already.
pub fn install_tuned(table: Box<dyn TunedWindows>) -> bool {
    TUNED.set(table).is_ok()
}

fn builtin(op: Op) -> u64 {
    WINDOWS.iter().find(|(o, _)| *o == op).map(|(_, w)| *w).unwrap_or(0)
}

/// Whether the tuned table installed from `mscclpp tune` measured NCCL faster for `op` with `in_bytes` of input
/// per rank (`dtype`, `world` ranks on one node): its row at or above the size says so. Such calls go to NCCL.
pub fn tuned_to_nccl(op: Op, world: usize, in_bytes: u64, dtype: DataType) -> bool {
    registry::tuned_prefers_nccl(&Request::new(op.collective(), world, in_bytes).dtype(dtype))
}

/// The window of `op` on `world` ranks under `tuned` (else the built-in table).
pub fn window_in(tuned: Option<&dyn TunedWindows>, op: Op, world: usize) -> u64 {
    tuned.and_then(|t| t.window(op, world)).unwrap_or_else(|| builtin(op))
}

/// The window of `op` on `world` ranks (bytes of one rank's piece).
pub fn window(op: Op, world: usize) -> u64 {
    window_in(TUNED.get().map(|t| t.as_ref()), op, world)
}

/// The largest window of `op` for any world size: calls above it never reach our setup.
pub fn window_bound(op: Op) -> u64 {
    builtin(op).max(TUNED.get().map_or(0, |t| t.largest(op)))
}

/// Bytes of each staging buffer on `world` ranks: the largest window times the world size (an all-gather's
/// output, a reduce-scatter's input). Every window must fit, on every rank alike: whether a call is ours may
/// not depend on whether that rank's placement lets it run zero copy.
pub fn staging_bytes(world: usize) -> u64 {
    Op::ALL.iter().map(|&op| window(op, world)).max().unwrap_or(0) * world as u64
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
pub fn element_type(dtype: NcclDataType) -> Option<(ElementType, DataType)> {
    match dtype {
        abi::FLOAT16 => Some((ElementType::F16, DataType::F16)),
        abi::BFLOAT16 => Some((ElementType::Bf16, DataType::Bf16)),
        abi::FLOAT32 => Some((ElementType::F32, DataType::F32)),
        abi::INT32 => Some((ElementType::I32, DataType::I32)),
        abi::UINT32 => Some((ElementType::U32, DataType::U32)),
        abi::UINT8 => Some((ElementType::U8, DataType::U8)),
        _ => None,
    }
}

/// A data type whose bytes only move (no arithmetic): all-gather and broadcast take any type as bytes.
pub fn byte_type(dtype: NcclDataType) -> Option<(ElementType, DataType)> {
    abi::element_bytes(dtype).map(|_| (ElementType::U8, DataType::U8))
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
    fn sizes_a_tuned_table_gives_to_nccl_go_there() {
        use mscclpp_lang::registry::{TUNED_FORMAT, TableKey, TunedRow, TunedTable};
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
        registry::install_tuned_table(None);
        assert_eq!(verdicts, [true, true, false, false, false]);
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
        assert_eq!(element_type(abi::FLOAT16).map(|t| t.0), Some(ElementType::F16));
        assert_eq!(element_type(abi::BFLOAT16).map(|t| t.0), Some(ElementType::Bf16));
        assert_eq!(element_type(abi::INT32).map(|t| t.0), Some(ElementType::I32));
        assert!(element_type(abi::FLOAT64).is_none());
        assert!(element_type(abi::INT64).is_none());
        assert_eq!(byte_type(abi::FLOAT64).map(|t| t.0), Some(ElementType::U8));
        assert!(byte_type(42).is_none());
        assert_eq!(reduce_op(abi::SUM), Some(ReduceOp::Sum));
        assert_eq!(reduce_op(abi::MAX), Some(ReduceOp::Max));
        assert!(reduce_op(abi::AVG).is_none());
        assert!(reduce_op(abi::PROD).is_none());
        assert!(reduce_op(7).is_none());
    }

    #[test]
    fn every_collective_has_a_window_that_fits_the_staging_buffers() {
        for world in [2, 4, 8] {
            for op in Op::ALL {
                assert!(window(op, world) > 0, "{}", op.name());
                assert!(window(op, world) * world as u64 <= staging_bytes(world));
                assert!(window(op, world) <= window_bound(op));
            }
        }
    }

    /// A tuned table with entries for 2 ranks only.
    struct Two;

    impl TunedWindows for Two {
        fn window(&self, op: Op, world: usize) -> Option<u64> {
            (world == 2 && op == Op::AllReduce).then_some(1 << 20)
        }
        fn largest(&self, op: Op) -> u64 {
            if op == Op::AllReduce { 1 << 20 } else { 0 }
        }
    }

    #[test]
    fn a_tuned_table_overrides_the_windows_it_names() {
        assert_eq!(window_in(Some(&Two), Op::AllReduce, 2), 1 << 20);
        assert_eq!(window_in(Some(&Two), Op::AllReduce, 4), builtin(Op::AllReduce), "no entry: built in");
        assert_eq!(window_in(Some(&Two), Op::AllGather, 2), builtin(Op::AllGather));
        assert_eq!(window_in(None, Op::Broadcast, 2), builtin(Op::Broadcast));
    }
}
