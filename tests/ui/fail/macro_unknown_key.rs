// A misspelt key is an error that lists the valid keys.
use mscclpp_lang::prelude::*;
use mscclpp_macros::collective_program;

#[collective_program(collective = "allgather", world_size = 2..=8)]
fn misspelt(p: &mut Program<'_, Simple>) -> Result<(), ProgramError> {
    let _ = p;
    Ok(())
}

fn main() {}
