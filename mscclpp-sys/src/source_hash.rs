//! The hash that ties embedded kernels to the device sources they were compiled from. Shared, file for file, by
//! the build script (which hashes the files on disk) and the crate (which hashes the copies it embeds), so the two
//! cannot compute it differently.

/// NVRTC options every compilation starts with (the architecture comes first, the caller's own options after).
pub const BASE_OPTIONS: &[&str] = &["-std=c++17", "-DMSCCLPP_DEVICE_COMPILE=1"];

/// Hash of the device sources: every `(name, contents)` pair, sorted by name, and [`BASE_OPTIONS`].
pub fn sources_hash<'a>(files: impl IntoIterator<Item = (&'a str, &'a str)>) -> String {
    let mut files: Vec<(&str, &str)> = files.into_iter().collect();
    files.sort();
    let mut h = blake3::Hasher::new();
    for (name, contents) in files {
        h.update(name.as_bytes());
        h.update(b"\0");
        h.update(contents.as_bytes());
        h.update(b"\0");
    }
    for o in BASE_OPTIONS {
        h.update(o.as_bytes());
        h.update(b"\0");
    }
    h.finalize().to_hex().to_string()
}
