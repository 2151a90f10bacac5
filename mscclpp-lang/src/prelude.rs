//! Everything a collective-program author needs: `use mscclpp_lang::prelude::*;` (or `mscclpp::prelude`).
//!
//! ```
//! use mscclpp_lang::prelude::*;
//!
//! fn send_to_next(p: &mut Program<'_, Simple>) -> Result<(), ProgramError> {
//!     let n = p.world_size();
//!     for r in 0..n {
//!         let (next, prev) = ((r + 1) % n, (r + n - 1) % n);
//!         let to_next = p.port_channel(next, r)?;
//!         // At 2 ranks next and prev are the same peer, and one channel serves both ways.
//!         let from_prev = if next == prev { to_next } else { p.port_channel(prev, r)? };
//!         to_next.put_with_signal(p.output(next)?.all()?, p.input(r)?.all()?, 0)?;
//!         from_prev.wait(0, SyncType::After)?;
//!     }
//!     Ok(())
//! }
//! let plan = build_plan(&ProgramSpec::new("ring_send", Collective::SendRecv, 2), send_to_next).unwrap();
//! assert_eq!(plan.gpus[0].threadblocks[0].ops[0].name, OpName::PutWithSignal);
//! ```

pub use crate::location::Location;
pub use crate::plan::{BufferType, ChannelType, Collective, OpName, Plan, Protocol, ReduceOp};
pub use crate::program::{
    AnyBuffer, Buffer, BufferKind, Channel, ChannelKind, Chunk, ChunkKind, DirectChannel, Input, LL, LL128, Memory,
    MemoryChannel, MulticastChannel, Output, PacketBuffer, PacketProtocol, PeerChannel, Port, PortChannel, Program,
    ProgramError, ProgramSpec, ProtocolKind, ProxyChannel, Rank, ReplicationPolicy, Scratch, Semaphore, Simple, Switch,
    SwitchChannel, SyncType, Tb, ThreadBlockGroup, build_plan,
};
pub use mscclpp_macros::collective_program;
