//! Where something is in a plan or a program: rank, thread block, operation and field, and the program source
//! lines that recorded the operation ([`SourceLocation`]). Plan errors, program (eDSL) errors and verifier findings
//! all name places with [`Location`] and display them the same way.

use std::fmt;

use serde::{Deserialize, Serialize};

/// Where in a program's source an eDSL call recorded an operation: the call and its file, line and column.
///
/// Recorded with `#[track_caller]`, so the file and line are those of the user's call, not of the eDSL. A plan
/// built with [`ProgramSpec::source_locations`](crate::program::ProgramSpec::source_locations) carries them per
/// operation (the optional `source_locations` key, docs/plan-format.md), and verifier findings name them.
///
/// ```
/// use mscclpp_lang::plan::SourceLocation;
/// let at = SourceLocation { call: "reduce".into(), file: "src/lib.rs".into(), line: 58, column: 9 };
/// assert_eq!(at.to_string(), "`reduce` at src/lib.rs:58:9");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SourceLocation {
    /// The eDSL call (`put`, `reduce`, `signal`, ...).
    pub call: String,
    /// The source file, as the compiler names it (relative to the workspace root for a workspace crate).
    pub file: String,
    /// Line (1-based).
    pub line: u32,
    /// Column (1-based).
    pub column: u32,
}

impl SourceLocation {
    /// The location of `call` at `at` (e.g. `std::panic::Location::caller()`).
    pub fn new(call: &str, at: &std::panic::Location<'_>) -> Self {
        SourceLocation { call: call.to_string(), file: at.file().to_string(), line: at.line(), column: at.column() }
    }

    /// The location of `call` at a program line (a Rust caller's or a replayed script's).
    pub(crate) fn at_line(call: &str, at: crate::program::Line) -> Self {
        SourceLocation { call: call.to_string(), file: at.file.to_string(), line: at.line, column: at.column }
    }
}

/// "`reduce` at src/lib.rs:58:9" ("`put` at prog.py:12" for a script line, which has no column).
impl fmt::Display for SourceLocation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.column == 0 {
            write!(f, "`{}` at {}:{}", self.call, self.file, self.line)
        } else {
            write!(f, "`{}` at {}:{}:{}", self.call, self.file, self.line, self.column)
        }
    }
}

/// The source locations of one operation, in program order: "`put` at src/lib.rs:12:9"; for an operation the
/// lowering fused from several calls, "`reduce` at src/lib.rs:58:9 and `put` at src/lib.rs:60:9, fused into
/// `res`" (`op_name`: the operation's plan name). Empty when there are none.
pub fn describe_sources(sources: &[SourceLocation], op_name: Option<&str>) -> String {
    let parts: Vec<String> = sources.iter().map(ToString::to_string).collect();
    let mut s = match parts.as_slice() {
        [] => return String::new(),
        [one] => one.clone(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    };
    if let (true, Some(name)) = (sources.len() > 1, op_name) {
        s.push_str(&format!(", fused into `{name}`"));
    }
    s
}

/// Where in a plan or program something is; every part is optional.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Location {
    /// Rank (index into `gpus`).
    pub rank: Option<usize>,
    /// Thread block of that rank.
    pub tb: Option<usize>,
    /// Operation index in the thread block (for a pipeline's inner op, the pipeline's index).
    pub op: Option<usize>,
    /// Inner operation index inside a pipeline.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub inner: Option<usize>,
    /// Operation name, when known: the plan's name (`put`, `rre`, ...) or, in a program, the eDSL method's name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub op_name: Option<String>,
    /// Field, as a JSON path relative to the located object.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
    /// The program source lines that recorded the operation, in program order (several for a fused operation);
    /// empty when unknown (a plan without source locations).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub source: Vec<SourceLocation>,
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
    /// An eDSL operation, by its method's name, on a rank and thread block as far as they are known.
    pub fn edsl_op(rank: Option<usize>, tb: Option<usize>, name: &str) -> Self {
        Location { rank, tb, op_name: Some(name.to_string()), ..Default::default() }
    }
    /// The same location, inside pipeline step `inner` of its operation.
    pub fn inner(mut self, inner: Option<usize>) -> Self {
        self.inner = inner;
        self
    }
    /// The same location, narrowed to a field.
    pub fn field(mut self, field: impl Into<String>) -> Self {
        self.field = Some(field.into());
        self
    }
    /// The same location, with the source lines of its operation.
    pub fn with_source(mut self, source: &[SourceLocation]) -> Self {
        self.source = source.to_vec();
        self
    }
    /// Whether no part is known.
    pub fn is_empty(&self) -> bool {
        *self == Location::default()
    }
    /// Displays the location, naming an empty one `whole` (`plan`, `program`).
    pub fn within(&self, whole: &'static str) -> impl fmt::Display + '_ {
        Within { location: self, whole }
    }
}

struct Within<'a> {
    location: &'a Location,
    whole: &'static str,
}

