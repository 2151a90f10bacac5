//! Run-time rules of the eDSL: each broken rule is a `ProgramError` that names rank, thread block and operation
//! and says what to do.

use mscclpp_lang::prelude::*;

fn spec(n: usize) -> ProgramSpec {
    ProgramSpec::new("errors", Collective::AllGather, n)
}

fn err<P: ProtocolKind>(
    n: usize,
    f: impl for<'p> FnOnce(&mut Program<'p, P>) -> Result<(), ProgramError>,
) -> ProgramError {
    build_plan::<P>(&spec(n), f).unwrap_err()
}

#[test]
fn rank_out_of_range() {
    let e = err::<Simple>(2, |p| p.memory_channel(2, 0).map(|_| ()));
    assert!(matches!(e, ProgramError::RankOutOfRange { rank: 2, world_size: 2, .. }), "{e}");
    assert!(e.to_string().contains("rank 2 does not exist in a world of 2 ranks"), "{e}");
    let e = err::<Simple>(2, |p| p.input(5).map(|_| ()));
    assert!(e.to_string().contains("`input`"), "{e}");
}

#[test]
fn chunk_out_of_bounds() {
    let (e, line) = (err::<Simple>(2, |p| p.output(0)?.slice(1..3).map(|_| ())), line!());
    assert!(matches!(e, ProgramError::ChunkOutOfBounds { start: 1, end: 3, len: 2, .. }), "{e}");
    // The error names the program's own line first, then the rank.
    let text = e.to_string();
    assert!(text.starts_with(&format!("`slice` at {}:{line}:", file!())), "{e}");
    assert!(
        text.ends_with(" (rank 0): chunks [1, 3) are out of bounds: the output buffer of rank 0 has 2 chunk(s)"),
        "{e}"
    );
    let e = err::<Simple>(2, |p| p.input(0)?.chunk(1).map(|_| ()));
    assert!(e.to_string().contains("input buffer of rank 0 has 1 chunk(s)"), "{e}");
}

#[test]
fn source_must_be_on_the_channel_rank() {
    let e = err::<Simple>(2, |p| {
        let ch = p.memory_channel(1, 0)?;
        ch.put(p.output(1)?.chunk(1)?, p.output(1)?.chunk(1)?, 3)
    });
    let site = e.site().unwrap();
    assert_eq!((site.rank, site.tb, site.op_name.as_deref()), (Some(0), Some(3), Some("put")));
    assert!(e.to_string().contains("the source chunk is on rank 1, but this operation runs on rank 0"), "{e}");
    let e = err::<Simple>(3, |p| {
        let ch = p.memory_channel(1, 0)?;
        ch.put(p.output(2)?.chunk(0)?, p.output(0)?.chunk(0)?, 0)
    });
    assert!(e.to_string().contains("the destination chunk is on rank 2, but this channel reaches rank 1"), "{e}");
}

#[test]
fn sizes_must_match() {
    let e = err::<Simple>(2, |p| p.rank(0)?.copy(p.output(0)?.slice(0..2)?, p.input(0)?.chunk(0)?, 0));
    let at = format!("`copy` at {}:{}:", file!(), line!() - 1);
    assert!(e.to_string().starts_with(&at), "{e}");
    assert!(e.to_string().contains(" (rank 0, thread block 0): destination and source sizes differ"), "{e}");
}

#[test]
fn unbalanced_signal_wait() {
    let e = err::<Simple>(2, |p| {
        p.memory_channel(1, 0)?.signal(0, SyncType::Both)?;
        p.memory_channel(1, 0)?.signal(0, SyncType::Both)?;
        p.memory_channel(0, 1)?.wait(0, SyncType::Both)
    });
    assert!(matches!(e, ProgramError::UnpairedSignal { src: 0, dst: 1, signals: 2, waits: 1, .. }), "{e}");
    assert!(e.to_string().contains("rank 0 signals 2 time(s) but rank 1 waits 1 time(s)"), "{e}");
}

