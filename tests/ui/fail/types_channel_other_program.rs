// A channel of one program used inside another program: each program has its own brand.
use mscclpp::prelude::*;

fn main() {
    let spec = ProgramSpec::new("x", Collective::SendRecv, 2);
    let _ = build_plan::<Simple>(&spec, |outer| {
        let ch = outer.memory_channel(1, 0)?;
        let _ = build_plan::<Simple>(&spec, |inner| {
            let dst = inner.output(1)?.chunk(0)?;
            let src = inner.input(0)?.chunk(0)?;
            ch.put(dst, src, 0)
        });
        Ok(())
    });
}
