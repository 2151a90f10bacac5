// Switch reduce and broadcast on a switch channel, signals on memory channels, flush on a port channel.
use mscclpp::prelude::*;

fn algo(p: &mut Program<'_, Simple>) -> Result<(), ProgramError> {
    let sw = p.switch_channel(&[0, 1], BufferType::Input)?;
    for r in 0..2 {
        let chunk = p.input(r)?.chunk(r)?;
        let at = sw.at_rank(r)?;
        at.reduce(chunk, r, 0, ReduceOp::Sum)?;
        at.broadcast(r, chunk, 0)?;
        let port = p.port_channel(1 - r, r)?;
        port.put_with_signal_and_flush(p.output(1 - r)?.chunk(0)?, p.output(r)?.chunk(0)?, 1)?;
        port.wait(1, SyncType::Both)?;
        port.flush(1, SyncType::Both)?;
    }
    Ok(())
}

fn main() {
    let spec = ProgramSpec::new("switch", Collective::AllReduce, 2).inplace(true);
    let plan = build_plan(&spec, algo).unwrap();
    assert_eq!(plan.gpus[0].threadblocks[0].ops[0].name, OpName::MultiLoadReduceStore);
}
