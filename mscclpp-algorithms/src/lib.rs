//! The default collective algorithms of mscclpp, written with the eDSL.
//!
//! Every function here is a `#[collective_program]`: it registers itself, with its metadata, in
//! [`mscclpp_lang::registry`] when this crate is linked in. A binary that needs them must reference the crate
//! (`use mscclpp_algorithms as _;`), or the linker drops the registrations.
//!
//! | program | collective | protocol | idea |
//! |---|---|---|---|
//! | [`allgather_allpairs`] | allgather | Simple | put into every peer's output, one thread block per peer |
//! | [`allgather_allpairs_ll`] | allgather | LL | packets into every peer's scratch, unpacked by the receiver |
//! | [`allreduce_oneshot_ll`] | allreduce | LL | every rank sends its whole input as packets to every peer and reduces locally |
//! | [`allreduce_oneshot_ll128`] | allreduce | LL128 | the same one-shot with 128-byte line packets (two ranks, 256 KiB–4 MiB; by tuned rows) |
//! | [`allreduce_twoshot`] | allreduce | Simple | reduce-scatter by reading peers' inputs, then all-gather by put |
//! | [`allreduce_twoshot_ll`] | allreduce | LL | packet reduce-scatter into scratch, reduce, packet all-gather (64 KiB–4 MiB) |
//! | [`allreduce_twoshot_ll128`] | allreduce | LL128 | the same two-shot with 128-byte line packets (256 KiB–4 MiB) |
//! | [`allreduce_rsag`] | allreduce | Simple | read every peer, reduce, write every peer, in one pass over the registered buffers (1–64 MiB) |
//! | [`allreduce_two_nodes`] | allreduce | Simple | two nodes: reduce-scatter in the node, partner exchange over a port channel, all-gather in the node (`nodes = 2`) |
//! | [`allreduce_port`] | allreduce | Simple | two-shot through port channels: the copy engines move the data (opt-in by tag `port`) |
//! | [`allreduce_port_pipelined`] | allreduce | Simple | the same with every slice in four chunks: the reduction of one overlaps the copies of the next (from 16 MiB; by tag `port`) |
//! | [`allgather_port`] | allgather | Simple | all-pairs through port channels (copy engines; by tag `port`) |
//! | [`allgather_staged`] | allgather | Simple | put into peers' double scratch, one signal hop (64 KiB–8 MiB) |
//! | [`allreduce_staged`] | allreduce | Simple | reduce-scatter and all-gather by writes only, staged through peers' double scratch (1-256 MiB) |
//! | [`reducescatter_staged`] | reducescatter | Simple | put slices into peers' double scratch, reduce locally (64 KiB–16 MiB) |
//! | [`reducescatter_pipelined`] | reducescatter | Simple | the same in 8 chunks, each reduced on its own thread block as it lands (1 MiB–1 GiB; by tuned rows) |
//! | `allreduce_rotated`, `allgather_rotated`, `reducescatter_rotated` | all three | Simple | writes only, to one peer at a time in rotated order (1 MiB–1 GiB) |
//! | `allreduce_rotated_res` | allreduce | Simple | the same with the reduction fused into the write to the first peer (1 MiB–1 GiB; by tuned rows) |
//! | [`reducescatter`] | reducescatter | Simple | each rank reads and reduces its slice from every peer |
//! | [`reducescatter_fused`] | reducescatter | Simple | the same in one pass over all peers at once, 4+ thread blocks per instance |
//! | [`reducescatter_ll`] | reducescatter | LL | each rank sends every peer its slice as packets |
//! | [`alltoall`] | alltoall | Simple | put into peers' outputs (out of place) or scratch (in place) |
//! | [`broadcast`] | broadcast | Simple | the root puts its input into every rank's output |
//! | [`broadcast_ll`] | broadcast | LL | the root sends its input as packets into every peer's scratch, one hop (up to 1 MiB) |
//! | [`seed_allgather`] | allgather | Simple | the MSCCL++ DSL's 2-GPU in-place AllGather, reproduced exactly |
//! | [`allreduce_nvls_zero_copy`] | allreduce | Simple | NVLS multimem reduce and store, in place (needs NVLS) |
//!
//! Every program synchronises as the memory model requires: data written to a peer is read only after a
//! signal/wait pair (or, for packets, after the packet's flag says it arrived); a rank writes into a peer's buffer
//! only after the peer has entered the same launch; a rank leaves only after every peer has finished reading its
//! buffers; LL programs double their scratch so that a new launch never overwrites packets a peer still reads.

#![forbid(unsafe_code)]

mod allgather;
mod allreduce;
mod allreduce_mid;
mod alltoall;
mod broadcast;
mod hierarchical;
mod port;
mod python_dsl;
mod reducescatter;
mod rotated;
mod staged;
mod util;

pub use allgather::{allgather_allpairs, allgather_allpairs_ll};
pub use allreduce::{allreduce_oneshot_ll, allreduce_oneshot_ll128, allreduce_twoshot};
pub use allreduce_mid::{allreduce_rsag, allreduce_twoshot_ll, allreduce_twoshot_ll128};
pub use alltoall::alltoall;
pub use broadcast::{broadcast, broadcast_ll};
pub use hierarchical::allreduce_two_nodes;
pub use port::{allgather_port, allreduce_port, allreduce_port_pipelined};
pub use python_dsl::{allreduce_nvls_zero_copy, seed_allgather};
pub use reducescatter::{reducescatter, reducescatter_fused, reducescatter_ll};
pub use staged::{allgather_staged, allreduce_staged, reducescatter_pipelined, reducescatter_staged};
