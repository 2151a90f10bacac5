//! Programs for two nodes: memory channels inside a node, port channels (the host proxy: InfiniBand, Ethernet or
//! the copy engines) between the nodes.

use mscclpp_lang::prelude::*;

/// Hierarchical all-reduce for two nodes of `g = n / 2` ranks each: rank `r` (index `l = r mod g` in its node)
/// owns slice `l` of the message.
///
/// 1. **Inside the node**, it reads slice `l` of every node peer's input at once and adds its own (one `rre` over
///    memory channels): the node's partial sum of slice `l`.
/// 2. **Across the nodes**, it asks the proxy to copy that partial sum into the scratch of its partner (the rank
///    with the same index in the other node) with a signal, waits until the copy has left its buffer (`flush`) and
///    until the partner's partial sum has arrived, and adds it in: slice `l` is complete.
/// 3. **Inside the node** again, it writes the complete slice into every node peer's output, and a closing
///    signal/wait round tells each node peer that its slice has landed and that its input is no longer read.
///
/// A handshake opens the launch: node peers have entered it (their inputs are ready, their outputs writable), and
/// the partner has finished the previous launch's reduction, so its scratch may be written. Each slice of a rank's
/// buffers is read and written by one rank only (its owner in the node), so in place is safe. With one rank per
/// node (2 ranks) step 1 is the rank's own input. Everything runs on one thread block per instance: the example
/// shows the structure, not the fastest schedule.
#[collective_program(
    name = "allreduce_two_nodes",
    collective = "allreduce",
    world_sizes = 2..=8,
    nodes = 2,
    buffer_mode = "both",
    // Never chosen for one node; for two nodes it is the only all-reduce that admits the shape.
    tags(default = 0)
)]
pub fn allreduce_two_nodes(p: &mut Program<'_, Simple>) -> Result<(), ProgramError> {
    p.set_buffer_alignment(crate::util::SIMPLE_ALIGNMENT);
    let n = p.world_size();
    let g = n / 2;
    let f = p.input(0)?.len() / g;
    let scratch = crate::util::per_rank_scratch(p, f)?;
    for r in 0..n {
        let (node, l) = (r / g, r % g);
        let partner = (r + g) % n;
        // The other ranks of this node, starting after this one (each step of the visits is a permutation).
        let node_peers: Vec<usize> = (1..g).map(|k| node * g + (l + k) % g).collect();
        let mem =
            node_peers.iter().map(|&q| Ok((q, p.memory_channel(q, r)?))).collect::<Result<Vec<_>, ProgramError>>()?;
        let port = p.port_channel(partner, r)?;
        let slice = l * f..(l + 1) * f;
        let input = p.input(r)?.slice(slice.clone())?;
        let own = p.output(r)?.slice(slice.clone())?;

        // Handshake with the node peers and the partner.
        for (_, ch) in &mem {
            ch.signal(0, SyncType::None)?;
        }
        port.signal(0, SyncType::None)?;
        for (_, ch) in &mem {
            ch.wait(0, SyncType::None)?;
        }
        port.wait(0, SyncType::After)?;

        // 1. The node's partial sum of slice `l`.
        if mem.is_empty() {
            if !p.inplace() {
                p.rank(r)?.copy(own, input, 0)?;
            }
        } else {
            let remotes = mem
                .iter()
                .map(|(q, ch)| Ok((*ch, p.input(*q)?.slice(slice.clone())?)))
                .collect::<Result<Vec<_>, ProgramError>>()?;
            p.rank(r)?.read_reduce(own, input, &remotes, 0, ReduceOp::Sum)?;
        }
        p.barrier(r, &[0])?;

        // 2. Exchange the partial sums with the partner through the proxy, then add the partner's in.
        port.put_with_signal(scratch[partner].all()?, own, 0)?;
        port.flush(0, SyncType::After)?;
        port.wait(0, SyncType::After)?;
        p.rank(r)?.reduce(own, own, &[scratch[r].all()?], 0, ReduceOp::Sum)?;
        p.barrier(r, &[0])?;

        // 3. The complete slice into every node peer's output, then the closing round.
        for (q, ch) in &mem {
            ch.put(p.output(*q)?.slice(slice.clone())?, own, 0)?;
        }
        for (_, ch) in &mem {
            ch.signal(0, SyncType::Before)?;
        }
        for (_, ch) in &mem {
            ch.wait(0, SyncType::None)?;
        }
    }
    Ok(())
}
