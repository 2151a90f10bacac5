"""Does legacy CUDA IPC keep small cudaMalloc allocations apart?

Process A allocates several small buffers (as a token pool, scratch and a user buffer would be), exports a legacy
IPC handle of each, and process B (same GPU or the next one) opens every handle, in a given order, and writes a
distinct value through each mapping. A then reads each buffer back. Prints the handles, bases, what B got, and
whether every write landed in its own buffer. Run: python3 ipc_suballoc.py [SIZE_BYTES] [COUNT]
"""
import ctypes
import multiprocessing as mp
import sys

import numpy as np


def address_range(ptr):
    cuda = ctypes.CDLL("libcuda.so.1")
    base, size = ctypes.c_uint64(), ctypes.c_size_t()
    rc = cuda.cuMemGetAddressRange_v2(ctypes.byref(base), ctypes.byref(size), ctypes.c_uint64(ptr))
    return rc, base.value, size.value


def importer(handles, order, dev, q):
    import cupy
    cupy.cuda.Device(dev).use()
    got = {}
    for k in order:
        try:
            p = cupy.cuda.runtime.ipcOpenMemHandle(handles[k])
            got[k] = p
        except Exception as e:  # noqa: BLE001
            got[k] = repr(e)
    for k in order:
        p = got[k]
        if isinstance(p, int):
            v = np.array([1000 + k], dtype=np.uint64)
            cupy.cuda.runtime.memcpy(p, v.ctypes.data, 8, cupy.cuda.runtime.memcpyHostToDevice)
    cupy.cuda.runtime.deviceSynchronize()
    q.put({k: (hex(v) if isinstance(v, int) else v) for k, v in got.items()})
    q.get()  # wait until the exporter has read back


def main():
    size = int(sys.argv[1]) if len(sys.argv) > 1 else 65536
    count = int(sys.argv[2]) if len(sys.argv) > 2 else 4
    import cupy
    ndev = cupy.cuda.runtime.getDeviceCount()
    ptrs, handles = [], []
    for k in range(count):
        p = cupy.cuda.runtime.malloc(size)
        cupy.cuda.runtime.memset(p, 0, size)
        ptrs.append(p)
        h = cupy.cuda.runtime.ipcGetMemHandle(p)
        handles.append(h)
        rc, base, rsize = address_range(p)
        print(f"A: buffer {k}: ptr {p:#x} range rc={rc} base {base:#x} size {rsize} handle {h.hex()}")
    dup = len(set(handles)) != len(handles)
    print(f"A: {len(set(handles))} distinct handles of {count}" + (" (DUPLICATES)" if dup else ""))
    ctx = mp.get_context("spawn")
    ok = True
    for dev in sorted({0, min(1, ndev - 1)}):
        for order in (list(range(count)), list(reversed(range(count)))):
            for p in ptrs:
                cupy.cuda.runtime.memset(p, 0, size)
            q = ctx.Queue()
            b = ctx.Process(target=importer, args=(handles, order, dev, q))
            b.start()
            got = q.get(timeout=120)
            seen = []
            for k, p in enumerate(ptrs):
                v = np.zeros(1, dtype=np.uint64)
                cupy.cuda.runtime.memcpy(v.ctypes.data, p, 8, cupy.cuda.runtime.memcpyDeviceToHost)
                seen.append(int(v[0]))
            q.put("done")
            b.join(60)
            want = [1000 + k for k in range(count)]
            verdict = "OK" if seen == want else "MIXED UP"
            ok &= seen == want
            print(f"B on GPU {dev}, open order {order}: mapped {got}; A reads {seen} (want {want}): {verdict}")
    print("ipc_suballoc:", "PASS" if ok else "FAIL")


if __name__ == "__main__":
    main()
