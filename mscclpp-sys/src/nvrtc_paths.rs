//! Where NVRTC is commonly installed: CUDA toolkits and the PyPI wheel (`nvidia-cuda-nvrtc`). Shared, file for
//! file, by the build script (which compiles the embedded kernels) and the run-time loader, so both look in the
//! same places.

use std::path::{Path, PathBuf};

/// Library files to try, in order: `libnvrtc.so.13` and `libnvrtc.so` in each of `first_dirs`, then in the CUDA
/// toolkit folders (`CUDA_HOME`, `CUDA_PATH`, `/usr/local/cuda`), then in the `nvidia/cu13/lib` folder of every
/// Python 3 site under `site_roots` (each a `lib` folder holding `python3.*`), the active virtual environment and
/// the system prefixes.
pub fn nvrtc_candidates(first_dirs: &[PathBuf], site_roots: &[PathBuf]) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = first_dirs.to_vec();
    for var in ["CUDA_HOME", "CUDA_PATH"] {
        if let Ok(home) = std::env::var(var) {
            dirs.push(Path::new(&home).join("lib64"));
            dirs.push(Path::new(&home).join("lib"));
        }
    }
    dirs.push("/usr/local/cuda/lib64".into());
    dirs.push("/usr/local/cuda/targets/x86_64-linux/lib".into());
    dirs.push("/usr/local/cuda-13.0/lib64".into());
    let mut roots: Vec<PathBuf> = site_roots.to_vec();
    if let Ok(venv) = std::env::var("VIRTUAL_ENV") {
        roots.push(Path::new(&venv).join("lib"));
    }
    roots.extend(["/usr/local/lib", "/usr/lib", "/opt/torch/.venv/lib"].map(PathBuf::from));
    for root in roots {
        let Ok(entries) = std::fs::read_dir(&root) else { continue };
        let mut pythons: Vec<PathBuf> = entries
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().starts_with("python3"))
            .map(|e| e.path())
            .collect();
        pythons.sort();
        for py in pythons {
            for sub in ["site-packages", "dist-packages"] {
                dirs.push(py.join(sub).join("nvidia/cu13/lib"));
            }
        }
    }
    dirs.iter().flat_map(|d| [d.join("libnvrtc.so.13"), d.join("libnvrtc.so")]).collect()
}
