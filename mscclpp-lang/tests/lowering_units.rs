//! The unit programs of the MSCCL++ DSL written in the eDSL: each lowers to the plan the Python DSL produced
//! (tests/corpus/mscclpp/generated/unit__*.json), fusions and inserted `nop`s included.

mod common;

use common::assert_same;
use mscclpp_lang::prelude::*;

fn test_spec(name: &str, ranks: usize, input: usize, output: usize) -> ProgramSpec {
    ProgramSpec::new(name, Collective::Test, ranks).buffer_chunks(input, output)
}

/// Relaxed handshake, then `body`, then signal/wait so both sides know the data landed (the unit tests' frame).
fn framed<'p>(
    ch: &MemoryChannel<'p, Simple>,
    body: impl FnOnce() -> Result<(), ProgramError>,
) -> Result<(), ProgramError> {
    ch.relaxed_signal(0, SyncType::Both)?;
    ch.relaxed_wait(0, SyncType::After)?;
    body()?;
    ch.signal(0, SyncType::Before)?;
    ch.wait(0, SyncType::After)
}

#[test]
fn barrier() {
    let plan = build_plan::<Simple>(&test_spec("barrier_test", 1, 0, 0), |p| p.barrier(0, &[0, 1])).unwrap();
    assert_same(&plan, "unit__barrier_test__n2.json");
}

#[test]
fn copy() {
    let plan = build_plan::<Simple>(&test_spec("copy_test", 1, 1, 1), |p| {
        p.rank(0)?.copy(p.output(0)?.chunk(0)?, p.input(0)?.chunk(0)?, 0)
    })
    .unwrap();
    assert_same(&plan, "unit__copy_test__n2.json");
}

#[test]
fn copy_packets() {
    let plan = build_plan::<LL>(&test_spec("copy_packets_test", 1, 1, 1), |p| {
        let s = p.scratch(0, 1)?;
        p.rank(0)?.copy_packets(s.chunk(0)?, p.input(0)?.chunk(0)?, 0)
    })
    .unwrap();
    assert_same(&plan, "unit__copy_packet_test__n2.json");
}

#[test]
fn unpack_packets() {
    let plan = build_plan::<LL>(&test_spec("unpack_packets_test", 1, 1, 1), |p| {
        let s = p.scratch(0, 1)?.chunk(0)?;
        let r = p.rank(0)?;
        r.copy_packets(s, p.input(0)?.chunk(0)?, 0)?;
        r.unpack_packets(p.output(0)?.chunk(0)?, s, 0)
    })
    .unwrap();
    assert_same(&plan, "unit__unpack_packet_test__n2.json");
}

#[test]
fn tbg_copy() {
    let plan = build_plan::<Simple>(&test_spec("copy_test", 1, 1, 1), |p| {
        let g = p.tb_group(&[0, 1, 2, 3])?;
        p.rank(0)?.copy(p.output(0)?.chunk(0)?, p.input(0)?.chunk(0)?, &g)
    })
    .unwrap();
    assert_same(&plan, "unit__tbg_copy_test__n2.json");
}

#[test]
fn flush() {
    let plan =
        build_plan::<Simple>(&test_spec("flush_test", 2, 0, 0), |p| p.port_channel(1, 0)?.flush(0, SyncType::Before))
            .unwrap();
    assert_same(&plan, "unit__flush_test__n2.json");
}

#[test]
fn flush_fuse() {
    let plan = build_plan::<Simple>(&test_spec("flush_test", 2, 0, 0), |p| {
        p.port_channel(1, 0)?.flush(0, SyncType::Both)?;
        p.port_channel(1, 0)?.flush(0, SyncType::Both)
    })
    .unwrap();
    assert_same(&plan, "unit__flush_fuse_test__n2.json");
}

