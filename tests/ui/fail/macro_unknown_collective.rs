// The collective must be one the plan schema knows.
use mscclpp_lang::prelude::*;
use mscclpp_macros::collective_program;

#[collective_program(collective = "allscatter", world_sizes = 2..=8)]
fn unknown(p: &mut Program<'_, Simple>) -> Result<(), ProgramError> {
    let _ = p;
    Ok(())
}

fn main() {}
