//! Errors about plans, located by rank, thread block, operation and field.

use std::fmt;

/// Where in a plan something is.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Location {
    /// Rank (index into `gpus`).
    pub rank: Option<usize>,
    /// Thread block of that rank.
    pub tb: Option<usize>,
    /// Operation index in the thread block (for a pipeline's inner op, the pipeline's index).
    pub op: Option<usize>,
    /// Inner operation index inside a pipeline.
    pub inner: Option<usize>,
    /// Operation name, when known.
    pub op_name: Option<String>,
    /// Field, as a JSON path relative to the located object.
    pub field: Option<String>,
}

impl Location {
    /// The whole plan.
    pub fn plan() -> Self {
        Location::default()
    }
    /// A rank.
    pub fn rank(rank: usize) -> Self {
        Location { rank: Some(rank), ..Default::default() }
    }
    /// A thread block of a rank.
    pub fn tb(rank: usize, tb: usize) -> Self {
        Location { rank: Some(rank), tb: Some(tb), ..Default::default() }
    }
    /// An operation.
    pub fn op(rank: usize, tb: usize, op: usize, name: &str) -> Self {
        Location { rank: Some(rank), tb: Some(tb), op: Some(op), op_name: Some(name.to_string()), ..Default::default() }
    }
    /// The same location, narrowed to a field.
    pub fn field(mut self, field: impl Into<String>) -> Self {
        self.field = Some(field.into());
        self
    }
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut parts = Vec::new();
        if let Some(r) = self.rank {
            parts.push(format!("rank {r}"));
        }
        if let Some(t) = self.tb {
            parts.push(format!("thread block {t}"));
        }
        if let Some(o) = self.op {
            let mut s = format!("operation {o}");
            if let Some(i) = self.inner {
                s.push_str(&format!(" (pipeline step {i})"));
            }
            if let Some(n) = &self.op_name {
                s.push_str(&format!(" `{n}`"));
            }
            parts.push(s);
        }
        if let Some(field) = &self.field {
            parts.push(format!("field `{field}`"));
        }
        if parts.is_empty() { f.write_str("plan") } else { f.write_str(&parts.join(", ")) }
    }
}

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
