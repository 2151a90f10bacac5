//! The only place that calls the raw CUDA driver functions (`cudarc::driver::sys`): one thin wrapper per driver
//! symbol, returning a [`DriverResult`] and giving out-parameters back as values.
//!
//! The wrappers are declared through [`driver_api!`], which also lists every symbol they call in [`SYMBOLS`]; the
//! loader ([`crate::loader::driver`]) checks that list before the first call, so a driver lacking one of them is
//! a clear [`Error::MissingSymbol`](crate::Error::MissingSymbol) instead of a panic inside cudarc.
//!
//! Every `unsafe fn` here has the same contract as the driver function it wraps: the handles it takes are live
//! (and, where the driver needs it, belong to the current context), and every pointer is valid for the sizes
//! given, for as long as the driver uses it.

use std::ffi::{c_char, c_void};

use cudarc::driver::sys;

/// A failed driver call: which symbol and the raw `CUresult`. Cheap to build; turned into a full
/// [`Error::Cuda`](crate::Error::Cuda) (with the driver's own name and text) by `?`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct DriverError {
    /// The driver symbol that failed.
    pub call: &'static str,
    /// What it returned.
    pub code: sys::CUresult,
}

/// Result of one driver call.
pub(crate) type DriverResult<T> = std::result::Result<T, DriverError>;

/// `Ok(value)` on `CUDA_SUCCESS`. An error that leaves the context unusable is remembered
/// ([`super::context_lost`]).
fn ok<T>(call: &'static str, rc: sys::CUresult, value: T) -> DriverResult<T> {
    if rc == sys::CUresult::CUDA_SUCCESS {
        Ok(value)
    } else {
        super::lost::note(rc);
        Err(DriverError { call, code: rc })
    }
}

/// Declares the wrappers, each introduced by the driver symbol it calls, and [`SYMBOLS`], the list of them.
macro_rules! driver_api {
    ($( $sym:ident => $item:item )*) => {
        /// Every driver symbol the wrappers of this module call (one per wrapper): what the loader checks.
        pub(crate) const SYMBOLS: &[&str] = &[$(stringify!($sym)),*];
        $( $item )*
    };
}

