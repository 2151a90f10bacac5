//! Everything a collective-program author needs: `use mscclpp_lang::prelude::*;` (or `mscclpp::prelude`).
//!
//! ```
//! use mscclpp_lang::prelude::*;
//!
//! fn send_to_next(p: &mut Program<'_, Simple>) -> Result<(), ProgramError> {
//!     let n = p.world_size();
//!     for r in 0..n {
//!         let ch = p.port_channel((r + 1) % n, r)?;
//!         ch.put_with_signal(p.output((r + 1) % n)?.all()?, p.input(r)?.all()?, 0)?;
//!         p.port_channel((r + n - 1) % n, r)?.wait(0, SyncType::After)?;
//!     }
//!     Ok(())
//! }
//! let plan = build_plan(&ProgramSpec::new("ring_send", Collective::SendRecv, 2), send_to_next).unwrap();
//! assert_eq!(plan.gpus[0].threadblocks[0].ops[0].name, OpName::PutWithSignal);
//! ```

pub use crate::location::Location;
pub use crate::plan::{BufferType, ChannelType, Collective, OpName, Plan, Protocol, ReduceOp};
pub use crate::program::{
    AnyBuffer, Buffer, BufferKind, Channel, ChannelKind, Chunk, ChunkKind, DirectChannel, Input, LL, Memory,
    MemoryChannel, MulticastChannel, Output, PacketBuffer, PacketProtocol, PeerChannel, Port, PortChannel, Program,
    ProgramError, ProgramSpec, ProtocolKind, ProxyChannel, Rank, ReplicationPolicy, Scratch, Semaphore, Simple, Switch,
    SwitchChannel, SyncType, Tb, ThreadBlockGroup, build_plan,
};
pub use mscclpp_macros::collective_program;
