"""``mscclpp.jit.compile``: MSCCL++'s DSL compiler with the program's spec given as keywords (the JIT path of its
DSL integration guides) instead of an ``AlgoSpec``. The result is the same ``ExecutionPlan`` as
``mscclpp.compile(algo, AlgoSpec(...))``; ``collective`` is a ``mscclpp.language`` collective or its name
(``"allreduce"``, ``"allgather"``, ``"reducescatter"``, ``"alltoall"``; one chunk per rank, ``in_place``)."""

from __future__ import annotations

from typing import Any, Callable, Dict, Optional

from .language.collectives import AllGather, AllReduce, AllToAll, Collective, ReduceScatter
from .language.program import AlgoSpec

_BY_NAME = {"allreduce": AllReduce, "allgather": AllGather, "reducescatter": ReduceScatter, "alltoall": AllToAll}


def _collective(collective: Any, world_size: int, in_place: bool) -> Collective:
    if isinstance(collective, Collective):
        return collective
    cls = _BY_NAME.get(str(collective).lower().replace("_", ""))
    if cls is None:
        raise ValueError(f"unknown collective {collective!r}: pass one of {sorted(_BY_NAME)} or a "
                         "mscclpp.language collective such as AllReduce(world_size, 1, True)")
    return cls(world_size, 1, in_place)


def compile(  # noqa: A001 - MSCCL++'s name
    algo: Callable[..., Any],
    name: str,
    collective: Any,
    nranks_per_node: int,
    world_size: int,
    instances: int = 1,
    protocol: str = "Simple",
    num_threads_per_block: int = 1024,
    min_msg_size: int = 0,
    max_msg_size: int = 2**64 - 1,
    tags: Optional[Dict[str, int]] = None,
    in_place: bool = True,
    rank: int = 0,
    **kwargs: Any,
):
    """``algo(spec, **kwargs)`` built into an ``ExecutionPlan``, ``spec`` the ``AlgoSpec`` of these keywords."""
    from . import compile as compile_spec

    spec = AlgoSpec(
        name=name,
        collective=_collective(collective, world_size, in_place),
        nranks_per_node=nranks_per_node,
        world_size=world_size,
        in_place=in_place,
        instances=instances,
        protocol=protocol,
        num_threads_per_block=num_threads_per_block,
        min_message_size=min_msg_size,
        max_message_size=max_msg_size,
        tags=dict(tags or {}),
    )
    return compile_spec(algo, spec, rank=rank, **kwargs)
