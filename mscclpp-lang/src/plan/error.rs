//! Errors about plans, located by rank, thread block, operation and field.

use crate::location::Location;

/// An error in a plan: it could not be read, or it is not a valid plan.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PlanError {
    /// The text is not JSON, or does not fit the schema.
    #[error("malformed plan at {location}: {message}")]
    Malformed {
        /// Where.
        location: Box<Location>,
        /// What serde said.
        message: String,
    },
    /// The plan parses but breaks a rule of the schema.
    #[error("invalid plan at {location}: {message}")]
    Invalid {
        /// Where.
        location: Box<Location>,
        /// What is wrong and what to do.
        message: String,
    },
    /// Reading or writing a plan file failed.
    #[error("plan file {path}: {message}")]
    Io {
        /// The file.
        path: String,
        /// The OS error.
        message: String,
    },
}

impl PlanError {
    /// An [`PlanError::Invalid`] at `location`.
    pub fn invalid(location: Location, message: impl Into<String>) -> Self {
        PlanError::Invalid { location: Box::new(location), message: message.into() }
    }
    /// The location, if any.
    pub fn location(&self) -> Option<&Location> {
        match self {
            PlanError::Malformed { location, .. } | PlanError::Invalid { location, .. } => Some(location),
            PlanError::Io { .. } => None,
        }
    }
}
