//! Finding and checking the CUDA driver and NVRTC libraries before cudarc touches them.
//!
//! cudarc loads each library lazily and panics when a library or a symbol is missing. Every entry point of this
//! crate first calls [`driver`] or [`nvrtc`], which look for the library the same way cudarc does (plus a few
//! well-known folders), check that every symbol we call exists, and turn any failure into an [`Error`].

use std::path::Path;
use std::sync::OnceLock;

use crate::error::{Error, Result};

/// Every driver symbol this crate calls (the exact names cudarc resolves): the list the wrappers of
/// `driver::result` are declared with, so it cannot miss one.
const DRIVER_SYMBOLS: &[&str] = crate::driver::result::SYMBOLS;

/// Every NVRTC symbol this crate calls.
const NVRTC_SYMBOLS: &[&str] = &[
    "nvrtcVersion",
    "nvrtcGetErrorString",
    "nvrtcCreateProgram",
    "nvrtcDestroyProgram",
    "nvrtcCompileProgram",
    "nvrtcGetProgramLogSize",
    "nvrtcGetProgramLog",
    "nvrtcGetCUBINSize",
    "nvrtcGetCUBIN",
    "nvrtcGetPTXSize",
    "nvrtcGetPTX",
];

/// Why a library could not be used (cloneable, so it can be cached).
#[derive(Clone, Debug)]
enum LoadFailure {
    NoLibrary(String),
    MissingSymbol(&'static str, String),
    NoDevice,
    Cuda(u32),
}

impl LoadFailure {
    fn to_error(&self, nvrtc: bool) -> Error {
        match self {
            LoadFailure::NoLibrary(searched) if nvrtc => Error::NoNvrtc { searched: searched.clone() },
            LoadFailure::NoLibrary(_) => Error::NoDriver,
            LoadFailure::MissingSymbol(library, symbol) => Error::MissingSymbol { library, symbol: symbol.clone() },
            LoadFailure::NoDevice => Error::NoDevice,
            LoadFailure::Cuda(code) => crate::driver::cuda_error("cuInit", *code),
        }
    }
}

/// Open `name` (a file name or a path) and keep it loaded for the life of the process, so that cudarc's own
/// lookup by SONAME finds the very same copy.
fn open_forever(name: &Path) -> Option<&'static libloading::Library> {
    // SAFETY: loading a shared library runs its initialisers; the CUDA driver and NVRTC are well-behaved
    // libraries whose initialisers have no preconditions.
    let lib = unsafe { libloading::Library::new(name) }.ok()?;
    Some(Box::leak(Box::new(lib)))
}

/// Loads `libnvrtc-builtins.so.*` from `dir` (the folder NVRTC was loaded from by path), so that NVRTC's own
/// lookup of it by name finds it; the `.alt` variant is left alone.
fn open_builtins_beside(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    let mut names: Vec<std::path::PathBuf> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .is_some_and(|n| n.starts_with("libnvrtc-builtins.so") && !n.contains(".alt."))
        })
        .collect();
    names.sort();
    // The longest name is the most specific (`libnvrtc-builtins.so.13.0` before `libnvrtc-builtins.so`).
    if let Some(p) = names.iter().max_by_key(|p| p.as_os_str().len()) {
        let _ = open_forever(p);
    }
}

fn check_symbols(
    lib: &libloading::Library,
    library: &'static str,
    symbols: &[&str],
) -> std::result::Result<(), LoadFailure> {
    for symbol in symbols {
        // SAFETY: we only look the symbol up and never call it through this typed pointer.
        let found = unsafe { lib.get::<*const ()>(symbol.as_bytes()) };
        if found.is_err() {
            return Err(LoadFailure::MissingSymbol(library, (*symbol).to_string()));
        }
    }
    Ok(())
}

