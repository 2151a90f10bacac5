//! The hand-written kernels of the examples compile with NVRTC against the library's headers, as the examples build
//! them at run time on a GPU host. No GPU needed; a loud SKIP line where NVRTC cannot be loaded (a FAIL with
//! `MSCCLPP_REQUIRE_NVRTC=1`).

use mscclpp_exec::sys::loader::nvrtc_or_skip;
use mscclpp_exec::sys::nvrtc::{CompileOptions, Output, compile};

#[test]
fn interp_cost_hand_written_kernels_compile_to_sm90_cubin() {
    if !nvrtc_or_skip("interp_cost_hand_written_kernels_compile_to_sm90_cubin") {
        return;
    }
    let source = include_str!("../examples/interp_cost.cu");
    let cubin = compile("interp_cost.cu", source, &CompileOptions::new("sm_90"), Output::Cubin)
        .unwrap_or_else(|e| panic!("examples/interp_cost.cu: {e}"));
    assert!(cubin.starts_with(b"\x7fELF"), "examples/interp_cost.cu: not an ELF cubin");
}
