"""MSCCL++'s algorithm collection under its names: ``mscclpp.AlgorithmCollectionBuilder().build_default_algorithms(
scratch_buffer=, scratch_buffer_size=, rank=)`` returns the registry's programs and, beside them, MSCCL++'s default
algorithm names (``default_allreduce_packet``, ``default_allreduce_rsag_zero_copy``, ...), each served by the
program of this library that does its job (docs/python.md, "MSCCL++ names").

The objects follow MSCCL++'s conventions: ``execute(...)`` returns 0 on success and a non-zero result code for a
configuration the algorithm does not run (a size, type, placement, block shape or operator), so MSCCL++'s tuning
loops (``if algo.execute(...) != 0: continue``) work unchanged; other failures (a closed communicator, a device
error) still raise. This library's own ``mscclpp.default_algorithms(comm)`` objects raise
``mscclpp.UnsupportedError`` instead.
"""

from __future__ import annotations

import functools
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence

from ._mscclpp import Algorithm, ReduceOp, UnsupportedError, programs

#: MSCCL++'s ``CommResult`` codes that ``execute`` returns.
COMM_SUCCESS = 0
COMM_INVALID_ARGUMENT = 4


def _first_fitting(names: Sequence[str]) -> Callable[[int, int], Optional[str]]:
    """A chooser: the first of ``names`` whose message range admits the size."""

    def pick(size: int, world: int) -> Optional[str]:
        for name in names:
            a = _program(name)
            if a is None:
                continue
            lo, hi = a.message_range
            wlo, whi = a.world_sizes
            if lo <= size and (hi is None or size <= hi) and wlo <= world and (whi is None or world <= whi):
                return name
        return None

    return pick


_PACKET = ("allreduce", _first_fitting(["allreduce_oneshot_ll", "allreduce_twoshot_ll128", "allreduce_twoshot_ll"]))
_RSAG = ("allreduce", _first_fitting(["allreduce_rsag", "allreduce_twoshot"]))
_RSAG_TEXT = "reduce-scatter + all-gather on the registered buffers: allreduce_rsag (1-64 MiB), allreduce_twoshot beyond"
_NO_MULTICAST = "no multicast here: the same as default_allreduce_rsag_zero_copy"

#: MSCCL++'s default algorithm names: (collective, what serves them here, one line). No multicast object is ever
#: created here (``is_nvls_supported()`` is False), so the NVLS names run the same data movement without it.
_MSCCLPP_DEFAULTS: Dict[str, tuple] = {
    "default_allreduce_packet": (
        *_PACKET,
        "LL packets: allreduce_oneshot_ll up to 256 KiB, then allreduce_twoshot_ll128 (128-byte lines) to 4 MiB",
    ),
    "default_allreduce_nvls_packet": (*_PACKET, "no multicast here: the same as default_allreduce_packet"),
    "default_allreduce_allpair_packet": (
        "allreduce",
        _first_fitting(["allreduce_oneshot_ll"]),
        "all-pairs LL packets: allreduce_oneshot_ll (up to 256 KiB)",
    ),
    "default_allreduce_rsag_zero_copy": (*_RSAG, _RSAG_TEXT),
    "default_allreduce_rsag": (*_RSAG, _RSAG_TEXT),
    "default_allreduce_rsag_pipeline": (*_RSAG, _RSAG_TEXT),
    "default_allreduce_nvls_zero_copy": (*_RSAG, _NO_MULTICAST),
    "default_allreduce_nvls_warp_pipeline": (*_RSAG, _NO_MULTICAST),
    "default_allreduce_nvls_block_pipeline": (*_RSAG, _NO_MULTICAST),
    "default_allreduce_fullmesh": (
        "allreduce",
        _first_fitting(["allreduce_twoshot"]),
        "read every peer, reduce, write every peer: allreduce_twoshot",
    ),
    "default_allgather_fullmesh": (
        "allgather",
        _first_fitting(["allgather_allpairs_ll", "allgather_allpairs"]),
        "every rank writes its chunk into every peer: allgather_allpairs_ll up to 1 MiB, allgather_allpairs beyond",
    ),
}


