//! Every registered program, as the registry sizes it for a message, converts into the interpreter's device
//! records on the CPU for every rank: within the interpreter's limits (operations per thread block, shared
//! memory) and with every local reference inside its buffer. What a GPU run would refuse at launch shows here.

use mscclpp::exec::executor::records::{self, Wiring};
use mscclpp::exec::sys::device_plan::{Loc, REF_PACKET, SwitchInfo};
use mscclpp::exec::sys::handles::{BaseMemoryChannelDeviceHandle, BasePortChannelDeviceHandle};
use mscclpp_algorithms as _;
use mscclpp_lang::plan::{ChannelType, Layout, Plan};

mod common;

fn wiring(plan: &Plan, rank: usize) -> Wiring {
    let g = &plan.gpus[rank];
    Wiring {
        local_memory_id_begin: 3,
        mem_channels: vec![BaseMemoryChannelDeviceHandle::default(); g.channel_peers(ChannelType::Memory).len()],
        port_channels: vec![BasePortChannelDeviceHandle::default(); g.channel_peers(ChannelType::Port).len()],
        mem_buffers: vec![0x1000; g.remote_buffers.len()],
        port_buffers: vec![7; g.remote_buffers.len()],
        switches: vec![SwitchInfo::default(); g.switch_channels().len()],
    }
}

#[test]
fn every_registered_program_converts_into_device_records_at_its_sizes() {
    let mut converted = 0;
    let cases = common::registered_cases(&[2, 4, 8], &[64 << 10, 1 << 20, 16 << 20]);
    assert!(!cases.is_empty());
    for common::Case { meta, world: n, inplace, size, sizes, target } in cases {
        let what = format!("{} n={n} inplace={inplace} size={size}", meta.name);
        let plan = meta.build_plan(&target).unwrap_or_else(|e| panic!("{what}: {e}"));
        for rank in 0..n {
            if Layout::new(&plan, rank, sizes.input, sizes.output).is_err() {
                continue;
            }
            let s = common::f16_shape(&sizes);
            let recs = records::build(&plan, rank, s).unwrap_or_else(|e| panic!("{what} rank {rank}: {e}"));
            for (t, tb) in recs.tbs.iter().enumerate() {
                assert!(tb.ops.len() <= 64, "{what} rank {rank} tb {t}: {} operations", tb.ops.len());
                for r in &tb.refs {
                    let scale = if r.flags & REF_PACKET != 0 { 2 } else { 1 };
                    let limit = match r.loc {
                        l if l == Loc::Input as u8 => sizes.input,
                        l if l == Loc::Output as u8 => sizes.output,
                        _ => continue,
                    };
                    assert!(
                        r.offset + r.size as u64 * scale <= limit * scale,
                        "{what} rank {rank} tb {t}: {r:?} beyond {limit}"
                    );
                }
            }
            let (_, header) = records::serialize(&recs, &recs.signature(), &wiring(&plan, rank), 0x7000_0000)
                .unwrap_or_else(|e| panic!("{what} rank {rank}: {e}"));
            assert!(header.block_stride as usize <= 48 * 1024, "{what}: {} B shared", header.block_stride);
            converted += 1;
        }
    }
    // Every default at 2 ranks converts at least once; the new middle-size and port programs are among them.
    assert!(converted > 100, "only {converted} (plan, rank) pairs converted");
}

/// LL128 line groups are counted from each chunk reference's start: a thread-block group splits a packet
/// operation's references at whole groups of four lines (480 data bytes) and puts each slice's packets at its first
/// group (512 bytes per group from twice the chunk's offset), so a packet range read by a group of 3 (4 ranks) lines up with the one peer's
/// thread block that wrote it. A chunk too small for a line is refused.
#[test]
fn ll128_packet_operations_split_at_whole_lines() {
    use mscclpp_lang::registry::{self, Target};
    let meta = registry::find("allreduce_twoshot_ll128").expect("registered");
    let plan = meta.build_plan(&Target::new(4).inplace(true)).expect("plan");
    let size = 4u64 << 20;
    let sizes = mscclpp_lang::data::BufferSizes { input: size, output: size, world: 4 };
    let (mut split, mut packets) = (0, 0);
    for rank in 0..4 {
        let recs = records::build(&plan, rank, common::f16_shape(&sizes)).expect("records");
        for tb in &recs.tbs {
            for op in &tb.ops {
                let refs = &tb.refs[op.ref_begin as usize..op.ref_begin as usize + (op.n_src + op.n_dst) as usize];
                for r in refs.iter().filter(|r| r.flags & REF_PACKET != 0) {
                    assert_eq!(r.offset % 128, 0, "rank {rank}: packets at {} do not start on a line", r.offset);
                    packets += 1;
                }
                // A slice of a chunk (4 MiB / 4 ranks = 1 MiB, not a whole number of groups) shorter than the
                // chunk is a whole number of groups unless it is the chunk's last.
                for r in refs {
                    if (r.size as u64) < size / 4 && r.size % 480 == 0 {
                        split += 1;
                    }
                }
            }
        }
    }
    assert!(packets > 0 && split > 0, "{packets} packet references, {split} line-split slices");
    // A message whose chunks are too small for their lines: refused with what to do.
    let tiny = mscclpp_lang::data::BufferSizes { input: 4 * 128, output: 4 * 128, world: 4 };
    let e = records::build(&plan, 0, common::f16_shape(&tiny)).expect_err("128-byte chunks");
    assert!(e.to_string().contains("LL128 packets need chunks that start at multiples of 64"), "{e}");
}
