"""The CPU verifier's report as Python objects (``mscclpp.verify``)."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Any, List, Optional, Union

from . import _mscclpp


@dataclass(frozen=True)
class Finding:
    """One problem the verifier found: ``kind`` (``wrong_result``, ``race``, ``deadlock``, ``invalid_plan`` ...),
    a readable ``message``, the ``ranks`` involved and the raw ``detail`` (a dict)."""

    kind: str
    message: str
    ranks: List[int]
    schedules: int
    detail: Any


@dataclass(frozen=True)
class VerifyReport:
    """What ``mscclpp.verify`` found for one plan; ``ok`` is true when nothing was found."""

    plan: str
    collective: str
    protocol: str
    inplace: bool
    world_size: int
    launches: int
    schedules: int
    dtype: str
    size: int
    input_bytes: int
    output_bytes: int
    reduce_op: str
    steps: int
    elapsed_ms: int
    findings: List[Finding] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.findings

    def __bool__(self) -> bool:
        return self.ok


def verify(
    plan: Union["_mscclpp.ExecutionPlan", str, "os.PathLike[str]"],
    size: Optional[int] = None,
    dtype: Any = None,
    schedules: Optional[int] = None,
    launches: Optional[int] = None,
    packet: Optional[str] = None,
) -> VerifyReport:
    """Run ``plan`` (an ``ExecutionPlan``, or a path to a JSON plan) on simulated ranks on the CPU with real data
    over many schedules, and report wrong results, races, deadlocks and invalid plans. ``size`` is the message size
    in bytes (default: one that fits the plan); ``dtype`` a ``mscclpp.DataType`` or a torch dtype."""
    if not isinstance(plan, _mscclpp.ExecutionPlan):
        plan = _mscclpp.ExecutionPlan(os.fspath(plan))
    raw = json.loads(_mscclpp._verify_json(plan, size, dtype, schedules, launches, packet))
    findings = [
        Finding(
            kind=f.get("kind", ""),
            message=f.get("message", ""),
            ranks=list(f.get("ranks", [])),
            schedules=int(f.get("schedules", 0)),
            detail=f.get("detail"),
        )
        for f in raw.get("findings", [])
    ]
    keys = VerifyReport.__dataclass_fields__.keys()
    fields = {k: raw[k] for k in keys if k != "findings" and k in raw}
    return VerifyReport(findings=findings, **fields)
