// signal on a switch channel: signals go to one peer over a memory or port channel.
use mscclpp::prelude::*;

fn algo(p: &mut Program<'_, Simple>) -> Result<(), ProgramError> {
    let sw = p.switch_channel(&[0, 1], BufferType::Input)?;
    sw.at_rank(0)?.signal(0, SyncType::Both)
}

fn main() {
    let _ = build_plan(&ProgramSpec::new("x", Collective::SendRecv, 2), algo);
}
