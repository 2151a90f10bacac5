//! The one error type of `mscclpp-exec`.

use mscclpp_sys::ErrorKind;

/// Result alias of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything the runtime can report. Messages say what happened and what to do next.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// From the CUDA / NVRTC edge (no GPU, no NVRTC, a failed driver call, a device wait timeout, ...).
    #[error(transparent)]
    Sys(#[from] mscclpp_sys::Error),
    /// Ranks did not show up in time.
    #[error(
        "bootstrap timed out after {millis} ms: {what}; rank(s) {missing:?} did not arrive. Check that every \
         rank was started with the same MSCCLPP_MASTER_ADDR/MSCCLPP_MASTER_PORT (or unique id) and can reach it, \
         or raise MSCCLPP_BOOTSTRAP_TIMEOUT_MS"
    )]
    BootstrapTimeout {
        /// What was being waited for.
        what: String,
        /// The ranks that never arrived.
        missing: Vec<usize>,
        /// The bound.
        millis: u64,
    },
    /// A peer refused our connection (wrong job secret) or spoke an unexpected protocol.
    #[error("bootstrap connection to {peer} refused or broken: {reason}")]
    BootstrapRefused {
        /// Who we talked to.
        peer: String,
        /// Why.
        reason: String,
    },
    /// The launcher environment is incomplete or inconsistent.
    #[error("bootstrap configuration: {0}")]
    Config(String),
    /// Socket or file trouble.
    #[error("{context}: {source}")]
    Io {
        /// What we were doing.
        context: String,
        /// Underlying error.
        #[source]
        source: std::io::Error,
    },
    /// A message from a peer did not decode.
    #[error("malformed message from rank {peer}: {reason}; are all ranks running the same mscclpp version?")]
    Protocol {
        /// Sender.
        peer: usize,
        /// What was wrong.
        reason: String,
    },
    /// A peer's process left (its bootstrap connection closed) while this rank still needed it.
    #[error("rank {peer} left the job: {what}; did it exit early or crash? Its own output says why")]
    PeerLeft {
        /// The rank that left.
        peer: usize,
        /// What this rank was doing with it.
        what: String,
    },
    /// State guarded by a lock that a panicking thread left behind.
    #[error(
        "{what} is unusable: a thread panicked while updating it (an earlier panic message says where); restart the process"
    )]
    Poisoned {
        /// What the lock guards.
        what: &'static str,
    },
    /// A plan that cannot run this call: made for another world size, or a message size outside its range or not
    /// splittable into its chunks.
    #[error("plan `{plan}` cannot run this call on rank {rank}: {reason}")]
    PlanMismatch {
        /// The plan's name.
        plan: String,
        /// This rank.
        rank: usize,
        /// Why, with what to do instead.
        reason: String,
    },
    /// Bad argument.
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// A feature that this build or this machine does not provide.
    #[error("unsupported: {0}")]
    Unsupported(String),
}

impl Error {
    /// Wrap an I/O error with context.
    pub fn io(context: impl Into<String>, source: std::io::Error) -> Self {
        Error::Io { context: context.into(), source }
    }

    /// What kind of failure this is ([`mscclpp_sys::ErrorKind`]): the NCCL-ABI library's result codes and the
    /// Python module's exception classes follow it, not the message.
    pub fn kind(&self) -> ErrorKind {
        match self {
            Error::Sys(e) => e.kind(),
            Error::BootstrapTimeout { .. } => ErrorKind::Timeout,
            Error::BootstrapRefused { .. } | Error::Config(_) => ErrorKind::Config,
            Error::Io { .. } => ErrorKind::Io,
            Error::Protocol { .. } => ErrorKind::Protocol,
            Error::PeerLeft { .. } => ErrorKind::PeerLeft,
            Error::Poisoned { .. } => ErrorKind::Poisoned,
            Error::PlanMismatch { .. } | Error::Unsupported(_) => ErrorKind::Unsupported,
            Error::InvalidArgument(_) => ErrorKind::InvalidArgument,
        }
    }
}

/// Back to the driver's error type, e.g. for an error inside a CUDA-graph capture closure: a driver error
/// unchanged, anything else as an invalid argument carrying its message.
impl From<Error> for mscclpp_sys::Error {
    fn from(e: Error) -> Self {
        match e {
            Error::Sys(s) => s,
            other => mscclpp_sys::Error::InvalidArgument(other.to_string()),
        }
    }
}
