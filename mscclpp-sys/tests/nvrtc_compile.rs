//! Device-code compile tests: every public header (alone), every built-in kernel and the layout probes (device
//! handles against the headers, the interpreter's records against its source) compile with NVRTC. No GPU needed.
//!
//! When NVRTC cannot be loaded these tests FAIL if `MSCCLPP_REQUIRE_NVRTC=1`, and otherwise print a loud SKIP
//! line.

use mscclpp_sys::layout::check;
use mscclpp_sys::loader::nvrtc_or_skip;
use mscclpp_sys::nvrtc::{CompileOptions, Output, compile};
use mscclpp_sys::sources::{HEADERS, KERNELS};

fn sm90() -> CompileOptions {
    CompileOptions::new("sm_90")
}

fn is_elf(bytes: &[u8]) -> bool {
    bytes.starts_with(b"\x7fELF")
}

#[test]
fn every_header_compiles_alone_to_sm90_cubin() {
    if !nvrtc_or_skip("every_header_compiles_alone_to_sm90_cubin") {
        return;
    }
    for (name, _) in HEADERS {
        let src = format!("#include \"{name}\"\nextern \"C\" __global__ void probe() {{}}\n");
        let cubin = compile(&format!("header_{name}.cu"), &src, &sm90(), Output::Cubin)
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(is_elf(&cubin), "{name}: not an ELF cubin");
    }
}

#[test]
fn every_builtin_kernel_compiles_to_sm90_cubin_and_ptx() {
    if !nvrtc_or_skip("every_builtin_kernel_compiles_to_sm90_cubin_and_ptx") {
        return;
    }
    for (name, src) in KERNELS {
        let cubin = compile(name, src, &sm90(), Output::Cubin).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(is_elf(&cubin), "{name}: not an ELF cubin");
        let ptx = compile(name, src, &sm90(), Output::Ptx).unwrap_or_else(|e| panic!("{name}: {e}"));
        let ptx = String::from_utf8_lossy(&ptx);
        assert!(ptx.contains(".target sm_90"), "{name}: PTX does not target sm_90");
    }
}

#[test]
fn device_handle_layouts_match_the_headers() {
    if !nvrtc_or_skip("device_handle_layouts_match_the_headers") {
        return;
    }
    let src = mscclpp_sys::handles::layout_probe_source();
    let cubin = compile("layout_probe.cu", &src, &sm90(), Output::Cubin).unwrap_or_else(|e| panic!("{e}"));
    assert!(is_elf(&cubin));
}

#[test]
fn record_layouts_match_the_interpreter_source() {
    assert_eq!(std::mem::size_of::<mscclpp_sys::device_plan::LaunchArgs>(), 88);
    if !nvrtc_or_skip("record_layouts_match_the_interpreter_source") {
        return;
    }
    let probe = mscclpp_sys::device_plan::layout_probe_source();
    check("interp_layout_probe.cu", &probe).unwrap_or_else(|e| panic!("{e}"));
    let bad = probe.replace("sizeof(mscclpp::interp::Op) == 40", "sizeof(mscclpp::interp::Op) == 44");
    assert_ne!(bad, probe, "the probe must assert the size of Op");
    let err = check("bad_probe.cu", &bad).expect_err("a wrong size must fail the probe").to_string();
    assert!(err.contains("size of mscclpp::interp::Op differs from Rust (40)"), "{err}");
}

#[test]
fn every_mirror_lists_fields() {
    let entries: Vec<_> =
        mscclpp_sys::handles::layouts().into_iter().chain(mscclpp_sys::device_plan::layouts()).collect();
    assert!(entries.len() >= 20, "only {} mirrored structs", entries.len());
    for e in &entries {
        assert!(!e.fields.is_empty(), "{} lists no field", e.cuda_name);
        assert!(e.fields.iter().all(|(_, off)| *off < e.size), "{}: a field offset beyond its size", e.cuda_name);
    }
}

#[test]
fn a_wrong_layout_is_caught() {
    if !nvrtc_or_skip("a_wrong_layout_is_caught") {
        return;
    }
    let src =
        "#include \"mscclpp/device.hpp\"\nstatic_assert(sizeof(mscclpp::MemoryChannelDeviceHandle) == 48, \"x\");\n";
    assert!(compile("bad_probe.cu", src, &sm90(), Output::Cubin).is_err());
}

#[test]
fn kernel_cache_returns_the_same_cubin() {
    if !nvrtc_or_skip("kernel_cache_returns_the_same_cubin") {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let cache = mscclpp_sys::nvrtc::KernelCache::new(Some(dir.path().to_path_buf()));
    let src = "#include \"mscclpp/device.hpp\"\nextern \"C\" __global__ void k(int* p) { *p = 1; }\n";
    let a = cache.cubin("k.cu", src, &sm90()).expect("compile");
    assert_eq!(std::fs::read_dir(dir.path()).expect("dir").count(), 1);
    let b = cache.cubin("k.cu", src, &sm90()).expect("cached");
    assert_eq!(a, b);
    let held = cache.contents();
    assert_eq!(held.by_arch, vec![("sm_90".to_string(), 1, a.len() as u64)]);
    assert!(mscclpp_sys::nvrtc::KernelCache::new(None).contents().by_arch.is_empty());
}

#[test]
fn a_compile_error_carries_the_log() {
    if !nvrtc_or_skip("a_compile_error_carries_the_log") {
        return;
    }
    let err = compile("broken.cu", "extern \"C\" __global__ void k() { undefined_thing(); }", &sm90(), Output::Cubin)
        .expect_err("must fail");
    let msg = err.to_string();
    assert!(msg.contains("undefined_thing"), "{msg}");
}
