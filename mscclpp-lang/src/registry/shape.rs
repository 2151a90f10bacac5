//! The shapes a program declares: message and world-size ranges, ranks per node, buffer placement; and the
//! size grammar of the command line (`4K+16`, `64MiB`).

use std::fmt;

/// An inclusive range of sizes; `max == u64::MAX` means unbounded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SizeRange {
    /// Smallest value.
    pub min: u64,
    /// Largest value (`u64::MAX`: no upper bound).
    pub max: u64,
}

impl SizeRange {
    /// Every value.
    pub const ALL: SizeRange = SizeRange { min: 0, max: u64::MAX };

    /// Whether `v` lies in the range.
    pub fn contains(&self, v: u64) -> bool {
        self.min <= v && v <= self.max
    }
    /// Number of values in the range, saturating.
    pub fn width(&self) -> u64 {
        (self.max - self.min).saturating_add(1)
    }
    /// The upper bound, or `None` when unbounded.
    pub fn upper(&self) -> Option<u64> {
        (self.max != u64::MAX).then_some(self.max)
    }
    /// Writes the range with sizes in bytes made readable (`1 KiB..=64 KiB`).
    pub fn display_bytes(&self) -> String {
        match self.upper() {
            None if self.min == 0 => "any".to_string(),
            None => format!("{}..", human_bytes(self.min)),
            Some(hi) => format!("{}..={}", human_bytes(self.min), human_bytes(hi)),
        }
    }
}

impl fmt::Display for SizeRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.upper() {
            None => write!(f, "{}..", self.min),
            Some(hi) if hi == self.min => write!(f, "{hi}"),
            Some(hi) => write!(f, "{}..={hi}", self.min),
        }
    }
}

/// `1024` → `1 KiB`; sizes that are not whole KiB/MiB/GiB stay in bytes.
pub fn human_bytes(v: u64) -> String {
    if v == 0 {
        return "0".to_string();
    }
    const UNITS: [(u64, &str); 3] = [(1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")];
    for (unit, name) in UNITS {
        if v >= unit && v.is_multiple_of(unit) {
            return format!("{} {name}", v / unit);
        }
    }
    format!("{v} B")
}

/// Parses `1048576`, `1K`, `4KiB`, `1M`, `64MiB`, `1G`, and sums like `4K+16` (the grammar of
/// [`mscclpp_config::parse_size`], with an error that says what is wrong).
pub fn parse_size(s: &str) -> Result<u64, crate::ParseError> {
    mscclpp_config::parse_size(s).ok_or_else(|| {
        crate::ParseError::invalid(s, format!("`{s}` is not a size below 2^64 bytes (e.g. 1M, 4K+16, 1048576)"))
    })
}

/// How many ranks share a node.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RanksPerNode {
    /// All ranks on one node: ranks per node equals the world size.
    World,
    /// Any number of ranks per node in the range that divides the world size.
    Range(SizeRange),
    /// This many nodes of equal size: `world size / nodes` ranks per node (`nodes = 2` in `#[collective_program]`).
    Nodes(u64),
}

impl RanksPerNode {
    /// The most ranks per node admitted in a world of `world_size` (one node where allowed), or `None` when no
    /// shape of that world size is admitted.
    pub fn most_in(&self, world_size: usize) -> Option<usize> {
        (1..=world_size).rev().find(|&r| self.accepts(world_size, r))
    }

    /// Whether `ranks_per_node` ranks per node are supported in a world of `world_size`.
    pub fn accepts(&self, world_size: usize, ranks_per_node: usize) -> bool {
        match self {
            RanksPerNode::World => ranks_per_node == world_size,
            RanksPerNode::Range(r) => {
                ranks_per_node > 0 && r.contains(ranks_per_node as u64) && world_size.is_multiple_of(ranks_per_node)
            }
            RanksPerNode::Nodes(n) => *n > 0 && ranks_per_node > 0 && (world_size as u64) == *n * ranks_per_node as u64,
        }
    }
}

impl fmt::Display for RanksPerNode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RanksPerNode::World => f.write_str("world"),
            RanksPerNode::Range(r) => r.fmt(f),
            RanksPerNode::Nodes(n) => write!(f, "world/{n}"),
        }
    }
}

/// Which buffer placements a program supports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BufferMode {
    /// Only in place (the input is a slice of the output, or the other way round).
    InPlace,
    /// Only out of place (distinct input and output buffers).
    OutOfPlace,
    /// Both; the plan is compiled for the one asked for.
    Both,
}

impl BufferMode {
    /// Whether a plan with the given placement can be built.
    pub fn accepts(self, inplace: bool) -> bool {
        match self {
            BufferMode::InPlace => inplace,
            BufferMode::OutOfPlace => !inplace,
            BufferMode::Both => true,
        }
    }
    /// The placement used when none is asked for: in place for in-place-only programs, else out of place.
    pub fn default_inplace(self) -> bool {
        matches!(self, BufferMode::InPlace)
    }
    /// `in_place`, `out_of_place` or `both`.
    pub fn as_str(self) -> &'static str {
        match self {
            BufferMode::InPlace => "in_place",
            BufferMode::OutOfPlace => "out_of_place",
            BufferMode::Both => "both",
        }
    }
}

impl fmt::Display for BufferMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse() {
        assert_eq!(parse_size("1K"), Ok(1024));
        assert_eq!(parse_size("4KiB+16"), Ok(4112));
        assert_eq!(parse_size("1M+48"), Ok((1 << 20) + 48));
        assert_eq!(parse_size("64MiB"), Ok(64 << 20));
        assert_eq!(parse_size("1G"), Ok(1 << 30));
        assert!(parse_size("lots").is_err());
        assert!(parse_size("99999999999999G").is_err());
    }
}
