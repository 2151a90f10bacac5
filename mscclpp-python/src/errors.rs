//! `mscclpp.Error` and its subclasses, and the guard every entry point runs in.

use std::panic::{AssertUnwindSafe, catch_unwind};

use mscclpp_sys::ErrorKind;
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
create_exception!(
    mscclpp,
    TimeoutError,
    Error,
    "A wait ran past its bound: a kernel's wait for a peer that stopped taking part (the message names the rank, \
     peer, channel and operation), a stream, a bootstrap message, or ranks that never arrived."
);
create_exception!(
    mscclpp,
    RemoteError,
    Error,
    "A peer rank left the job (its process exited or crashed) while this rank still needed it."
);
create_exception!(
    mscclpp,
    ContextLostError,
    Error,
    "The CUDA context of this process is lost after a kernel fault: no CUDA work can run in this process any more."
);

pub(crate) fn register(py: Python<'_>, m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("Error", py.get_type::<Error>())?;
    m.add("UnsupportedError", py.get_type::<UnsupportedError>())?;
    m.add("NoGpuError", py.get_type::<NoGpuError>())?;
    m.add("ClosedError", py.get_type::<ClosedError>())?;
    m.add("TimeoutError", py.get_type::<TimeoutError>())?;
    m.add("RemoteError", py.get_type::<RemoteError>())?;
    m.add("ContextLostError", py.get_type::<ContextLostError>())?;
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
    /// `mscclpp.TimeoutError`.
    Timeout(String),
    /// `mscclpp.RemoteError`.
    Remote(String),
    /// `mscclpp.ContextLostError`.
    ContextLost(String),
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

/// The exception class for an error of `kind` (its message `text`): chosen by kind, never by the message.
fn by_kind(kind: ErrorKind, text: String) -> PyErrKind {
    match kind {
        ErrorKind::NoGpu => PyErrKind::NoGpu(format!("{text}; {NO_GPU_HINT}")),
        ErrorKind::Timeout | ErrorKind::DeviceTimeout => PyErrKind::Timeout(text),
        ErrorKind::PeerLeft => PyErrKind::Remote(text),
        ErrorKind::ContextLost => PyErrKind::ContextLost(text),
        _ => err(text),
    }
}

impl From<mscclpp_exec::Error> for PyErrKind {
    fn from(e: mscclpp_exec::Error) -> Self {
        match &e {
            // A plan that cannot take the call: the caller may pick another or fall back.
            mscclpp_exec::Error::PlanMismatch { .. } => unsupported(e.to_string()),
            _ => by_kind(e.kind(), e.to_string()),
        }
    }
}

impl From<mscclpp_sys::Error> for PyErrKind {
    fn from(e: mscclpp_sys::Error) -> Self {
        by_kind(e.kind(), e.to_string())
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
        PyErrKind::Timeout(m) => TimeoutError::new_err(m),
        PyErrKind::Remote(m) => RemoteError::new_err(m),
        PyErrKind::ContextLost(m) => ContextLostError::new_err(m),
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
