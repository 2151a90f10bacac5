// get on a port channel: reading peer memory directly needs a memory channel.
use mscclpp::prelude::*;

fn algo(p: &mut Program<'_, Simple>) -> Result<(), ProgramError> {
    let dst = p.output(0)?.chunk(0)?;
    let src = p.input(1)?.chunk(0)?;
    p.port_channel(1, 0)?.get(dst, src, 0)
}

fn main() {
    let _ = build_plan(&ProgramSpec::new("x", Collective::SendRecv, 2), algo);
}
