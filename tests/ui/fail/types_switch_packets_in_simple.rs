// broadcast_packets through a switch channel in a Simple program: packets need the LL protocol.
use mscclpp::prelude::*;

fn algo(p: &mut Program<'_, Simple>) -> Result<(), ProgramError> {
    let src = p.scratch(0, 1)?.chunk(0)?;
    let sw = p.switch_channel(&[0, 1], BufferType::Scratch)?;
    sw.at_rank(0)?.broadcast_packets(0, src, 0)
}

fn main() {
    let _ = build_plan(&ProgramSpec::new("x", Collective::SendRecv, 2), algo);
}
