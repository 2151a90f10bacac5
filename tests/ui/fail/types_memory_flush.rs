// flush on a memory channel: only port channels post transfers to a proxy that can be flushed.
use mscclpp::prelude::*;

fn algo(p: &mut Program<'_, Simple>) -> Result<(), ProgramError> {
    p.memory_channel(1, 0)?.flush(0, SyncType::Both)
}

fn main() {
    let _ = build_plan(&ProgramSpec::new("x", Collective::SendRecv, 2), algo);
}