#[test]
fn get_and_get_fuse() {
    for (fused, file) in [(false, "unit__get_test__n2.json"), (true, "unit__get_fuse_test__n2.json")] {
        let plan = build_plan::<Simple>(&test_spec("get_test", 2, 2, 0), |p| {
            for r in 0..2 {
                let peer = 1 - r;
                let ch = p.memory_channel(peer, r)?;
                let (dst, src) = (p.input(r)?.chunk(0)?, p.input(peer)?.chunk(1)?);
                framed(&ch, || {
                    ch.get(dst, src, 0)?;
                    if fused {
                        ch.get(dst, src, 0)?;
                    }
                    Ok(())
                })?;
            }
            Ok(())
        })
        .unwrap();
        assert_same(&plan, file);
    }
}

#[test]
fn put() {
    let plan = build_plan::<Simple>(&test_spec("put_test", 2, 2, 0), |p| {
        for r in 0..2 {
            let peer = 1 - r;
            let ch = p.memory_channel(peer, r)?;
            let (dst, src) = (p.input(peer)?.chunk(1)?, p.input(r)?.chunk(0)?);
            framed(&ch, || ch.put(dst, src, 0))?;
        }
        Ok(())
    })
    .unwrap();
    assert_same(&plan, "unit__put_test__n2.json");
}

#[test]
fn put_fuse() {
    let plan = build_plan::<Simple>(&test_spec("put_test", 2, 2, 0), |p| {
        for r in 0..2 {
            let peer = 1 - r;
            let (ch0, ch1) = (p.memory_channel(peer, r)?, p.memory_channel(peer, r)?);
            let (mine, theirs) = (p.input(r)?, p.input(peer)?);
            ch0.relaxed_signal(0, SyncType::Both)?;
            ch0.relaxed_wait(0, SyncType::After)?;
            ch0.put(theirs.chunk(1)?, mine.chunk(0)?, 0)?;
            ch1.put(theirs.chunk(0)?, mine.chunk(1)?, 0)?;
            ch1.signal(0, SyncType::Before)?;
            ch1.wait(0, SyncType::After)?;
        }
        Ok(())
    })
    .unwrap();
    assert_same(&plan, "unit__put_fuse_test__n2.json");
}

#[test]
fn put_with_signal_and_flush() {
    for (flush, name, file) in [
        (false, "put_with_signal_test", "unit__put_with_signal_test__n2.json"),
        (true, "put_with_signal_and_flush_test", "unit__put_with_signal_and_flush_test__n2.json"),
    ] {
        let plan = build_plan::<Simple>(&test_spec(name, 2, 2, 0), |p| {
            for r in 0..2 {
                let peer = 1 - r;
                let ch = p.port_channel(peer, r)?;
                let (dst, src) = (p.input(peer)?.chunk(1)?, p.input(r)?.chunk(0)?);
                ch.signal(0, SyncType::Both)?;
                ch.wait(0, SyncType::Both)?;
                if flush {
                    ch.put_with_signal_and_flush(dst, src, 0)?;
                } else {
                    ch.put_with_signal(dst, src, 0)?;
                }
                ch.wait(0, SyncType::After)?;
            }
            Ok(())
        })
        .unwrap();
        assert_same(&plan, file);
    }
}

#[test]
fn put_packets() {
    let spec = test_spec("put_packets_test", 2, 1, 0);
    let plan = build_plan::<LL>(&spec, |p| {
        let scratch = [p.scratch(0, 1)?, p.scratch(1, 1)?];
        for r in 0..2 {
            let peer = 1 - r;
            p.memory_channel(peer, r)?.put_packets(scratch[peer].chunk(0)?, p.input(r)?.chunk(0)?, 0)?;
        }
        Ok(())
    })
    .unwrap();
    assert_same(&plan, "unit__put_packet_test__n2.json");
}

#[test]
fn read_put_packets() {
    let plan = build_plan::<LL>(&test_spec("read_put_packets_test", 2, 0, 0), |p| {
        let scratch = [p.scratch(0, 2)?, p.scratch(1, 2)?];
        for r in 0..2 {
            let peer = 1 - r;
            p.memory_channel(peer, r)?.read_put_packets(scratch[peer].chunk(1)?, scratch[r].chunk(0)?, 0)?;
        }
        Ok(())
    })
    .unwrap();
    assert_same(&plan, "unit__read_put_packet_test__n2.json");
}

