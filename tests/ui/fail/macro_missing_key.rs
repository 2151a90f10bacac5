// `collective` and `world_sizes` are required.
use mscclpp_lang::prelude::*;
use mscclpp_macros::collective_program;

#[collective_program(name = "no_collective", world_sizes = 2..=8)]
fn no_collective(p: &mut Program<'_, Simple>) -> Result<(), ProgramError> {
    let _ = p;
    Ok(())
}

fn main() {}
