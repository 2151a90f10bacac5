// A switch reduce on a port channel: multimem load-reduce needs a switch channel.
use mscclpp::prelude::*;

fn algo(p: &mut Program<'_, Simple>) -> Result<(), ProgramError> {
    let dst = p.output(0)?.chunk(0)?;
    p.port_channel(1, 0)?.reduce(dst, 0, 0, ReduceOp::Sum)
}

fn main() {
    let _ = build_plan(&ProgramSpec::new("x", Collective::SendRecv, 2), algo);
}
