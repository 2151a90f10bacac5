//! Every user-facing kernel source under examples/ compiles to an sm_90 cubin through the kernel launcher's
//! options (embedded headers, no CUDA toolkit). Fails when NVRTC is missing and MSCCLPP_REQUIRE_NVRTC=1,
//! otherwise prints a loud SKIP line.

use mscclpp_exec::KernelBuilder;
use mscclpp_exec::sys::nvrtc::KernelCache;

#[test]
fn example_kernels_compile_to_sm90_cubin() {
    if !mscclpp_exec::sys::loader::nvrtc_or_skip("example_kernels_compile_to_sm90_cubin") {
        return;
    }
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples");
    let mut n = 0;
    for entry in std::fs::read_dir(&dir).expect("examples dir") {
        let path = entry.expect("entry").path();
        if path.extension().is_some_and(|e| e == "cu") {
            let cubin = KernelBuilder::from_file(&path)
                .expect("read")
                .cache(KernelCache::new(None))
                .compile_cubin("sm_90")
                .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            assert!(cubin.starts_with(b"\x7fELF"), "{}", path.display());
            n += 1;
        }
    }
    assert!(n >= 1, "no .cu files found in {}", dir.display());
}
