// A switch broadcast on a memory channel: multicast needs a switch channel.
use mscclpp::prelude::*;

fn algo(p: &mut Program<'_, Simple>) -> Result<(), ProgramError> {
    let src = p.input(0)?.chunk(0)?;
    p.memory_channel(1, 0)?.broadcast(0, src, 0)
}

fn main() {
    let _ = build_plan(&ProgramSpec::new("x", Collective::SendRecv, 2), algo);
}
