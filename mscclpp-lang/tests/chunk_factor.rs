//! `Program::set_chunk_factor`: finer chunks of the collective's buffers, set before anything else.

use mscclpp_lang::prelude::*;

fn allreduce(ranks: usize) -> ProgramSpec {
    ProgramSpec::new("chunk_factor_test", Collective::AllReduce, ranks)
}

#[test]
fn a_chunk_factor_multiplies_the_chunks_of_the_buffers_and_reaches_the_plan() {
    let mut seen = 0;
    let plan = build_plan::<Simple>(&allreduce(2), |p| {
        p.set_chunk_factor(4)?;
        seen = p.input(0)?.len();
        assert_eq!(p.output(1)?.len(), 8);
        assert_eq!(p.chunk_factor(), 4);
        for r in 0..2 {
            p.rank(r)?.copy(p.output(r)?.slice(0..4)?, p.input(r)?.slice(4..8)?, 0)?;
        }
        Ok(())
    })
    .unwrap();
    assert_eq!(seen, 8, "2 ranks x 4");
    assert!(plan.gpus.iter().all(|g| g.input_chunks == 8 && g.output_chunks == 8), "{:?}", plan.gpus[0].input_chunks);
}

#[test]
fn a_chunk_factor_after_an_operation_is_refused_naming_the_call() {
    let err = build_plan::<Simple>(&allreduce(2), |p| {
        p.rank(0)?.copy(p.output(0)?.chunk(0)?, p.input(0)?.chunk(1)?, 0)?;
        p.set_chunk_factor(2)?;
        Ok(())
    })
    .unwrap_err()
    .to_string();
    assert!(err.contains("set_chunk_factor must come before"), "{err}");
}

#[test]
fn a_zero_chunk_factor_is_refused() {
    let err = build_plan::<Simple>(&allreduce(2), |p| {
        p.set_chunk_factor(0)?;
        Ok(())
    })
    .unwrap_err()
    .to_string();
    assert!(err.contains("at least 1"), "{err}");
}
