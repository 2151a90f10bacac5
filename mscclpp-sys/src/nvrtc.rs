//! Compiling device code with NVRTC to a cubin for one GPU architecture, with an on-disk cache.
//!
//! The embedded headers ([`crate::sources::HEADERS`]) are always passed to NVRTC by include name, so user
//! kernels `#include "mscclpp/device.hpp"` with no include path and no CUDA toolkit.

use std::ffi::{CStr, CString};
use std::path::{Path, PathBuf};

use cudarc::nvrtc::sys;

use crate::error::{Error, Result};
use crate::loader;
use crate::sources;

/// How to compile one source.
#[derive(Clone, Debug)]
pub struct CompileOptions {
    /// Target architecture, e.g. `sm_90`.
    pub arch: String,
    /// Extra folders searched by `#include` (after the embedded headers).
    pub include_dirs: Vec<PathBuf>,
    /// Extra in-memory headers `(include name, contents)`.
    pub headers: Vec<(String, String)>,
    /// Preprocessor definitions `NAME` or `NAME=VALUE`.
    pub defines: Vec<String>,
    /// Any other NVRTC option, passed verbatim.
    pub extra: Vec<String>,
}

impl CompileOptions {
    /// Defaults for `arch`: C++17, the embedded headers, nothing else.
    pub fn new(arch: impl Into<String>) -> Self {
        CompileOptions {
            arch: arch.into(),
            include_dirs: Vec::new(),
            headers: Vec::new(),
            defines: Vec::new(),
            extra: Vec::new(),
        }
    }

    /// True when nothing but the architecture was set (the options the embedded kernels were built with).
    pub fn is_default(&self) -> bool {
        self.include_dirs.is_empty() && self.headers.is_empty() && self.defines.is_empty() && self.extra.is_empty()
    }

    fn nvrtc_options(&self, cubin: bool) -> Vec<String> {
        let arch = if cubin { self.arch.clone() } else { self.arch.replacen("sm_", "compute_", 1) };
        let mut opts = vec![format!("--gpu-architecture={arch}")];
        opts.extend(crate::source_hash::BASE_OPTIONS.iter().map(|o| o.to_string()));
        opts.extend(self.include_dirs.iter().map(|d| format!("--include-path={}", d.display())));
        opts.extend(self.defines.iter().map(|d| format!("-D{d}")));
        opts.extend(self.extra.iter().cloned());
        opts
    }
}

fn nvrtc_check(call: &'static str, rc: sys::nvrtcResult) -> Result<()> {
    if rc == sys::nvrtcResult::NVRTC_SUCCESS {
        return Ok(());
    }
    // SAFETY: NVRTC is loaded (callers run loader::nvrtc first); the returned string is static.
    let msg = unsafe { CStr::from_ptr(sys::nvrtcGetErrorString(rc)) }.to_string_lossy().into_owned();
    Err(Error::Nvrtc { call, message: msg })
}

/// NVRTC's version `(major, minor)`.
pub fn version() -> Result<(i32, i32)> {
    loader::nvrtc()?;
    let (mut major, mut minor) = (0, 0);
    // SAFETY: valid out-pointers; library checked by the loader.
    nvrtc_check("nvrtcVersion", unsafe { sys::nvrtcVersion(&mut major, &mut minor) })?;
    Ok((major, minor))
}

/// An NVRTC program, destroyed on drop.
struct Program(sys::nvrtcProgram);

impl Drop for Program {
    fn drop(&mut self) {
        // SAFETY: created by nvrtcCreateProgram and destroyed once.
        unsafe { sys::nvrtcDestroyProgram(&mut self.0) };
    }
}

/// What to get out of a compilation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Output {
    /// Machine code for exactly `arch` (validates inline PTX through ptxas).
    Cubin,
    /// PTX for `compute_XY`.
    Ptx,
    /// Nothing: the front end only (`--fdevice-syntax-only`), for sources whose `static_assert`s are the point.
    /// Returns an empty vector when the source compiles.
    SyntaxOnly,
}

