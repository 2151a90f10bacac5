"""The CUDA runtime library that torch loads, through ctypes, for the copy-engine probes (ce_probe.py, ce_graph.py):
cudaMemcpyAsync, cudaSetDevice and cudaDeviceEnablePeerAccess with their argument types set."""
import ctypes
import glob
import os

import torch


def load():
    """libcudart (the system's, else torch's wheel's) with the probes' functions typed; exits when none is found."""
    rt = None
    for name in ("libcudart.so.13", "libcudart.so"):
        try:
            rt = ctypes.CDLL(name)
            break
        except OSError:
            continue
    if rt is None:
        wheel = os.path.join(os.path.dirname(torch.__file__), "..", "nvidia", "*", "lib", "libcudart.so*")
        found = next(iter(glob.glob(wheel)), None)
        if found is None:
            raise SystemExit("no libcudart")
        rt = ctypes.CDLL(found)
    rt.cudaMemcpyAsync.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_void_p]
    rt.cudaSetDevice.argtypes = [ctypes.c_int]
    rt.cudaDeviceEnablePeerAccess.argtypes = [ctypes.c_int, ctypes.c_uint]
    return rt
