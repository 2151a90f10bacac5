// put on a switch channel: a switch channel multicasts, it has no single peer to put to.
use mscclpp::prelude::*;

fn algo(p: &mut Program<'_, Simple>) -> Result<(), ProgramError> {
    let sw = p.switch_channel(&[0, 1], BufferType::Input)?;
    let dst = p.input(1)?.chunk(0)?;
    let src = p.input(0)?.chunk(0)?;
    sw.at_rank(0)?.put(dst, src, 0)
}

fn main() {
    let _ = build_plan(&ProgramSpec::new("x", Collective::SendRecv, 2), algo);
}
