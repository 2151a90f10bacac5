//! Compiles the built-in device code (the plan interpreter and the primitive kernels) ahead of time for the GPU
//! architectures we support, when NVRTC is available at build time, and embeds the cubins (zstd-compressed) in the
//! crate: a process then starts its first collective without compiling anything. Without NVRTC the crate builds
//! with no embedded kernels and compiles them at run time instead (see `src/embedded.rs`).
//!
//! Cubins are cached under the target folder by the hash of the sources, the options, the architecture and the
//! NVRTC version, so rebuilds, other profiles and `cargo clippy` reuse them.
//!
//! Settings (environment, read at build time): `MSCCLPP_EMBED_ARCHS` (comma-separated, default
//! `sm_80,sm_90,sm_100,sm_120`; `none` embeds nothing), `MSCCLPP_NVRTC_PATH` (the library to use),
//! `MSCCLPP_REQUIRE_EMBEDDED=1` (fail the build instead of embedding nothing).

#[path = "build/nvrtc.rs"]
mod nvrtc;
#[path = "src/nvrtc_paths.rs"]
mod nvrtc_paths;
#[path = "src/source_hash.rs"]
mod source_hash;

use std::io::Write;
use std::path::{Path, PathBuf};

/// Architectures embedded by default: A100 (and sm_86/87/89 through cubin compatibility), H100/H200, B200/GB200
/// (and sm_103), RTX PRO/50-series (and sm_121).
const DEFAULT_ARCHS: &str = "sm_80,sm_90,sm_100,sm_120";

/// The sources compiled ahead of time, as `(name, path under cuda/)`.
const SOURCES: &[(&str, &str)] =
    &[("execution_kernel.cu", "execution_kernel.cu"), ("primitives.cu", "kernels/primitives.cu")];

fn main() {
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap_or_else(|_| ".".into()));
    let out_dir = PathBuf::from(std::env::var("OUT_DIR").unwrap_or_else(|_| ".".into()));
    println!("cargo:rerun-if-changed=cuda");
    println!("cargo:rerun-if-changed=build");
    println!("cargo:rerun-if-changed=src/source_hash.rs");
    println!("cargo:rerun-if-changed=src/nvrtc_paths.rs");
    for var in ["MSCCLPP_EMBED_ARCHS", "MSCCLPP_NVRTC_PATH", "MSCCLPP_REQUIRE_EMBEDDED"] {
        println!("cargo:rerun-if-env-changed={var}");
    }
    let require = std::env::var("MSCCLPP_REQUIRE_EMBEDDED").is_ok_and(|v| v == "1");
    let requested = requested_archs();
    let (table, problem) = match requested.clone().and_then(|archs| embed(&manifest, &out_dir, archs)) {
        Ok(t) => (t, None),
        Err(e) => (Table::empty(&e, requested.unwrap_or_default()), Some(e)),
    };
    if let Some(e) = &problem {
        if require {
            panic!("MSCCLPP_REQUIRE_EMBEDDED=1 but the device kernels could not be embedded: {e}");
        }
        // One line: a crate built on a machine without NVRTC is normal (its kernels compile on first use).
        let why = if e.starts_with("no libnvrtc") {
            "no NVRTC here".to_string()
        } else {
            let first = e.lines().next().unwrap_or_default();
            if first.chars().count() > 120 {
                format!("{}...", first.chars().take(120).collect::<String>())
            } else {
                first.to_string()
            }
        };
        println!(
            "cargo:warning=mscclpp-sys: GPU kernels not embedded ({why}); NVRTC compiles them at first use \
             (pip install \"nvidia-cuda-nvrtc==13.0.*\" embeds them)"
        );
        // Look again once NVRTC may have been installed.
        for var in ["LD_LIBRARY_PATH", "CUDA_HOME", "CUDA_PATH", "VIRTUAL_ENV"] {
            println!("cargo:rerun-if-env-changed={var}");
        }
    }
    let generated = out_dir.join("embedded_kernels.rs");
    if let Err(e) = std::fs::write(&generated, table.render()) {
        panic!("writing {}: {e}", generated.display());
    }
}

/// The embedded kernels, as the generated Rust source describes them.
struct Table {
    hash: String,
    nvrtc: String,
    status: String,
    /// The architectures the build was asked for (`MSCCLPP_EMBED_ARCHS`, else the default set).
    requested: Vec<String>,
    entries: Vec<(String, String, usize, PathBuf)>,
}

