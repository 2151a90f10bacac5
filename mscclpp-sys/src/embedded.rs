//! Cubins of the built-in device code (the plan interpreter, the primitive kernels), compiled ahead of time by the
//! build script for the architectures we support and embedded zstd-compressed: on those GPUs nothing is compiled
//! at run time. A cubin built for `sm_XY` also runs on `sm_XZ` with `Z >= Y` (same major version), so the
//! `sm_80` cubin serves sm_86/sm_89, `sm_100` serves sm_103 and `sm_120` serves sm_121.
//!
//! The build embeds nothing when it finds no NVRTC ([`NOT_EMBEDDED`] says why); the kernels are then compiled at run
//! time through [`crate::nvrtc::KernelCache`], as they are for other architectures and for users' own kernels.

use std::io::Read;

use crate::error::{Error, Result};
use crate::source_hash::sources_hash;

/// One embedded cubin.
#[derive(Clone, Copy, Debug)]
pub struct EmbeddedCubin {
    /// Source name (`execution_kernel.cu`, `primitives.cu`).
    pub source: &'static str,
    /// Architecture, e.g. `sm_90`.
    pub arch: &'static str,
    /// Size of the cubin.
    pub len: usize,
    /// The cubin, zstd-compressed.
    pub zstd: &'static [u8],
}

include!(concat!(env!("OUT_DIR"), "/embedded_kernels.rs"));

/// The built-in sources that can be embedded, by name.
pub fn builtin_source(name: &str) -> Option<&'static str> {
    match name {
        crate::sources::INTERPRETER_NAME => Some(crate::sources::INTERPRETER),
        "primitives.cu" => Some(crate::sources::PRIMITIVES),
        _ => None,
    }
}

/// The hash of the device sources compiled into this crate (headers, interpreter, primitives): equal to
/// [`SOURCES_HASH`] exactly when the embedded cubins were built from them.
pub fn current_sources_hash() -> String {
    let builtins = [crate::sources::INTERPRETER_NAME, "primitives.cu"];
    sources_hash(
        crate::sources::HEADERS
            .iter()
            .copied()
            .chain(builtins.iter().filter_map(|n| builtin_source(n).map(|s| (*n, s)))),
    )
}

/// Whether embedded cubins are used (`MSCCLPP_EMBEDDED_KERNELS`, default on).
pub fn enabled() -> bool {
    mscclpp_config::EMBEDDED_KERNELS.get_or_default()
}

/// Architectures embedded for `source`, in build order.
pub fn archs(source: &str) -> Vec<&'static str> {
    CUBINS.iter().filter(|c| c.source == source).map(|c| c.arch).collect()
}

fn parse_arch(arch: &str) -> Option<(u32, u32)> {
    let n: u32 = arch.strip_prefix("sm_")?.trim_end_matches(['a', 'f']).parse().ok()?;
    Some((n / 10, n % 10))
}

/// The embedded architecture whose cubin runs on a GPU of `device_arch`: the same one, else the highest one of
/// the same major version and a lower minor version.
pub fn compatible_arch<'a>(embedded: &[&'a str], device_arch: &str) -> Option<&'a str> {
    let (major, minor) = parse_arch(device_arch)?;
    embedded
        .iter()
        .copied()
        .filter_map(|a| parse_arch(a).map(|v| (v, a)))
        .filter(|((ma, mi), _)| *ma == major && *mi <= minor)
        .max_by_key(|(v, _)| *v)
        .map(|(_, a)| a)
}

/// The embedded cubin of the built-in source `name` for a GPU of `device_arch`, if `source` is exactly that
/// built-in source and a compatible cubin is embedded.
pub fn find(name: &str, source: &str, device_arch: &str) -> Option<&'static EmbeddedCubin> {
    if builtin_source(name) != Some(source) {
        return None;
    }
    let arch = compatible_arch(&archs(name), device_arch)?;
    CUBINS.iter().find(|c| c.source == name && c.arch == arch)
}

/// Decompress an embedded cubin.
pub fn decode(cubin: &EmbeddedCubin) -> Result<Vec<u8>> {
    let bad = |what: String| {
        Error::InvalidArgument(format!(
            "the embedded {} cubin for {} is damaged ({what}); rebuild mscclpp-sys or set MSCCLPP_EMBEDDED_KERNELS=0",
            cubin.source, cubin.arch
        ))
    };
    let mut dec = ruzstd::decoding::StreamingDecoder::new(cubin.zstd).map_err(|e| bad(e.to_string()))?;
    let mut out = Vec::with_capacity(cubin.len);
    dec.read_to_end(&mut out).map_err(|e| bad(e.to_string()))?;
    if out.len() != cubin.len || !out.starts_with(b"\x7fELF") {
        return Err(bad(format!("{} bytes, expected an ELF of {}", out.len(), cubin.len)));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cubin_serves_newer_minor_versions_of_its_major_only() {
        let e = ["sm_80", "sm_90", "sm_100", "sm_120"];
        assert_eq!(compatible_arch(&e, "sm_90"), Some("sm_90"));
        assert_eq!(compatible_arch(&e, "sm_89"), Some("sm_80"));
        assert_eq!(compatible_arch(&e, "sm_86"), Some("sm_80"));
        assert_eq!(compatible_arch(&e, "sm_103"), Some("sm_100"));
        assert_eq!(compatible_arch(&e, "sm_121"), Some("sm_120"));
        assert_eq!(compatible_arch(&e, "sm_75"), None);
        assert_eq!(compatible_arch(&e, "sm_110"), None);
        assert_eq!(compatible_arch(&["sm_86"], "sm_80"), None, "an sm_86 cubin does not run on sm_80");
        assert_eq!(compatible_arch(&e, "garbage"), None);
    }

    #[test]
    fn only_the_exact_builtin_source_is_served_from_the_embedded_set() {
        assert!(find("execution_kernel.cu", "// another kernel", "sm_90").is_none());
        assert!(find("mine.cu", crate::sources::INTERPRETER, "sm_90").is_none());
    }
}
