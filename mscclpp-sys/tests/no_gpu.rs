//! Every entry point either works or returns an error that says what is missing; nothing panics. Which of the
//! two is checked depends on the machine; the GPU-present side is also asserted on its own by an ignored test
//! (the GPU suite runs it with `--include-ignored`).

use mscclpp_sys::Error;
use mscclpp_sys::driver::{Device, device_count};
use mscclpp_sys::loader::gpu_available;

/// Held by every test here that touches the driver or the environment, so that `set_var` never runs while
/// another test of this binary reads the environment.
static ENV: std::sync::Mutex<()> = std::sync::Mutex::new(());

#[test]
fn device_entry_points_agree_with_the_loader_and_never_panic() {
    let _env = ENV.lock().unwrap_or_else(|p| p.into_inner());
    match Device::open(0) {
        Ok(dev) => {
            assert!(gpu_available(), "a GPU opened but the loader reports none");
            let n = device_count().expect("device count with a GPU open");
            assert!(n >= 1, "GPU 0 opened but {n} devices are counted");
            assert_eq!(dev.ordinal(), 0);
        }
        Err(err) => {
            assert!(!gpu_available(), "the loader reports a GPU but GPU 0 does not open: {err}");
            assert!(matches!(err, Error::NoDriver | Error::NoDevice), "{err}");
            assert!(device_count().is_err());
            let msg = err.to_string();
            assert!(msg.contains("driver") || msg.contains("GPU"), "{msg}");
        }
    }
}

#[test]
#[ignore = "needs a GPU"]
fn a_gpu_opens_and_answers_queries() {
    let _env = ENV.lock().unwrap_or_else(|p| p.into_inner());
    let dev = Device::open(0).unwrap_or_else(|e| panic!("{e}"));
    assert!(gpu_available());
    assert!(device_count().expect("count") >= 1);
    assert!(dev.arch().expect("arch").starts_with("sm_"));
    assert!(dev.multiprocessor_count().expect("SM count") >= 1);
    assert!(dev.max_shared_memory_per_block_optin().expect("opt-in shared memory") >= 48 * 1024);
    assert!(mscclpp_sys::driver::driver_version().expect("driver version") >= 1000);
    assert!(matches!(Device::open(device_count().expect("count")), Err(Error::DeviceOutOfRange { .. })));
}

#[test]
fn nvls_is_refused_when_disabled_by_the_environment() {
    let _env = ENV.lock().unwrap_or_else(|p| p.into_inner());
    // SAFETY: every other test of this binary holds `ENV` while it runs, so no thread reads the environment
    // concurrently.
    unsafe { std::env::set_var("NCCL_NVLS_ENABLE", "0") };
    let err = mscclpp_sys::driver::nvls_allowed().expect_err("disabled");
    assert!(err.to_string().contains("NCCL_NVLS_ENABLE=0"), "{err}");
}
