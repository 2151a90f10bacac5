// A collective program returns `Result<(), ProgramError>`; the compiler checks the type through the builder.
use mscclpp_lang::prelude::*;
use mscclpp_macros::collective_program;

#[collective_program(collective = "allgather", world_sizes = 2..=8)]
fn returns_a_number(p: &mut Program<'_, Simple>) -> usize {
    p.world_size()
}

fn main() {}
