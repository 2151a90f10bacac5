// put_packets into the peer's output buffer: packets can only land in scratch.
use mscclpp::prelude::*;

fn algo(p: &mut Program<'_, LL>) -> Result<(), ProgramError> {
    let dst = p.output(1)?.chunk(0)?;
    let src = p.input(0)?.chunk(0)?;
    p.memory_channel(1, 0)?.put_packets(dst, src, 0)
}

fn main() {
    let _ = build_plan(&ProgramSpec::new("x", Collective::SendRecv, 2), algo);
}
