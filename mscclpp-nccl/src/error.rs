//! What can go wrong in this library, typed: setting a communicator of ours up, a call of ours, a user's plan; and
//! the NCCL result code each kind of failure answers with ([`nccl_result`]), chosen by kind, never by message.

use std::time::Duration;

use mscclpp_sys::ErrorKind;

use crate::abi::{self, NcclResult};

/// Why a communicator of ours could not be set up (the communicator then stays NCCL's alone), or a call failed.
#[derive(Debug, thiserror::Error)]
pub enum AccelError {
    /// The real NCCL answered a call of our setup with an error code.
    #[error("{what}: NCCL returned {code}")]
    Nccl {
        /// The call and what it was for.
        what: String,
        /// NCCL's result code.
        code: NcclResult,
    },
    /// A nonblocking NCCL communicator stayed in progress past the bound.
    #[error("{what}: NCCL still in progress after {waited:?}")]
    NcclInProgress {
        /// The call and what it was for.
        what: String,
        /// How long it was waited for.
        waited: Duration,
    },
    /// Our runtime failed at a step of the setup or of a call.
    #[error("{what}: {source}")]
    Runtime {
        /// The step.
        what: String,
        /// The runtime's error.
        #[source]
        source: mscclpp_exec::Error,
    },
    /// This job is not one we accelerate (one rank, several hosts, no GPU, a rank that could not set up).
    #[error("{0}")]
    NotAccelerated(String),
    /// The bootstrap id carried in an `ncclUniqueId` does not parse.
    #[error("{0}")]
    BadId(String),
}

impl AccelError {
    /// A runtime error at `what`.
    pub fn runtime(what: impl Into<String>) -> impl FnOnce(mscclpp_exec::Error) -> AccelError {
        let what = what.into();
        move |source| AccelError::Runtime { what, source }
    }

    /// A CUDA error at `what`.
    pub fn cuda(what: impl Into<String>) -> impl FnOnce(mscclpp_sys::Error) -> AccelError {
        let what = what.into();
        move |e| AccelError::Runtime { what, source: e.into() }
    }

    /// The NCCL result code this failure answers with.
    pub fn result(&self) -> NcclResult {
        match self {
            AccelError::Nccl { code, .. } => *code,
            AccelError::NcclInProgress { .. } => abi::REMOTE_ERROR,
            AccelError::Runtime { source, .. } => nccl_result(source.kind()),
            AccelError::NotAccelerated(_) => abi::INVALID_USAGE,
            AccelError::BadId(_) => abi::INVALID_ARGUMENT,
        }
    }
}

/// A user's plan that was not registered.
#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    /// The file could not be read.
    #[error("user plan {source_name}: {error}")]
    Read {
        /// Where it came from.
        source_name: String,
        /// The I/O error.
        error: std::io::Error,
    },
    /// The JSON is not an MSCCL++ plan.
    #[error("user plan {source_name}: {error}")]
    Parse {
        /// Where it came from.
        source_name: String,
        /// The parse error, naming the rank, thread block, operation and field.
        error: mscclpp_lang::plan::PlanError,
    },
    /// The CPU verifier found something wrong with it.
    #[error("user plan {source_name} (`{plan}`) is refused: {findings}")]
    Refused {
        /// Where it came from.
        source_name: String,
        /// The plan's name.
        plan: String,
        /// The verifier's report.
        findings: String,
    },
    /// The list of user plans is unusable after a panic.
    #[error("the user plan list is unusable: a thread panicked while updating it")]
    Poisoned,
}

/// The NCCL result code for a failure of `kind`: a peer that stopped or left, and waits that ran out, are NCCL's
/// remote errors (what torch's watchdog acts on); a lost context or other CUDA failure is a CUDA error; bad
/// arguments are invalid arguments; what this machine or plan does not provide is invalid usage; sockets and files
/// are system errors; the rest are internal.
pub fn nccl_result(kind: ErrorKind) -> NcclResult {
    match kind {
        ErrorKind::DeviceTimeout | ErrorKind::PeerLeft | ErrorKind::Timeout => abi::REMOTE_ERROR,
        ErrorKind::ContextLost | ErrorKind::Cuda | ErrorKind::NoGpu => abi::UNHANDLED_CUDA_ERROR,
        ErrorKind::InvalidArgument => abi::INVALID_ARGUMENT,
        ErrorKind::Unsupported => abi::INVALID_USAGE,
        ErrorKind::Io | ErrorKind::Config => abi::SYSTEM_ERROR,
        ErrorKind::Poisoned | ErrorKind::Protocol => abi::INTERNAL_ERROR,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kind_answers_with_the_nccl_code_torch_acts_on() {
        let left = mscclpp_exec::Error::PeerLeft { peer: 1, what: "receiving".into() };
        assert_eq!(nccl_result(left.kind()), abi::REMOTE_ERROR);
        let bad = mscclpp_exec::Error::InvalidArgument("a size".into());
        assert_eq!(AccelError::runtime("a call")(bad).result(), abi::INVALID_ARGUMENT);
        let lost = mscclpp_sys::Error::ContextLost {
            call: "cuStreamSynchronize",
            name: "CUDA_ERROR_LAUNCH_FAILED".into(),
            message: "unspecified launch failure".into(),
            code: 719,
        };
        assert_eq!(AccelError::cuda("a sync")(lost).result(), abi::UNHANDLED_CUDA_ERROR);
        let poisoned = mscclpp_exec::Error::Poisoned { what: "the context cache" };
        assert_eq!(nccl_result(poisoned.kind()), abi::INTERNAL_ERROR);
        assert_eq!(AccelError::Nccl { what: "x".into(), code: abi::SYSTEM_ERROR }.result(), abi::SYSTEM_ERROR);
        assert_eq!(AccelError::NotAccelerated("one rank".into()).result(), abi::INVALID_USAGE);
    }
}
