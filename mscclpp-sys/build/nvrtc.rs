//! The build script's NVRTC: found like the crate finds it at run time (an explicit path, the loader's search
//! path, CUDA installations, the workspace's and Python's `nvidia-cuda-nvrtc` wheels), loaded with libloading, and
//! called for exactly what embedding needs: a cubin of one source for one architecture.

use std::ffi::{CString, c_char, c_int};
use std::path::{Path, PathBuf};

type Prog = *mut std::ffi::c_void;
type CreateFn = unsafe extern "C" fn(
    *mut Prog,
    *const c_char,
    *const c_char,
    c_int,
    *const *const c_char,
    *const *const c_char,
) -> c_int;
type CompileFn = unsafe extern "C" fn(Prog, c_int, *const *const c_char) -> c_int;
type SizeFn = unsafe extern "C" fn(Prog, *mut usize) -> c_int;
type GetFn = unsafe extern "C" fn(Prog, *mut c_char) -> c_int;
type DestroyFn = unsafe extern "C" fn(*mut Prog) -> c_int;
type VersionFn = unsafe extern "C" fn(*mut c_int, *mut c_int) -> c_int;

/// A loaded NVRTC.
pub struct Nvrtc {
    lib: libloading::Library,
    /// Where it was loaded from.
    pub path: PathBuf,
}

/// Candidate library files, most explicit first: `MSCCLPP_NVRTC_PATH` alone when set; else the folders of
/// `LD_LIBRARY_PATH`, then the places the run-time loader also searches, with the workspace's `.venv-cuda` (what
/// `scripts/test.sh` installs) first among the Python sites.
fn candidates(manifest_dir: &Path) -> Vec<PathBuf> {
    if let Ok(p) = std::env::var("MSCCLPP_NVRTC_PATH") {
        return vec![PathBuf::from(p)];
    }
    let ld: Vec<PathBuf> = std::env::var("LD_LIBRARY_PATH")
        .map(|path| path.split(':').filter(|d| !d.is_empty()).map(PathBuf::from).collect())
        .unwrap_or_default();
    let sites: Vec<PathBuf> = manifest_dir.parent().map(|ws| ws.join(".venv-cuda/lib")).into_iter().collect();
    crate::nvrtc_paths::nvrtc_candidates(&ld, &sites)
}

impl Nvrtc {
    /// The first NVRTC that loads, or the list of places searched.
    pub fn find(manifest_dir: &Path) -> Result<Nvrtc, String> {
        let cands = candidates(manifest_dir);
        for path in &cands {
            if !path.exists() {
                continue;
            }
            // SAFETY: loading NVRTC runs its initialisers, which have no preconditions.
            if let Ok(lib) = unsafe { libloading::Library::new(path) } {
                return Ok(Nvrtc { lib, path: path.clone() });
            }
        }
        let searched: Vec<String> = cands.iter().take(8).map(|p| p.display().to_string()).collect();
        Err(format!("no libnvrtc.so.13 found (searched {} ...)", searched.join(", ")))
    }

    fn sym<T: Copy>(&self, name: &str) -> Result<T, String> {
        // SAFETY: every type requested matches the symbol's C declaration in nvrtc.h.
        unsafe { self.lib.get::<T>(name.as_bytes()) }.map(|s| *s).map_err(|e| format!("{name}: {e}"))
    }

    /// `(major, minor)`.
    pub fn version(&self) -> Result<(i32, i32), String> {
        let f: VersionFn = self.sym("nvrtcVersion")?;
        let (mut a, mut b) = (0, 0);
        // SAFETY: valid out-pointers.
        let rc = unsafe { f(&mut a, &mut b) };
        if rc != 0 {
            return Err(format!("nvrtcVersion failed ({rc})"));
        }
        Ok((a, b))
    }

    /// Compile `source` with the in-memory `headers` to a cubin for `arch`.
    pub fn cubin(
        &self,
        name: &str,
        source: &str,
        headers: &[(String, String)],
        options: &[String],
    ) -> Result<Vec<u8>, String> {
        let create: CreateFn = self.sym("nvrtcCreateProgram")?;
        let compile: CompileFn = self.sym("nvrtcCompileProgram")?;
        let log_size: SizeFn = self.sym("nvrtcGetProgramLogSize")?;
        let get_log: GetFn = self.sym("nvrtcGetProgramLog")?;
        let cubin_size: SizeFn = self.sym("nvrtcGetCUBINSize")?;
        let get_cubin: GetFn = self.sym("nvrtcGetCUBIN")?;
        let destroy: DestroyFn = self.sym("nvrtcDestroyProgram")?;
        let cstr = |s: &str| CString::new(s).map_err(|_| format!("{name}: NUL byte in {s:?}"));
        let src = cstr(source)?;
        let cname = cstr(name)?;
        let hn: Vec<CString> = headers.iter().map(|(n, _)| cstr(n)).collect::<Result<_, _>>()?;
        let hb: Vec<CString> = headers.iter().map(|(_, b)| cstr(b)).collect::<Result<_, _>>()?;
        let hn_p: Vec<*const c_char> = hn.iter().map(|c| c.as_ptr()).collect();
        let hb_p: Vec<*const c_char> = hb.iter().map(|c| c.as_ptr()).collect();
        let opts: Vec<CString> = options.iter().map(|o| cstr(o)).collect::<Result<_, _>>()?;
        let opt_p: Vec<*const c_char> = opts.iter().map(|c| c.as_ptr()).collect();
        let mut prog: Prog = std::ptr::null_mut();
        // SAFETY: NUL-terminated strings that outlive the call; both header arrays have hn_p.len() entries.
        let rc = unsafe {
            create(&mut prog, src.as_ptr(), cname.as_ptr(), hn_p.len() as c_int, hb_p.as_ptr(), hn_p.as_ptr())
        };
        if rc != 0 {
            return Err(format!("{name}: nvrtcCreateProgram failed ({rc})"));
        }
        // SAFETY: live program; options outlive the call.
        let rc = unsafe { compile(prog, opt_p.len() as c_int, opt_p.as_ptr()) };
        let result = if rc != 0 {
            let mut n = 0usize;
            // SAFETY: live program, valid out-pointer.
            unsafe { log_size(prog, &mut n) };
            let mut log = vec![0u8; n.max(1)];
            // SAFETY: `log` holds at least `n` bytes.
            unsafe { get_log(prog, log.as_mut_ptr().cast()) };
            Err(format!("{name} ({}): compilation failed:\n{}", options.join(" "), String::from_utf8_lossy(&log)))
        } else {
            let mut n = 0usize;
            // SAFETY: live, compiled program; valid out-pointer.
            unsafe { cubin_size(prog, &mut n) };
            let mut out = vec![0u8; n];
            // SAFETY: `out` holds exactly `n` bytes.
            let rc = unsafe { get_cubin(prog, out.as_mut_ptr().cast()) };
            if rc != 0 { Err(format!("{name}: nvrtcGetCUBIN failed ({rc})")) } else { Ok(out) }
        };
        // SAFETY: created above, destroyed once.
        unsafe { destroy(&mut prog) };
        result
    }
}
