// unpack_packets from the input buffer: packets are read from scratch only.
use mscclpp::prelude::*;

fn algo(p: &mut Program<'_, LL>) -> Result<(), ProgramError> {
    let dst = p.output(0)?.chunk(0)?;
    let src = p.input(0)?.chunk(0)?;
    p.rank(0)?.unpack_packets(dst, src, 0)
}

fn main() {
    let _ = build_plan(&ProgramSpec::new("x", Collective::SendRecv, 1), algo);
}
