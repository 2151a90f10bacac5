"""`CollectiveProgram`: the program being written, recorded call by call and built by the eDSL."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Dict, List

from . import _state
from .collectives import Collective, TestCollective
from .types import ReplicationPolicy


@dataclass(frozen=True)
class AlgoSpec:
    """What MSCCL++'s `mscclpp.compile` takes besides the program function."""

    name: str
    collective: Collective
    nranks_per_node: int
    world_size: int
    in_place: bool
    instances: int
    protocol: str
    instr_fusion: bool = True
    auto_sync: bool = True
    replication_policy: ReplicationPolicy = ReplicationPolicy.interleaved
    reuse_resources: bool = False
    num_threads_per_block: int = 1024
    use_double_scratch_buffer: bool = False
    buffer_alignment: int = 16
    min_message_size: int = 0
    max_message_size: int = 2**64 - 1
    tags: dict = field(default_factory=dict)


class CollectiveProgram:
    """A collective program: used as `with CollectiveProgram(...):`, every DSL call inside it is recorded; `JSON()`
    (or `to_json()`) builds the plan with mscclpp's program builder (the same lowering and checks as the Rust eDSL)
    and returns MSCCL++'s JSON execution plan."""

    def __init__(self, name: str, collective: Collective, num_ranks: int, instances: int = 1,
                 protocol: str = "Simple", instr_fusion: bool = True, auto_sync: bool = True,
                 replication_policy: ReplicationPolicy = ReplicationPolicy.interleaved,
                 reuse_resources: bool = False, num_threads_per_block: int = 1024,
                 use_double_scratch_buffer: bool = False, buffer_alignment: int = 16, min_message_size: int = 0,
                 max_message_size: int = 2**64 - 1):
        if protocol not in ("Simple", "LL", "LL128"):
            raise ValueError(f"Given protocol: {protocol}. Must be Simple, LL or LL128 (ours: 128-byte line packets)")
        if replication_policy != ReplicationPolicy.interleaved:
            raise NotImplementedError("mscclpp.language replicates instances interleaved only")
        self.name = name
        self.collective = collective
        self.num_ranks = num_ranks
        self.instances = instances
        self.protocol = protocol
        self.instr_fusion = instr_fusion
        self.auto_sync = auto_sync
        self.replication_policy = replication_policy
        self.reuse_resources = reuse_resources
        self.num_threads_per_block = num_threads_per_block
        self.use_double_scratch_buffer = use_double_scratch_buffer
        self.buffer_alignment = buffer_alignment
        self.min_message_size = min_message_size
        self.max_message_size = max_message_size
        self._calls: List[Dict[str, Any]] = []
        self._scratch: List[tuple] = []
        self._scratch_used = [0] * num_ranks
        self._channels = 0
        self._semaphores = 0
        self._switches = 0

    @classmethod
    def from_spec(cls, spec: AlgoSpec) -> "CollectiveProgram":
        return cls(spec.name, spec.collective, spec.world_size, instances=spec.instances, protocol=spec.protocol,
                   instr_fusion=spec.instr_fusion, auto_sync=spec.auto_sync,
                   replication_policy=spec.replication_policy, reuse_resources=spec.reuse_resources,
                   num_threads_per_block=spec.num_threads_per_block,
                   use_double_scratch_buffer=spec.use_double_scratch_buffer,
                   buffer_alignment=spec.buffer_alignment, min_message_size=spec.min_message_size,
                   max_message_size=spec.max_message_size)

    def __enter__(self):
        _state.set_program(self)
        return self

    def __exit__(self, exc_type, exc_value, traceback):
        _state.set_program(None)

    def _next_channel(self) -> int:
        self._channels += 1
        return self._channels - 1

    def _next_switch(self) -> int:
        self._switches += 1
        return self._switches - 1

    def _next_semaphore(self) -> int:
        self._semaphores += 1
        return self._semaphores - 1

    def recording(self) -> Dict[str, Any]:
        """The recorded program, as mscclpp's builder takes it."""
        c = self.collective
        rec = {
            "name": self.name,
            "collective": c.name,
            "num_ranks": self.num_ranks,
            "chunk_factor": c.chunk_factor,
            "inplace": bool(c.inplace),
            "protocol": self.protocol,
            "instances": self.instances,
            "instr_fusion": self.instr_fusion,
            "auto_sync": self.auto_sync,
            "reuse_resources": self.reuse_resources,
            "num_threads_per_block": self.num_threads_per_block,
            "use_double_scratch_buffer": self.use_double_scratch_buffer,
            "buffer_alignment": self.buffer_alignment,
            "min_message_size": self.min_message_size,
            "max_message_size": self.max_message_size,
            "calls": self._calls,
        }
        if isinstance(c, TestCollective):
            rec["buffer_chunks"] = [c.input_size, c.output_size]
        return rec

    def to_json(self, indent=2, **kwargs) -> str:
        """Build the plan: MSCCL++'s JSON execution plan as text."""
        from mscclpp import _mscclpp

        text = _mscclpp._dsl_plan_json(json.dumps(self.recording()))
        if indent == 2 and not kwargs:
            return text
        return json.dumps(json.loads(text), indent=indent, **kwargs)

    def plan(self):
        """The plan as an `mscclpp.ExecutionPlan` (for `Executor`, `mscclpp.plan.register`, `CustomizedComm`)."""
        from mscclpp import ExecutionPlan

        return ExecutionPlan.from_json(self.to_json())


__all__ = ["AlgoSpec", "CollectiveProgram", "ReplicationPolicy"]