driver_api! {
    cuInit =>
    /// Initialise the driver.
    pub(crate) fn init() -> DriverResult<()> {
        // SAFETY: cuInit has no preconditions.
        ok("cuInit", unsafe { sys::cuInit(0) }, ())
    }

    cuDriverGetVersion =>
    /// The driver version, `major * 1000 + minor * 10`.
    pub(crate) fn driver_get_version() -> DriverResult<i32> {
        let mut v = 0;
        // SAFETY: valid out-pointer.
        ok("cuDriverGetVersion", unsafe { sys::cuDriverGetVersion(&mut v) }, v)
    }

    cuGetErrorName =>
    /// The name of an error code (a static NUL-terminated string), or null.
    pub(crate) fn get_error_name(code: sys::CUresult) -> DriverResult<*const c_char> {
        let mut p = std::ptr::null();
        // SAFETY: valid out-pointer; the driver writes a pointer to a static string or nothing.
        ok("cuGetErrorName", unsafe { sys::cuGetErrorName(code, &mut p) }, p)
    }

    cuGetErrorString =>
    /// The description of an error code (a static NUL-terminated string), or null.
    pub(crate) fn get_error_string(code: sys::CUresult) -> DriverResult<*const c_char> {
        let mut p = std::ptr::null();
        // SAFETY: as for cuGetErrorName.
        ok("cuGetErrorString", unsafe { sys::cuGetErrorString(code, &mut p) }, p)
    }

    cuDeviceGet =>
    /// The device handle of ordinal `ordinal`.
    pub(crate) fn device_get(ordinal: i32) -> DriverResult<sys::CUdevice> {
        let mut dev = 0;
        // SAFETY: valid out-pointer; an out-of-range ordinal is an error code.
        ok("cuDeviceGet", unsafe { sys::cuDeviceGet(&mut dev, ordinal) }, dev)
    }

    cuDeviceGetCount =>
    /// Number of visible devices.
    pub(crate) fn device_get_count() -> DriverResult<i32> {
        let mut n = 0;
        // SAFETY: valid out-pointer.
        ok("cuDeviceGetCount", unsafe { sys::cuDeviceGetCount(&mut n) }, n)
    }

    cuDeviceGetAttribute =>
    /// An integer attribute of `dev`.
    pub(crate) fn device_get_attribute(attr: sys::CUdevice_attribute, dev: sys::CUdevice) -> DriverResult<i32> {
        let mut v = 0;
        // SAFETY: valid out-pointer; an invalid device is an error code.
        ok("cuDeviceGetAttribute", unsafe { sys::cuDeviceGetAttribute(&mut v, attr, dev) }, v)
    }

    cuDeviceGetName =>
    /// Write the NUL-terminated name of `dev` into `buf`.
    pub(crate) fn device_get_name(buf: &mut [c_char], dev: sys::CUdevice) -> DriverResult<()> {
        let len = i32::try_from(buf.len()).unwrap_or(i32::MAX);
        // SAFETY: the driver writes at most `len` bytes into `buf`.
        ok("cuDeviceGetName", unsafe { sys::cuDeviceGetName(buf.as_mut_ptr(), len, dev) }, ())
    }

    cuDeviceCanAccessPeer =>
    /// Whether `dev` can map memory of `peer`.
    pub(crate) fn device_can_access_peer(dev: sys::CUdevice, peer: sys::CUdevice) -> DriverResult<bool> {
        let mut v = 0;
        // SAFETY: valid out-pointer; invalid devices are error codes.
        ok("cuDeviceCanAccessPeer", unsafe { sys::cuDeviceCanAccessPeer(&mut v, dev, peer) }, v != 0)
    }

    cuDeviceTotalMem_v2 =>
    /// Total memory of `dev`, in bytes.
    pub(crate) fn device_total_mem(dev: sys::CUdevice) -> DriverResult<usize> {
        let mut bytes = 0usize;
        // SAFETY: valid out-pointer; an invalid device is an error code.
        ok("cuDeviceTotalMem_v2", unsafe { sys::cuDeviceTotalMem_v2(&mut bytes, dev) }, bytes)
    }

    cuDeviceGetP2PAttribute =>
    /// An attribute of the link from `from` to `to`.
    pub(crate) fn device_get_p2p_attribute(
        attr: sys::CUdevice_P2PAttribute,
        from: sys::CUdevice,
        to: sys::CUdevice,
    ) -> DriverResult<i32> {
        let mut v = 0i32;
        // SAFETY: valid out-pointer; invalid devices are error codes.
        ok("cuDeviceGetP2PAttribute", unsafe { sys::cuDeviceGetP2PAttribute(&mut v, attr, from, to) }, v)
    }

    cuDevicePrimaryCtxRetain =>
    /// Retain the primary context of `dev`.
    pub(crate) fn device_primary_ctx_retain(dev: sys::CUdevice) -> DriverResult<sys::CUcontext> {
        let mut ctx = std::ptr::null_mut();
        // SAFETY: valid out-pointer; an invalid device is an error code.
        ok("cuDevicePrimaryCtxRetain", unsafe { sys::cuDevicePrimaryCtxRetain(&mut ctx, dev) }, ctx)
    }

    cuCtxSetCurrent =>
    /// Make `ctx` current on this thread.
    pub(crate) unsafe fn ctx_set_current(ctx: sys::CUcontext) -> DriverResult<()> {
        // SAFETY: the caller passes a live context.
        ok("cuCtxSetCurrent", unsafe { sys::cuCtxSetCurrent(ctx) }, ())
    }

    cuCtxGetDevice =>
    /// The device of the context current on this thread (an error when none is).
    pub(crate) fn ctx_get_device() -> DriverResult<sys::CUdevice> {
        let mut d = 0;
        // SAFETY: a valid out-pointer.
        ok("cuCtxGetDevice", unsafe { sys::cuCtxGetDevice(&mut d) }, d)
    }

    cuCtxEnablePeerAccess =>
    /// Let the current context access memory of `peer`.
    pub(crate) unsafe fn ctx_enable_peer_access(peer: sys::CUcontext) -> DriverResult<()> {
        // SAFETY: the caller passes a live context; no flags.
        ok("cuCtxEnablePeerAccess", unsafe { sys::cuCtxEnablePeerAccess(peer, 0) }, ())
    }

    cuMemAlloc_v2 =>
    /// Allocate `bytes` of device memory in the current context.
    pub(crate) fn mem_alloc(bytes: usize) -> DriverResult<sys::CUdeviceptr> {
        let mut ptr = 0;
        // SAFETY: valid out-pointer.
        ok("cuMemAlloc_v2", unsafe { sys::cuMemAlloc_v2(&mut ptr, bytes) }, ptr)
    }

    cuMemFree_v2 =>
    /// Free memory from [`mem_alloc`].
    pub(crate) unsafe fn mem_free(ptr: sys::CUdeviceptr) -> DriverResult<()> {
        // SAFETY: the caller frees its own allocation once.
        ok("cuMemFree_v2", unsafe { sys::cuMemFree_v2(ptr) }, ())
    }

    cuMemHostAlloc =>
    /// Allocate `bytes` of pinned host memory.
    pub(crate) fn mem_host_alloc(bytes: usize, flags: u32) -> DriverResult<*mut c_void> {
        let mut p = std::ptr::null_mut();
        // SAFETY: valid out-pointer.
        ok("cuMemHostAlloc", unsafe { sys::cuMemHostAlloc(&mut p, bytes, flags) }, p)
    }

    cuMemHostGetDevicePointer_v2 =>
    /// The device address of mapped pinned host memory.
    pub(crate) unsafe fn mem_host_get_device_pointer(host: *mut c_void) -> DriverResult<sys::CUdeviceptr> {
        let mut d = 0;
        // SAFETY: the caller passes memory from cuMemHostAlloc with DEVICEMAP.
        ok("cuMemHostGetDevicePointer_v2", unsafe { sys::cuMemHostGetDevicePointer_v2(&mut d, host, 0) }, d)
    }

    cuMemFreeHost =>
    /// Free memory from [`mem_host_alloc`].
    pub(crate) unsafe fn mem_free_host(host: *mut c_void) -> DriverResult<()> {
        // SAFETY: the caller frees its own allocation once.
        ok("cuMemFreeHost", unsafe { sys::cuMemFreeHost(host) }, ())
    }

    cuMemGetAddressRange_v2 =>
    /// Base and size of the allocation that contains `ptr`.
    pub(crate) fn mem_get_address_range(ptr: sys::CUdeviceptr) -> DriverResult<(sys::CUdeviceptr, usize)> {
        let (mut base, mut size) = (0, 0);
        // SAFETY: valid out-pointers; the driver only inspects the address.
        ok("cuMemGetAddressRange_v2", unsafe { sys::cuMemGetAddressRange_v2(&mut base, &mut size, ptr) }, (base, size))
    }

    cuPointerGetAttribute =>
    /// The driver's unique id of the allocation that contains `ptr` (never reused within the process).
    pub(crate) fn pointer_buffer_id(ptr: sys::CUdeviceptr) -> DriverResult<u64> {
        let mut id = 0u64;
        let attr = sys::CUpointer_attribute::CU_POINTER_ATTRIBUTE_BUFFER_ID;
        // SAFETY: the attribute is a 64-bit integer written to a valid out-pointer; the driver only inspects
        // the address.
        ok("cuPointerGetAttribute", unsafe { sys::cuPointerGetAttribute((&mut id as *mut u64).cast(), attr, ptr) }, id)
    }

    cuMemcpyHtoD_v2 =>
    /// Synchronous host-to-device copy of `src`.
    pub(crate) unsafe fn memcpy_htod(dst: sys::CUdeviceptr, src: &[u8]) -> DriverResult<()> {
        // SAFETY: `src` is a valid slice; the caller owns `src.len()` bytes at `dst`.
        ok("cuMemcpyHtoD_v2", unsafe { sys::cuMemcpyHtoD_v2(dst, src.as_ptr().cast(), src.len()) }, ())
    }

    cuMemcpyDtoH_v2 =>
    /// Synchronous device-to-host copy into `dst`.
    pub(crate) unsafe fn memcpy_dtoh(dst: &mut [u8], src: sys::CUdeviceptr) -> DriverResult<()> {
        // SAFETY: `dst` is a valid, exclusive slice; the caller owns `dst.len()` bytes at `src`.
        ok("cuMemcpyDtoH_v2", unsafe { sys::cuMemcpyDtoH_v2(dst.as_mut_ptr().cast(), src, dst.len()) }, ())
    }

    cuMemcpyDtoDAsync_v2 =>
    /// Queue a device-to-device copy on `stream`.
    pub(crate) unsafe fn memcpy_dtod_async(
        dst: sys::CUdeviceptr,
        src: sys::CUdeviceptr,
        bytes: usize,
        stream: sys::CUstream,
    ) -> DriverResult<()> {
        // SAFETY: forwarded to the caller's contract.
        ok("cuMemcpyDtoDAsync_v2", unsafe { sys::cuMemcpyDtoDAsync_v2(dst, src, bytes, stream) }, ())
    }

    cuMemcpyHtoDAsync_v2 =>
    /// Queue a host-to-device copy on `stream`.
    pub(crate) unsafe fn memcpy_htod_async(
        dst: sys::CUdeviceptr,
        src: *const c_void,
        bytes: usize,
        stream: sys::CUstream,
    ) -> DriverResult<()> {
        // SAFETY: forwarded to the caller's contract.
        ok("cuMemcpyHtoDAsync_v2", unsafe { sys::cuMemcpyHtoDAsync_v2(dst, src, bytes, stream) }, ())
    }

    cuMemcpyDtoHAsync_v2 =>
    /// Queue a device-to-host copy on `stream`.
    pub(crate) unsafe fn memcpy_dtoh_async(
        dst: *mut c_void,
        src: sys::CUdeviceptr,
        bytes: usize,
        stream: sys::CUstream,
    ) -> DriverResult<()> {
        // SAFETY: forwarded to the caller's contract.
        ok("cuMemcpyDtoHAsync_v2", unsafe { sys::cuMemcpyDtoHAsync_v2(dst, src, bytes, stream) }, ())
    }

    cuMemsetD8_v2 =>
    /// Set `bytes` bytes at `ptr` to `value` (may return before the memset ran).
    pub(crate) unsafe fn memset_d8(ptr: sys::CUdeviceptr, value: u8, bytes: usize) -> DriverResult<()> {
        // SAFETY: the caller owns `bytes` bytes at `ptr`.
        ok("cuMemsetD8_v2", unsafe { sys::cuMemsetD8_v2(ptr, value, bytes) }, ())
    }

    cuMemsetD8Async =>
    /// Queue a memset on `stream`.
    pub(crate) unsafe fn memset_d8_async(
        ptr: sys::CUdeviceptr,
        value: u8,
        bytes: usize,
        stream: sys::CUstream,
    ) -> DriverResult<()> {
        // SAFETY: forwarded to the caller's contract.
        ok("cuMemsetD8Async", unsafe { sys::cuMemsetD8Async(ptr, value, bytes, stream) }, ())
    }

    cuIpcGetMemHandle =>
    /// The legacy IPC handle of the allocation starting at `base`.
    pub(crate) unsafe fn ipc_get_mem_handle(base: sys::CUdeviceptr) -> DriverResult<sys::CUipcMemHandle> {
        // SAFETY: a plain byte array; zero is a valid value.
        let mut handle: sys::CUipcMemHandle = unsafe { std::mem::zeroed() };
        // SAFETY: valid out-pointer; the caller passes the base of a cuMemAlloc allocation.
        ok("cuIpcGetMemHandle", unsafe { sys::cuIpcGetMemHandle(&mut handle, base) }, handle)
    }

    cuIpcOpenMemHandle_v2 =>
    /// Map a peer's allocation from its legacy IPC handle.
    pub(crate) unsafe fn ipc_open_mem_handle(
        handle: sys::CUipcMemHandle,
        flags: u32,
    ) -> DriverResult<sys::CUdeviceptr> {
        let mut base = 0;
        // SAFETY: valid out-pointer; the handle's validity is the caller's contract.
        ok("cuIpcOpenMemHandle_v2", unsafe { sys::cuIpcOpenMemHandle_v2(&mut base, handle, flags) }, base)
    }

    cuIpcCloseMemHandle =>
    /// Unmap a mapping from [`ipc_open_mem_handle`].
    pub(crate) unsafe fn ipc_close_mem_handle(base: sys::CUdeviceptr) -> DriverResult<()> {
        // SAFETY: the caller closes its own mapping once.
        ok("cuIpcCloseMemHandle", unsafe { sys::cuIpcCloseMemHandle(base) }, ())
    }

    cuMemCreate =>
    /// Create a VMM allocation handle of `size` bytes.
    pub(crate) fn mem_create(
        size: usize,
        prop: &sys::CUmemAllocationProp,
    ) -> DriverResult<sys::CUmemGenericAllocationHandle> {
        let mut handle = 0;
        // SAFETY: valid property and out-pointer.
        ok("cuMemCreate", unsafe { sys::cuMemCreate(&mut handle, size, prop, 0) }, handle)
    }

    cuMemRelease =>
    /// Release a VMM allocation handle.
    pub(crate) unsafe fn mem_release(handle: sys::CUmemGenericAllocationHandle) -> DriverResult<()> {
        // SAFETY: the caller releases its own handle once.
        ok("cuMemRelease", unsafe { sys::cuMemRelease(handle) }, ())
    }

    cuMemExportToShareableHandle =>
    /// Export a VMM handle as a POSIX file descriptor.
    pub(crate) unsafe fn mem_export_to_posix_fd(handle: sys::CUmemGenericAllocationHandle) -> DriverResult<i32> {
        let mut fd: i32 = -1;
        // SAFETY: for POSIX_FILE_DESCRIPTOR the out-parameter is an int; the handle is the caller's.
        let rc = unsafe {
            sys::cuMemExportToShareableHandle(
                (&mut fd as *mut i32).cast(),
                handle,
                sys::CUmemAllocationHandleType::CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR,
                0,
            )
        };
        ok("cuMemExportToShareableHandle", rc, fd)
    }

    cuMemImportFromShareableHandle =>
    /// Import a VMM handle from a POSIX file descriptor.
    pub(crate) unsafe fn mem_import_from_posix_fd(fd: i32) -> DriverResult<sys::CUmemGenericAllocationHandle> {
        let mut handle = 0;
        // SAFETY: for POSIX fds the "OS handle" argument is the descriptor value itself, cast to a pointer.
        let rc = unsafe {
            sys::cuMemImportFromShareableHandle(
                &mut handle,
                fd as isize as *mut c_void,
                sys::CUmemAllocationHandleType::CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR,
            )
        };
        ok("cuMemImportFromShareableHandle", rc, handle)
    }

    cuMemRetainAllocationHandle =>
    /// The VMM allocation handle mapped at `ptr` (a new reference the caller releases), or an error for memory
    /// that no cuMem mapping holds (`cuMemAlloc` memory, host memory).
    pub(crate) fn mem_retain_allocation_handle(ptr: sys::CUdeviceptr) -> DriverResult<sys::CUmemGenericAllocationHandle> {
        let mut handle = 0;
        // SAFETY: a valid out-pointer; the driver only inspects the address.
        let rc = unsafe { sys::cuMemRetainAllocationHandle(&mut handle, ptr as usize as *mut c_void) };
        ok("cuMemRetainAllocationHandle", rc, handle)
    }

    cuMemGetAllocationPropertiesFromHandle =>
    /// The handle types a VMM allocation was created to be exported as (`requestedHandleTypes`, a bit mask of
    /// `CUmemAllocationHandleType` values).
    pub(crate) fn mem_requested_handle_types(handle: sys::CUmemGenericAllocationHandle) -> DriverResult<u32> {
        let mut prop = std::mem::MaybeUninit::<sys::CUmemAllocationProp>::zeroed();
        // SAFETY: a valid out-pointer to storage of the struct's size; the handle is the caller's.
        let rc = unsafe { sys::cuMemGetAllocationPropertiesFromHandle(prop.as_mut_ptr(), handle) };
        // SAFETY: the struct holds integers (transparent newtypes) and one pointer, for which the zeroed (then
        // written) bytes are valid values.
        let prop = unsafe { prop.assume_init() };
        ok("cuMemGetAllocationPropertiesFromHandle", rc, prop.requestedHandleTypes.0)
    }

    cuMemAddressReserve =>
    /// Reserve `size` bytes of device address space.
    pub(crate) fn mem_address_reserve(size: usize) -> DriverResult<sys::CUdeviceptr> {
        let mut ptr = 0;
        // SAFETY: valid out-pointer; default alignment, any address, no flags.
        ok("cuMemAddressReserve", unsafe { sys::cuMemAddressReserve(&mut ptr, size, 0, 0, 0) }, ptr)
    }

    cuMemAddressFree =>
    /// Free a reservation from [`mem_address_reserve`].
    pub(crate) unsafe fn mem_address_free(ptr: sys::CUdeviceptr, size: usize) -> DriverResult<()> {
        // SAFETY: the caller frees its own reservation once.
        ok("cuMemAddressFree", unsafe { sys::cuMemAddressFree(ptr, size) }, ())
    }

    cuMemMap =>
    /// Map `handle` at the reserved range `[ptr, ptr + size)`.
    pub(crate) unsafe fn mem_map(
        ptr: sys::CUdeviceptr,
        size: usize,
        handle: sys::CUmemGenericAllocationHandle,
    ) -> DriverResult<()> {
        // SAFETY: forwarded to the caller's contract; offset 0, no flags.
        ok("cuMemMap", unsafe { sys::cuMemMap(ptr, size, 0, handle, 0) }, ())
    }

    cuMemUnmap =>
    /// Unmap `[ptr, ptr + size)`.
    pub(crate) unsafe fn mem_unmap(ptr: sys::CUdeviceptr, size: usize) -> DriverResult<()> {
        // SAFETY: the caller unmaps its own mapping once.
        ok("cuMemUnmap", unsafe { sys::cuMemUnmap(ptr, size) }, ())
    }

    cuMemSetAccess =>
    /// Grant access to the mapped range `[ptr, ptr + size)`.
    pub(crate) unsafe fn mem_set_access(
        ptr: sys::CUdeviceptr,
        size: usize,
        access: &sys::CUmemAccessDesc,
    ) -> DriverResult<()> {
        // SAFETY: one valid descriptor; the range is the caller's.
        ok("cuMemSetAccess", unsafe { sys::cuMemSetAccess(ptr, size, access, 1) }, ())
    }

    cuMemGetAllocationGranularity =>
    /// The allocation granularity for `prop`.
    pub(crate) fn mem_get_allocation_granularity(
        prop: &sys::CUmemAllocationProp,
        option: sys::CUmemAllocationGranularity_flags,
    ) -> DriverResult<usize> {
        let mut g = 0;
        // SAFETY: valid property and out-pointer.
        ok("cuMemGetAllocationGranularity", unsafe { sys::cuMemGetAllocationGranularity(&mut g, prop, option) }, g)
    }

    cuStreamCreate =>
    /// Create a stream in the current context.
    pub(crate) fn stream_create(flags: u32) -> DriverResult<sys::CUstream> {
        let mut s = std::ptr::null_mut();
        // SAFETY: valid out-pointer.
        ok("cuStreamCreate", unsafe { sys::cuStreamCreate(&mut s, flags) }, s)
    }

    cuStreamDestroy_v2 =>
    /// Destroy a stream (queued work still completes).
    pub(crate) unsafe fn stream_destroy(stream: sys::CUstream) -> DriverResult<()> {
        // SAFETY: the caller destroys its own stream once.
        ok("cuStreamDestroy_v2", unsafe { sys::cuStreamDestroy_v2(stream) }, ())
    }

    cuStreamQuery =>
    /// `Ok` when all work queued on `stream` has finished (`CUDA_ERROR_NOT_READY` while it runs).
    pub(crate) unsafe fn stream_query(stream: sys::CUstream) -> DriverResult<()> {
        // SAFETY: the caller passes a live stream.
        ok("cuStreamQuery", unsafe { sys::cuStreamQuery(stream) }, ())
    }

    cuStreamSynchronize =>
    /// Block until all work queued on `stream` has finished (null: the legacy default stream).
    pub(crate) unsafe fn stream_synchronize(stream: sys::CUstream) -> DriverResult<()> {
        // SAFETY: the caller passes a live stream or null.
        ok("cuStreamSynchronize", unsafe { sys::cuStreamSynchronize(stream) }, ())
    }

    cuStreamWriteValue64_v2 =>
    /// Queue a 64-bit store of `value` to `addr` on `stream`.
    pub(crate) unsafe fn stream_write_value64(
        stream: sys::CUstream,
        addr: sys::CUdeviceptr,
        value: u64,
    ) -> DriverResult<()> {
        // SAFETY: forwarded to the caller's contract; default flags.
        ok("cuStreamWriteValue64_v2", unsafe { sys::cuStreamWriteValue64_v2(stream, addr, value, 0) }, ())
    }

    cuStreamIsCapturing =>
    /// Whether `stream` is being captured into a graph (active capture status).
    pub(crate) unsafe fn stream_is_capturing(stream: sys::CUstream) -> DriverResult<bool> {
        let mut status = sys::CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE;
        // SAFETY: valid out-pointer; the caller passes a live stream or null.
        let r = unsafe { sys::cuStreamIsCapturing(stream, &mut status) };
        ok("cuStreamIsCapturing", r, status != sys::CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE)
    }

    cuThreadExchangeStreamCaptureMode =>
    /// Set this thread's stream capture interaction mode to `mode`, returning the previous one.
    pub(crate) fn thread_exchange_capture_mode(mode: sys::CUstreamCaptureMode) -> DriverResult<sys::CUstreamCaptureMode> {
        let mut m = mode;
        // SAFETY: valid in/out pointer.
        let r = unsafe { sys::cuThreadExchangeStreamCaptureMode(&mut m) };
        ok("cuThreadExchangeStreamCaptureMode", r, m)
    }

    cuStreamBeginCapture_v2 =>
    /// Begin capturing the work queued on `stream` into a graph.
    pub(crate) unsafe fn stream_begin_capture(
        stream: sys::CUstream,
        mode: sys::CUstreamCaptureMode,
    ) -> DriverResult<()> {
        // SAFETY: the caller passes a live stream.
        ok("cuStreamBeginCapture_v2", unsafe { sys::cuStreamBeginCapture_v2(stream, mode) }, ())
    }

    cuStreamEndCapture =>
    /// End a capture begun by [`stream_begin_capture`] and return the graph.
    pub(crate) unsafe fn stream_end_capture(stream: sys::CUstream) -> DriverResult<sys::CUgraph> {
        let mut graph = std::ptr::null_mut();
        // SAFETY: valid out-pointer; the caller passes the capturing stream.
        ok("cuStreamEndCapture", unsafe { sys::cuStreamEndCapture(stream, &mut graph) }, graph)
    }

    cuGraphInstantiateWithFlags =>
    /// Instantiate `graph`.
    pub(crate) unsafe fn graph_instantiate(graph: sys::CUgraph) -> DriverResult<sys::CUgraphExec> {
        let mut exec = std::ptr::null_mut();
        // SAFETY: valid out-pointer; the caller passes a live graph; no flags.
        ok("cuGraphInstantiateWithFlags", unsafe { sys::cuGraphInstantiateWithFlags(&mut exec, graph, 0) }, exec)
    }

    cuGraphLaunch =>
    /// Replay an instantiated graph on `stream`.
    pub(crate) unsafe fn graph_launch(exec: sys::CUgraphExec, stream: sys::CUstream) -> DriverResult<()> {
        // SAFETY: the caller passes live handles of one context.
        ok("cuGraphLaunch", unsafe { sys::cuGraphLaunch(exec, stream) }, ())
    }

    cuGraphDestroy =>
    /// Destroy a graph.
    pub(crate) unsafe fn graph_destroy(graph: sys::CUgraph) -> DriverResult<()> {
        // SAFETY: the caller destroys its own graph once.
        ok("cuGraphDestroy", unsafe { sys::cuGraphDestroy(graph) }, ())
    }

    cuGraphExecDestroy =>
    /// Destroy an instantiated graph.
    pub(crate) unsafe fn graph_exec_destroy(exec: sys::CUgraphExec) -> DriverResult<()> {
        // SAFETY: the caller destroys its own instance once.
        ok("cuGraphExecDestroy", unsafe { sys::cuGraphExecDestroy(exec) }, ())
    }

    cuEventCreate =>
    /// Create an event in the current context.
    pub(crate) fn event_create(flags: u32) -> DriverResult<sys::CUevent> {
        let mut e = std::ptr::null_mut();
        // SAFETY: valid out-pointer.
        ok("cuEventCreate", unsafe { sys::cuEventCreate(&mut e, flags) }, e)
    }

    cuEventDestroy_v2 =>
    /// Destroy an event.
    pub(crate) unsafe fn event_destroy(event: sys::CUevent) -> DriverResult<()> {
        // SAFETY: the caller destroys its own event once.
        ok("cuEventDestroy_v2", unsafe { sys::cuEventDestroy_v2(event) }, ())
    }

    cuEventRecord =>
    /// Record `event` on `stream`.
    pub(crate) unsafe fn event_record(event: sys::CUevent, stream: sys::CUstream) -> DriverResult<()> {
        // SAFETY: the caller passes live handles.
        ok("cuEventRecord", unsafe { sys::cuEventRecord(event, stream) }, ())
    }

    cuStreamWaitEvent =>
    /// Make later work on `stream` wait for `event` (recorded on another stream).
    pub(crate) unsafe fn stream_wait_event(stream: sys::CUstream, event: sys::CUevent) -> DriverResult<()> {
        // SAFETY: the caller passes live handles; default flags.
        ok("cuStreamWaitEvent", unsafe { sys::cuStreamWaitEvent(stream, event, 0) }, ())
    }

    cuEventQuery =>
    /// `Ok` when `event` has completed (`CUDA_ERROR_NOT_READY` before).
    pub(crate) unsafe fn event_query(event: sys::CUevent) -> DriverResult<()> {
        // SAFETY: the caller passes a live event.
        ok("cuEventQuery", unsafe { sys::cuEventQuery(event) }, ())
    }

    cuEventElapsedTime_v2 =>
    /// Milliseconds between two completed events.
    pub(crate) unsafe fn event_elapsed_time(start: sys::CUevent, end: sys::CUevent) -> DriverResult<f32> {
        let mut ms = 0.0;
        // SAFETY: valid out-pointer; the caller passes live events.
        ok("cuEventElapsedTime_v2", unsafe { sys::cuEventElapsedTime_v2(&mut ms, start, end) }, ms)
    }

    cuModuleLoadData =>
    /// Load a module image (cubin, or NUL-terminated PTX) into the current context.
    pub(crate) unsafe fn module_load_data(image: *const c_void) -> DriverResult<sys::CUmodule> {
        let mut m = std::ptr::null_mut();
        // SAFETY: valid out-pointer; the image is the caller's contract.
        ok("cuModuleLoadData", unsafe { sys::cuModuleLoadData(&mut m, image) }, m)
    }

    cuModuleUnload =>
    /// Unload a module.
    pub(crate) unsafe fn module_unload(module: sys::CUmodule) -> DriverResult<()> {
        // SAFETY: the caller unloads its own module once.
        ok("cuModuleUnload", unsafe { sys::cuModuleUnload(module) }, ())
    }

    cuModuleGetFunction =>
    /// Look up a kernel by name (`CUDA_ERROR_NOT_FOUND` when absent).
    pub(crate) unsafe fn module_get_function(
        module: sys::CUmodule,
        name: &std::ffi::CStr,
    ) -> DriverResult<sys::CUfunction> {
        let mut f = std::ptr::null_mut();
        // SAFETY: valid out-pointer and NUL-terminated name; the caller passes a live module.
        ok("cuModuleGetFunction", unsafe { sys::cuModuleGetFunction(&mut f, module, name.as_ptr()) }, f)
    }

    cuModuleGetGlobal_v2 =>
    /// Address and size of a global by name (`CUDA_ERROR_NOT_FOUND` when absent).
    pub(crate) unsafe fn module_get_global(
        module: sys::CUmodule,
        name: &std::ffi::CStr,
    ) -> DriverResult<(sys::CUdeviceptr, usize)> {
        let (mut ptr, mut size) = (0, 0);
        // SAFETY: valid out-pointers and NUL-terminated name; the caller passes a live module.
        let rc = unsafe { sys::cuModuleGetGlobal_v2(&mut ptr, &mut size, module, name.as_ptr()) };
        ok("cuModuleGetGlobal_v2", rc, (ptr, size))
    }

    cuFuncGetAttribute =>
    /// An integer attribute of a kernel.
    pub(crate) unsafe fn func_get_attribute(
        func: sys::CUfunction,
        attr: sys::CUfunction_attribute,
    ) -> DriverResult<i32> {
        let mut v = 0;
        // SAFETY: valid out-pointer; the caller passes a live function.
        ok("cuFuncGetAttribute", unsafe { sys::cuFuncGetAttribute(&mut v, attr, func) }, v)
    }

    cuFuncSetAttribute =>
    /// Set an integer attribute of a kernel.
    pub(crate) unsafe fn func_set_attribute(
        func: sys::CUfunction,
        attr: sys::CUfunction_attribute,
        value: i32,
    ) -> DriverResult<()> {
        // SAFETY: the caller passes a live function.
        ok("cuFuncSetAttribute", unsafe { sys::cuFuncSetAttribute(func, attr, value) }, ())
    }

    cuLaunchKernel =>
    /// Launch `func` with a packed parameter buffer (`extra`, `CU_LAUNCH_PARAM_*` list).
    pub(crate) unsafe fn launch_kernel(
        func: sys::CUfunction,
        grid: (u32, u32, u32),
        block: (u32, u32, u32),
        shared_mem_bytes: u32,
        stream: sys::CUstream,
        extra: *mut *mut c_void,
    ) -> DriverResult<()> {
        // SAFETY: forwarded to the caller's contract (the parameter buffer matches the kernel).
        let rc = unsafe {
            sys::cuLaunchKernel(
                func,
                grid.0,
                grid.1,
                grid.2,
                block.0,
                block.1,
                block.2,
                shared_mem_bytes,
                stream,
                std::ptr::null_mut(),
                extra,
            )
        };
        ok("cuLaunchKernel", rc, ())
    }
}

