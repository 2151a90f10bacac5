//! The library against the real NCCL 2.28.9 (`nvidia-nccl-cu13==2.28.9` from PyPI, installed into `.venv-cuda`
//! by scripts/test.sh): our export list equals the header's function list, the built `.so` exports exactly those
//! names (and their `pnccl*` aliases), and a C program compiled against the real `nccl.h` and linked to our
//! library checks forwarding, version, error strings, unique ids, config handling and a clean init failure on a
//! machine without GPUs (tests/c/abi_check.c), with the real library found both ways.
//!
//! Without the wheel or a C compiler the tests fail when `CI` is set and otherwise print a loud `SKIPPED:` line.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use mscclpp_nccl::EXPORTS;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("workspace root").to_path_buf()
}

/// The wheel's `nvidia/nccl` folder under `.venv-cuda`, or why it is missing.
fn nccl_wheel() -> Result<PathBuf, String> {
    let lib = root().join(".venv-cuda/lib");
    let entries = std::fs::read_dir(&lib).map_err(|e| format!("{}: {e}", lib.display()))?;
    for e in entries.flatten() {
        let dir = e.path().join("site-packages/nvidia/nccl");
        if dir.join("include/nccl.h").is_file() && dir.join("lib/libnccl.so.2").is_file() {
            return Ok(dir);
        }
    }
    Err(format!("no nvidia/nccl wheel under {}", lib.display()))
}

/// The wheel, or `None` after reporting (a failure under CI).
fn wheel_or_skip() -> Option<PathBuf> {
    match nccl_wheel() {
        Ok(p) => Some(p),
        Err(e) => {
            let msg = format!(
                "{e}; run scripts/test.sh, or `.venv-cuda/bin/pip install nvidia-nccl-cu13==2.28.9` in the workspace"
            );
            if std::env::var_os("CI").is_some() {
                panic!("{msg} (failing because CI is set)");
            }
            eprintln!("SKIPPED: {msg}");
            None
        }
    }
}

/// Function names declared in a header: `ncclResult_t  ncclX(`, `const char* ncclX(`, `void ncclX(`, and
/// `... __host__ ncclResult_t ncclX(` (nccl_device.h); the `pnccl` aliases are left out.
fn declared(header: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    for line in header.lines() {
        let line = line.trim_start();
        if line.starts_with("//") || line.starts_with('*') || line.starts_with("#") {
            continue;
        }
        let Some(paren) = line.find('(') else { continue };
        let head = &line[..paren];
        if !(head.contains("ncclResult_t") || head.starts_with("const char*") || head.starts_with("void")) {
            continue;
        }
        let Some(name) = head.split_whitespace().last() else { continue };
        let name = name.trim_start_matches('*');
        if name.starts_with("nccl") && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            names.insert(name.to_string());
        }
    }
    names
}

/// The defined dynamic symbols of a shared library that start with `nccl` or `pnccl`.
fn dynamic_symbols(lib: &Path) -> BTreeSet<String> {
    let out = Command::new("nm").arg("-D").arg("--defined-only").arg(lib).output().expect("running nm");
    assert!(out.status.success(), "nm -D {} failed: {}", lib.display(), String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().nth(2))
        .filter(|s| s.starts_with("nccl") || s.starts_with("pnccl"))
        .map(str::to_string)
        .collect()
}

/// Build the cdylib (the test binary links the rlib only) and return its path.
fn our_library() -> PathBuf {
    let status = Command::new(env!("CARGO"))
        .args(["build", "-q", "-p", "mscclpp-nccl", "--lib"])
        .current_dir(root())
        .status()
        .expect("running cargo build");
    assert!(status.success(), "cargo build -p mscclpp-nccl --lib failed");
    // target/<profile>/deps/<this test> -> target/<profile>
    let exe = std::env::current_exe().expect("test path");
    let profile_dir = exe.parent().and_then(Path::parent).expect("target/<profile>");
    let lib = profile_dir.join("libmscclpp_nccl.so");
    assert!(lib.is_file(), "{} was not built", lib.display());
    lib
}

