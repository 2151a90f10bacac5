//! A user crate with only `mscclpp` as a dependency: `#[collective_program]` and the prelude come from the facade.
#![forbid(unsafe_code)]

use mscclpp::prelude::*;

/// Every rank copies its input to its output.
#[collective_program(name = "facade_user_copy", collective = "custom", world_sizes = 1..=8, tags(example = 1))]
pub fn facade_user_copy(p: &mut Program<'_, Simple>) -> Result<(), ProgramError> {
    for r in 0..p.world_size() {
        let rank = p.rank(r)?;
        rank.copy(p.output(r)?.all()?, p.input(r)?.all()?, 0)?;
    }
    Ok(())
}
