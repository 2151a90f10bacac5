//! `mscclpp.Error` and its subclasses, and the guard every entry point runs in.

use std::panic::{AssertUnwindSafe, catch_unwind};

use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;

create_exception!(
    mscclpp,
    Error,
    PyException,
    "Every error of the mscclpp module: the message says what is wrong and what to do."
);
create_exception!(
    mscclpp,
    UnsupportedError,
    Error,
    "A request the chosen algorithm or plan does not support (size, type, world size): pick another or fall back."
);
create_exception!(mscclpp, NoGpuError, Error, "The call needs a GPU and the CUDA driver, and this machine has none.");
create_exception!(mscclpp, ClosedError, Error, "The communicator (or an object made from it) was closed.");

pub(crate) fn register(py: Python<'_>, m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("Error", py.get_type::<Error>())?;
    m.add("UnsupportedError", py.get_type::<UnsupportedError>())?;
    m.add("NoGpuError", py.get_type::<NoGpuError>())?;
    m.add("ClosedError", py.get_type::<ClosedError>())?;
    Ok(())
}

/// The kinds of error the module raises.
#[derive(Debug)]
pub enum PyErrKind {
    /// `mscclpp.Error`.
    General(String),
    /// `mscclpp.UnsupportedError`.
    Unsupported(String),
    /// `mscclpp.NoGpuError`.
    NoGpu(String),
    /// `mscclpp.ClosedError`.
    Closed(String),
}

/// The result type of the module's internals.
pub type Res<T> = Result<T, PyErrKind>;

/// `mscclpp.Error(msg)`.
pub fn err(msg: impl Into<String>) -> PyErrKind {
    PyErrKind::General(msg.into())
}

/// `mscclpp.UnsupportedError(msg)`.
pub fn unsupported(msg: impl Into<String>) -> PyErrKind {
    PyErrKind::Unsupported(msg.into())
}

/// `mscclpp.ClosedError(msg)`.
pub fn closed(what: &str) -> PyErrKind {
    PyErrKind::Closed(format!("{what} is closed; create a new one (e.g. mscclpp.CommGroup.from_env())"))
}

const NO_GPU_HINT: &str = "run GPU calls on a GPU machine, e.g. under torchrun --nproc-per-node N (planning, listing, \
                           verify and compile_native(..., arch=...) need no GPU)";

fn from_sys(e: &mscclpp_sys::Error) -> PyErrKind {
    match e {
        mscclpp_sys::Error::NoDevice => PyErrKind::NoGpu(format!("{e}; {NO_GPU_HINT}")),
        mscclpp_sys::Error::NoDriver => PyErrKind::NoGpu(format!("{e}; {NO_GPU_HINT}")),
        _ => err(e.to_string()),
    }
}

impl From<mscclpp_exec::Error> for PyErrKind {
    fn from(e: mscclpp_exec::Error) -> Self {
        match &e {
            mscclpp_exec::Error::Sys(s) => from_sys(s),
            _ => err(e.to_string()),
        }
    }
}

impl From<mscclpp_sys::Error> for PyErrKind {
    fn from(e: mscclpp_sys::Error) -> Self {
        from_sys(&e)
    }
}

impl From<mscclpp_lang::registry::RegistryError> for PyErrKind {
    fn from(e: mscclpp_lang::registry::RegistryError) -> Self {
        err(e.to_string())
    }
}

/// The Python exception for `e`.
pub fn to_py(e: PyErrKind) -> PyErr {
    match e {
        PyErrKind::General(m) => Error::new_err(m),
        PyErrKind::Unsupported(m) => UnsupportedError::new_err(m),
        PyErrKind::NoGpu(m) => NoGpuError::new_err(m),
        PyErrKind::Closed(m) => ClosedError::new_err(m),
    }
}

/// A caught panic as `mscclpp.Error`.
fn panic_to_py(panic: Box<dyn std::any::Any + Send>) -> PyErr {
    let what = panic
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_else(|| "unknown panic".into());
    Error::new_err(format!(
        "internal error in mscclpp: {what}; this is a bug: please report it with the call that caused it"
    ))
}

/// Run `f`, turning its error into the matching `mscclpp` exception and a panic into `mscclpp.Error`.
pub fn guard<T>(f: impl FnOnce() -> Res<T>) -> PyResult<T> {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(r) => r.map_err(to_py),
        Err(panic) => Err(panic_to_py(panic)),
    }
}

/// [`guard`] with the interpreter released (for calls that block: bootstrap, synchronization, NVRTC).
pub fn guard_detached<T: Send>(py: Python<'_>, f: impl FnOnce() -> Res<T> + Send) -> PyResult<T> {
    py.detach(|| catch_unwind(AssertUnwindSafe(f))).map_or_else(|panic| Err(panic_to_py(panic)), |r| r.map_err(to_py))
}
