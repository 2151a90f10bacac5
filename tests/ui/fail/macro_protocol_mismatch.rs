// A `protocol` key must agree with the signature.
use mscclpp_lang::prelude::*;
use mscclpp_macros::collective_program;

#[collective_program(collective = "allreduce", world_sizes = 2..=8, protocol = "LL")]
fn simple_claims_ll(p: &mut Program<'_, Simple>) -> Result<(), ProgramError> {
    let _ = p;
    Ok(())
}

fn main() {}
