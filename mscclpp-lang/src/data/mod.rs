//! Test data for collectives: element types, deterministic fill patterns, reductions on raw bytes and the
//! reference result of each collective.
//!
//! The CPU verifier and the GPU executor test share this module, so both check plans against the same numbers:
//!
//! ```
//! use mscclpp_lang::data::{DataType, FillPattern, expected_output, BufferSizes};
//! use mscclpp_lang::plan::{Collective, ReduceOp};
//!
//! let pattern = FillPattern::new(DataType::F32, 2, 7);
//! let sizes = BufferSizes::for_collective(Collective::AllReduce, 2, 64).unwrap();
//! let want = expected_output(Collective::AllReduce, ReduceOp::Sum, &pattern, 0, 1, sizes, 0).unwrap();
//! let a = pattern.value(0, 1, 3);
//! let b = pattern.value(1, 1, 3);
//! assert_eq!(DataType::F32.decode(&want[12..16]), a + b);
//! ```

mod dtype;
mod fill;
mod reduce;
mod reference;

pub use dtype::DataType;
pub use fill::{FillPattern, SplitMix64};
pub use reduce::{reduce_into, reduce_value};
pub use reference::{
    BufferSizes, Placement, RegionFill, expected_output, expected_output_split, first_mismatch, input_region_in_output,
};