/// Compile `source` (called `name` in messages) without the cache.
pub fn compile(name: &str, source: &str, options: &CompileOptions, output: Output) -> Result<Vec<u8>> {
    loader::nvrtc()?;
    let c_src = CString::new(source).map_err(|_| Error::InvalidArgument(format!("{name} contains a NUL byte")))?;
    let c_name = CString::new(name).map_err(|_| Error::InvalidArgument(format!("{name:?} contains a NUL byte")))?;
    let mut header_names = Vec::new();
    let mut header_bodies = Vec::new();
    let all_headers =
        sources::HEADERS.iter().map(|(n, b)| (n.to_string(), b.to_string())).chain(options.headers.iter().cloned());
    for (n, b) in all_headers {
        header_names.push(CString::new(n).map_err(|_| Error::InvalidArgument("header name has NUL".into()))?);
        header_bodies.push(CString::new(b).map_err(|_| Error::InvalidArgument("header has NUL".into()))?);
    }
    let name_ptrs: Vec<*const std::ffi::c_char> = header_names.iter().map(|c| c.as_ptr()).collect();
    let body_ptrs: Vec<*const std::ffi::c_char> = header_bodies.iter().map(|c| c.as_ptr()).collect();
    let mut prog: sys::nvrtcProgram = std::ptr::null_mut();
    // SAFETY: all strings are NUL-terminated and outlive the call; the arrays have `len` entries each.
    nvrtc_check("nvrtcCreateProgram", unsafe {
        sys::nvrtcCreateProgram(
            &mut prog,
            c_src.as_ptr(),
            c_name.as_ptr(),
            body_ptrs.len() as i32,
            body_ptrs.as_ptr(),
            name_ptrs.as_ptr(),
        )
    })?;
    let prog = Program(prog);
    let mut opts = options.nvrtc_options(output == Output::Cubin);
    if output == Output::SyntaxOnly {
        opts.push("--fdevice-syntax-only".to_string());
    }
    let opts: Vec<CString> = opts
        .into_iter()
        .map(|o| CString::new(o).map_err(|_| Error::InvalidArgument("option has NUL".into())))
        .collect::<Result<_>>()?;
    let opt_ptrs: Vec<*const std::ffi::c_char> = opts.iter().map(|c| c.as_ptr()).collect();
    // SAFETY: live program; options are NUL-terminated and outlive the call.
    let rc = unsafe { sys::nvrtcCompileProgram(prog.0, opt_ptrs.len() as i32, opt_ptrs.as_ptr()) };
    if rc == sys::nvrtcResult::NVRTC_ERROR_COMPILATION {
        return Err(Error::Compile { name: name.to_string(), arch: options.arch.clone(), log: program_log(&prog)? });
    }
    nvrtc_check("nvrtcCompileProgram", rc)?;
    let mut size = 0usize;
    let mut out;
    match output {
        Output::Cubin => {
            // SAFETY: live, compiled program; valid out-pointer.
            nvrtc_check("nvrtcGetCUBINSize", unsafe { sys::nvrtcGetCUBINSize(prog.0, &mut size) })?;
            out = vec![0u8; size];
            // SAFETY: `out` has exactly `size` bytes.
            nvrtc_check("nvrtcGetCUBIN", unsafe { sys::nvrtcGetCUBIN(prog.0, out.as_mut_ptr().cast()) })?;
        }
        Output::Ptx => {
            // SAFETY: as above.
            nvrtc_check("nvrtcGetPTXSize", unsafe { sys::nvrtcGetPTXSize(prog.0, &mut size) })?;
            out = vec![0u8; size];
            // SAFETY: `out` has exactly `size` bytes.
            nvrtc_check("nvrtcGetPTX", unsafe { sys::nvrtcGetPTX(prog.0, out.as_mut_ptr().cast()) })?;
            while out.last() == Some(&0) {
                out.pop();
            }
        }
        Output::SyntaxOnly => out = Vec::new(),
    }
    Ok(out)
}

fn program_log(prog: &Program) -> Result<String> {
    let mut size = 0usize;
    // SAFETY: live program, valid out-pointer.
    nvrtc_check("nvrtcGetProgramLogSize", unsafe { sys::nvrtcGetProgramLogSize(prog.0, &mut size) })?;
    let mut log = vec![0u8; size.max(1)];
    // SAFETY: `log` has at least `size` bytes.
    nvrtc_check("nvrtcGetProgramLog", unsafe { sys::nvrtcGetProgramLog(prog.0, log.as_mut_ptr().cast()) })?;
    while log.last() == Some(&0) {
        log.pop();
    }
    Ok(String::from_utf8_lossy(&log).into_owned())
}

