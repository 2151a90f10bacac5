//! Checks a program over every world size it declares: [`check_program`], [`check_all`], [`ProgramMeta::check`].
//!
//! `#[collective_program]` generates a `#[test]` beside each program that runs [`check_program`] for it, so a
//! crate of programs checks its own declarations under `cargo test`.

use std::fmt;

use super::meta::{ProgramMeta, Target};
use super::shape::BufferMode;
use super::{RegistryError, find, programs};
use crate::verify::{VerifyOptions, verify};

/// The largest world size checked when a program declares no upper bound.
pub const UNBOUNDED_CHECK_LIMIT: usize = 16;

/// One (world size, placement) of a [`CheckReport`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckCase {
    /// Number of ranks.
    pub world_size: usize,
    /// Ranks per node the plan was built for.
    pub ranks_per_node: usize,
    /// In place (`true`) or out of place.
    pub inplace: bool,
    /// Whether the plan was also run by the CPU verifier (not only built).
    pub verified: bool,
    /// Why the case fails: the build error or the verifier's findings. `None`: it passed.
    pub error: Option<String>,
}

impl CheckCase {
    fn placement(&self) -> &'static str {
        if self.inplace { "in place" } else { "out of place" }
    }
}

/// What [`ProgramMeta::check`] found: one case per declared world size and placement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckReport {
    /// The program's registry name.
    pub name: &'static str,
    /// The cases, by world size, out of place before in place.
    pub cases: Vec<CheckCase>,
}

impl CheckReport {
    /// True when every case passed and there was at least one.
    pub fn ok(&self) -> bool {
        !self.cases.is_empty() && self.cases.iter().all(|c| c.error.is_none())
    }
    /// The cases that failed.
    pub fn failures(&self) -> impl Iterator<Item = &CheckCase> {
        self.cases.iter().filter(|c| c.error.is_some())
    }
}

impl fmt::Display for CheckReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let failed = self.failures().count();
        if self.cases.is_empty() {
            return write!(f, "program `{}`: no world size to check", self.name);
        }
        write!(f, "program `{}`: {} case(s) checked, {failed} failed", self.name, self.cases.len())?;
        for c in self.failures() {
            let error = c.error.as_deref().unwrap_or_default();
            write!(f, "\n  {} ranks ({} per node), {}: {error}", c.world_size, c.ranks_per_node, c.placement())?;
        }
        Ok(())
    }
}

/// The verifier settings of the check: few schedules at the smallest size that fits, to stay fast.
fn check_options() -> VerifyOptions {
    VerifyOptions { launches: 2, schedules: 2, size: None, ..VerifyOptions::default() }
}

impl ProgramMeta {
    /// Builds the program for every world size it declares (up to [`UNBOUNDED_CHECK_LIMIT`] when it declares no
    /// upper bound), in and out of place as its buffer mode allows, and runs the CPU verifier (two schedules of
    /// two launches, at the smallest message that fits) on the plans of the smallest and the largest world size.
    /// The sizes in between are built and validated only, which keeps the check fast in debug builds.
    pub fn check(&self) -> CheckReport {
        let lo = self.world_sizes.min.max(1);
        let hi = self.world_sizes.max.min(UNBOUNDED_CHECK_LIMIT as u64).max(lo);
        let placements: &[bool] = match self.buffer_mode {
            BufferMode::InPlace => &[true],
            BufferMode::OutOfPlace => &[false],
            BufferMode::Both => &[false, true],
        };
        let mut cases = Vec::new();
        for world_size in (lo..=hi).filter(|&n| self.world_sizes.contains(n)).map(|n| n as usize) {
            let Some(rpn) = self.ranks_per_node.most_in(world_size) else {
                continue;
            };
            let verified = world_size as u64 == lo || world_size as u64 == hi;
            for &inplace in placements {
                let target = Target::new(world_size).ranks_per_node(rpn).inplace(inplace).source_locations(verified);
                let error = match self.build_plan(&target) {
                    Err(e) => Some(e.to_string()),
                    Ok(plan) if verified => {
                        let report = verify(&plan, &check_options());
                        (!report.ok()).then(|| {
                            let messages: Vec<&str> = report.findings.iter().map(|f| f.message.as_str()).collect();
                            format!("the verifier finds: {}", messages.join("; "))
                        })
                    }
                    Ok(_) => None,
                };
                cases.push(CheckCase { world_size, ranks_per_node: rpn, inplace, verified, error });
            }
        }
        CheckReport { name: self.name, cases }
    }
}

/// Checks the registered program `name` over every world size it declares (see [`ProgramMeta::check`]).
///
/// ```
/// use mscclpp_lang::prelude::*;
/// use mscclpp_lang::registry;
///
/// /// Each rank copies its input into its output.
/// #[collective_program(name = "doc_check_copy", collective = "allgather", world_sizes = 1..=1)]
/// fn copy(p: &mut Program<'_, Simple>) -> Result<(), ProgramError> {
///     p.rank(0)?.copy(p.output(0)?.all()?, p.input(0)?.all()?, 0)
/// }
///
/// let report = registry::check_program("doc_check_copy").unwrap();
/// assert!(report.ok(), "{report}");
/// ```
pub fn check_program(name: &str) -> Result<CheckReport, RegistryError> {
    Ok(find(name)?.check())
}

/// Checks every registered program (see [`ProgramMeta::check`]), in [`programs`] order.
pub fn check_all() -> Vec<CheckReport> {
    programs().into_iter().map(ProgramMeta::check).collect()
}