impl Table {
    fn empty(why: &str, requested: Vec<String>) -> Table {
        Table { hash: String::new(), nvrtc: String::new(), status: why.to_string(), requested, entries: Vec::new() }
    }

    fn render(&self) -> String {
        let mut s = String::new();
        s.push_str(&format!("/// Hash of the device sources the kernels were built from (empty: none embedded).\npub const SOURCES_HASH: &str = {:?};\n", self.hash));
        s.push_str(&format!(
            "/// NVRTC version that compiled them.\npub const NVRTC_VERSION: &str = {:?};\n",
            self.nvrtc
        ));
        s.push_str(&format!(
            "/// Why nothing is embedded (empty when kernels are embedded).\npub const NOT_EMBEDDED: &str = {:?};\n",
            self.status
        ));
        s.push_str(&format!(
            "/// The architectures the build was asked to embed (`MSCCLPP_EMBED_ARCHS`, else the default set).\npub const EMBED_ARCHS_REQUESTED: &[&str] = &{:?};\n",
            self.requested
        ));
        s.push_str("/// Every embedded cubin.\npub const CUBINS: &[EmbeddedCubin] = &[\n");
        for (source, arch, raw, path) in &self.entries {
            s.push_str(&format!(
                "    EmbeddedCubin {{ source: {source:?}, arch: {arch:?}, len: {raw}, zstd: include_bytes!({:?}) }},\n",
                path.display().to_string()
            ));
        }
        s.push_str("];\n");
        s
    }
}

fn read(path: &Path) -> Result<String, String> {
    std::fs::read_to_string(path).map_err(|e| format!("reading {}: {e}", path.display()))
}

/// The folder cubins are cached in: `<target>/mscclpp-kernels` (the target folder is the ancestor of OUT_DIR
/// holding CACHEDIR.TAG), else OUT_DIR itself.
fn cache_dir(out_dir: &Path) -> PathBuf {
    out_dir
        .ancestors()
        .find(|d| d.join("CACHEDIR.TAG").exists())
        .map(|t| t.join("mscclpp-kernels"))
        .unwrap_or_else(|| out_dir.to_path_buf())
}

/// `MSCCLPP_EMBED_ARCHS` read once and checked (unset: the default set; `none`: an empty list).
fn requested_archs() -> Result<Vec<String>, String> {
    let archs_var = std::env::var("MSCCLPP_EMBED_ARCHS").unwrap_or_else(|_| DEFAULT_ARCHS.to_string());
    let archs: Vec<String> =
        archs_var.split(',').map(|a| a.trim().to_string()).filter(|a| !a.is_empty() && a != "none").collect();
    if let Some(bad) = archs.iter().find(|a| !a.starts_with("sm_") || a[3..].parse::<u32>().is_err()) {
        return Err(format!("MSCCLPP_EMBED_ARCHS: {bad:?} is not an architecture like sm_90"));
    }
    Ok(archs)
}