fn load_driver() -> std::result::Result<(), LoadFailure> {
    let candidates = cudarc::get_lib_name_candidates("cuda");
    let lib = candidates
        .iter()
        .find_map(|c| open_forever(Path::new(c)))
        .ok_or_else(|| LoadFailure::NoLibrary(candidates.join(", ")))?;
    check_symbols(lib, "libcuda", DRIVER_SYMBOLS)?;
    // Every symbol cudarc will resolve was checked above, so this call cannot panic.
    match crate::driver::result::init() {
        Ok(()) => Ok(()),
        Err(e) if e.code == cudarc::driver::sys::CUresult::CUDA_ERROR_NO_DEVICE => Err(LoadFailure::NoDevice),
        Err(e) => Err(LoadFailure::Cuda(e.code as u32)),
    }
}

fn load_nvrtc() -> std::result::Result<(), LoadFailure> {
    // An explicit path is authoritative: nothing else is tried.
    if let Some(path) = mscclpp_config::NVRTC_PATH.get() {
        let lib = open_forever(Path::new(&path))
            .ok_or_else(|| LoadFailure::NoLibrary(format!("MSCCLPP_NVRTC_PATH={}", path.display())))?;
        check_symbols(lib, "libnvrtc", NVRTC_SYMBOLS)?;
        // SAFETY: is_culib_present only tries to open libraries by name.
        if !unsafe { cudarc::nvrtc::sys::is_culib_present() } {
            return Err(LoadFailure::NoLibrary(format!(
                "MSCCLPP_NVRTC_PATH={} was loaded but its SONAME is not libnvrtc.so.13",
                path.display()
            )));
        }
        return Ok(());
    }
    let candidates = cudarc::get_lib_name_candidates("nvrtc");
    let mut lib = candidates.iter().find_map(|c| open_forever(Path::new(c)));
    // Files where NVRTC is commonly installed, beyond the dynamic loader's search path: first the folders an
    // embedding added (the Python package: its own environment's site-packages).
    let extra = NVRTC_DIRS.lock().map(|d| d.clone()).unwrap_or_default();
    let fallbacks = crate::nvrtc_paths::nvrtc_candidates(&extra, &[]);
    if lib.is_none() {
        // Loading the file by path registers its SONAME, so cudarc's later lookup by name finds this copy.
        let found = fallbacks.iter().filter(|p| p.exists()).find_map(|p| open_forever(p).map(|l| (p, l)));
        if let Some((path, l)) = found {
            // NVRTC opens its builtins library by name when it compiles; outside the loader's search path that
            // fails (NVRTC_ERROR_BUILTIN_OPERATION_FAILURE) unless the copy beside it is already loaded.
            if let Some(dir) = path.parent() {
                open_builtins_beside(dir);
            }
            lib = Some(l);
        }
    }
    let Some(lib) = lib else {
        let mut searched: Vec<String> = candidates.iter().take(3).cloned().collect();
        searched.push("LD_LIBRARY_PATH".into());
        searched.extend(fallbacks.iter().take(6).map(|p| p.display().to_string()));
        return Err(LoadFailure::NoLibrary(searched.join(", ")));
    };
    check_symbols(lib, "libnvrtc", NVRTC_SYMBOLS)?;
    // SAFETY: cudarc resolves NVRTC by name; make sure that lookup succeeds (it would panic otherwise).
    if !unsafe { cudarc::nvrtc::sys::is_culib_present() } {
        return Err(LoadFailure::NoLibrary(
            "libnvrtc was found by path but its SONAME is not libnvrtc.so.13; put its folder on LD_LIBRARY_PATH".into(),
        ));
    }
    Ok(())
}

/// Make sure the CUDA driver is loaded, complete and initialised. Cheap after the first call.
pub fn driver() -> Result<()> {
    static STATE: OnceLock<std::result::Result<(), LoadFailure>> = OnceLock::new();
    STATE.get_or_init(load_driver).as_ref().map(|_| ()).map_err(|f| f.to_error(false))
}

/// Folders searched for `libnvrtc.so.13` before the usual places when the dynamic loader cannot find it by name.
static NVRTC_DIRS: std::sync::Mutex<Vec<std::path::PathBuf>> = std::sync::Mutex::new(Vec::new());

