//! The `mscclpp` Python module (imported as `mscclpp._mscclpp`; the `mscclpp` package in `mscclpp-python/mscclpp/`
//! wraps it): the communicator, symmetric memory with DLPack, the default algorithms, plans from the registry
//! and from files, the executor, the CPU verifier, native kernels compiled by NVRTC, and the staged collectives
//! `mscclpp.torch` runs on torch tensors.
//!
//! Every entry point runs inside [`guard`]: a Rust error becomes `mscclpp.Error` (or a subclass) with a message
//! that says what is wrong and what to do, and a panic becomes `mscclpp.Error` too, never an abort.
//!
//! `unsafe` here is the Python edge only: raw device pointers and stream handles that Python passes as integers,
//! and the DLPack capsule. Every block has a `// SAFETY:` comment.

use mscclpp_algorithms as _;
use pyo3::prelude::*;

mod algorithms;
mod args;
mod buffer;
mod comm;
mod dlpack;
mod errors;
mod executor;
mod native;
mod plans;
mod staged;
mod state;
mod tuning;
mod types;

pub use errors::{guard, to_py};

/// The module's contents.
#[pymodule]
fn _mscclpp(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    errors::register(py, m)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    types::register(m)?;
    comm::register(m)?;
    buffer::register(m)?;
    algorithms::register(m)?;
    plans::register(m)?;
    executor::register(m)?;
    native::register(m)?;
    tuning::register(m)?;
    Ok(())
}
