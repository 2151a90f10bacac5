// A chunk leaves its program function: handles carry the program's brand and cannot outlive it.
use mscclpp::prelude::*;

fn main() {
    let spec = ProgramSpec::new("x", Collective::SendRecv, 2);
    let mut leaked = None;
    let _ = build_plan::<Simple>(&spec, |p| {
        leaked = Some(p.input(0)?.chunk(0)?);
        Ok(())
    });
    let _ = leaked;
}
