//! `libmscclpp_nccl.so`: the NCCL 2.28 C API. Preloaded into a program that uses NCCL (PyTorch with
//! `backend="nccl"`, for one), it runs all-reduce, all-gather, reduce-scatter and broadcast with mscclpp's
//! plans where they are faster and hands everything else to the real NCCL.
//!
//! The handle the application holds is the real NCCL communicator; our state lives beside it, keyed by it
//! ([`state`]), so a call on a handle we do not know, or one we do not accelerate, goes to the real library
//! unchanged ([`real`]). See docs/nccl.md for the design, the environment variables and the limits.

pub mod abi;
pub mod accel;
pub mod comm;
pub mod error;
pub mod exports;
pub mod group;
pub mod plans;
pub mod policy;
pub mod real;
pub mod state;
pub mod user_plans;

// The default collectives register themselves at link time; without this reference the linker drops them.
use mscclpp_algorithms as _;

pub use exports::EXPORTS;

/// How many programs the registry linked into this library holds (the default collectives register themselves
/// at load time). Not part of NCCL's API: the ABI check calls it to prove the registrations survived linking.
#[unsafe(no_mangle)]
pub extern "C" fn mscclpp_nccl_program_count() -> usize {
    mscclpp_lang::registry::programs().len()
}

/// Calls per collective and route over every communicator of this process (destroyed ones included), for tests
/// and benchmarks that read which path ran (not part of NCCL's API). Writes up to `len` counts to `out`, op-major
/// (all-reduce, all-gather, reduce-scatter, broadcast), route-minor (zero copy, registered, staged, window, NCCL),
/// and returns how many counts exist (20).
///
/// # Safety
/// `out` must be NULL or point to `len` writable `u64`s.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn mscclpp_nccl_path_counts(out: *mut u64, len: usize) -> usize {
    let totals = state::totals();
    if !out.is_null() {
        for (i, v) in totals.iter().take(len).enumerate() {
            // SAFETY: `i < len`, and the caller provides `len` writable counts.
            unsafe { *out.add(i) = *v };
        }
    }
    totals.len()
}

/// The host time per call spent inside this library's collective functions so far, per collective and path, as
/// the line `MSCCLPP_NCCL_LOG=info` prints at exit (measured only under that setting; empty otherwise), for scripts
/// that end without a normal exit (not part of NCCL's API). Writes up to `len - 1` bytes of it and a NUL to `out`
/// and returns the line's length in bytes (call with `len` 0 to size the buffer).
///
/// # Safety
/// `out` must be NULL or point to `len` writable bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn mscclpp_nccl_host_times(out: *mut std::ffi::c_char, len: usize) -> usize {
    let text = state::host_times();
    if !out.is_null() && len > 0 {
        let n = text.len().min(len - 1);
        // SAFETY: `n + 1 <= len` bytes are written, and the caller provides `len` writable bytes; the source is a
        // live string of at least `n` bytes that cannot overlap the caller's buffer.
        unsafe {
            std::ptr::copy_nonoverlapping(text.as_ptr().cast(), out, n);
            *out.add(n) = 0;
        }
    }
    text.len()
}

/// Whether this library would run a call itself (1) or hand it to NCCL (0): collective `op` (0 all-reduce, 1
/// all-gather, 2 reduce-scatter, 3 broadcast) of `piece_bytes` per rank (NCCL's count times the element size) in
/// NCCL data type `datatype` on `world` ranks, by the window and this machine's tuned table (installed when the
/// first communicator is set up; without a real NCCL every such call is ours). For tests that assert our path ran
/// where the table says ours is faster (not part of NCCL's API); -1 for an unknown operation or data type.
#[unsafe(no_mangle)]
pub extern "C" fn mscclpp_nccl_would_run(
    op: std::ffi::c_int,
    world: std::ffi::c_int,
    piece_bytes: u64,
    datatype: std::ffi::c_int,
) -> std::ffi::c_int {
    let Some(&op) = policy::Op::ALL.get(op as usize) else { return -1 };
    let types = match op {
        policy::Op::AllReduce | policy::Op::ReduceScatter => policy::element_type(datatype),
        _ => policy::byte_type(datatype),
    };
    let Some(dtype) = types else { return -1 };
    let world = world.max(1) as usize;
    let in_bytes = if op == policy::Op::ReduceScatter { piece_bytes * world as u64 } else { piece_bytes };
    std::ffi::c_int::from(policy::ours(op, world, piece_bytes, in_bytes, dtype))
}

/// Register an MSCCL++ JSON execution plan (NUL-terminated text) that this process's communicators try before
/// their own programs, after verifying it on the CPU (not part of NCCL's API; the hook for the Python module's plan
/// registry when both live in one process). Returns `ncclSuccess`, or `ncclInvalidArgument` with the parse error
/// or the verifier's finding as the text of `ncclGetLastError`. Calls whose plan was chosen before keep it.
///
/// # Safety
/// `json` must be NULL or a NUL-terminated string.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn mscclpp_nccl_register_plan(json: *const std::ffi::c_char) -> abi::NcclResult {
    if json.is_null() {
        return state::fail(abi::INVALID_ARGUMENT, "mscclpp_nccl_register_plan: json is NULL".into());
    }
    // SAFETY: checked non-null; the caller passes a NUL-terminated string.
    let text = unsafe { std::ffi::CStr::from_ptr(json) }.to_string_lossy();
    match user_plans::register_json(&text, "mscclpp_nccl_register_plan") {
        Ok(()) => abi::SUCCESS,
        Err(e) => state::fail(abi::INVALID_ARGUMENT, e.to_string()),
    }
}
