//! Where something is in a plan or a program: rank, thread block, operation and field. Plan errors, program
//! (eDSL) errors and verifier findings all name places with [`Location`] and display them the same way.

use std::fmt;

use serde::Serialize;

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
                if let Some(n) = name {
                    s.push_str(&format!(" `{n}`"));
                }
                parts.push(s);
            }
            (None, Some(n)) => parts.push(format!("`{n}`")),
            (None, None) => {}
        }
        if let Some(field) = &l.field {
            parts.push(format!("field `{field}`"));
        }
        if parts.is_empty() { f.write_str(self.whole) } else { f.write_str(&parts.join(", ")) }
    }
}

/// A location displays as "rank 0, thread block 1, operation 3 (pipeline step 2) `put`, field `src_buff[0]`";
/// an empty one as `plan`.
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
}