#[cfg(test)]
mod tests {
    use super::SYMBOLS;
    use std::collections::BTreeSet;
    use std::path::Path;

    /// Every `sys::cu...(` call in `text`.
    fn raw_calls(text: &str) -> Vec<String> {
        let mut out = Vec::new();
        let mut rest = text;
        while let Some(i) = rest.find("sys::cu") {
            let tail = &rest[i + "sys::".len()..];
            let name: String = tail.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
            if tail[name.len()..].starts_with('(') {
                out.push(name);
            }
            rest = &rest[i + 1..];
        }
        out
    }

    fn rust_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
        for entry in std::fs::read_dir(dir).expect("read src") {
            let path = entry.expect("entry").path();
            if path.is_dir() {
                rust_files(&path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }

    #[test]
    fn the_checked_symbols_are_exactly_the_ones_the_wrappers_call() {
        assert!(!SYMBOLS.is_empty());
        let listed: BTreeSet<&str> = SYMBOLS.iter().copied().collect();
        assert_eq!(listed.len(), SYMBOLS.len(), "a symbol is listed twice");
        let this = include_str!("result.rs");
        let wrappers = &this[..this.find("#[cfg(test)]").expect("test module")];
        let called: BTreeSet<String> = raw_calls(wrappers).into_iter().collect();
        assert!(called.len() > 50, "only {} raw calls found", called.len());
        for c in &called {
            assert!(listed.contains(c.as_str()), "{c} is called but not checked by the loader");
            assert!(wrappers.contains(&format!("ok(\"{c}\"")), "{c}: its errors name another symbol");
        }
        for s in &listed {
            assert!(called.contains(*s), "{s} is checked but no wrapper calls it");
        }
    }

    #[test]
    fn no_other_module_calls_the_driver_directly() {
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let mut files = Vec::new();
        rust_files(&src, &mut files);
        assert!(files.len() > 10, "sources not found under {}", src.display());
        for f in files.iter().filter(|f| !f.ends_with("driver/result.rs")) {
            let text = std::fs::read_to_string(f).expect("read");
            let calls = raw_calls(&text);
            assert!(calls.is_empty(), "{} calls the driver directly: {calls:?}", f.display());
        }
    }
}