impl fmt::Display for Within<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let l = self.location;
        let fused = l.source.len() > 1;
        let mut parts = Vec::new();
        if let Some(r) = l.rank {
            parts.push(format!("rank {r}"));
        }
        if let Some(t) = l.tb {
            parts.push(format!("thread block {t}"));
        }
        match (l.op, &l.op_name) {
            (Some(o), name) => {
                let mut s = format!("operation {o}");
                if let Some(i) = l.inner {
                    s.push_str(&format!(" (pipeline step {i})"));
                }
                if let (Some(n), false) = (name, fused) {
                    s.push_str(&format!(" `{n}`"));
                }
                parts.push(s);
            }
            // An eDSL call named by its source location is not named again.
            (None, Some(n)) if l.source.is_empty() => parts.push(format!("`{n}`")),
            (None, _) => {}
        }
        if let Some(field) = &l.field {
            parts.push(format!("field `{field}`"));
        }
        let place = if parts.is_empty() { self.whole.to_string() } else { parts.join(", ") };
        if l.source.is_empty() {
            f.write_str(&place)
        } else if parts.is_empty() {
            f.write_str(&describe_sources(&l.source, l.op_name.as_deref()))
        } else {
            write!(f, "{} ({place})", describe_sources(&l.source, l.op_name.as_deref()))
        }
    }
}

/// A location displays as "rank 0, thread block 1, operation 3 (pipeline step 2) `put`, field `src_buff[0]`";
/// an empty one as `plan`. With source locations they come first: "`reduce` at src/lib.rs:58:9 and `put` at
/// src/lib.rs:60:9, fused into `res` (rank 0, thread block 1, operation 4)".
impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.within("plan").fmt(f)
    }
}

#[cfg(test)]
mod tests {
    use super::Location;

    #[test]
    fn displays_every_part() {
        assert_eq!(Location::plan().to_string(), "plan");
        assert_eq!(Location::plan().within("program").to_string(), "program");
        assert_eq!(
            Location::op(0, 1, 3, "put").inner(Some(2)).field("src_buff[0]").to_string(),
            "rank 0, thread block 1, operation 3 (pipeline step 2) `put`, field `src_buff[0]`"
        );
        assert_eq!(Location::edsl_op(Some(0), Some(2), "copy").to_string(), "rank 0, thread block 2, `copy`");
        assert_eq!(Location::rank(4).to_string(), "rank 4");
    }

    #[test]
    fn source_locations_come_first() {
        let at =
            |call: &str, line| super::SourceLocation { call: call.into(), file: "src/lib.rs".into(), line, column: 9 };
        let fused = Location::op(0, 1, 4, "res").with_source(&[at("reduce", 58), at("put", 60)]);
        assert_eq!(
            fused.to_string(),
            "`reduce` at src/lib.rs:58:9 and `put` at src/lib.rs:60:9, fused into `res` (rank 0, thread block 1, \
             operation 4)"
        );
        let one = Location::op(1, 0, 2, "re").with_source(&[at("reduce", 58)]);
        assert_eq!(one.to_string(), "`reduce` at src/lib.rs:58:9 (rank 1, thread block 0, operation 2 `re`)");
        let call = Location::edsl_op(Some(0), None, "copy").with_source(&[at("copy", 7)]);
        assert_eq!(call.to_string(), "`copy` at src/lib.rs:7:9 (rank 0)");
        let three = [at("put", 1), at("put", 2), at("put", 3)];
        assert_eq!(
            super::describe_sources(&three, Some("put")),
            "`put` at src/lib.rs:1:9, `put` at src/lib.rs:2:9 and `put` at src/lib.rs:3:9, fused into `put`"
        );
    }
}
