//! The collective-program eDSL: the typed program model of MSCCL++ and its lowering to execution plans.
//!
//! A program is a Rust function `fn(&mut Program<'_, P>) -> Result<(), ProgramError>` for a protocol `P`
//! ([`Simple`] or [`LL`]). It takes buffers of ranks ([`Program::input`], [`Program::output`],
//! [`Program::scratch`]), slices them into [`Chunk`]s, creates channels ([`Program::memory_channel`],
//! [`Program::port_channel`], [`Program::switch_channel`]) and records operations on thread blocks.
//! [`build_plan`] runs it for a [`ProgramSpec`] and lowers the result to a [`Plan`](crate::plan::Plan).
//!
//! What can be checked from types is checked by the compiler (see `docs/edsl.md`): packet operations need `LL`,
//! packets land in scratch, each operation exists only on the channel kinds that support it, and no handle leaves
//! its program. What depends on values is a [`ProgramError`] naming rank, thread block and operation.

// `ProgramError::Plan` carries a `PlanError` by value, which makes the error larger than clippy's default limit.

mod buffer;
mod builder;
mod channel;
mod error;
mod ir;
mod kinds;
mod line;
mod lower;
mod rank;
mod refs;
mod spec;
mod state;
mod sync_type;
mod tb;

pub use buffer::{Buffer, Chunk};
pub use builder::{Program, build_plan};
pub use channel::{Channel, MemoryChannel, PortChannel, SwitchChannel};
pub use error::ProgramError;
pub use kinds::{
    AnyBuffer, BufferKind, ChannelKind, ChunkKind, DirectChannel, Input, LL, LL128, Memory, MulticastChannel, Output,
    PacketBuffer, PacketProtocol, PeerChannel, Port, ProtocolKind, ProxyChannel, Scratch, Simple, Switch,
};
pub(crate) use line::{Line, intern as intern_line, with_script_line};
pub use rank::{Rank, Semaphore};
pub use spec::{ProgramSpec, ReplicationPolicy};
pub use sync_type::SyncType;
pub use tb::{Tb, ThreadBlockGroup};
