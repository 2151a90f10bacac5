// The program must be borrowed mutably.
use mscclpp_lang::prelude::*;
use mscclpp_macros::collective_program;

#[collective_program(collective = "allgather", world_sizes = 2..=8)]
fn shared(p: &Program<'_, Simple>) -> Result<(), ProgramError> {
    let _ = p;
    Ok(())
}

fn main() {}
