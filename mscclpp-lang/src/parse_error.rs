//! The error of every text parser of the crate and the command line: a name that is not one of the known ones, or
//! text that does not follow its grammar. Messages say what is accepted.

/// Text that does not parse as what was asked for.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParseError {
    /// A name that is none of the known ones.
    #[error("unknown {what} `{input}`; expected {expected}")]
    Unknown {
        /// What was being parsed (`data type`, `collective`, ...).
        what: &'static str,
        /// The text given.
        input: String,
        /// What is accepted.
        expected: String,
    },
    /// Text that does not follow the grammar (a size, a range, a count).
    #[error("{reason}")]
    Invalid {
        /// The text given.
        input: String,
        /// What is wrong and what to write instead (names the input).
        reason: String,
    },
}

impl ParseError {
    /// An [`ParseError::Invalid`] for `input`.
    pub fn invalid(input: &str, reason: impl Into<String>) -> ParseError {
        ParseError::Invalid { input: input.to_string(), reason: reason.into() }
    }

    /// The text given.
    pub fn input(&self) -> &str {
        match self {
            ParseError::Unknown { input, .. } | ParseError::Invalid { input, .. } => input,
        }
    }
}