#[test]
fn more_than_64_operations_in_a_thread_block() {
    let e = err::<Simple>(1, |p| {
        let (dst, src) = (p.output(0)?.chunk(0)?, p.input(0)?.chunk(0)?);
        let r = p.rank(0)?;
        for _ in 0..40 {
            r.copy(dst, src, 2)?;
            r.barrier(&[2])?;
        }
        Ok(())
    });
    let site = e.site().unwrap();
    assert_eq!((site.rank, site.tb), (Some(0), Some(2)));
    assert!(e.to_string().contains("at most 64"), "{e}");
}

#[test]
fn more_than_16_channels_in_a_thread_block() {
    let e = err::<Simple>(2, |p| {
        for _ in 0..17 {
            p.memory_channel(1, 0)?.signal(0, SyncType::None)?;
            p.memory_channel(0, 1)?.wait(0, SyncType::None)?;
        }
        Ok(())
    });
    assert!(e.to_string().contains("17 memory channels; a thread block holds at most 16"), "{e}");
}

#[test]
fn thread_block_group_misuse() {
    let e = err::<Simple>(1, |p| p.tb_group(&[0, 1, 1]).map(|_| ()));
    assert!(e.to_string().contains("thread block 1 appears twice"), "{e}");
    let e = err::<Simple>(2, |p| {
        let g = p.tb_group(&[0, 1])?;
        p.memory_channel(1, 0)?.signal(&g, SyncType::Both)
    });
    assert!(e.to_string().contains("takes a single thread block"), "{e}");
    assert!(e.to_string().contains("`signal`"), "{e}");
}

#[test]
fn pipelines_do_not_nest() {
    let e = err::<Simple>(1, |p| p.pipeline(1 << 20, 1, |p| p.pipeline(1 << 20, 1, |_| Ok(()))));
    assert!(e.to_string().contains("pipelines do not nest"), "{e}");
}

#[test]
fn switch_channel_members() {
    let e = err::<Simple>(3, |p| p.switch_channel(&[0, 1], BufferType::Output)?.at_rank(2).map(|_| ()));
    assert!(e.to_string().contains("rank 2 is not a member"), "{e}");
    let e = err::<Simple>(2, |p| {
        let sw = p.switch_channel(&[0, 1], BufferType::Output)?;
        sw.at_rank(0)?.broadcast(0, p.output(1)?.chunk(0)?, 0)
    });
    assert!(e.to_string().contains("the local chunk is on rank 1, but the channel was taken at rank 0"), "{e}");
    let e = err::<Simple>(2, |p| {
        let sw = p.switch_channel(&[0, 1], BufferType::Output)?;
        sw.at_rank(0)?.broadcast(2, p.output(0)?.chunk(0)?, 0)
    });
    assert!(matches!(e, ProgramError::ChunkOutOfBounds { .. }), "{e}");
}

#[test]
fn channel_to_itself() {
    let e = err::<Simple>(2, |p| p.port_channel(1, 1).map(|_| ()));
    assert!(e.to_string().contains("both ends are rank 1"), "{e}");
}

#[test]
fn negative_thread_block() {
    let e = err::<Simple>(1, |p| p.rank(0)?.copy(p.output(0)?.chunk(0)?, p.input(0)?.chunk(0)?, -1));
    assert!(e.to_string().contains("thread block -1 is negative"), "{e}");
}

#[test]
fn program_errors_pass_through() {
    let e = err::<Simple>(3, |p| {
        if p.world_size() % 2 == 1 {
            return Err(ProgramError::custom("needs an even number of ranks"));
        }
        Ok(())
    });
    assert_eq!(e.to_string(), "needs an even number of ranks");
}

#[test]
fn bad_specs() {
    let e = build_plan::<Simple>(&spec(0), |_| Ok(())).unwrap_err();
    assert!(e.to_string().contains("world_size must be at least 1"), "{e}");
    let e = build_plan::<Simple>(&spec(4).ranks_per_node(3), |_| Ok(())).unwrap_err();
    assert!(e.to_string().contains("does not divide"), "{e}");
}