#[test]
fn read_reduce_and_fuse() {
    for (fused, file) in [(false, "unit__read_reduce_test__n2.json"), (true, "unit__read_reduce_fuse_test__n2.json")] {
        let plan = build_plan::<Simple>(&test_spec("read_reduce_test", 2, 2, 2), |p| {
            for r in 0..2 {
                let peer = 1 - r;
                let ch = p.memory_channel(peer, r)?;
                let (dst, src, other) = (p.output(r)?.chunk(0)?, p.input(r)?.chunk(0)?, p.input(peer)?);
                framed(&ch, || {
                    if fused {
                        ch.read_reduce(dst, src, &[other.chunk(0)?], 0, ReduceOp::Sum)?;
                    }
                    ch.read_reduce(dst, src, &[other.chunk(1)?], 0, ReduceOp::Sum)
                })?;
            }
            Ok(())
        })
        .unwrap();
        assert_same(&plan, file);
    }
}

#[test]
fn read_reduce_send() {
    let plan = build_plan::<Simple>(&test_spec("read_reduce_send_test", 2, 2, 2), |p| {
        for r in 0..2 {
            let peer = 1 - r;
            let ch = p.memory_channel(peer, r)?;
            let (dst, src) = (p.output(r)?.chunk(0)?, p.input(r)?.chunk(0)?);
            let (remote_in, remote_out) = (p.input(peer)?.chunk(1)?, p.output(peer)?.chunk(1)?);
            framed(&ch, || {
                ch.read_reduce(dst, src, &[remote_in], 0, ReduceOp::Sum)?;
                ch.put(remote_out, dst, 0)
            })?;
        }
        Ok(())
    })
    .unwrap();
    assert_same(&plan, "unit__read_reduce_send_test__n2.json");
}

#[test]
fn reduce_and_fuse() {
    let plan = build_plan::<Simple>(&test_spec("reduce_test", 1, 2, 1), |p| {
        let i = p.input(0)?;
        p.rank(0)?.reduce(p.output(0)?.chunk(0)?, i.chunk(0)?, &[i.chunk(1)?], 0, ReduceOp::Sum)
    })
    .unwrap();
    assert_same(&plan, "unit__reduce_test__n2.json");
    let plan = build_plan::<Simple>(&test_spec("reduce_test", 1, 3, 2), |p| {
        let (i, o, r) = (p.input(0)?, p.output(0)?.chunk(0)?, p.rank(0)?);
        r.reduce(o, i.chunk(0)?, &[i.chunk(1)?], 0, ReduceOp::Sum)?;
        r.reduce(o, i.chunk(0)?, &[i.chunk(2)?], 0, ReduceOp::Sum)
    })
    .unwrap();
    assert_same(&plan, "unit__reduce_fuse_test__n2.json");
}

#[test]
fn tbg_reduce_and_fuse() {
    let plan = build_plan::<Simple>(&test_spec("reduce_test", 1, 2, 1), |p| {
        let (i, g) = (p.input(0)?, p.tb_group(&[0, 1, 2, 3])?);
        p.rank(0)?.reduce(p.output(0)?.chunk(0)?, i.chunk(0)?, &[i.chunk(1)?], &g, ReduceOp::Sum)
    })
    .unwrap();
    assert_same(&plan, "unit__tbg_reduce_test__n2.json");
    let plan = build_plan::<Simple>(&test_spec("reduce_test", 1, 3, 2), |p| {
        let (i, o, r, g) = (p.input(0)?, p.output(0)?.chunk(0)?, p.rank(0)?, p.tb_group(&[0, 1, 2, 3])?);
        r.reduce(o, i.chunk(0)?, &[i.chunk(1)?], &g, ReduceOp::Sum)?;
        r.reduce(o, i.chunk(0)?, &[i.chunk(2)?], &g, ReduceOp::Sum)
    })
    .unwrap();
    assert_same(&plan, "unit__tbg_reduce_fuse_test__n2.json");
}

