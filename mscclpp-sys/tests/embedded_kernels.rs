//! The kernels embedded at build time: built from the current sources, for the supported architectures, complete.

use std::path::Path;

use mscclpp_sys::embedded::{self, CUBINS, EMBED_ARCHS_REQUESTED, NOT_EMBEDDED, SOURCES_HASH};
use mscclpp_sys::interpreter::{self, SOURCE_NAME};

/// CI and the GPU suite build with MSCCLPP_REQUIRE_EMBEDDED=1 (or MSCCLPP_REQUIRE_NVRTC=1): there the kernels
/// must be embedded; elsewhere a build without NVRTC embeds none and says why.
fn embedding_required() -> bool {
    ["MSCCLPP_REQUIRE_EMBEDDED", "MSCCLPP_REQUIRE_NVRTC"].iter().any(|v| std::env::var(v).is_ok_and(|x| x == "1"))
}

#[test]
fn kernels_are_embedded_or_the_build_says_why() {
    if CUBINS.is_empty() {
        assert!(!embedding_required(), "no kernels embedded although required: {NOT_EMBEDDED}");
        assert!(!NOT_EMBEDDED.is_empty(), "nothing embedded and no reason given");
        return;
    }
    assert!(NOT_EMBEDDED.is_empty(), "{NOT_EMBEDDED}");
    let archs = embedded::archs(SOURCE_NAME);
    // The default set unless the build chose its own (MSCCLPP_EMBED_ARCHS when it was built, e.g. sm_90 alone
    // for the GPU suite's binaries), as the build script read it.
    assert!(!EMBED_ARCHS_REQUESTED.is_empty(), "kernels embedded although the build was asked for none");
    for a in EMBED_ARCHS_REQUESTED {
        assert!(archs.contains(a), "{a} not embedded (requested {EMBED_ARCHS_REQUESTED:?}, embedded: {archs:?})");
    }
    assert_eq!(embedded::archs("primitives.cu"), archs, "the primitives are embedded for the same architectures");
}

/// The hash of the sources on disk now, computed like the build script does: every header file in the folder (not
/// only those the crate lists), the interpreter and the primitives.
fn hash_of_sources_on_disk() -> String {
    let cuda = Path::new(env!("CARGO_MANIFEST_DIR")).join("cuda");
    let mut files: Vec<(String, String)> = Vec::new();
    for e in std::fs::read_dir(cuda.join("include/mscclpp")).expect("headers").flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if name.ends_with(".hpp") {
            files.push((format!("mscclpp/{name}"), std::fs::read_to_string(e.path()).expect("header")));
        }
    }
    for e in std::fs::read_dir(cuda.join("include/std")).expect("standard-header stand-ins").flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        files.push((name, std::fs::read_to_string(e.path()).expect("header")));
    }
    assert!(files.len() >= 10, "only {} headers found", files.len());
    files.push(("execution_kernel.cu".into(), std::fs::read_to_string(cuda.join("execution_kernel.cu")).expect("src")));
    files.push(("primitives.cu".into(), std::fs::read_to_string(cuda.join("kernels/primitives.cu")).expect("src")));
    let mut h = blake3::Hasher::new();
    files.sort();
    for (n, b) in &files {
        h.update(n.as_bytes());
        h.update(b"\0");
        h.update(b.as_bytes());
        h.update(b"\0");
    }
    for o in ["-std=c++17", "-DMSCCLPP_DEVICE_COMPILE=1"] {
        h.update(o.as_bytes());
        h.update(b"\0");
    }
    h.finalize().to_hex().to_string()
}

#[test]
fn embedded_kernels_were_built_from_the_current_sources() {
    // The crate's own copies of the sources hash the same as the files on disk: no header is missing from the list
    // NVRTC is given, and the hash is computed the same way here and in the build script.
    assert_eq!(embedded::current_sources_hash(), hash_of_sources_on_disk(), "sources::HEADERS misses a header file");
    if CUBINS.is_empty() {
        assert!(!embedding_required(), "{NOT_EMBEDDED}");
        return;
    }
    assert_eq!(SOURCES_HASH, hash_of_sources_on_disk(), "the embedded kernels are stale: rebuild mscclpp-sys");
}

#[test]
fn every_embedded_cubin_decodes_and_the_interpreter_has_every_entry_point() {
    if CUBINS.is_empty() {
        assert!(!embedding_required(), "{NOT_EMBEDDED}");
        return;
    }
    let all = interpreter::kernel_names();
    for c in CUBINS {
        let cubin = embedded::decode(c).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(cubin.len(), c.len);
        if c.source == SOURCE_NAME {
            assert_eq!(interpreter::entry_points_in(&cubin), all, "{} for {}", c.source, c.arch);
        } else {
            let s = String::from_utf8_lossy(&cubin);
            assert!(s.contains("mscclpp_"), "{} for {} defines no mscclpp kernel", c.source, c.arch);
        }
        // Compressed well below the cubin (the whole set stays small enough to embed in every binary).
        assert!(c.zstd.len() * 5 < c.len, "{} for {}: {} of {} bytes", c.source, c.arch, c.zstd.len(), c.len);
    }
}

#[test]
fn the_cache_serves_builtin_sources_from_the_embedded_set_without_nvrtc() {
    let Some(first) = CUBINS.iter().find(|c| c.source == SOURCE_NAME) else {
        assert!(!embedding_required(), "{NOT_EMBEDDED}");
        return;
    };
    // A cache folder that does not exist and a source NVRTC never sees: the cubin can only come from the build.
    let cache = mscclpp_sys::nvrtc::KernelCache::new(Some("/nonexistent/mscclpp-cache".into()));
    let opts = mscclpp_sys::nvrtc::CompileOptions::new(first.arch);
    let cubin = cache.cubin(SOURCE_NAME, interpreter::SOURCE, &opts).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(cubin.len(), first.len);
    assert!(interpreter::embedded_for(first.arch));
    assert!(!interpreter::embedded_for("sm_75"));
}
