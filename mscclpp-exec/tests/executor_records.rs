//! Device records on the CPU: every corpus plan converts, for every rank, into records that stay inside their
//! buffers. (The records' layout against the interpreter source is checked in mscclpp-sys,
//! `tests/nvrtc_compile.rs`.)

use std::path::PathBuf;

use mscclpp_exec::executor::records::{self, Shape, Wiring};
use mscclpp_lang::plan::{BufferType, ChannelType, OpName, Plan, read_plan};
use mscclpp_sys::device_plan::{Loc, OPS_OFFSET, Op, REF_PACKET, REF_SCRATCH, Ref, SwitchInfo, TbInfo};
use mscclpp_sys::driver::{DeviceRepr, as_bytes};
use mscclpp_sys::handles::{BaseMemoryChannelDeviceHandle, BasePortChannelDeviceHandle};
use mscclpp_sys::interpreter::ElementType;

fn corpus() -> Vec<(String, Plan)> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/corpus/mscclpp");
    let mut out = Vec::new();
    for sub in ["generated", "upstream"] {
        let mut entries: Vec<_> = std::fs::read_dir(root.join(sub)).expect("corpus folder").flatten().collect();
        entries.sort_by_key(|e| e.path());
        for e in entries {
            let p = e.path();
            if p.extension().is_some_and(|x| x == "json") {
                match read_plan(&p) {
                    Ok(plan) => out.push((format!("{sub}/{}", p.file_name().unwrap().to_string_lossy()), plan)),
                    Err(err) => eprintln!("skipping {}: {err}", p.display()),
                }
            }
        }
    }
    assert!(out.len() > 90, "corpus not found or mostly unreadable");
    out
}

/// Sizes that every rank of `plan` splits into `chunk`-byte chunks.
fn shape(plan: &Plan, rank: usize, chunk: u64) -> Shape {
    let g = &plan.gpus[rank];
    let ic = g.input_chunks as u64;
    let oc = g.output_chunks as u64;
    Shape {
        input_size: if ic == 0 { chunk } else { ic * chunk },
        output_size: if oc == 0 { chunk } else { oc * chunk },
        const_src_offset: 0,
        const_dst_offset: 0,
        dtype: ElementType::F16,
    }
}

fn dummy_wiring(plan: &Plan, rank: usize) -> Wiring {
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
fn every_corpus_plan_converts_for_every_rank() {
    let chunk = 4096u64;
    let mut converted = 0;
    for (name, plan) in corpus() {
        for rank in 0..plan.world_size() {
            let s = shape(&plan, rank, chunk);
            let recs = records::build(&plan, rank, s).unwrap_or_else(|e| panic!("{name}: {e}"));
            let g = &plan.gpus[rank];
            assert_eq!(recs.tbs.len(), g.threadblocks.len(), "{name}");
            let scratch_payload = g.scratch_chunks as u64 * chunk;
            for (t, tb) in recs.tbs.iter().enumerate() {
                assert!(tb.ops.len() <= 64, "{name} rank {rank} tb {t}");
                for op in &tb.ops {
                    let end = op.ref_begin as usize + op.n_src as usize + op.n_dst as usize;
                    assert!(end <= tb.refs.len(), "{name}: refs out of range");
                }
                for r in &tb.refs {
                    // Every reference stays inside its buffer (payload space, ×2 for packets).
                    let scale = if r.flags & REF_PACKET != 0 { 2 } else { 1 };
                    let limit = match r.loc {
                        l if l == Loc::Input as u8 => s.input_size,
                        l if l == Loc::Output as u8 => s.output_size,
                        l if l == Loc::Scratch as u8 => scratch_payload,
                        _ => u64::MAX,
                    };
                    assert!(
                        limit == u64::MAX || r.offset + r.size as u64 * scale <= limit * scale,
                        "{name} rank {rank} tb {t}: {r:?} beyond {limit}"
                    );
                    if r.loc == Loc::Scratch as u8 {
                        assert!(r.flags & REF_SCRATCH != 0, "{name}: scratch ref without the scratch flag");
                    }
                }
            }
            let wiring = dummy_wiring(&plan, rank);
            let (bytes, header) = records::serialize(&recs, &recs.signature(), &wiring, 0x7000_0000)
                .unwrap_or_else(|e| panic!("{name}: {e}"));
            let shared = header.block_stride;
            assert!(bytes.len() >= 56 && bytes.len().is_multiple_of(16));
            assert!(shared as usize <= 48 * 1024, "{name}: {shared} bytes of shared memory");
            converted += 1;
        }
    }
    assert!(converted > 300, "only {converted} (plan, rank) pairs converted");
}

#[test]
fn offsets_follow_the_chunk_math_with_constant_offsets_and_packets() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/corpus/mscclpp");
    let plan = read_plan(root.join("upstream/execution-files__allreduce_packet.json")).expect("plan");
    let chunk = 1024u64;
    let g = &plan.gpus[0];
    let mut s = shape(&plan, 0, chunk);
    s.const_src_offset = 64;
    s.const_dst_offset = 64;
    let recs = records::build(&plan, 0, s).expect("build");
    let mut saw_remote_packet = false;
    for (tb, tbr) in g.threadblocks.iter().zip(&recs.tbs) {
        let mut refs = tbr.refs.iter();
        for op in &tb.ops {
            for r in op.srcs().iter().chain(op.dsts()) {
                let rec: &Ref = refs.next().expect("one record per reference");
                let payload = r.index as u64 * chunk;
                if rec.loc == Loc::Memory as u8 && op.name == OpName::PutPackets {
                    // Remote scratch packets: twice the payload offset, no constant offset.
                    assert_eq!(rec.offset, 2 * payload);
                    assert_ne!(rec.flags & REF_PACKET, 0);
                    saw_remote_packet = true;
                }
                if let Some(BufferType::Input) = r.buffer_type {
                    // Local references never carry the constant offset (the kernel gets the caller's pointer).
                    assert_eq!(rec.offset, payload);
                }
            }
        }
    }
    assert!(saw_remote_packet);
}