#[test]
fn reduce_send_and_tbg() {
    for (group, file) in [(false, "unit__reduce_send_test__n2.json"), (true, "unit__tbg_reduce_send_test__n2.json")] {
        let plan = build_plan::<Simple>(&test_spec("reduce_send_test", 2, 2, 2), |p| {
            let g = p.tb_group(&[0, 1, 2, 3])?;
            for r in 0..2 {
                let peer = 1 - r;
                let ch = p.memory_channel(peer, r)?;
                let (i, dst, remote) = (p.input(r)?, p.output(r)?.chunk(0)?, p.output(peer)?.chunk(1)?);
                let tb: Tb = if group { (&g).into() } else { 0.into() };
                framed(&ch, || {
                    p.rank(r)?.reduce(dst, i.chunk(0)?, &[i.chunk(1)?], tb.clone(), ReduceOp::Sum)?;
                    ch.put(remote, dst, tb.clone())
                })?;
            }
            Ok(())
        })
        .unwrap();
        assert_same(&plan, file);
    }
}

#[test]
fn reduce_packets_and_fuse() {
    let plan = build_plan::<LL>(&test_spec("reduce_packets_test", 1, 0, 0), |p| {
        let s = p.scratch(0, 3)?;
        p.rank(0)?.reduce_packets(s.chunk(2)?, s.chunk(0)?, &[s.chunk(1)?], 0, ReduceOp::Sum)
    })
    .unwrap();
    assert_same(&plan, "unit__reduce_packets_test__n2.json");
    let plan = build_plan::<LL>(&test_spec("reduce_packets_test", 1, 0, 0), |p| {
        let (s, r) = (p.scratch(0, 4)?, p.rank(0)?);
        r.reduce_packets(s.chunk(3)?, s.chunk(0)?, &[s.chunk(1)?], 0, ReduceOp::Sum)?;
        r.reduce_packets(s.chunk(3)?, s.chunk(0)?, &[s.chunk(2)?], 0, ReduceOp::Sum)
    })
    .unwrap();
    assert_same(&plan, "unit__reduce_packets_fuse_test__n2.json");
}

#[test]
fn reduce_send_packets() {
    let plan = build_plan::<LL>(&test_spec("reduce_send_packets_test", 2, 0, 0), |p| {
        let s = [p.scratch(0, 4)?, p.scratch(1, 4)?];
        for r in 0..2 {
            let peer = 1 - r;
            let ch = p.memory_channel(peer, r)?;
            p.rank(r)?.reduce_packets(s[r].chunk(2)?, s[r].chunk(0)?, &[s[r].chunk(1)?], 0, ReduceOp::Sum)?;
            ch.put_packets(s[peer].chunk(3)?, s[r].chunk(2)?, 0)?;
        }
        Ok(())
    })
    .unwrap();
    assert_same(&plan, "unit__reduce_send_packet_test__n2.json");
}

#[test]
fn reduce_copy_packets() {
    let plan = build_plan::<LL>(&test_spec("reduce_copy_packets_test", 1, 1, 0), |p| {
        let (s, i, r) = (p.scratch(0, 2)?, p.input(0)?.chunk(0)?, p.rank(0)?);
        r.reduce_packets(i, i, &[s.chunk(0)?], 0, ReduceOp::Sum)?;
        r.copy_packets(s.chunk(1)?, i, 0)
    })
    .unwrap();
    assert_same(&plan, "unit__reduce_copy_packet_test__n2.json");
}

#[test]
fn reduce_copy_send_packets() {
    let plan = build_plan::<LL>(&test_spec("reduce_copy_send_packets_test", 2, 1, 0), |p| {
        let (s, remote) = (p.scratch(0, 2)?, p.scratch(1, 1)?);
        let (i, r) = (p.input(0)?.chunk(0)?, p.rank(0)?);
        r.reduce_packets(i, i, &[s.chunk(0)?], 0, ReduceOp::Sum)?;
        r.copy_packets(s.chunk(1)?, i, 0)?;
        p.memory_channel(1, 0)?.put_packets(remote.chunk(0)?, i, 0)
    })
    .unwrap();
    assert_same(&plan, "unit__reduce_copy_send_packet_test__n2.json");
}

