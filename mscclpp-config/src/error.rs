//! The error of a malformed variable.

use std::fmt;

/// A variable holds a value its kind does not accept. The message names the variable, the value and what is
/// accepted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigError {
    /// The variable.
    pub variable: &'static str,
    /// The value found (lossily converted when it is not UTF-8).
    pub value: String,
    /// What the variable accepts.
    pub accepted: String,
}

impl ConfigError {
    pub(crate) fn new(variable: &'static str, value: String, accepted: impl Into<String>) -> Self {
        ConfigError { variable, value, accepted: accepted.into() }
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}={:?} is not valid: expected {}", self.variable, self.value, self.accepted)
    }
}

impl std::error::Error for ConfigError {}
