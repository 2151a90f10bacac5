// The argument must be `&mut Program<'_, Simple>` or `&mut Program<'_, LL>`.
use mscclpp_lang::prelude::*;
use mscclpp_macros::collective_program;

#[collective_program(collective = "allgather", world_sizes = 2..=8)]
fn wrong_type(spec: &mut ProgramSpec) -> Result<(), ProgramError> {
    let _ = spec;
    Ok(())
}

fn main() {}
