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
