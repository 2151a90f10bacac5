//! `mscclpp info` prints the configuration and what it can or cannot query, and succeeds either way.

use std::process::{Command, Output};

fn info(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_mscclpp"));
    cmd.arg("info").args(args);
    // The multicast verdict depends only on what the test sets (CI and the GPU hosts set NCCL_NVLS_ENABLE=0).
    for k in ["NCCL_NVLS_ENABLE", "MSCCLPP_DISABLE_NVLS", "MSCCLPP_FORCE_DISABLE_NVLS"] {
        cmd.env_remove(k);
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().expect("run mscclpp info")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn info_prints_the_configuration_and_the_gpus_or_why_there_are_none() {
    let out = info(&[], &[("MSCCLPP_WAIT_TIMEOUT_MS", "500"), ("MSCCLPP_PORT_DIRECT_MAX", "lots")]);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "exit {:?}\n{stdout}\n{}", out.status, text(&out.stderr));
    for v in mscclpp_config::VARIABLES {
        assert!(stdout.contains(v.meta().name), "{} missing from:\n{stdout}", v.meta().name);
    }
    assert!(stdout.contains("MSCCLPP_WAIT_TIMEOUT_MS") && stdout.contains("500 ms  (environment)"), "{stdout}");
    assert!(stdout.contains("MSCCLPP_KERNEL_CACHE") && stdout.contains("on  (default)"), "{stdout}");
    assert!(stdout.contains("INVALID: MSCCLPP_PORT_DIRECT_MAX=\"lots\""), "{stdout}");
    assert!(stdout.contains("\nCUDA driver: ") && stdout.contains("\nNVRTC: "), "{stdout}");
    assert!(stdout.contains("\nInfiniBand: ") && stdout.contains("\nMulticast (NVLS): allowed"), "{stdout}");
    if mscclpp_exec::sys::loader::gpu_available() {
        assert!(stdout.contains("  GPU 0: "), "a GPU is present but not listed:\n{stdout}");
    } else {
        assert!(stdout.contains("\nGPUs: none (cannot query the GPUs: "), "no clear no-GPU line:\n{stdout}");
        assert!(stdout.contains("CUDA driver: unavailable: "), "{stdout}");
    }
}

#[test]
fn info_json_is_one_object_with_every_part() {
    let out = info(&["--json"], &[("NCCL_NVLS_ENABLE", "0"), ("MSCCLPP_BOOTSTRAP_SECRET", "s3cr3t")]);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "exit {:?}\n{stdout}\n{}", out.status, text(&out.stderr));
    assert!(!stdout.contains("s3cr3t"), "the secret is printed:\n{stdout}");
    let v: serde_json::Value = serde_json::from_str(&stdout).expect("JSON");
    let config = v["config"].as_array().expect("config array");
    assert_eq!(config.len(), mscclpp_config::VARIABLES.len());
    let nvls = config.iter().find(|c| c["name"] == "NCCL_NVLS_ENABLE").expect("NCCL_NVLS_ENABLE");
    assert_eq!((nvls["value"].as_str(), nvls["source"].as_str()), (Some("off"), Some("environment")));
    for key in ["driver", "nvrtc", "gpus", "infiniband"] {
        let probe = v[key].as_object().expect(key);
        assert!(probe.contains_key("ok") || probe.contains_key("unavailable"), "{key}: {probe:?}");
    }
    assert!(v["peers"].is_array());
    assert_eq!(v["multicast"]["allowed"], false);
    assert!(v["multicast"]["reason"].as_str().is_some_and(|r| r.contains("NCCL_NVLS_ENABLE=0")), "{}", v["multicast"]);
}

#[test]
fn info_names_the_embedded_kernels_and_what_the_kernel_cache_holds() {
    let dir = tempfile::tempdir().expect("tempdir");
    let kernels = dir.path().join("kernels");
    std::fs::create_dir_all(&kernels).expect("mkdir");
    std::fs::write(kernels.join("0123abcd.sm_89.cubin"), vec![0u8; 4096]).expect("write");
    let cache = dir.path().to_string_lossy().into_owned();
    let out = info(&[], &[("MSCCLPP_CACHE_DIR", cache.as_str())]);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "exit {:?}\n{stdout}", out.status);
    assert!(stdout.contains(&format!("Kernel cache: {}: 1 cubins for sm_89 (4 KiB)", kernels.display())), "{stdout}");
    let embedded = mscclpp_exec::sys::embedded::archs(mscclpp_exec::sys::interpreter::SOURCE_NAME);
    if embedded.is_empty() {
        assert!(stdout.contains("Embedded kernels: none ("), "{stdout}");
    } else {
        let line = format!("Embedded kernels: {} (NVRTC ", embedded.join(", "));
        assert!(stdout.contains(&line) && stdout.contains("built from this binary's sources"), "{stdout}");
    }
    let json = info(&["--json"], &[("MSCCLPP_CACHE_DIR", cache.as_str())]);
    let v: serde_json::Value = serde_json::from_str(&text(&json.stdout)).expect("JSON");
    assert_eq!(v["kernels"]["cache"][0]["arch"], "sm_89");
    assert_eq!(v["kernels"]["embedded_archs"].as_array().map(|a| a.len()), Some(embedded.len()));
}