#[test]
fn exports_equal_the_header_function_list() {
    let Some(wheel) = wheel_or_skip() else { return };
    let header = std::fs::read_to_string(wheel.join("include/nccl.h")).expect("nccl.h");
    let device = std::fs::read_to_string(wheel.join("include/nccl_device/core.h")).expect("nccl_device/core.h");
    let mut want = declared(&header);
    let dev: BTreeSet<String> =
        declared(&device).into_iter().filter(|n| n == "ncclDevCommCreate" || n == "ncclDevCommDestroy").collect();
    assert_eq!(dev.len(), 2, "nccl_device/core.h declares ncclDevCommCreate and ncclDevCommDestroy");
    want.extend(dev);
    assert!(want.len() >= 40, "parsed only {} functions from nccl.h: {want:?}", want.len());
    let ours: BTreeSet<String> = EXPORTS.iter().map(|s| s.to_string()).collect();
    assert_eq!(ours.len(), EXPORTS.len(), "EXPORTS lists a name twice");
    assert_eq!(ours, want, "our exports differ from the header's functions");

    // Every one of them is a function of the real library too.
    let real = dynamic_symbols(&wheel.join("lib/libnccl.so.2"));
    for name in &ours {
        assert!(real.contains(name), "{name} is not exported by the real libnccl.so.2");
        assert!(real.contains(&format!("p{name}")), "p{name} is not exported by the real libnccl.so.2");
    }

    // The built library exports exactly these names and their aliases.
    let built = dynamic_symbols(&our_library());
    let expected: BTreeSet<String> = ours.iter().flat_map(|n| [n.clone(), format!("p{n}")]).collect();
    assert_eq!(built, expected, "libmscclpp_nccl.so exports other nccl symbols than the header declares");
}

#[test]
fn c_program_against_the_real_header() {
    let Some(wheel) = wheel_or_skip() else { return };
    let lib = our_library();
    let lib_dir = lib.parent().expect("lib dir");
    let out_dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    let exe = out_dir.join("abi_check");
    let c_dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/c");
    let cc = Command::new("cc")
        .args(["-Wall", "-Werror", "-Wno-deprecated-declarations", "-o"])
        .arg(&exe)
        .arg(c_dir.join("abi_check.c"))
        .arg(format!("-I{}", c_dir.join("cuda-stub").display()))
        .arg(format!("-I{}", wheel.join("include").display()))
        .arg(format!("-L{}", lib_dir.display()))
        .args(["-lmscclpp_nccl", "-ldl"])
        .output();
    let cc = match cc {
        Ok(o) => o,
        Err(e) => {
            if std::env::var_os("CI").is_some() {
                panic!("no C compiler (cc): {e} (failing because CI is set)");
            }
            eprintln!("SKIPPED: no C compiler (cc): {e}");
            return;
        }
    };
    assert!(cc.status.success(), "compiling abi_check.c failed:\n{}", String::from_utf8_lossy(&cc.stderr));
    let real = wheel.join("lib/libnccl.so.2");
    let real = real.to_str().expect("utf-8 path");
    let mut ran = 0;
    for (mode, env_path) in [("preload", None), ("env", Some(real)), ("none", None)] {
        let mut cmd = Command::new(&exe);
        cmd.arg(mode).env("LD_LIBRARY_PATH", lib_dir).env_remove("MSCCLPP_NCCL_LIB_PATH");
        if mode != "none" {
            cmd.arg(real);
        }
        if let Some(p) = env_path {
            cmd.env("MSCCLPP_NCCL_LIB_PATH", p);
        }
        let out = cmd.output().expect("running abi_check");
        let text = String::from_utf8_lossy(&out.stdout);
        println!("--- abi_check {mode}\n{text}{}", String::from_utf8_lossy(&out.stderr));
        assert!(out.status.success(), "abi_check {mode} failed:\n{text}");
        assert!(!text.contains("FAILED"), "abi_check {mode}:\n{text}");
        assert!(text.matches("ok: ").count() >= 8, "abi_check {mode} checked too little:\n{text}");
        ran += 1;
    }
    assert_eq!(ran, 3);
}

#[test]
fn the_header_parser_finds_declarations() {
    let text = "ncclResult_t  ncclGetVersion(int *version);\nncclResult_t pncclGetVersion(int *version);\n\
                const char*  ncclGetErrorString(ncclResult_t result);\nvoid  ncclResetDebugInit();\n\
                // ncclResult_t ncclNotThis(int);\nNCCL_EXTERN_C __host__ ncclResult_t ncclDevCommCreate(ncclComm_t);\n\
                #define NCCL_VERSION(X,Y,Z) ((X))\n";
    let names: Vec<String> = declared(text).into_iter().collect();
    assert_eq!(names, ["ncclDevCommCreate", "ncclGetErrorString", "ncclGetVersion", "ncclResetDebugInit"]);
}