@functools.lru_cache(maxsize=None)
def _program(name: str) -> Optional[Algorithm]:
    """This library's algorithm object of a registered program, made once."""
    return next((a for a in programs() if a.name == name), None)


class _CodedAlgorithm:
    """What MSCCL++'s algorithm objects share here: ``execute`` with MSCCL++'s signature, 0 when it ran and
    ``COMM_INVALID_ARGUMENT`` (4) for a configuration it does not run (nothing is launched then). A subclass says
    which sizes it serves (``serves``) and runs one call (``_run``)."""

    name: str
    collective: str

    def serves(self, size: int, world: int) -> Optional[str]:
        raise NotImplementedError

    def _run(self, served: str, comm: Any, input_buffer: Any, output_buffer: Any, input_size: int,
             output_size: int, dtype: Any, options: Dict[str, Any]) -> int:
        raise NotImplementedError

    def is_dsl_algorithm(self) -> bool:
        return False

    def is_native_algorithm(self) -> bool:
        return True

    def execute(
        self,
        comm: Any,
        input_buffer: Any,
        output_buffer: Any,
        input_size: int,
        output_size: int,
        dtype: Any,
        op: Any = ReduceOp.NOP,
        stream: int = 0,
        executor: Any = None,
        nblocks: int = 0,
        nthreads_per_block: int = 0,
        symmetric_memory: bool = False,
        extras: Optional[Dict[str, int]] = None,
        accum_dtype: Any = None,
    ) -> int:
        """MSCCL++'s ``Algorithm.execute``: 0 when it ran, ``COMM_INVALID_ARGUMENT`` (4) for a configuration it
        does not run (nothing is launched then)."""
        if accum_dtype is not None and accum_dtype != dtype:
            return COMM_INVALID_ARGUMENT
        size = input_size if self.collective != "allgather" else output_size
        served = self.serves(size, comm.size)
        if served is None:
            return COMM_INVALID_ARGUMENT
        options = dict(op=op, stream=stream, executor=executor, nblocks=nblocks,
                       nthreads_per_block=nthreads_per_block, symmetric_memory=symmetric_memory, extras=extras)
        try:
            return self._run(served, comm, input_buffer, output_buffer, input_size, output_size, dtype, options)
        except UnsupportedError:
            return COMM_INVALID_ARGUMENT


class MscclppNamedAlgorithm(_CodedAlgorithm):
    """One of MSCCL++'s default algorithms, run by the program of this library chosen per size (see
    ``serves(size, world)``)."""

    def __init__(self, name: str, collective: str, pick: Callable[[int, int], Optional[str]], description: str):
        self.name = name
        self.collective = collective
        self.description = description
        self._pick = pick

    def serves(self, size: int, world: int) -> Optional[str]:
        """The program that runs a message of ``size`` bytes on ``world`` ranks, or None when none does."""
        return self._pick(size, world)

    def _run(self, served: str, comm: Any, input_buffer: Any, output_buffer: Any, input_size: int,
             output_size: int, dtype: Any, options: Dict[str, Any]) -> int:
        algo = _program(served)
        if algo is None:
            return COMM_INVALID_ARGUMENT
        return algo.execute(comm, input_buffer, output_buffer, input_size, output_size, dtype, **options)

    def __repr__(self) -> str:
        return f"MscclppNamedAlgorithm(name={self.name!r}, collective={self.collective!r})"


def _address(obj: Any, what: str) -> int:
    """The device address of a buffer argument: an int, a tensor (``data_ptr()``) or an object with ``ptr``."""
    if isinstance(obj, int):
        return obj
    if hasattr(obj, "data_ptr"):
        return int(obj.data_ptr())
    if hasattr(obj, "ptr"):
        ptr = obj.ptr
        return int(ptr() if callable(ptr) else ptr)
    raise TypeError(f"{what}: expected a device pointer (int), a tensor or a buffer with `ptr`, got {type(obj).__name__}")


