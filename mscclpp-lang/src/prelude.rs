//! Everything a collective-program author needs: `use mscclpp_lang::prelude::*;`.

pub use crate::plan::{BufferType, ChannelType, Collective, OpName, Plan, Protocol, ReduceOp};
pub use crate::program::{
    AnyBuffer, Buffer, Channel, Chunk, Input, LL, Memory, MemoryChannel, Output, Port, PortChannel, Program,
    ProgramError, ProgramSpec, ProtocolKind, Rank, ReplicationPolicy, Scratch, Semaphore, Simple, Switch,
    SwitchChannel, SyncType, Tb, ThreadBlockGroup, build_plan,
};