fn embed(manifest: &Path, out_dir: &Path, archs: Vec<String>) -> Result<Table, String> {
    if archs.is_empty() {
        return Err("MSCCLPP_EMBED_ARCHS names no architecture".to_string());
    }
    // Headers: every file of cuda/include/mscclpp, by include name, and the standard-header stand-ins of
    // cuda/include/std (`cstdint`, `stdint.h`), by their own names.
    let inc = manifest.join("cuda/include");
    let mut headers: Vec<(String, String)> = Vec::new();
    let entries = std::fs::read_dir(inc.join("mscclpp")).map_err(|e| format!("reading cuda/include/mscclpp: {e}"))?;
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if name.ends_with(".hpp") {
            headers.push((format!("mscclpp/{name}"), read(&e.path())?));
        }
    }
    let entries = std::fs::read_dir(inc.join("std")).map_err(|e| format!("reading cuda/include/std: {e}"))?;
    for e in entries.flatten() {
        headers.push((e.file_name().to_string_lossy().into_owned(), read(&e.path())?));
    }
    headers.sort();
    let mut sources: Vec<(&str, String)> = Vec::new();
    for (name, rel) in SOURCES {
        sources.push((name, read(&manifest.join("cuda").join(rel))?));
    }
    let hash = source_hash::sources_hash(
        headers.iter().map(|(n, b)| (n.as_str(), b.as_str())).chain(sources.iter().map(|(n, b)| (*n, b.as_str()))),
    );
    let nvrtc = nvrtc::Nvrtc::find(manifest)?;
    // A new NVRTC at the same path recompiles.
    println!("cargo:rerun-if-changed={}", nvrtc.path.display());
    let (major, minor) = nvrtc.version()?;
    let cache = cache_dir(out_dir);
    std::fs::create_dir_all(&cache).map_err(|e| format!("creating {}: {e}", cache.display()))?;

    // One job per (source, architecture); NUM_JOBS threads (cargo's -j) take them in turn.
    let jobs: Vec<(&str, &str, String)> =
        sources.iter().flat_map(|(n, b)| archs.iter().map(move |a| (*n, b.as_str(), a.clone()))).collect();
    let threads =
        std::env::var("NUM_JOBS").ok().and_then(|n| n.parse::<usize>().ok()).unwrap_or(2).clamp(1, jobs.len());
    let next = std::sync::atomic::AtomicUsize::new(0);
    let results: std::sync::Mutex<Vec<Option<Compiled>>> = std::sync::Mutex::new(vec![None; jobs.len()]);
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| {
                loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    let Some((name, body, arch)) = jobs.get(i) else { break };
                    let r = one(&nvrtc, &cache, &hash, (major, minor), name, body, arch, &headers);
                    if let Ok(mut v) = results.lock() {
                        v[i] = Some(r);
                    }
                }
            });
        }
    });
    let results = results.into_inner().map_err(|_| "a compile thread panicked".to_string())?;
    let mut entries = Vec::new();
    for ((name, _, arch), r) in jobs.iter().zip(results) {
        let (len, path) = r.unwrap_or_else(|| Err(format!("{name} for {arch}: not compiled")))?;
        entries.push((name.to_string(), arch.clone(), len, path));
    }
    Ok(Table { hash, nvrtc: format!("{major}.{minor}"), status: String::new(), requested: archs, entries })
}

/// A compiled source: the raw size and the compressed file, or why it failed.
type Compiled = Result<(usize, PathBuf), String>;

/// Compile (or take from the cache) one source for one architecture; returns the raw size and the compressed file.
#[allow(clippy::too_many_arguments)]
fn one(
    nvrtc: &nvrtc::Nvrtc,
    cache: &Path,
    hash: &str,
    version: (i32, i32),
    name: &str,
    body: &str,
    arch: &str,
    headers: &[(String, String)],
) -> Compiled {
    let key = blake3::hash(format!("{hash}\0{name}\0{arch}\0nvrtc {}.{}", version.0, version.1).as_bytes()).to_hex();
    let stem = format!("{}-{arch}-{}", name.trim_end_matches(".cu"), &key[..20]);
    let path = cache.join(format!("{stem}.cubin.zst"));
    let len_path = cache.join(format!("{stem}.len"));
    if let (Ok(meta), Ok(len)) = (std::fs::metadata(&path), std::fs::read_to_string(&len_path))
        && meta.len() > 0
        && let Ok(len) = len.trim().parse::<usize>()
    {
        return Ok((len, path));
    }
    let mut options = vec![format!("--gpu-architecture={arch}")];
    options.extend(source_hash::BASE_OPTIONS.iter().map(|o| o.to_string()));
    let cubin = nvrtc.cubin(name, body, headers, &options)?;
    let mut enc = zstd::stream::Encoder::new(Vec::new(), 19).map_err(|e| format!("zstd: {e}"))?;
    enc.write_all(&cubin).map_err(|e| format!("zstd: {e}"))?;
    let packed = enc.finish().map_err(|e| format!("zstd: {e}"))?;
    let tmp = cache.join(format!("{stem}.{}.tmp", std::process::id()));
    std::fs::write(&tmp, &packed).map_err(|e| format!("writing {}: {e}", tmp.display()))?;
    std::fs::write(&len_path, cubin.len().to_string()).map_err(|e| format!("writing {}: {e}", len_path.display()))?;
    std::fs::rename(&tmp, &path).map_err(|e| format!("renaming {}: {e}", tmp.display()))?;
    Ok((cubin.len(), path))
}
