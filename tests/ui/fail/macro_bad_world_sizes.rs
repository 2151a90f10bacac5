// An empty world-size range.
use mscclpp_lang::prelude::*;
use mscclpp_macros::collective_program;

#[collective_program(collective = "allreduce", world_sizes = 8..=2)]
fn backwards(p: &mut Program<'_, Simple>) -> Result<(), ProgramError> {
    let _ = p;
    Ok(())
}

fn main() {}