/// The line printed on stderr before NVRTC runs: what is compiled (its `purpose` when given, else the source and
/// why its embedded cubins do not serve), for which GPU, and where it will be cached.
fn compile_line(
    name: &str,
    source: &str,
    options: &CompileOptions,
    cache: Option<&Path>,
    purpose: Option<&str>,
) -> String {
    let what = if options.defines.is_empty() { String::new() } else { format!(" [{}]", options.defines.join(" ")) };
    let (name, why) = match purpose {
        Some(p) => (format!("{p} ({name})"), String::new()),
        None => (name.to_string(), why_compiled(name, source, options)),
    };
    let cached = match cache {
        Some(dir) => format!("; cached in {} for later runs", dir.display()),
        None => "; kernel cache off".to_string(),
    };
    format!("mscclpp: compiling {name}{what} for {} with NVRTC{why}{cached}", options.arch)
}

/// Why a built-in source is compiled rather than taken from the embedded cubins (empty for other sources).
fn why_compiled(name: &str, source: &str, options: &CompileOptions) -> String {
    match crate::embedded::builtin_source(name) {
        None => String::new(),
        Some(builtin) if builtin != source => {
            " (a source other than the built-in one, e.g. from MSCCLPP_INTERPRETER_SOURCE)".to_string()
        }
        Some(_) => why_not_embedded(name, options),
    }
}

/// Why the embedded cubins of a built-in source do not serve `options`.
fn why_not_embedded(name: &str, options: &CompileOptions) -> String {
    if !crate::embedded::enabled() {
        " (MSCCLPP_EMBEDDED_KERNELS=0)".to_string()
    } else if crate::embedded::CUBINS.is_empty() {
        format!(" (this build embeds no kernels: {})", crate::embedded::NOT_EMBEDDED)
    } else {
        format!(" (no embedded kernel for {}; embedded: {})", options.arch, crate::embedded::archs(name).join(", "))
    }
}

/// The default cache folder: `$MSCCLPP_CACHE_DIR/kernels`, else `$HOME/.cache/mscclpp/kernels`; `None` when
/// `MSCCLPP_KERNEL_CACHE=0`.
pub fn default_cache_dir() -> Option<PathBuf> {
    if !mscclpp_config::KERNEL_CACHE.get_or_default() {
        return None;
    }
    if let Some(dir) = mscclpp_config::CACHE_DIR.get() {
        return Some(Path::new(&dir).join("kernels"));
    }
    std::env::var("HOME").ok().map(|h| Path::new(&h).join(".cache/mscclpp/kernels"))
}

/// Cubins on disk, keyed by (source, every header, options, arch, NVRTC version).
#[derive(Clone, Debug)]
pub struct KernelCache {
    dir: Option<PathBuf>,
    quiet: bool,
}

impl Default for KernelCache {
    fn default() -> Self {
        KernelCache { dir: default_cache_dir(), quiet: false }
    }
}

/// What a kernel cache folder holds.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CacheContents {
    /// Cubins per architecture, sorted by architecture: `(arch, count, bytes)`.
    pub by_arch: Vec<(String, usize, u64)>,
}

impl KernelCache {
    /// A cache in `dir` (`None`: no caching).
    pub fn new(dir: Option<PathBuf>) -> Self {
        KernelCache { dir, quiet: false }
    }

    /// Do not announce compilations on stderr (for tools that show their own progress).
    pub fn quiet(mut self, quiet: bool) -> Self {
        self.quiet = quiet;
        self
    }

    /// The folder, if caching.
    pub fn dir(&self) -> Option<&Path> {
        self.dir.as_deref()
    }

