//! Every environment variable mscclpp reads, declared once: name, type, default, one-line meaning and reader,
//! with a typed accessor each.
//!
//! ```
//! let timeout = mscclpp_config::WAIT_TIMEOUT_MS.get(); // Result<Duration, ConfigError>
//! assert!(timeout.is_err() || timeout.is_ok_and(|t| t.as_millis() > 0));
//! ```
//!
//! Rules shared by every variable: an empty value is the same as an unset one; numbers and words are trimmed;
//! words are matched in any case. A malformed value is a [`ConfigError`] naming the variable, the value and what
//! is accepted; a reader either reports it or, where it always ignored malformed values, takes the default
//! (`get_or_default`).
//!
//! The table is [`VARIABLES`] (declared in `table.rs`); the variables that launchers set (mpirun, torchrun,
//! Slurm) are listed in [`LAUNCHER_VARIABLES`]. `docs/configuration.md` is rendered from both by
//! [`render_markdown`], and `mscclpp info` prints the resolved values ([`settings`]).
//!
//! This crate depends on nothing but std, so every crate of the workspace (the CUDA-free `mscclpp-lang` too) can
//! read its configuration here.

mod error;
mod kinds;
mod markdown;
mod multicast;
mod table;

pub use error::ConfigError;
pub use kinds::{
    Bytes, Choice, Flag, Integer, List, Meta, Millis, Path, Scope, Text, Variable, parse_flag, parse_size,
};
pub use markdown::render_markdown;
pub use multicast::{MulticastForbidden, multicast_allowed};
pub use table::*;

/// The declaration of `name`, if it is one of [`VARIABLES`].
pub fn lookup(name: &str) -> Option<&'static dyn Variable> {
    VARIABLES.iter().copied().find(|v| v.meta().name == name)
}

/// Whether `name` is declared: one of [`VARIABLES`] or of [`LAUNCHER_VARIABLES`].
pub fn is_declared(name: &str) -> bool {
    lookup(name).is_some() || LAUNCHER_VARIABLES.iter().any(|v| v.name == name)
}

/// The raw value of a declared variable, for code that walks a list of names (the launchers' rank variables):
/// `None` when unset, empty or not UTF-8. Prefer the typed accessors where there is one name.
pub fn value_of(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

/// Where a resolved value comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Source {
    /// The variable is unset: the default applies.
    Default,
    /// The variable is set and valid.
    Environment,
    /// The variable is set but malformed (readers report it or fall back to the default).
    Invalid(ConfigError),
}

/// One variable as resolved now.
#[derive(Clone, Debug)]
pub struct Setting {
    /// The declaration.
    pub variable: &'static dyn Variable,
    /// The value as shown: the parsed value, or the default's description.
    pub value: String,
    /// Whether it is the default, a set value, or malformed.
    pub source: Source,
}

impl std::fmt::Debug for dyn Variable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.meta().name)
    }
}

/// Every declared variable resolved against the current environment, in table order.
pub fn settings() -> Vec<Setting> {
    VARIABLES
        .iter()
        .map(|&variable| match variable.current() {
            Ok(Some(value)) => Setting { variable, value, source: Source::Environment },
            Ok(None) => Setting { variable, value: variable.default_text(), source: Source::Default },
            Err(e) => Setting { variable, value: variable.default_text(), source: Source::Invalid(e) },
        })
        .collect()
}