class NativeAlgorithm(_CodedAlgorithm):
    """An algorithm whose kernel is the user's own (typically a function of a ``mscclpp.compile_native`` module),
    usable wherever the defaults are: ``execute`` with MSCCL++'s signature and result codes, ``serves``, an
    ``AlgorithmCollection`` / ``AlgorithmCollectionBuilder.add_algorithm_builder``, a selector, a tuning loop that
    varies ``nblocks`` and ``nthreads_per_block``.

    ``launch(comm, input_ptr, output_ptr, input_size, output_size, dtype, op, stream, nblocks, nthreads_per_block,
    extras)`` launches the kernel (e.g. ``module.launch(...)``) and returns ``None`` or 0 when it ran, or a non-zero
    result code for a configuration it does not run; raising ``mscclpp.UnsupportedError`` means the same.
    ``message_sizes`` (bytes, inclusive; ``None``: unbounded) and ``world_sizes`` bound what ``execute`` accepts
    before anything is launched. This is the role of MSCCL++'s ``Algorithm.create_from_native_capsule``, which
    takes one of these (``mscclpp.Algorithm.create_from_native_capsule(NativeAlgorithm(...))``)."""

    def __init__(
        self,
        name: str,
        collective: str,
        launch: Callable[..., Optional[int]],
        message_sizes: Sequence[Optional[int]] = (0, None),
        world_sizes: Sequence[Optional[int]] = (1, None),
        tags: Optional[Dict[str, int]] = None,
        description: str = "",
    ):
        if not callable(launch):
            raise TypeError(f"NativeAlgorithm {name!r}: `launch` must be callable")
        if collective not in ("allreduce", "allgather", "reducescatter", "alltoall", "broadcast", "custom"):
            raise ValueError(f"NativeAlgorithm {name!r}: unknown collective {collective!r}")
        self.name = name
        self.collective = collective
        self.description = description
        self.tags = dict(tags or {})
        self._launch = launch
        self._sizes = (int(message_sizes[0] or 0), message_sizes[1])
        self._worlds = (int(world_sizes[0] or 1), world_sizes[1])

    def serves(self, size: int, world: int) -> Optional[str]:
        """This algorithm's name when it runs a message of ``size`` bytes on ``world`` ranks, else None."""
        lo, hi = self._sizes
        wlo, whi = self._worlds
        ok = lo <= size and (hi is None or size <= hi) and wlo <= world and (whi is None or world <= whi)
        return self.name if ok else None

    def _run(self, served: str, comm: Any, input_buffer: Any, output_buffer: Any, input_size: int,
             output_size: int, dtype: Any, options: Dict[str, Any]) -> int:
        code = self._launch(
            comm,
            _address(input_buffer, f"{self.name}: input_buffer"),
            _address(output_buffer, f"{self.name}: output_buffer"),
            input_size,
            output_size,
            dtype,
            options["op"],
            options["stream"],
            options["nblocks"],
            options["nthreads_per_block"],
            dict(options["extras"] or {}),
        )
        return COMM_SUCCESS if code is None else int(code)

    def __repr__(self) -> str:
        return f"NativeAlgorithm(name={self.name!r}, collective={self.collective!r})"


def create_from_native_capsule(capsule: Any) -> NativeAlgorithm:
    """MSCCL++'s ``Algorithm.create_from_native_capsule``: here the "capsule" is a ``NativeAlgorithm``, an object
    with ``name``, ``collective`` and ``launch`` (and optionally ``message_sizes``, ``world_sizes``, ``tags``), or a
    dict of those keys. A C++ capsule from MSCCL++'s own extension modules cannot run here: write the kernel as a
    ``mscclpp.compile_native`` module and wrap its launch in a ``NativeAlgorithm``."""
    if isinstance(capsule, NativeAlgorithm):
        return capsule
    spec = capsule if isinstance(capsule, dict) else None
    if spec is None and all(hasattr(capsule, k) for k in ("name", "collective", "launch")):
        keys = ("name", "collective", "launch", "message_sizes", "world_sizes", "tags", "description")
        spec = {k: getattr(capsule, k) for k in keys if hasattr(capsule, k)}
    if spec is None or not all(k in spec for k in ("name", "collective", "launch")):
        raise TypeError(
            f"create_from_native_capsule: {type(capsule).__name__} is not a native algorithm of this library; pass a "
            "mscclpp.NativeAlgorithm (or an object or dict with `name`, `collective` and `launch`) wrapping a "
            "kernel of a mscclpp.compile_native module; C++ capsules of MSCCL++'s extension modules do not run here"
        )
    return NativeAlgorithm(**spec)


