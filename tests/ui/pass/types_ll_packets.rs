// Every packet operation in an LL program, with packets in scratch.
use mscclpp::prelude::*;

fn allreduce_packets(p: &mut Program<'_, LL>) -> Result<(), ProgramError> {
    let n = p.world_size();
    let scratch: Vec<_> = (0..n).map(|r| p.scratch(r, n)).collect::<Result<_, _>>()?;
    for r in 0..n {
        let rank = p.rank(r)?;
        let input = p.input(r)?;
        for peer in (0..n).filter(|&q| q != r) {
            let ch = p.memory_channel(peer, r)?;
            ch.put_packets(scratch[peer].chunk(r)?, input.chunk(peer)?, 0)?;
        }
        let others: Vec<_> = (0..n).filter(|&q| q != r).map(|q| scratch[r].chunk(q)).collect::<Result<_, _>>()?;
        rank.reduce_packets(input.chunk(r)?, input.chunk(r)?, &others, 0, ReduceOp::Sum)?;
        rank.copy_packets(scratch[r].chunk(r)?, input.chunk(r)?, 0)?;
        for peer in (0..n).filter(|&q| q != r) {
            p.memory_channel(peer, r)?.read_put_packets(scratch[peer].chunk(r)?, scratch[r].chunk(r)?, 0)?;
            rank.unpack_packets(input.chunk(peer)?, scratch[r].chunk(peer)?, 0)?;
        }
    }
    Ok(())
}

fn main() {
    let spec = ProgramSpec::new("allreduce_packets", Collective::AllReduce, 2).inplace(true);
    let plan = build_plan(&spec, allreduce_packets).unwrap();
    assert_eq!(plan.protocol, Protocol::Ll);
}
