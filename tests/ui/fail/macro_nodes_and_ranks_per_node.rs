// `nodes` (equal nodes) and `ranks_per_node` describe the same thing: only one of them may be given.
use mscclpp_lang::prelude::*;
use mscclpp_macros::collective_program;

#[collective_program(collective = "allgather", world_sizes = 2..=8, ranks_per_node = 1..=4, nodes = 2)]
fn both(p: &mut Program<'_, Simple>) -> Result<(), ProgramError> {
    let _ = p;
    Ok(())
}

fn main() {}
