//! MSCCL++ execution plans: the JSON schema (serde types), parsing with located errors, validation and the
//! chunk math.

mod channel_type;
mod error;
mod layout;
mod line_ranges;
mod op_name;
mod parse;
mod schema;
mod validate;

pub use crate::location::{Location, SourceLocation, describe_sources};
pub use error::PlanError;
pub use layout::{Layout, SizeError, collective_buffer_chunks, split_balanced};
pub use op_name::OpName;
pub use parse::{emit_plan, emit_plan_compact, parse_plan, parse_plan_unchecked, read_plan};
pub use schema::*;
pub use validate::{
    MAX_BARRIERS, MAX_CHANNELS_PER_OP, MAX_CHANNELS_PER_TB, MAX_OPS_PER_TB, MAX_REFS_PER_OP, MAX_SEMAPHORES_PER_OP,
    validate,
};
