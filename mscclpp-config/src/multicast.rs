//! The one rule for NVLink multicast (NVLS): allowed unless the environment forbids it.

use std::fmt;

use crate::table::{DISABLE_NVLS, FORCE_DISABLE_NVLS, NCCL_NVLS_ENABLE};

/// Which variable forbids multicast, and its value as set.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MulticastForbidden {
    /// The variable.
    pub variable: &'static str,
    /// Its value, as written.
    pub value: String,
}

impl fmt::Display for MulticastForbidden {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "NVLink multicast (NVLS) is disabled by {}={}", self.variable, self.value)
    }
}

/// Whether NVLink multicast may be used: forbidden when `NCCL_NVLS_ENABLE` is off (`0`, false, off, no),
/// or `MSCCLPP_DISABLE_NVLS` or `MSCCLPP_FORCE_DISABLE_NVLS` is on (`1`, true, on, yes); checked in that order.
/// A malformed value forbids nothing. Whether the GPUs support multicast is a separate question.
pub fn multicast_allowed() -> Result<(), MulticastForbidden> {
    let forbidden =
        |variable: &'static str| MulticastForbidden { variable, value: std::env::var(variable).unwrap_or_default() };
    if matches!(NCCL_NVLS_ENABLE.get(), Ok(false)) {
        return Err(forbidden(NCCL_NVLS_ENABLE.meta.name));
    }
    for flag in [&DISABLE_NVLS, &FORCE_DISABLE_NVLS] {
        if matches!(flag.get(), Ok(true)) {
            return Err(forbidden(flag.meta.name));
        }
    }
    Ok(())
}
