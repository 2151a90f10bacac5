// The example of README.md, compiled: a user program registered through the prelude's attribute.
use mscclpp_lang::prelude::*;
use mscclpp_lang::registry::{self, Request};

#[collective_program(name = "my_allgather", collective = "allgather", world_sizes = 2..=8, buffer_mode = "both")]
pub fn my_allgather(p: &mut Program<'_, Simple>) -> Result<(), ProgramError> {
    let n = p.world_size();
    for r in 0..n {
        let mine = p.input(r)?.all()?;
        let f = mine.size();
        if !p.inplace() {
            p.rank(r)?.copy(p.output(r)?.slice(r * f..(r + 1) * f)?, mine, 0)?;
        }
        for (t, q) in (0..n).filter(|&q| q != r).enumerate() {
            let ch = p.memory_channel(q, r)?;
            ch.signal(t, SyncType::Before)?;
            ch.wait(t, SyncType::After)?;
            ch.put(p.output(q)?.slice(r * f..(r + 1) * f)?, mine, t)?;
            ch.signal(t, SyncType::Before)?;
            ch.wait(t, SyncType::After)?;
        }
    }
    Ok(())
}

fn main() -> Result<(), registry::RegistryError> {
    let chosen = registry::select(&Request::new(Collective::AllGather, 8, 1 << 20))?;
    assert_eq!(chosen.program.name, "my_allgather");
    // `chosen.plan()` would also store the plan in the user's cache directory; build it directly instead.
    let plan = chosen.program.build_plan(&chosen.target)?;
    assert_eq!(plan.gpus.len(), 8);
    Ok(())
}
