//! Whether the CUDA context of this process is lost: set by the driver wrappers ([`super::result`]) when a call
//! reports a sticky error (a kernel trapped or faulted), read by every owner of a driver handle before it frees it.

use cudarc::driver::sys;

/// Set once a driver call reported an error after which the CUDA context of this process cannot be used again.
static CONTEXT_LOST: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Whether a driver call has reported a sticky error (a kernel trapped or faulted, e.g. a device wait that ran
/// past `MSCCLPP_WAIT_TIMEOUT_MS`): every later call in the context fails, so owners skip freeing their handles
/// (the process exits and the driver reclaims them) rather than call into a lost context.
pub(crate) fn lost() -> bool {
    CONTEXT_LOST.load(std::sync::atomic::Ordering::Acquire)
}

/// Set `lost` when `rc` loses the context.
fn note_in(lost: &std::sync::atomic::AtomicBool, rc: sys::CUresult) {
    if is_sticky(rc) {
        lost.store(true, std::sync::atomic::Ordering::Release);
    }
}

/// The errors after which a context is lost (the driver documents them as leaving the process's context in an
/// inconsistent state that persists until the process exits).
pub(crate) fn is_sticky(rc: sys::CUresult) -> bool {
    use sys::CUresult as R;
    matches!(
        rc,
        R::CUDA_ERROR_ILLEGAL_ADDRESS
            | R::CUDA_ERROR_LAUNCH_FAILED
            | R::CUDA_ERROR_LAUNCH_TIMEOUT
            | R::CUDA_ERROR_HARDWARE_STACK_ERROR
            | R::CUDA_ERROR_ILLEGAL_INSTRUCTION
            | R::CUDA_ERROR_MISALIGNED_ADDRESS
            | R::CUDA_ERROR_INVALID_ADDRESS_SPACE
            | R::CUDA_ERROR_INVALID_PC
            | R::CUDA_ERROR_ASSERT
            | R::CUDA_ERROR_ECC_UNCORRECTABLE
    )
}

/// Remember a driver error: a sticky one marks the context lost.
pub(crate) fn note(rc: sys::CUresult) {
    note_in(&CONTEXT_LOST, rc);
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    #[test]
    fn a_sticky_error_marks_the_context_lost_and_an_ordinary_one_does_not() {
        use cudarc::driver::sys::CUresult as R;
        assert!(super::is_sticky(R::CUDA_ERROR_LAUNCH_FAILED) && super::is_sticky(R::CUDA_ERROR_ILLEGAL_ADDRESS));
        assert!(!super::is_sticky(R::CUDA_ERROR_NOT_READY) && !super::is_sticky(R::CUDA_ERROR_INVALID_VALUE));
        // A flag of its own: the process's flag must stay clear for the GPU tests of this binary.
        let lost = std::sync::atomic::AtomicBool::new(false);
        super::note_in(&lost, R::CUDA_ERROR_NOT_READY);
        assert!(!lost.load(std::sync::atomic::Ordering::Acquire), "an ordinary error marked the context lost");
        super::note_in(&lost, R::CUDA_ERROR_LAUNCH_FAILED);
        assert!(lost.load(std::sync::atomic::Ordering::Acquire), "a trapped kernel did not mark the context lost");
    }

    #[test]
    fn every_owner_of_a_driver_handle_skips_freeing_it_in_a_lost_context() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/driver");
        let mut files: Vec<std::path::PathBuf> = std::fs::read_dir(&dir)
            .expect("read src/driver")
            .map(|e| e.expect("entry").path())
            .filter(|p| p.extension().is_some_and(|e| e == "rs"))
            .collect();
        files.sort();
        let mut drops = 0;
        for f in &files {
            let text = std::fs::read_to_string(f).expect("read");
            for part in text.split("impl Drop for ").skip(1) {
                let body = &part[..part.find("\n}\n").unwrap_or(part.len())];
                drops += 1;
                assert!(
                    body.contains("context_lost()"),
                    "{}: `impl Drop for {}` frees a handle without checking context_lost()",
                    f.display(),
                    part.lines().next().unwrap_or("")
                );
            }
        }
        assert!(drops >= 8, "only {drops} Drop impls found under {}", dir.display());
    }
}