    /// The cubins in the folder, counted per architecture (an empty or missing folder holds none).
    pub fn contents(&self) -> CacheContents {
        let mut map: std::collections::BTreeMap<String, (usize, u64)> = Default::default();
        let Some(entries) = self.dir.as_ref().and_then(|d| std::fs::read_dir(d).ok()) else {
            return CacheContents::default();
        };
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            // `<key>.<arch>.cubin`
            let Some(stem) = name.strip_suffix(".cubin") else { continue };
            let Some((_, arch)) = stem.rsplit_once('.') else { continue };
            let bytes = e.metadata().map(|m| m.len()).unwrap_or(0);
            let slot = map.entry(arch.to_string()).or_default();
            slot.0 += 1;
            slot.1 += bytes;
        }
        CacheContents { by_arch: map.into_iter().map(|(a, (n, b))| (a, n, b)).collect() }
    }

    /// The cache key of a compilation.
    pub fn key(source: &str, options: &CompileOptions) -> Result<String> {
        let (major, minor) = version()?;
        let mut h = blake3::Hasher::new();
        h.update(format!("nvrtc {major}.{minor}\0").as_bytes());
        for o in options.nvrtc_options(true) {
            h.update(o.as_bytes());
            h.update(b"\0");
        }
        for (n, b) in sources::HEADERS {
            h.update(n.as_bytes());
            h.update(b"\0");
            h.update(b.as_bytes());
            h.update(b"\0");
        }
        for (n, b) in &options.headers {
            h.update(n.as_bytes());
            h.update(b"\0");
            h.update(b.as_bytes());
            h.update(b"\0");
        }
        h.update(source.as_bytes());
        Ok(h.finalize().to_hex().to_string())
    }

    /// The cubin of `source`: embedded at build time (a built-in source with default options on a supported
    /// architecture, see [`crate::embedded`]), else from the cache, else freshly compiled (then stored). A cache
    /// that cannot be written is not an error: the cubin is still returned. A compilation announces itself with
    /// one line on stderr, so no one waits in silence.
    pub fn cubin(&self, name: &str, source: &str, options: &CompileOptions) -> Result<Vec<u8>> {
        self.cubin_for(name, source, options, None)
    }

    /// [`Self::cubin`], its compilation announced as `purpose` (what the kernel is for) when given.
    pub fn cubin_for(
        &self,
        name: &str,
        source: &str,
        options: &CompileOptions,
        purpose: Option<&str>,
    ) -> Result<Vec<u8>> {
        if options.is_default()
            && crate::embedded::enabled()
            && let Some(embedded) = crate::embedded::find(name, source, &options.arch)
        {
            return crate::embedded::decode(embedded);
        }
        let Some(dir) = &self.dir else {
            if !self.quiet {
                eprintln!("{}", compile_line(name, source, options, None, purpose));
            }
            return compile(name, source, options, Output::Cubin);
        };
        let key = Self::key(source, options)?;
        let path = dir.join(format!("{key}.{}.cubin", options.arch));
        if let Ok(bytes) = std::fs::read(&path)
            && bytes.starts_with(b"\x7fELF")
        {
            return Ok(bytes);
        }
        if !self.quiet {
            eprintln!("{}", compile_line(name, source, options, Some(dir), purpose));
        }
        let cubin = compile(name, source, options, Output::Cubin)?;
        if std::fs::create_dir_all(dir).is_ok() {
            let tmp = dir.join(format!("{key}.{}.tmp", std::process::id()));
            if std::fs::write(&tmp, &cubin).is_ok() && std::fs::rename(&tmp, &path).is_err() {
                let _ = std::fs::remove_file(&tmp);
            }
        }
        Ok(cubin)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_compile_line_says_why_a_built_in_source_is_compiled() {
        let sm75 = CompileOptions::new("sm_75");
        let interp = crate::interpreter::SOURCE_NAME;
        // An edited copy (MSCCLPP_INTERPRETER_SOURCE) is named as such, not as a missing architecture.
        let edited = why_compiled(interp, "// another interpreter", &sm75);
        assert!(edited.contains("other than the built-in"), "{edited}");
        // The built-in source on a GPU without an embedded cubin: why the embedded ones do not serve it.
        let builtin = why_compiled(interp, crate::interpreter::SOURCE, &sm75);
        assert!(builtin.starts_with(" (") && !builtin.contains("other than"), "{builtin}");
        // A user's source has no embedded cubins to explain.
        assert_eq!(why_compiled("user.cu", "extern \"C\" __global__ void k() {}", &sm75), "");
    }

    #[test]
    fn a_compile_with_a_purpose_names_it_instead_of_a_missing_architecture() {
        let mut sm90 = CompileOptions::new("sm_90");
        sm90.defines.push("MSCCLPP_FIXED_ONLY".into());
        let interp = crate::interpreter::SOURCE_NAME;
        let line = compile_line(
            interp,
            crate::interpreter::SOURCE,
            &sm90,
            None,
            Some("the interpreter specialised for plan `p`"),
        );
        assert!(line.starts_with("mscclpp: compiling the interpreter specialised for plan `p` ("), "{line}");
        assert!(line.contains("[MSCCLPP_FIXED_ONLY] for sm_90") && !line.contains("no embedded kernel"), "{line}");
        let plain = compile_line(interp, "// another interpreter", &sm90, Some(Path::new("/c")), None);
        assert!(plain.contains("other than the built-in") && plain.ends_with("cached in /c for later runs"), "{plain}");
    }
}