/// The bytes of one laid-out record at `at` (checked to lie inside the layout).
fn record_at<T: DeviceRepr>(bytes: &[u8], at: usize) -> &[u8] {
    let n = std::mem::size_of::<T>();
    assert!(at + n <= bytes.len(), "record at {at} beyond the {} laid-out bytes", bytes.len());
    &bytes[at..at + n]
}

/// A little-endian integer field of a laid-out record.
fn field(bytes: &[u8], at: usize, width: usize) -> usize {
    bytes[at..at + width].iter().rev().fold(0, |v, b| (v << 8) | *b as usize)
}

#[test]
fn each_block_is_one_piece_with_memory_references_resolved_to_addresses() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/corpus/mscclpp");
    let plan = read_plan(root.join("upstream/execution-files__allreduce_packet.json")).expect("plan");
    let recs = records::build(&plan, 0, shape(&plan, 0, 1024)).expect("build");
    let mut wiring = dummy_wiring(&plan, 0);
    for (i, b) in wiring.mem_buffers.iter_mut().enumerate() {
        *b = 0x10_0000 * (i as u64 + 1);
    }
    let base = 0x7000_0000u64;
    let (bytes, header) = records::serialize(&recs, &recs.signature(), &wiring, base).expect("serialize");
    assert!(!recs.tbs.is_empty());
    assert_eq!(header.n_tbs as usize, recs.tbs.len());
    assert_eq!(header.block_stride % 16, 0);
    let mut resolved = 0;
    for (t, tb) in recs.tbs.iter().enumerate() {
        let at = (header.blocks - base) as usize + t * header.block_stride as usize;
        // TbInfo: n_ops (u16), n_refs (u16), ref_offset (u32).
        let head = record_at::<TbInfo>(&bytes, at);
        assert_eq!((field(head, 0, 2), field(head, 2, 2)), (tb.ops.len(), tb.refs.len()));
        let ref_offset = field(head, 4, 4);
        assert!(ref_offset + tb.refs.len() * 16 <= header.block_stride as usize);
        for (i, op) in tb.ops.iter().enumerate() {
            let laid = record_at::<Op>(&bytes, at + OPS_OFFSET + i * 40);
            assert_eq!(laid, as_bytes(std::slice::from_ref(op)), "tb {t} op {i}");
        }
        for (i, r) in tb.refs.iter().enumerate() {
            let mut want = *r;
            if r.loc == Loc::Memory as u8 {
                want.offset += wiring.mem_buffers[tb.mem_buffers[r.id as usize] as usize];
                resolved += 1;
            }
            let laid = record_at::<Ref>(&bytes, at + ref_offset + i * 16);
            assert_eq!(laid, as_bytes(std::slice::from_ref(&want)), "tb {t} ref {i}");
        }
    }
    assert!(resolved > 0, "the packet all-reduce writes into its peers' scratch through memory channels");
    // A memory reference whose remote buffer was never mapped is an error, not a null address.
    wiring.mem_buffers.iter_mut().for_each(|b| *b = 0);
    let e = records::serialize(&recs, &recs.signature(), &wiring, base).expect_err("unmapped remote buffer");
    assert!(e.to_string().contains("remote buffer"), "{e}");
}

#[test]
fn a_size_the_chunk_math_cannot_split_is_refused_with_a_hint() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/corpus/mscclpp");
    let plan = read_plan(root.join("upstream/execution-files__allreduce.json")).expect("plan");
    let chunks = plan.gpus[0].input_chunks as u64;
    let s = Shape {
        input_size: chunks * 16 + 16,
        output_size: chunks * 16 + 16,
        const_src_offset: 0,
        const_dst_offset: 0,
        dtype: ElementType::F32,
    };
    let e = records::build(&plan, 0, s).expect_err("must be refused");
    assert!(e.to_string().contains("cannot be split"), "{e}");
    let e = records::build(&plan, 5, shape(&plan, 0, 1024)).expect_err("no rank 5");
    assert!(e.to_string().contains("not for rank 5"), "{e}");
}

#[test]
fn pipelines_keep_their_inner_operations_in_place() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/corpus/mscclpp");
    let plan = read_plan(root.join("generated/single_node__allreduce_pipeline__n2.json")).expect("plan");
    let recs = records::build(&plan, 0, shape(&plan, 0, 1 << 20)).expect("build");
    let ops: &Vec<Op> = &recs.tbs[0].ops;
    assert_eq!(ops[0].ty, OpName::Pipeline.code());
    assert_eq!(ops[0].n_inner as usize, ops.len() - 1);
    assert_eq!(ops[0].unit_size, 1 << 20);
    assert_eq!(ops[0].iterations, 1);
}
