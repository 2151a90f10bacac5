// put_with_signal on a memory channel: the fused proxy request exists on port channels only.
use mscclpp::prelude::*;

fn algo(p: &mut Program<'_, Simple>) -> Result<(), ProgramError> {
    let dst = p.output(1)?.chunk(0)?;
    let src = p.input(0)?.chunk(0)?;
    p.memory_channel(1, 0)?.put_with_signal(dst, src, 0)
}

fn main() {
    let _ = build_plan(&ProgramSpec::new("x", Collective::SendRecv, 2), algo);
}