/// Adds folders to search for `libnvrtc.so.13` (after the dynamic loader's own search, before the CUDA toolkit and
/// system folders); an embedding calls it before the first compile (the Python package passes the `nvidia/cu13/lib`
/// folders of its interpreter's site-packages, where `pip install nvidia-cuda-nvrtc` puts the library). Folders
/// added after NVRTC was first loaded, or looked for, change nothing.
pub fn add_nvrtc_search_dirs(dirs: impl IntoIterator<Item = std::path::PathBuf>) {
    if let Ok(mut known) = NVRTC_DIRS.lock() {
        for d in dirs {
            if !known.contains(&d) {
                known.push(d);
            }
        }
    }
}

/// Make sure NVRTC is loaded and complete. Cheap after the first call.
pub fn nvrtc() -> Result<()> {
    static STATE: OnceLock<std::result::Result<(), LoadFailure>> = OnceLock::new();
    STATE.get_or_init(load_nvrtc).as_ref().map(|_| ()).map_err(|f| f.to_error(true))
}

/// True when NVRTC can be used.
pub fn nvrtc_available() -> bool {
    nvrtc().is_ok()
}

/// For tests that need NVRTC: true when it can be used. Otherwise prints a loud SKIP line naming `test` and
/// returns false, or, when `MSCCLPP_REQUIRE_NVRTC=1`, panics.
///
/// # Panics
///
/// When NVRTC is unavailable and `MSCCLPP_REQUIRE_NVRTC=1` is set.
pub fn nvrtc_or_skip(test: &str) -> bool {
    match nvrtc() {
        Ok(()) => true,
        Err(e) => {
            if mscclpp_config::REQUIRE_NVRTC.get_or_default() {
                panic!("MSCCLPP_REQUIRE_NVRTC=1 but NVRTC is unavailable: {e}");
            }
            eprintln!(
                "\n*** SKIPPED {test}: NVRTC unavailable ({e}); set MSCCLPP_REQUIRE_NVRTC=1 to make this fail ***\n"
            );
            false
        }
    }
}

/// True when a CUDA driver and at least one GPU are usable.
pub fn gpu_available() -> bool {
    driver().is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_load_failure_becomes_the_error_that_says_what_to_install() {
        let no_lib = LoadFailure::NoLibrary("libcuda.so.1".into());
        let err = no_lib.to_error(false);
        assert!(matches!(err, Error::NoDriver), "{err}");
        assert!(err.to_string().contains("driver"), "{err}");
        let err = LoadFailure::NoLibrary("/opt/x/libnvrtc.so.13".into()).to_error(true);
        assert!(matches!(&err, Error::NoNvrtc { searched } if searched == "/opt/x/libnvrtc.so.13"), "{err}");
        assert!(err.to_string().contains("MSCCLPP_NVRTC_PATH"), "{err}");
        let err = LoadFailure::MissingSymbol("libcuda", "cuGraphLaunch".into()).to_error(false);
        assert!(err.to_string().contains("`cuGraphLaunch`"), "{err}");
        assert!(matches!(LoadFailure::NoDevice.to_error(false), Error::NoDevice));
    }

    #[test]
    fn the_driver_check_covers_every_wrapped_symbol() {
        assert!(DRIVER_SYMBOLS.len() > 50, "only {} driver symbols checked", DRIVER_SYMBOLS.len());
        for s in ["cuInit", "cuStreamSynchronize", "cuGraphLaunch", "cuFuncGetAttribute", "cuLaunchKernel"] {
            assert!(DRIVER_SYMBOLS.contains(&s), "{s} is not checked at load time");
        }
    }

    #[test]
    fn a_library_without_a_symbol_is_refused_by_name() {
        // libc is always loaded and has no CUDA symbols.
        let libc = open_forever(Path::new("libc.so.6")).expect("libc");
        let missing = check_symbols(libc, "libc", &["malloc", "cuInit"]).expect_err("cuInit is not in libc");
        assert!(matches!(missing, LoadFailure::MissingSymbol("libc", ref s) if s == "cuInit"), "{missing:?}");
        assert!(check_symbols(libc, "libc", &["malloc", "free"]).is_ok());
    }
}
