//! On a machine without a GPU or driver, every entry point returns an error that says so; nothing panics.

use mscclpp_sys::Error;
use mscclpp_sys::driver::{Device, device_count};

#[test]
fn no_driver_is_an_error_not_a_panic() {
    if mscclpp_sys::loader::gpu_available() {
        eprintln!("a GPU is present: this test checks the GPU-less path only");
        return;
    }
    let err = Device::open(0).expect_err("no GPU here");
    assert!(matches!(err, Error::NoDriver | Error::NoDevice), "{err}");
    assert!(device_count().is_err());
    let msg = err.to_string();
    assert!(msg.contains("driver") || msg.contains("GPU"), "{msg}");
}

#[test]
fn nvls_is_refused_when_disabled_by_the_environment() {
    // SAFETY: this test binary sets the variable before any thread reads the environment concurrently.
    unsafe { std::env::set_var("NCCL_NVLS_ENABLE", "0") };
    let err = mscclpp_sys::driver::nvls_allowed().expect_err("disabled");
    assert!(err.to_string().contains("NCCL_NVLS_ENABLE=0"), "{err}");
}
