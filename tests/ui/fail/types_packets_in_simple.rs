// A packet operation in a Simple program: packets need the LL protocol.
use mscclpp::prelude::*;

fn algo(p: &mut Program<'_, Simple>) -> Result<(), ProgramError> {
    let dst = p.scratch(1, 1)?.chunk(0)?;
    let src = p.input(0)?.chunk(0)?;
    p.memory_channel(1, 0)?.put_packets(dst, src, 0)
}

fn main() {
    let _ = build_plan(&ProgramSpec::new("x", Collective::SendRecv, 2), algo);
}
