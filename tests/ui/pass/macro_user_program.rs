// A user's program: registered with its metadata, still callable as written, and compiled by the registry.
use mscclpp_lang::prelude::*;
use mscclpp_lang::registry::{self, BufferMode, Request, Target};
use mscclpp_macros::collective_program;

/// Each rank copies its input into its output.
#[collective_program(
    name = "user_local_copy",
    collective = "sendrecv",
    world_sizes = 1..,
    message_sizes = 0..=64 * 1024,
    buffer_mode = "out_of_place",
    tags(default = 1, mine = 7)
)]
pub fn local_copy(p: &mut Program<'_, Simple>) -> Result<(), ProgramError> {
    for r in 0..p.world_size() {
        p.rank(r)?.copy(p.output(r)?.all()?, p.input(r)?.all()?, 0)?;
    }
    Ok(())
}

fn main() {
    let meta = registry::find("user_local_copy").unwrap();
    assert_eq!(meta.description, "Each rank copies its input into its output.");
    assert_eq!(meta.protocol, Protocol::Simple);
    assert_eq!(meta.buffer_mode, BufferMode::OutOfPlace);
    assert_eq!(meta.tag("mine"), Some(7));
    assert_eq!(meta.message_sizes.max, 65536);
    let plan = meta.build_plan(&Target::new(3)).unwrap();
    assert_eq!(plan.gpus.len(), 3);
    // The function itself is untouched.
    let direct = build_plan(&ProgramSpec::new("direct", Collective::SendRecv, 2), local_copy).unwrap();
    assert_eq!(direct.gpus.len(), 2);
    let chosen = registry::select(&Request::new(Collective::SendRecv, 4, 1024)).unwrap();
    assert_eq!(chosen.program.name, "user_local_copy");
}
