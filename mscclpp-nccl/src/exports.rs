//! Every host function of NCCL 2.28.9's `nccl.h` (plus `ncclDevCommCreate`/`ncclDevCommDestroy` of
//! `nccl_device.h`), exported under its C name and its `pnccl*` alias with the header's exact signature.
//! Calls we do not accelerate, and every call on a communicator we do not know, go to the real NCCL unchanged.

#![allow(clippy::missing_safety_doc, clippy::too_many_arguments, clippy::unused_unit)]

use std::ffi::{c_char, c_int, c_void};

use crate::abi::{
    self, CudaStream, NcclComm, NcclConfig, NcclDataType, NcclRedOp, NcclResult, NcclScalarResidence, NcclUniqueId,
    NcclWindow,
};
use crate::accel::{self, Accel, Call, Outcome, Slot};
use crate::comm::{self, CommState};
use crate::policy::{self, Op};
use crate::state;
use crate::{forward, group, real};

/// Declares each exported function and its `pnccl*` alias, and [`EXPORTS`], the list of them.
macro_rules! api {
    ($(
        $(#[doc = $doc:literal])+
        fn $name:ident / $pname:ident ($($arg:ident : $ty:ty),* $(,)?) -> $ret:ty $body:block
    )*) => {
        $(
            $(#[doc = $doc])+
            ///
            /// Safety: the caller follows `nccl.h`'s contract for this function (valid pointers and handles).
            #[unsafe(no_mangle)]
            pub unsafe extern "C" fn $name($($arg: $ty),*) -> $ret $body

            #[doc = concat!("`p", stringify!($name), "`: the profiling alias of [`", stringify!($name), "`].")]
            #[unsafe(no_mangle)]
            pub unsafe extern "C" fn $pname($($arg: $ty),*) -> $ret {
                // SAFETY: the same contract as the unprefixed function.
                unsafe { $name($($arg),*) }
            }
        )*

        /// Every function this library exports (the unprefixed names; each is also exported as `pnccl*`).
        pub const EXPORTS: &[&str] = &[$(stringify!($name)),*];
    };
}

/// Run a collective ourselves when it is ours to run, else forward it (`fwd`); under `MSCCLPP_NCCL_LOG=info` its
/// host time is measured, ours or forwarded.
#[allow(clippy::too_many_arguments)]
fn collective(
    comm: NcclComm,
    op: Op,
    send: *const c_void,
    recv: *mut c_void,
    count: usize,
    dtype: NcclDataType,
    redop: Option<NcclRedOp>,
    root: c_int,
    stream: CudaStream,
    fwd: impl FnOnce() -> NcclResult,
) -> NcclResult {
    let start = state::host_clock();
    // The result, and where it ran (None: NCCL ran it; a failed communicator's answer is not timed).
    let (r, route) = 'call: {
        let Some(st) = comm::lookup(comm) else { break 'call (fwd(), None) };
        let failed = st.async_error.get();
        if failed != abi::SUCCESS {
            // A kernel of ours failed on this communicator (ncclGetLastError has said how): it is unusable.
            return failed;
        }
        let types = match op {
            Op::AllReduce | Op::ReduceScatter => policy::element_type(dtype),
            Op::AllGather | Op::Broadcast => policy::byte_type(dtype),
        };
        let reduce = match redop {
            Some(r) => policy::reduce_op(r),
            None => Some(mscclpp_lang::plan::ReduceOp::Sum),
        };
        let bytes = abi::element_bytes(dtype).map(|e| e as u64 * count as u64);
        let eligible = match (types, reduce, bytes) {
            (Some(elem), Some(reduce), Some(piece_bytes)) if root >= 0 => Some(Call {
                op,
                send: send as u64,
                recv: recv as u64,
                piece_bytes,
                elem,
                reduce,
                root: root as usize,
                stream,
            }),
            _ => None,
        };
        if let Some(call) = eligible
            && let Outcome::Ran(r, path) = comm::try_run(&st, &call)
        {
            st.count(op, path);
            if r != abi::SUCCESS {
                // Peers may be inside the kernel: the communicator is unusable; torch's watchdog sees it here.
                st.async_error.record(r);
            }
            break 'call (r, path);
        }
        st.count(op, None);
        (fwd(), None)
    };
    state::add_host_time(op, route, start);
    r
}

/// Register state for a communicator the real NCCL just created.
unsafe fn adopt(r: NcclResult, newcomm: *mut NcclComm) -> NcclResult {
    if (r == abi::SUCCESS || r == abi::IN_PROGRESS) && !newcomm.is_null() {
        // SAFETY: the caller's out-pointer, just written by NCCL.
        let c = unsafe { *newcomm };
        if !c.is_null() {
            comm::insert(CommState::new(c as usize, true, Slot::Untried));
            if r == abi::SUCCESS {
                comm::warm_up(c);
            }
        }
    }
    r
}

/// A communicator of ours when no real NCCL is loaded: the bootstrap id is ours (from `ncclGetUniqueId`).
unsafe fn init_standalone(comm: *mut NcclComm, nranks: c_int, id: &NcclUniqueId, rank: c_int) -> NcclResult {
    if nranks < 1 || rank < 0 || rank >= nranks {
        return state::fail(abi::INVALID_ARGUMENT, format!("rank {rank} of {nranks} ranks is out of range"));
    }
    let bytes: Vec<u8> = id.internal.iter().map(|c| *c as u8).collect();
    match Accel::standalone(rank as usize, nranks as usize, &bytes) {
        Ok(a) => {
            let handle = Box::into_raw(Box::new(0u64)) as usize;
            let st = CommState::new(handle, false, Slot::default());
            st.async_error.watch(a.probe());
            comm::start_watcher();
            if let Ok(mut slot) = st.accel.lock() {
                *slot = Slot::Ready(Box::new(a));
            }
            comm::insert(st);
            // SAFETY: checked non-null by the caller.
            unsafe { *comm = handle as NcclComm };
            abi::SUCCESS
        }
        Err(e) => {
            state::fail(e.result(), format!("mscclpp communicator (rank {rank} of {nranks}, no real NCCL loaded): {e}"))
        }
    }
}

/// Drop our state of `comm` (printing its counts under `MSCCLPP_NCCL_LOG=info`); true when the handle was ours
/// alone (no real NCCL communicator behind it). `abort`: do not wait for our last call.
fn release(comm: NcclComm, abort: bool) -> bool {
    let Some(st) = comm::remove(comm) else { return false };
    if abort
        && let Ok(mut slot) = st.accel.lock()
        && let Slot::Ready(a) = &mut *slot
    {
        a.abandon();
    }
    if state::log_info() {
        let why = match st.accel.lock().as_deref() {
            Ok(Slot::Off(e)) => format!(" (not accelerated: {e})"),
            _ => String::new(),
        };
        eprintln!("mscclpp-nccl: communicator {:#x}: {}{why}", st.handle, st.summary());
        let host = state::host_times();
        if !host.is_empty() {
            eprintln!("mscclpp-nccl: host time per call inside the library (process): {host}");
        }
    }
    if !st.real {
        // SAFETY: standalone handles are boxes made by `init_standalone`, freed once (the state was just removed).
        drop(unsafe { Box::from_raw(st.handle as *mut u64) });
        return true;
    }
    false
}

/// Rank, size and GPU of a standalone communicator.
fn standalone_info(comm: NcclComm) -> Option<(usize, usize, usize)> {
    let st = comm::lookup(comm)?;
    if st.real {
        return None;
    }
    match &*st.accel.lock().ok()? {
        Slot::Ready(a) => Some(a.info()),
        _ => None,
    }
}

/// The text NCCL uses for each result code.
fn error_string(r: NcclResult) -> *const c_char {
    match r {
        abi::SUCCESS => c"no error",
        abi::UNHANDLED_CUDA_ERROR => c"unhandled cuda error (run with NCCL_DEBUG=INFO for details)",
        abi::SYSTEM_ERROR => c"unhandled system error (run with NCCL_DEBUG=INFO for details)",
        abi::INTERNAL_ERROR => c"internal error - please report this issue to the NCCL developers",
        abi::INVALID_ARGUMENT => c"invalid argument (run with NCCL_DEBUG=WARN for details)",
        abi::INVALID_USAGE => c"invalid usage (run with NCCL_DEBUG=WARN for details)",
        abi::REMOTE_ERROR => c"remote process exited or there was a network error",
        abi::IN_PROGRESS => c"NCCL operation in progress",
        _ => c"unknown result code",
    }
    .as_ptr()
}

/// `ncclMemAlloc`'s memory when no real NCCL is loaded: cuMem allocations of ours, by address.
mod own_memory {
    use std::collections::HashMap;
    use std::ffi::c_void;
    use std::sync::{Mutex, OnceLock};

    use mscclpp_exec::RawGpuBuffer;
    use mscclpp_sys::driver::Device;

    use crate::abi::{self, NcclResult};
    use crate::state;

    fn live() -> &'static Mutex<HashMap<u64, RawGpuBuffer>> {
        static LIVE: OnceLock<Mutex<HashMap<u64, RawGpuBuffer>>> = OnceLock::new();
        LIVE.get_or_init(|| Mutex::new(HashMap::new()))
    }

    /// Allocate `size` bytes on the current GPU into `*ptr`.
    pub fn alloc(ptr: *mut *mut c_void, size: usize) -> NcclResult {
        if ptr.is_null() || size == 0 {
            return state::fail(abi::INVALID_ARGUMENT, format!("ncclMemAlloc: ptr {ptr:?}, size {size}"));
        }
        let made = Device::current().map_err(mscclpp_exec::Error::from).and_then(|d| RawGpuBuffer::new(&d, size));
        match (made, live().lock()) {
            (Ok(buf), Ok(mut map)) => {
                // SAFETY: checked non-null; the caller passes a writable pointer.
                unsafe { *ptr = buf.ptr() as *mut c_void };
                map.insert(buf.ptr(), buf);
                abi::SUCCESS
            }
            (Err(e), _) => state::fail(abi::UNHANDLED_CUDA_ERROR, format!("ncclMemAlloc of {size} B: {e}")),
            (_, Err(_)) => state::fail(abi::INTERNAL_ERROR, "ncclMemAlloc: the allocation table is poisoned".into()),
        }
    }

    /// Free `ptr` if it is ours (`None`: not ours).
    pub fn free(ptr: *mut c_void) -> Option<NcclResult> {
        let buf = live().lock().ok()?.remove(&(ptr as u64))?;
        drop(buf);
        Some(abi::SUCCESS)
    }
}

api! {
    /// `ncclMemAlloc`: the real NCCL's (a cuMem allocation its windows and ours both map); without one, a cuMem
    /// allocation of ours on the current GPU, shareable as a POSIX file descriptor.
    fn ncclMemAlloc / pncclMemAlloc(ptr: *mut *mut c_void, size: usize) -> NcclResult {
        if !real::available() {
            return own_memory::alloc(ptr, size);
        }
        forward!("ncclMemAlloc", fn(*mut *mut c_void, usize) -> NcclResult, ptr, size)
    }
    /// `ncclMemFree`: frees what [`ncclMemAlloc`] gave (ours without a real NCCL, else the real NCCL's).
    fn ncclMemFree / pncclMemFree(ptr: *mut c_void) -> NcclResult {
        if let Some(r) = own_memory::free(ptr) {
            return r;
        }
        forward!("ncclMemFree", fn(*mut c_void) -> NcclResult, ptr)
    }
    /// `ncclGetVersion`: the real NCCL's version (applications gate features on it); without one, the version of
    /// the header this library implements.
    fn ncclGetVersion / pncclGetVersion(version: *mut c_int) -> NcclResult {
        if !real::available() {
            if version.is_null() {
                return state::fail(abi::INVALID_ARGUMENT, "ncclGetVersion: version is NULL".into());
            }
            // SAFETY: checked non-null; the caller's int.
            unsafe { *version = abi::HEADER_VERSION };
            return abi::SUCCESS;
        }
        forward!("ncclGetVersion", fn(*mut c_int) -> NcclResult, version)
    }
    /// `ncclGetUniqueId`: the real NCCL's id; without one, an id of our own TCP bootstrap.
    fn ncclGetUniqueId / pncclGetUniqueId(unique_id: *mut NcclUniqueId) -> NcclResult {
        if !real::available() {
            if unique_id.is_null() {
                return state::fail(abi::INVALID_ARGUMENT, "ncclGetUniqueId: uniqueId is NULL".into());
            }
            return match mscclpp_exec::bootstrap::UniqueId::new() {
                Ok(id) => {
                    let bytes = accel::id_bytes(&id);
                    // SAFETY: checked non-null; the caller's 128-byte id.
                    let out = unsafe { &mut *unique_id };
                    for (o, b) in out.internal.iter_mut().zip(bytes) {
                        *o = b as c_char;
                    }
                    abi::SUCCESS
                }
                Err(e) => state::fail(abi::SYSTEM_ERROR, format!("ncclGetUniqueId (mscclpp bootstrap): {e}")),
            };
        }
        forward!("ncclGetUniqueId", fn(*mut NcclUniqueId) -> NcclResult, unique_id)
    }
    /// `ncclCommInitRankConfig`: the real NCCL creates the communicator (blocking or not, as configured) and we
    /// keep state beside it; without a real NCCL, a communicator of ours (completed before returning).
    fn ncclCommInitRankConfig / pncclCommInitRankConfig(
        comm: *mut NcclComm, nranks: c_int, comm_id: NcclUniqueId, rank: c_int, config: *mut NcclConfig
    ) -> NcclResult {
        if comm.is_null() {
            return state::fail(abi::INVALID_ARGUMENT, "ncclCommInitRankConfig: comm is NULL".into());
        }
        // SAFETY: NULL or the caller's config (NCCL's contract).
        if let Err(e) = unsafe { abi::ConfigView::read(config) } {
            return state::fail(abi::INVALID_ARGUMENT, format!("ncclCommInitRankConfig: {}", e.0));
        }
        if !real::available() {
            // SAFETY: checked non-null.
            return unsafe { init_standalone(comm, nranks, &comm_id, rank) };
        }
        let r = forward!(
            "ncclCommInitRankConfig",
            fn(*mut NcclComm, c_int, NcclUniqueId, c_int, *mut NcclConfig) -> NcclResult,
            comm, nranks, comm_id, rank, config
        );
        // SAFETY: the caller's out-pointer.
        unsafe { adopt(r, comm) }
    }
    /// `ncclCommInitRank`: as [`ncclCommInitRankConfig`] with the default (blocking) config.
    fn ncclCommInitRank / pncclCommInitRank(
        comm: *mut NcclComm, nranks: c_int, comm_id: NcclUniqueId, rank: c_int
    ) -> NcclResult {
        if comm.is_null() {
            return state::fail(abi::INVALID_ARGUMENT, "ncclCommInitRank: comm is NULL".into());
        }
        if !real::available() {
            // SAFETY: checked non-null.
            return unsafe { init_standalone(comm, nranks, &comm_id, rank) };
        }
        let r = forward!(
            "ncclCommInitRank", fn(*mut NcclComm, c_int, NcclUniqueId, c_int) -> NcclResult, comm, nranks, comm_id, rank
        );
        // SAFETY: the caller's out-pointer.
        unsafe { adopt(r, comm) }
    }
    /// `ncclCommInitAll` (one process, several GPUs): forwarded; these communicators are not accelerated.
    fn ncclCommInitAll / pncclCommInitAll(comm: *mut NcclComm, ndev: c_int, devlist: *const c_int) -> NcclResult {
        forward!("ncclCommInitAll", fn(*mut NcclComm, c_int, *const c_int) -> NcclResult, comm, ndev, devlist)
    }
    /// `ncclCommFinalize`: forwarded (our state goes at destroy or abort).
    fn ncclCommFinalize / pncclCommFinalize(comm: NcclComm) -> NcclResult {
        if standalone_info(comm).is_some() {
            return abi::SUCCESS;
        }
        forward!("ncclCommFinalize", fn(NcclComm) -> NcclResult, comm)
    }
    /// `ncclCommDestroy`: releases our state, then the real communicator.
    fn ncclCommDestroy / pncclCommDestroy(comm: NcclComm) -> NcclResult {
        if release(comm, false) {
            return abi::SUCCESS;
        }
        forward!("ncclCommDestroy", fn(NcclComm) -> NcclResult, comm)
    }
    /// `ncclCommAbort`: releases our state, then aborts the real communicator.
    fn ncclCommAbort / pncclCommAbort(comm: NcclComm) -> NcclResult {
        if release(comm, true) {
            return abi::SUCCESS;
        }
        forward!("ncclCommAbort", fn(NcclComm) -> NcclResult, comm)
    }
    /// `ncclCommRevoke`: forwarded.
    fn ncclCommRevoke / pncclCommRevoke(comm: NcclComm, revoke_flags: c_int) -> NcclResult {
        forward!("ncclCommRevoke", fn(NcclComm, c_int) -> NcclResult, comm, revoke_flags)
    }
    /// `ncclCommSplit`: forwarded (every parent rank enters, `NCCL_SPLIT_NOCOLOR` ones get NULL); the new
    /// communicator gets state of its own.
    fn ncclCommSplit / pncclCommSplit(
        comm: NcclComm, color: c_int, key: c_int, newcomm: *mut NcclComm, config: *mut NcclConfig
    ) -> NcclResult {
        let r = forward!(
            "ncclCommSplit", fn(NcclComm, c_int, c_int, *mut NcclComm, *mut NcclConfig) -> NcclResult,
            comm, color, key, newcomm, config
        );
        // SAFETY: the caller's out-pointer.
        unsafe { adopt(r, newcomm) }
    }
    /// `ncclCommShrink`: forwarded; the new communicator gets state of its own.
    fn ncclCommShrink / pncclCommShrink(
        comm: NcclComm, exclude_ranks_list: *mut c_int, exclude_ranks_count: c_int, newcomm: *mut NcclComm,
        config: *mut NcclConfig, shrink_flags: c_int
    ) -> NcclResult {
        let r = forward!(
            "ncclCommShrink", fn(NcclComm, *mut c_int, c_int, *mut NcclComm, *mut NcclConfig, c_int) -> NcclResult,
            comm, exclude_ranks_list, exclude_ranks_count, newcomm, config, shrink_flags
        );
        // SAFETY: the caller's out-pointer.
        unsafe { adopt(r, newcomm) }
    }
    /// `ncclCommInitRankScalable`: forwarded; the new communicator gets state of its own.
    fn ncclCommInitRankScalable / pncclCommInitRankScalable(
        newcomm: *mut NcclComm, nranks: c_int, myrank: c_int, n_id: c_int, comm_ids: *mut NcclUniqueId,
        config: *mut NcclConfig
    ) -> NcclResult {
        let r = forward!(
            "ncclCommInitRankScalable",
            fn(*mut NcclComm, c_int, c_int, c_int, *mut NcclUniqueId, *mut NcclConfig) -> NcclResult,
            newcomm, nranks, myrank, n_id, comm_ids, config
        );
        // SAFETY: the caller's out-pointer.
        unsafe { adopt(r, newcomm) }
    }
    /// `ncclGetErrorString`: the real NCCL's text; without one, the same texts from our table.
    fn ncclGetErrorString / pncclGetErrorString(result: NcclResult) -> *const c_char {
        if !real::available() {
            return error_string(result);
        }
        forward!("ncclGetErrorString", fn(NcclResult) -> *const c_char, result)
    }
    /// `ncclGetLastError`: our last error when it is newer than the real NCCL's, else the real NCCL's.
    fn ncclGetLastError / pncclGetLastError(comm: NcclComm) -> *const c_char {
        if let Some(p) = state::our_last_error() {
            return p;
        }
        if !real::available() {
            return c"".as_ptr();
        }
        forward!("ncclGetLastError", fn(NcclComm) -> *const c_char, comm)
    }
    /// `ncclResetDebugInit`: forwarded.
    fn ncclResetDebugInit / pncclResetDebugInit() -> () {
        forward!("ncclResetDebugInit", fn() -> ())
    }
    /// `ncclCommGetAsyncError`: an error of ours on this communicator, else the real NCCL's answer. Takes no
    /// lock that a blocking operation holds (a map lookup only).
    fn ncclCommGetAsyncError / pncclCommGetAsyncError(comm: NcclComm, async_error: *mut NcclResult) -> NcclResult {
        if async_error.is_null() {
            return state::fail(abi::INVALID_ARGUMENT, "ncclCommGetAsyncError: asyncError is NULL".into());
        }
        if let Some(st) = comm::lookup(comm) {
            let e = st.async_error.poll(|| format!("mscclpp-nccl: communicator {:#x}", st.handle));
            if e != abi::SUCCESS || !st.real {
                // SAFETY: checked non-null.
                unsafe { *async_error = e };
                return abi::SUCCESS;
            }
        }
        forward!("ncclCommGetAsyncError", fn(NcclComm, *mut NcclResult) -> NcclResult, comm, async_error)
    }
    /// `ncclCommCount`: forwarded (ours for a standalone communicator).
    fn ncclCommCount / pncclCommCount(comm: NcclComm, count: *mut c_int) -> NcclResult {
        if let Some((_, n, _)) = standalone_info(comm) && !count.is_null() {
            // SAFETY: checked non-null.
            unsafe { *count = n as c_int };
            return abi::SUCCESS;
        }
        forward!("ncclCommCount", fn(NcclComm, *mut c_int) -> NcclResult, comm, count)
    }
    /// `ncclCommCuDevice`: forwarded (ours for a standalone communicator).
    fn ncclCommCuDevice / pncclCommCuDevice(comm: NcclComm, device: *mut c_int) -> NcclResult {
        if let Some((_, _, d)) = standalone_info(comm) && !device.is_null() {
            // SAFETY: checked non-null.
            unsafe { *device = d as c_int };
            return abi::SUCCESS;
        }
        forward!("ncclCommCuDevice", fn(NcclComm, *mut c_int) -> NcclResult, comm, device)
    }
    /// `ncclCommUserRank`: forwarded (ours for a standalone communicator).
    fn ncclCommUserRank / pncclCommUserRank(comm: NcclComm, rank: *mut c_int) -> NcclResult {
        if let Some((r, _, _)) = standalone_info(comm) && !rank.is_null() {
            // SAFETY: checked non-null.
            unsafe { *rank = r as c_int };
            return abi::SUCCESS;
        }
        forward!("ncclCommUserRank", fn(NcclComm, *mut c_int) -> NcclResult, comm, rank)
    }
    /// `ncclCommRegister`: forwarded (our path registers no application buffer).
    fn ncclCommRegister / pncclCommRegister(
        comm: NcclComm, buff: *mut c_void, size: usize, handle: *mut *mut c_void
    ) -> NcclResult {
        forward!(
            "ncclCommRegister", fn(NcclComm, *mut c_void, usize, *mut *mut c_void) -> NcclResult, comm, buff, size, handle
        )
    }
    /// `ncclCommDeregister`: forwarded.
    fn ncclCommDeregister / pncclCommDeregister(comm: NcclComm, handle: *mut c_void) -> NcclResult {
        forward!("ncclCommDeregister", fn(NcclComm, *mut c_void) -> NcclResult, comm, handle)
    }
    /// `ncclCommWindowRegister`: registered with the real NCCL too (its symmetric kernels serve what we forward);
    /// a symmetric window (`NCCL_WIN_COLL_SYMMETRIC`) is also ours: calls on buffers inside it run any of our plans
    /// zero copy. On a communicator of ours alone, the window's handle is its start address.
    fn ncclCommWindowRegister / pncclCommWindowRegister(
        comm: NcclComm, buff: *mut c_void, size: usize, win: *mut NcclWindow, win_flags: c_int
    ) -> NcclResult {
        let st = comm::lookup(comm);
        let r = match &st {
            Some(s) if !s.real => {
                if win.is_null() || buff.is_null() {
                    return state::fail(abi::INVALID_ARGUMENT, "ncclCommWindowRegister: NULL buffer or window".into());
                }
                // SAFETY: checked non-null; the caller passes a writable window handle.
                unsafe { *win = buff };
                abi::SUCCESS
            }
            _ => forward!(
                "ncclCommWindowRegister", fn(NcclComm, *mut c_void, usize, *mut NcclWindow, c_int) -> NcclResult,
                comm, buff, size, win, win_flags
            ),
        };
        if r == abi::SUCCESS && win_flags & abi::WIN_COLL_SYMMETRIC != 0 && !win.is_null() && let Some(s) = &st {
            // SAFETY: checked non-null; NCCL (or we) just wrote the handle.
            let handle = unsafe { *win } as usize;
            comm::add_window(s, comm::WindowEntry { handle, base: buff as u64, size: size as u64 });
        }
        r
    }
    /// `ncclCommWindowDeregister`: ours forgotten (once the work queued on it has run), then the real NCCL's.
    fn ncclCommWindowDeregister / pncclCommWindowDeregister(comm: NcclComm, win: NcclWindow) -> NcclResult {
        let st = comm::lookup(comm);
        if let Some(s) = &st {
            comm::remove_window(s, win as usize);
            if !s.real {
                return abi::SUCCESS;
            }
        }
        forward!("ncclCommWindowDeregister", fn(NcclComm, NcclWindow) -> NcclResult, comm, win)
    }
    /// `ncclRedOpCreatePreMulSum`: forwarded (the operator lives on the real communicator; calls using it go to
    /// NCCL).
    fn ncclRedOpCreatePreMulSum / pncclRedOpCreatePreMulSum(
        op: *mut NcclRedOp, scalar: *mut c_void, datatype: NcclDataType, residence: NcclScalarResidence, comm: NcclComm
    ) -> NcclResult {
        forward!(
            "ncclRedOpCreatePreMulSum",
            fn(*mut NcclRedOp, *mut c_void, NcclDataType, NcclScalarResidence, NcclComm) -> NcclResult,
            op, scalar, datatype, residence, comm
        )
    }
    /// `ncclRedOpDestroy`: forwarded.
    fn ncclRedOpDestroy / pncclRedOpDestroy(op: NcclRedOp, comm: NcclComm) -> NcclResult {
        forward!("ncclRedOpDestroy", fn(NcclRedOp, NcclComm) -> NcclResult, op, comm)
    }
    /// `ncclReduce`: forwarded.
    fn ncclReduce / pncclReduce(
        sendbuff: *const c_void, recvbuff: *mut c_void, count: usize, datatype: NcclDataType, op: NcclRedOp,
        root: c_int, comm: NcclComm, stream: CudaStream
    ) -> NcclResult {
        forward!(
            "ncclReduce",
            fn(*const c_void, *mut c_void, usize, NcclDataType, NcclRedOp, c_int, NcclComm, CudaStream) -> NcclResult,
            sendbuff, recvbuff, count, datatype, op, root, comm, stream
        )
    }
    /// `ncclBcast`: an in-place broadcast (ours when eligible).
    fn ncclBcast / pncclBcast(
        buff: *mut c_void, count: usize, datatype: NcclDataType, root: c_int, comm: NcclComm, stream: CudaStream
    ) -> NcclResult {
        collective(comm, Op::Broadcast, buff, buff, count, datatype, None, root, stream, || {
            forward!(
                "ncclBcast", fn(*mut c_void, usize, NcclDataType, c_int, NcclComm, CudaStream) -> NcclResult,
                buff, count, datatype, root, comm, stream
            )
        })
    }
    /// `ncclBroadcast`: ours inside the size window (any root), else forwarded.
    fn ncclBroadcast / pncclBroadcast(
        sendbuff: *const c_void, recvbuff: *mut c_void, count: usize, datatype: NcclDataType, root: c_int,
        comm: NcclComm, stream: CudaStream
    ) -> NcclResult {
        collective(comm, Op::Broadcast, sendbuff, recvbuff, count, datatype, None, root, stream, || {
            forward!(
                "ncclBroadcast",
                fn(*const c_void, *mut c_void, usize, NcclDataType, c_int, NcclComm, CudaStream) -> NcclResult,
                sendbuff, recvbuff, count, datatype, root, comm, stream
            )
        })
    }
    /// `ncclAllReduce`: ours (sum, min, max; f16, bf16, f32, i32, u32, u8) inside the size window, else forwarded.
    fn ncclAllReduce / pncclAllReduce(
        sendbuff: *const c_void, recvbuff: *mut c_void, count: usize, datatype: NcclDataType, op: NcclRedOp,
        comm: NcclComm, stream: CudaStream
    ) -> NcclResult {
        collective(comm, Op::AllReduce, sendbuff, recvbuff, count, datatype, Some(op), 0, stream, || {
            forward!(
                "ncclAllReduce",
                fn(*const c_void, *mut c_void, usize, NcclDataType, NcclRedOp, NcclComm, CudaStream) -> NcclResult,
                sendbuff, recvbuff, count, datatype, op, comm, stream
            )
        })
    }
    /// `ncclReduceScatter`: ours (as [`ncclAllReduce`]) inside the size window, else forwarded.
    fn ncclReduceScatter / pncclReduceScatter(
        sendbuff: *const c_void, recvbuff: *mut c_void, recvcount: usize, datatype: NcclDataType, op: NcclRedOp,
        comm: NcclComm, stream: CudaStream
    ) -> NcclResult {
        collective(comm, Op::ReduceScatter, sendbuff, recvbuff, recvcount, datatype, Some(op), 0, stream, || {
            forward!(
                "ncclReduceScatter",
                fn(*const c_void, *mut c_void, usize, NcclDataType, NcclRedOp, NcclComm, CudaStream) -> NcclResult,
                sendbuff, recvbuff, recvcount, datatype, op, comm, stream
            )
        })
    }
    /// `ncclAllGather`: ours (any type, moved as bytes) inside the size window, else forwarded.
    fn ncclAllGather / pncclAllGather(
        sendbuff: *const c_void, recvbuff: *mut c_void, sendcount: usize, datatype: NcclDataType, comm: NcclComm,
        stream: CudaStream
    ) -> NcclResult {
        collective(comm, Op::AllGather, sendbuff, recvbuff, sendcount, datatype, None, 0, stream, || {
            forward!(
                "ncclAllGather",
                fn(*const c_void, *mut c_void, usize, NcclDataType, NcclComm, CudaStream) -> NcclResult,
                sendbuff, recvbuff, sendcount, datatype, comm, stream
            )
        })
    }
    /// `ncclAlltoAll`: forwarded.
    fn ncclAlltoAll / pncclAlltoAll(
        sendbuff: *const c_void, recvbuff: *mut c_void, count: usize, datatype: NcclDataType, comm: NcclComm,
        stream: CudaStream
    ) -> NcclResult {
        forward!(
            "ncclAlltoAll", fn(*const c_void, *mut c_void, usize, NcclDataType, NcclComm, CudaStream) -> NcclResult,
            sendbuff, recvbuff, count, datatype, comm, stream
        )
    }
    /// `ncclGather`: forwarded.
    fn ncclGather / pncclGather(
        sendbuff: *const c_void, recvbuff: *mut c_void, count: usize, datatype: NcclDataType, root: c_int,
        comm: NcclComm, stream: CudaStream
    ) -> NcclResult {
        forward!(
            "ncclGather",
            fn(*const c_void, *mut c_void, usize, NcclDataType, c_int, NcclComm, CudaStream) -> NcclResult,
            sendbuff, recvbuff, count, datatype, root, comm, stream
        )
    }
    /// `ncclScatter`: forwarded.
    fn ncclScatter / pncclScatter(
        sendbuff: *const c_void, recvbuff: *mut c_void, count: usize, datatype: NcclDataType, root: c_int,
        comm: NcclComm, stream: CudaStream
    ) -> NcclResult {
        forward!(
            "ncclScatter",
            fn(*const c_void, *mut c_void, usize, NcclDataType, c_int, NcclComm, CudaStream) -> NcclResult,
            sendbuff, recvbuff, count, datatype, root, comm, stream
        )
    }
    /// `ncclSend`: forwarded.
    fn ncclSend / pncclSend(
        sendbuff: *const c_void, count: usize, datatype: NcclDataType, peer: c_int, comm: NcclComm, stream: CudaStream
    ) -> NcclResult {
        forward!(
            "ncclSend", fn(*const c_void, usize, NcclDataType, c_int, NcclComm, CudaStream) -> NcclResult,
            sendbuff, count, datatype, peer, comm, stream
        )
    }
    /// `ncclRecv`: forwarded.
    fn ncclRecv / pncclRecv(
        recvbuff: *mut c_void, count: usize, datatype: NcclDataType, peer: c_int, comm: NcclComm, stream: CudaStream
    ) -> NcclResult {
        forward!(
            "ncclRecv", fn(*mut c_void, usize, NcclDataType, c_int, NcclComm, CudaStream) -> NcclResult,
            recvbuff, count, datatype, peer, comm, stream
        )
    }
    /// `ncclGroupStart`: forwarded; calls inside a group go to NCCL (without a real NCCL: a no-op).
    fn ncclGroupStart / pncclGroupStart() -> NcclResult {
        if !real::available() {
            group::enter();
            return abi::SUCCESS;
        }
        let r = forward!("ncclGroupStart", fn() -> NcclResult);
        if r == abi::SUCCESS {
            group::enter();
        }
        r
    }
    /// `ncclGroupEnd`: forwarded.
    fn ncclGroupEnd / pncclGroupEnd() -> NcclResult {
        group::leave();
        if !real::available() {
            return abi::SUCCESS;
        }
        forward!("ncclGroupEnd", fn() -> NcclResult)
    }
    /// `ncclGroupSimulateEnd`: forwarded.
    fn ncclGroupSimulateEnd / pncclGroupSimulateEnd(sim_info: *mut c_void) -> NcclResult {
        group::leave();
        forward!("ncclGroupSimulateEnd", fn(*mut c_void) -> NcclResult, sim_info)
    }
    /// `ncclDevCommCreate` (`nccl_device.h`): forwarded.
    fn ncclDevCommCreate / pncclDevCommCreate(
        comm: NcclComm, reqs: *const c_void, out_dev_comm: *mut c_void
    ) -> NcclResult {
        forward!("ncclDevCommCreate", fn(NcclComm, *const c_void, *mut c_void) -> NcclResult, comm, reqs, out_dev_comm)
    }
    /// `ncclDevCommDestroy` (`nccl_device.h`): forwarded.
    fn ncclDevCommDestroy / pncclDevCommDestroy(comm: NcclComm, dev_comm: *const c_void) -> NcclResult {
        forward!("ncclDevCommDestroy", fn(NcclComm, *const c_void) -> NcclResult, comm, dev_comm)
    }
}
