"""mscclpp: GPU-driven collective communication (MSCCL++'s programming model, in Rust) for Python.

Three ways to run collectives:

1. ``mscclpp.default_algorithms(comm)``: the registry's algorithms, run on raw device pointers and a stream.
2. ``mscclpp.plan(name, world_size=...)`` or ``mscclpp.ExecutionPlan(path)`` run by ``mscclpp.Executor(comm)``;
   ``mscclpp.verify(plan)`` checks any plan on the CPU.
3. ``mscclpp.compile_native(name, file)``: your own CUDA kernel, launched with memory/port channel handles.
4. ``mscclpp.language`` (MSCCL++'s Python DSL) and ``mscclpp.compile(algo, algo_spec, rank)``: a program written
   with MSCCL++'s DSL, built by the same program builder as the Rust eDSL.

``mscclpp.torch.CustomizedComm`` runs all_reduce/all_gather/reduce_scatter/broadcast on torch tensors.
Importing this package needs neither a GPU nor torch; GPU calls without a GPU raise ``mscclpp.NoGpuError``.
"""

from __future__ import annotations

import enum

from ._mscclpp import (
    Algorithm,
    ChannelArray,
    ClosedError,
    CommGroup,
    ContextLostError,
    DataType,
    Error,
    ExecutionPlan,
    Executor,
    KernelArg,
    NativeModule,
    NoGpuError,
    RawGpuBuffer,
    RemoteError,
    ReduceOp,
    TimeoutError,
    UnsupportedError,
    __version__,
    compile_native,
    default_algorithms,
    f32,
    f64,
    i32,
    i64,
    plan,
    programs,
    ptr,
    u32,
    u64,
)
from ._mscclpp import _add_nvrtc_search_dirs
from .collection import AlgorithmCollection, AlgorithmCollectionBuilder, NativeAlgorithm
from .language.program import AlgoSpec
from .plan_registry import ExecutionPlanHandle, ExecutionPlanRegistry, ExecutionRequest, plan
from .report import Finding, VerifyReport, verify
from .tuning import get_tuned_config, tune


def compile(algo, algo_spec, rank: int = 0, **kwargs) -> ExecutionPlan:  # noqa: A001 - MSCCL++'s name
    """MSCCL++'s DSL compiler: ``algo(algo_spec, **kwargs)`` returns a ``mscclpp.language.CollectiveProgram``; its
    plan, built by mscclpp's program builder and verified structurally, as an ``ExecutionPlan`` (which
    ``Executor``, ``mscclpp.plan.register`` and ``CustomizedComm`` take). ``rank`` is accepted for MSCCL++'s
    signature; every rank builds the same plan."""
    if not callable(algo):
        raise ValueError("The 'algo' argument must be a callable (e.g., a function or class).")
    program = algo(algo_spec, **kwargs)
    if not hasattr(program, "plan"):
        raise TypeError(f"algo returned {type(program).__name__}, not a mscclpp.language.CollectiveProgram")
    return program.plan()


def _nvrtc_dirs() -> list:
    """The folders where ``pip install nvidia-cuda-nvrtc`` put ``libnvrtc.so.13`` for this interpreter: the
    ``nvidia/cu13/lib`` folder of every ``nvidia`` package on its path and of its site-packages (a virtual
    environment used without being activated included), so NVRTC is found without ``LD_LIBRARY_PATH``."""
    import importlib.util
    import os
    import site
    import sys

    roots = []
    try:
        spec = importlib.util.find_spec("nvidia")
        if spec is not None and spec.submodule_search_locations:
            roots.extend(spec.submodule_search_locations)
    except (ImportError, ValueError):
        pass
    sites = list(getattr(site, "getsitepackages", lambda: [])())
    try:
        sites.append(site.getusersitepackages())
    except AttributeError:
        pass
    sites.extend(p for p in sys.path if p.endswith("-packages"))
    roots.extend(os.path.join(p, "nvidia") for p in sites)
    out = []
    for root in roots:
        d = os.path.join(root, "cu13", "lib")
        if os.path.isfile(os.path.join(d, "libnvrtc.so.13")) and d not in out:
            out.append(d)
    return out


_add_nvrtc_search_dirs(_nvrtc_dirs())


class PacketType(enum.IntEnum):
    """MSCCL++'s LL packet formats (``Executor.execute(..., packet_type=)``): plans here use LL16."""

    LL8 = 0
    LL16 = 1


def is_nvls_supported() -> bool:
    """MSCCL++'s check for NVLink SHARP (multicast) support: always ``False`` here. This library never creates a
    multicast object (switch channels are emulated with every member's mapped buffer), so the NVLS algorithms'
    names select the non-multicast programs instead (see docs/python.md, "MSCCL++ names")."""
    return False

__all__ = [
    "AlgoSpec",
    "Algorithm",
    "AlgorithmCollection",
    "AlgorithmCollectionBuilder",
    "ChannelArray",
    "ClosedError",
    "CommGroup",
    "ContextLostError",
    "DataType",
    "Error",
    "ExecutionPlan",
    "ExecutionPlanHandle",
    "ExecutionPlanRegistry",
    "ExecutionRequest",
    "Executor",
    "Finding",
    "KernelArg",
    "NativeAlgorithm",
    "NativeModule",
    "NoGpuError",
    "PacketType",
    "RawGpuBuffer",
    "ReduceOp",
    "RemoteError",
    "TimeoutError",
    "UnsupportedError",
    "VerifyReport",
    "__version__",
    "compile",
    "compile_native",
    "default_algorithms",
    "f32",
    "f64",
    "get_tuned_config",
    "i32",
    "i64",
    "is_nvls_supported",
    "plan",
    "programs",
    "ptr",
    "tune",
    "u32",
    "u64",
    "verify",
]
