"""``mscclpp.tune`` and ``mscclpp.get_tuned_config``: the autotuner of ``mscclpp tune``, run on a ``CommGroup``,
and the row of this machine's tuned table that selection follows (the registry, the default algorithms and the
NCCL-ABI library all read the same table)."""

from __future__ import annotations

import json
from typing import Any, Optional, Sequence

from . import _mscclpp


def tune(
    comm: _mscclpp.CommGroup,
    collectives: Sequence[str] = ("allreduce",),
    sizes: Optional[Sequence[int]] = None,
    dtype: Any = None,
    inplace: bool = False,
    budget_s: Optional[float] = None,
    runs: Optional[int] = None,
    iters: Optional[int] = None,
) -> dict[str, Any]:
    """Tune ``collectives`` over ``sizes`` (bytes; default: powers of two from 1 KiB to 1 GiB) on ``comm``: every
    registered program that admits a size, over thread blocks and threads per block, timed in CUDA graphs, the
    slowest rank's time deciding. Saves the winners in this machine's tuned table and installs it. Every rank
    must call it with the same arguments. Returns ``{"path", "rows", "notes", "stopped_by_budget", "timed",
    "wrong_results"}``; each row names the program, instances, thread blocks, threads per block and µs."""
    text = _mscclpp._tune_json(
        comm,
        list(collectives) if collectives is not None else None,
        [int(s) for s in sizes] if sizes is not None else None,
        dtype,
        inplace,
        budget_s,
        runs,
        iters,
    )
    result: dict[str, Any] = json.loads(text)
    return result


def get_tuned_config(
    size: int,
    collective: str = "allreduce",
    dtype: Any = None,
    inplace: bool = False,
    comm: Optional[_mscclpp.CommGroup] = None,
) -> Optional[dict[str, Any]]:
    """The tuned row for a ``collective`` of ``size`` bytes (the row at or above the size), or ``None`` when no
    table is installed or it has no such row. With ``comm``, this machine's table for that communicator is loaded
    first."""
    row: Optional[dict[str, Any]] = json.loads(_mscclpp._tuned_config_json(size, collective, dtype, inplace, comm))
    return row
