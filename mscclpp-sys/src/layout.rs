//! One generator for the layout probes of the `#[repr(C)]` mirrors ([`crate::handles`], [`crate::device_plan`]).
//!
//! A mirror lists, for each struct, its CUDA name and the CUDA and Rust names of its fields (`layout_entry!`);
//! [`probe_source`] turns such a list into a CUDA source of `static_assert`s on size, alignment and every
//! listed field offset, which compiles iff both languages agree. [`check`] compiles a probe with NVRTC and
//! returns the compiler's message when a mirror is wrong.

use crate::error::Result;
use crate::nvrtc::{CompileOptions, Output, compile};

/// One struct in a layout probe: CUDA name, Rust size and alignment, and `(CUDA field, Rust offset)` pairs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LayoutEntry {
    /// Qualified CUDA type name.
    pub cuda_name: &'static str,
    /// `size_of` in Rust.
    pub size: usize,
    /// `align_of` in Rust.
    pub align: usize,
    /// Fields: CUDA member name (a member path such as `fifo_.size` is allowed) and Rust offset.
    pub fields: Vec<(&'static str, usize)>,
}

/// A [`LayoutEntry`] for Rust type `$t` mirroring CUDA type `$cuda`, with `"cudaField" => rust_field` pairs
/// (nested fields as `"a_.b" => a.b`).
macro_rules! layout_entry {
    ($cuda:literal, $t:ty, [$( $cf:literal => $rf:ident $(. $rf2:ident)* ),* $(,)?]) => {
        $crate::layout::LayoutEntry {
            cuda_name: $cuda,
            size: std::mem::size_of::<$t>(),
            align: std::mem::align_of::<$t>(),
            fields: vec![$( ($cf, std::mem::offset_of!($t, $rf $(. $rf2)*)) ),*],
        }
    };
}
pub(crate) use layout_entry;

/// The offsetof the probe uses. NVRTC's front end has no `__builtin_offsetof`; EDG's `__INTADDR__` folds the
/// classic null-pointer form to a constant.
const OFFSETOF: &str = "#define MSCCLPP_PROBE_OFFSETOF(T, m) ((unsigned long long)__INTADDR__(&(((T*)0)->m)))\n";

/// A CUDA source: `prelude` (what declares the structs), then one `static_assert` per size, alignment and
/// field offset of `entries`, each failing with a message that names the struct, the field and Rust's value.
pub fn probe_source(prelude: &str, entries: &[LayoutEntry]) -> String {
    let mut s = String::from(prelude);
    if !s.ends_with('\n') {
        s.push('\n');
    }
    s.push_str(OFFSETOF);
    for e in entries {
        let n = e.cuda_name;
        s.push_str(&format!(
            "static_assert(sizeof({n}) == {sz}, \"size of {n} differs from Rust ({sz})\");\n",
            sz = e.size
        ));
        s.push_str(&format!(
            "static_assert(alignof({n}) == {al}, \"alignment of {n} differs from Rust ({al})\");\n",
            al = e.align
        ));
        for (field, off) in &e.fields {
            s.push_str(&format!(
                "static_assert(MSCCLPP_PROBE_OFFSETOF({n}, {field}) == {off}, \
                 \"offset of {n}::{field} differs from Rust ({off})\");\n"
            ));
        }
    }
    s
}

/// Compile the probe `source` (from [`probe_source`]) with NVRTC; an error carries the failed assertions.
pub fn check(name: &str, source: &str) -> Result<()> {
    // The front end checks static_asserts: no code is generated (the interpreter's probe would take minutes).
    compile(name, source, &CompileOptions::new("sm_90"), Output::SyntaxOnly).map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[allow(dead_code, reason = "only its layout is used")]
    #[repr(C)]
    struct Pair {
        a: u32,
        b: u64,
    }

    #[test]
    fn the_probe_asserts_size_alignment_and_every_listed_field() {
        let entry = layout_entry!("Pair", Pair, ["a" => a, "b" => b]);
        assert_eq!(entry.fields, vec![("a", 0), ("b", 8)]);
        let s = probe_source("struct Pair { unsigned a; unsigned long long b; };", &[entry]);
        assert!(s.starts_with("struct Pair"), "{s}");
        assert!(s.contains("static_assert(sizeof(Pair) == 16,"), "{s}");
        assert!(s.contains("static_assert(alignof(Pair) == 8,"), "{s}");
        assert!(s.contains("MSCCLPP_PROBE_OFFSETOF(Pair, a) == 0,"), "{s}");
        assert!(s.contains("MSCCLPP_PROBE_OFFSETOF(Pair, b) == 8,"), "{s}");
        assert_eq!(s.matches("static_assert(").count(), 4);
    }
}
