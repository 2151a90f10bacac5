// A collective program takes exactly one argument, the program being built.
use mscclpp_lang::prelude::*;
use mscclpp_macros::collective_program;

#[collective_program(collective = "allgather", world_sizes = 2..=8)]
fn two_args(p: &mut Program<'_, Simple>, peers: usize) -> Result<(), ProgramError> {
    let _ = (p, peers);
    Ok(())
}

fn main() {}