class AlgorithmCollection:
    """A list of algorithms (this library's programs and MSCCL++'s default names), as MSCCL++ returns it."""

    def __init__(self, algorithms: List[Any]):
        self._algorithms = list(algorithms)

    def __iter__(self) -> Iterator[Any]:
        return iter(self._algorithms)

    def __len__(self) -> int:
        return len(self._algorithms)

    def __getitem__(self, index: int) -> Any:
        return self._algorithms[index]

    def get_by_collective(self, collective: str) -> List[Any]:
        """Every algorithm of one collective."""
        return [a for a in self._algorithms if a.collective == collective]

    def register_algorithm(self, collective: str, algo_name: str, algorithm: Any) -> None:
        """Add ``algorithm`` (any object with ``name``, ``collective`` and ``execute``) to the collection."""
        if getattr(algorithm, "collective", collective) != collective:
            raise ValueError(f"algorithm {algo_name!r} is a {algorithm.collective}, not a {collective}")
        self._algorithms.append(algorithm)


class AlgorithmCollectionBuilder:
    """MSCCL++'s builder of the algorithm collection (one per process, as there)."""

    _instance: Optional["AlgorithmCollectionBuilder"] = None

    def __new__(cls) -> "AlgorithmCollectionBuilder":
        if cls._instance is None:
            cls._instance = super().__new__(cls)
            cls._instance._extra = []
            cls._instance._selector = None
        return cls._instance

    @classmethod
    def reset(cls) -> None:
        cls._instance = None

    def add_algorithm_builder(self, algorithm_builder: Any) -> None:
        """Add an algorithm (an object with ``name``, ``collective`` and ``execute``, or one with ``build()``
        returning such an object) to every collection built from now on."""
        built = algorithm_builder.build() if hasattr(algorithm_builder, "build") else algorithm_builder
        for attr in ("name", "collective", "execute"):
            if not hasattr(built, attr):
                raise ValueError(f"an algorithm needs `{attr}`; {built!r} has none")
        self._extra.append(built)

    def set_algorithm_selector(self, selector: Callable[..., Any]) -> None:
        """Keep the selector for callers that ask for it (``selector``); this library's own selection is set with
        ``mscclpp.plan.set_selector``."""
        self._selector = selector

    set_fallback_algorithm_selector = set_algorithm_selector

    @property
    def selector(self) -> Optional[Callable[..., Any]]:
        return self._selector

    def build(self) -> AlgorithmCollection:
        """The algorithms added with ``add_algorithm_builder``."""
        return AlgorithmCollection(list(self._extra))

    def build_default_algorithms(
        self, scratch_buffer: Any = 0, scratch_buffer_size: int = 0, rank: int = 0
    ) -> AlgorithmCollection:
        """Every registered program of this library, MSCCL++'s default algorithm names, and the added algorithms.
        ``scratch_buffer`` and ``scratch_buffer_size`` are accepted for MSCCL++'s signature; this library's
        programs use the communicator's own scratch and staging buffers, and ``rank`` comes from the communicator
        at ``execute``."""
        del scratch_buffer, scratch_buffer_size, rank
        ours = [a for a in programs() if a.tags.get("default", 0) > 0 or a.tags.get("port", 0) > 0]
        named = [MscclppNamedAlgorithm(n, c, pick, d) for n, (c, pick, d) in _MSCCLPP_DEFAULTS.items()]
        return AlgorithmCollection(ours + named + list(self._extra))


def mscclpp_default_names() -> Dict[str, str]:
    """MSCCL++'s default algorithm names and what serves each here (for the documentation's table)."""
    return {name: d for name, (_, _, d) in _MSCCLPP_DEFAULTS.items()}


__all__ = ["AlgorithmCollection", "AlgorithmCollectionBuilder", "MscclppNamedAlgorithm", "COMM_INVALID_ARGUMENT"]