#[test]
fn relaxed_and_plain_signal_wait_and_fuse() {
    for (relaxed, fused, name, file) in [
        (true, false, "relaxed_signal_wait_test", "unit__relaxed_signal_wait_test__n2.json"),
        (true, true, "relaxed_signal_wait_test", "unit__relaxed_signal_wait_fuse_test__n2.json"),
        (false, false, "signal_wait_test", "unit__signal_wait_test__n2.json"),
        (false, true, "signal_wait_test", "unit__signal_wait_fuse_test__n2.json"),
    ] {
        let plan = build_plan::<Simple>(&test_spec(name, 2, 0, 0), |p| {
            for r in 0..2 {
                let peer = 1 - r;
                if !fused {
                    let ch = p.memory_channel(peer, r)?;
                    if relaxed {
                        ch.relaxed_signal(0, SyncType::Both)?;
                        ch.relaxed_wait(0, SyncType::Both)?;
                    } else {
                        ch.signal(0, SyncType::Before)?;
                        ch.wait(0, SyncType::After)?;
                    }
                    continue;
                }
                // Signals on channels 0 and 1, waits on 2 and 3: the fusion shape only, not a pairing that runs.
                p.set_channel_pairing_check(false);
                let chs: Vec<_> = (0..4).map(|_| p.memory_channel(peer, r)).collect::<Result<_, _>>()?;
                for ch in &chs[..2] {
                    if relaxed { ch.relaxed_signal(0, SyncType::Both)? } else { ch.signal(0, SyncType::Both)? }
                }
                for ch in &chs[2..] {
                    if relaxed { ch.relaxed_wait(0, SyncType::Both)? } else { ch.wait(0, SyncType::Both)? }
                }
            }
            Ok(())
        })
        .unwrap();
        assert_same(&plan, file);
    }
}

#[test]
fn semaphore() {
    let plan = build_plan::<Simple>(&test_spec("semaphore_test", 1, 0, 0), |p| {
        let sem = p.semaphore(0, 0)?;
        sem.acquire(0, SyncType::After)?;
        sem.release(1, SyncType::Before)
    })
    .unwrap();
    assert_same(&plan, "unit__semaphore__n2.json");
}

#[test]
fn pipeline() {
    let plan = build_plan::<Simple>(&test_spec("barrier_test", 1, 1, 1), |p| {
        let (dst, src) = (p.output(0)?.chunk(0)?, p.input(0)?.chunk(0)?);
        let r = p.rank(0)?;
        p.pipeline(1 << 20, 1, |_| r.copy(dst, src, 0))
    })
    .unwrap();
    assert_same(&plan, "unit__pipeline_test__n2.json");
}

#[test]
fn switch_broadcast() {
    let plan = build_plan::<Simple>(&test_spec("group_store_test", 3, 1, 1), |p| {
        let s = p.scratch(0, 1)?.chunk(0)?;
        let sw = p.switch_channel(&[0, 1], BufferType::Input)?;
        sw.at_rank(0)?.broadcast(0, s, 0)
    })
    .unwrap();
    assert_same(&plan, "unit__switch_broadcast_test__n2.json");
}

#[test]
fn standalone_switch_reduce_stays_glre() {
    let plan = build_plan::<Simple>(&test_spec("switch_reduce_test", 3, 1, 1), |p| {
        let s = p.scratch(0, 1)?.chunk(0)?;
        let sw = p.switch_channel(&[0, 1], BufferType::Input)?;
        sw.at_rank(0)?.reduce(s, 0, 0, ReduceOp::Sum)
    })
    .unwrap();
    assert_same(&plan, "unit__switch_reduce_test__n2.json");
}
