"""Which CUDA driver calls wait for kernels running on other (non-blocking) streams?

A kernel spins for SPIN seconds on a non-blocking stream; meanwhile the host times one driver call. A call that
takes about the rest of the spin waited for the kernel: made from a thread while another thread's collective
kernel waits on a peer, such a call can deadlock two ranks. Run: python3 sync_calls.py [SPIN_S]
"""
import ctypes
import multiprocessing as mp
import sys
import time

import cupy

cuda = ctypes.CDLL("libcuda.so.1")
U64 = ctypes.c_uint64


def ck(rc, what):
    if rc != 0:
        raise RuntimeError(f"{what} failed: {rc}")


SPIN = cupy.RawKernel(
    r"""extern "C" __global__ void spin(long long cycles) {
        long long t = clock64(); while (clock64() - t < cycles) {} }""",
    "spin",
)


def exporter(q):
    cupy.cuda.Device(0).use()
    p = cupy.cuda.runtime.malloc(1 << 20)
    q.put(cupy.cuda.runtime.ipcGetMemHandle(p))
    q.get()


def main():
    spin_s = float(sys.argv[1]) if len(sys.argv) > 1 else 1.5
    cupy.cuda.Device(0).use()
    clock_khz = cupy.cuda.runtime.getDeviceProperties(0)["clockRate"]
    cycles = int(spin_s * clock_khz * 1e3)
    stream = cupy.cuda.Stream(non_blocking=True)
    SPIN((1,), (1,), (cupy.int64(1000),), stream=stream)
    stream.synchronize()
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    child = ctx.Process(target=exporter, args=(q,))
    child.start()
    handle = q.get(timeout=60)
    host = (ctypes.c_char * (1 << 20))()
    keep = []

    def alloc(n=1 << 20):
        p = U64()
        ck(cuda.cuMemAlloc_v2(ctypes.byref(p), ctypes.c_size_t(n)), "cuMemAlloc")
        return p.value

    def op_alloc():
        keep.append(alloc())

    pending_free = [alloc() for _ in range(4)]

    def op_free():
        ck(cuda.cuMemFree_v2(U64(pending_free.pop())), "cuMemFree")

    buf = alloc()

    def op_memset():
        ck(cuda.cuMemsetD8_v2(U64(buf), ctypes.c_ubyte(0), ctypes.c_size_t(1 << 20)), "cuMemsetD8")

    def op_h2d():
        ck(cuda.cuMemcpyHtoD_v2(U64(buf), host, ctypes.c_size_t(1 << 20)), "cuMemcpyHtoD")

    def op_d2h():
        ck(cuda.cuMemcpyDtoH_v2(host, U64(buf), ctypes.c_size_t(1 << 20)), "cuMemcpyDtoH")

    def op_hostalloc():
        p = ctypes.c_void_p()
        ck(cuda.cuMemHostAlloc(ctypes.byref(p), ctypes.c_size_t(1 << 20), 0), "cuMemHostAlloc")
        keep.append(("host", p.value))

    def op_freehost():
        p = ctypes.c_void_p()
        ck(cuda.cuMemHostAlloc(ctypes.byref(p), ctypes.c_size_t(1 << 20), 0), "cuMemHostAlloc")
        stream.synchronize()
        return p  # freed in the timed part below

    def op_ipc_get():
        h = (ctypes.c_char * 64)()
        ck(cuda.cuIpcGetMemHandle(h, U64(buf)), "cuIpcGetMemHandle")

    opened = []

    class IpcHandle(ctypes.Structure):  # CUipcMemHandle, passed by value
        _fields_ = [("reserved", ctypes.c_char * 64)]

    def op_ipc_open():
        p = U64()
        h = IpcHandle.from_buffer_copy(handle)
        ck(cuda.cuIpcOpenMemHandle_v2(ctypes.byref(p), h, ctypes.c_uint(1)), "cuIpcOpenMemHandle")
        opened.append(p.value)

    def op_ipc_close():
        ck(cuda.cuIpcCloseMemHandle(U64(opened.pop())), "cuIpcCloseMemHandle")

    def op_range():
        b, s = U64(), ctypes.c_size_t()
        ck(cuda.cuMemGetAddressRange_v2(ctypes.byref(b), ctypes.byref(s), U64(buf + 100)), "cuMemGetAddressRange")

    def op_buffer_id():
        v = U64()
        ck(cuda.cuPointerGetAttribute(ctypes.byref(v), 7, U64(buf)), "cuPointerGetAttribute(BUFFER_ID)")

    def op_stream():
        s = ctypes.c_void_p()
        ck(cuda.cuStreamCreate(ctypes.byref(s), 1), "cuStreamCreate")

    def op_event():
        e = ctypes.c_void_p()
        ck(cuda.cuEventCreate(ctypes.byref(e), 2), "cuEventCreate")

    def op_module():
        k = cupy.RawKernel(r'extern "C" __global__ void k%d(int* x) { *x = 1; }' % len(keep), "k%d" % len(keep))
        k.compile()
        keep.append(k)

    host_ptr = []

    def op_host_register():
        hb = (ctypes.c_char * (1 << 21))()
        keep.append(hb)
        ck(cuda.cuMemHostRegister_v2(hb, ctypes.c_size_t(1 << 21), 0), "cuMemHostRegister")
        host_ptr.append(hb)

    def op_host_unregister():
        ck(cuda.cuMemHostUnregister(host_ptr.pop()), "cuMemHostUnregister")

    ops = [
        ("cuMemAlloc 1 MiB", op_alloc), ("cuMemFree", op_free), ("cuMemsetD8 (null stream)", op_memset),
        ("cuMemcpyHtoD pageable", op_h2d), ("cuMemcpyDtoH pageable", op_d2h), ("cuMemHostAlloc", op_hostalloc),
        ("cuIpcGetMemHandle", op_ipc_get), ("cuIpcOpenMemHandle", op_ipc_open), ("cuIpcCloseMemHandle", op_ipc_close),
        ("cuMemGetAddressRange", op_range), ("cuPointerGetAttribute BUFFER_ID", op_buffer_id),
        ("cuStreamCreate non-blocking", op_stream), ("cuEventCreate", op_event), ("module compile+load", op_module),
        ("cuMemHostRegister", op_host_register), ("cuMemHostUnregister", op_host_unregister),
    ]
    print(f"spin {spin_s} s per call; a call that waits for the kernel takes about that long")
    for name, op in ops:
        SPIN((1,), (1,), (cupy.int64(cycles),), stream=stream)
        time.sleep(0.05)
        t = time.perf_counter()
        try:
            op()
            err = ""
        except Exception as e:  # noqa: BLE001
            err = f" ({e})"
        dt = time.perf_counter() - t
        stream.synchronize()
        verdict = "WAITS for the kernel" if dt > spin_s * 0.5 else "does not wait"
        if err:
            verdict = "not measured: the call failed"
        print(f"{name:36s} {dt*1e3:9.1f} ms  {verdict}{err}")
    # cuMemFreeHost, separately (needs an allocation made before the spin).
    p = op_freehost()
    SPIN((1,), (1,), (cupy.int64(cycles),), stream=stream)
    time.sleep(0.05)
    t = time.perf_counter()
    ck(cuda.cuMemFreeHost(p), "cuMemFreeHost")
    dt = time.perf_counter() - t
    stream.synchronize()
    print(f"{'cuMemFreeHost':36s} {dt*1e3:9.1f} ms  {'WAITS for the kernel' if dt > spin_s * 0.5 else 'does not wait'}")
    q.put("done")
    child.join(30)


if __name__ == "__main__":
    main()
