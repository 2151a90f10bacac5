"""The plan registry, under MSCCL++'s names: plans a user registers (``mscclpp.plan.register(plan)``, or
``mscclpp.ExecutionPlanRegistry().register_plan(plan)``) are chosen before this library's own programs, by a
selector the user sets (``mscclpp.plan.set_selector(fn)``, called as ``fn(plans, request)`` and returning one of
``plans`` or None), else by the first plan whose world size and message range fit.

Who honours it: ``mscclpp.torch.CustomizedComm`` (a selected plan runs zero copy on the caller's tensors, as in
MSCCL++; every rank must then pass tensors allocated alike), and ``libmscclpp_nccl.so`` when it is loaded in the
same process (``LD_PRELOAD``): every registered plan is also handed to its ``mscclpp_nccl_register_plan``, which
tries it before its own programs. Every plan is verified on the CPU once, when registered; a plan with findings is
refused with them.
"""

from __future__ import annotations

import ctypes
import hashlib
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, FrozenSet, Iterable, List, Optional

from ._mscclpp import Error, ExecutionPlan
from ._mscclpp import plan as _make_plan


@dataclass(frozen=True)
class ExecutionRequest:
    """What a selector is asked to serve (MSCCL++'s ``ExecutionRequest``)."""

    collective: str
    world_size: int
    n_ranks_per_node: int
    send_buffer: int = 0
    recv_buffer: int = 0
    message_size: int = 0
    hints: Dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ExecutionPlanHandle:
    """A registered plan: its ``id`` (name and content hash), the ``plan``, and the user's ``tags``."""

    id: str
    plan: ExecutionPlan
    tags: FrozenSet[str]

    @property
    def collective(self) -> str:
        return self.plan.collective

    def fits(self, world_size: int, message_size: int) -> bool:
        """Whether the plan runs ``message_size`` bytes on ``world_size`` ranks."""
        lo, hi = self.plan.message_range
        return self.plan.world_size == world_size and lo <= message_size and (hi is None or message_size <= hi)


Selector = Callable[[List[ExecutionPlanHandle], ExecutionRequest], Any]


def _first_fitting(plans: List[ExecutionPlanHandle], req: ExecutionRequest) -> Optional[ExecutionPlanHandle]:
    return next((p for p in plans if p.fits(req.world_size, req.message_size)), None)


def _nccl_hook() -> Optional[Any]:
    """``mscclpp_nccl_register_plan`` of a ``libmscclpp_nccl.so`` loaded in this process, if one is."""
    try:
        fn = ctypes.CDLL(None).mscclpp_nccl_register_plan
    except (AttributeError, OSError):
        return None
    fn.argtypes = [ctypes.c_char_p]
    fn.restype = ctypes.c_int
    return fn


class ExecutionPlanRegistry:
    """MSCCL++'s plan registry: one per process."""

    _instance: Optional["ExecutionPlanRegistry"] = None

    def __new__(cls) -> "ExecutionPlanRegistry":
        if cls._instance is None:
            inst = super().__new__(cls)
            inst._plans = {}
            inst._by_collective = {}
            inst._selector = None
            inst._default_selector = _first_fitting
            cls._instance = inst
        return cls._instance

    @classmethod
    def reset_instance(cls) -> None:
        """Forget every registered plan and selector."""
        cls._instance = None

    def register_plan(self, plan: Any, tags: Iterable[str] = (), verify: bool = True) -> ExecutionPlanHandle:
        """Register ``plan`` (an ``ExecutionPlan``, a path to an MSCCL++ JSON plan, or a handle) after verifying
        it on the CPU (``verify=False`` skips that); returns its handle. Registering the same plan again returns
        the existing handle."""
        if isinstance(plan, ExecutionPlanHandle):
            tags = set(tags) | set(plan.tags)
            plan = plan.plan
        elif not isinstance(plan, ExecutionPlan):
            plan = ExecutionPlan(plan)
        text = plan.to_json()
        pid = f"{plan.name}-{hashlib.blake2b(text.encode(), digest_size=8).hexdigest()}"
        if pid in self._plans:
            return self._plans[pid]
        if verify:
            from .report import verify as _verify

            report = _verify(plan)
            if not report.ok:
                found = "; ".join(f"{f.kind}: {f.message}" for f in report.findings[:3])
                raise Error(f"plan {plan.name!r} is refused: the CPU verifier found {len(report.findings)} "
                            f"problem(s): {found}")
        handle = ExecutionPlanHandle(pid, plan, frozenset(tags))
        self._plans[pid] = handle
        self._by_collective.setdefault(plan.collective, []).append(handle)
        hook = _nccl_hook()
        if hook is not None and hook(text.encode()) != 0:
            raise Error(f"plan {plan.name!r}: libmscclpp_nccl.so in this process refused it (see ncclGetLastError)")
        return handle

    register = register_plan

    def set_selector(self, selector: Optional[Selector]) -> None:
        """``selector(plans, request)`` picks one of ``plans`` (the registered plans of the request's collective)
        or returns None (then this library's own programs run)."""
        if selector is not None and not callable(selector):
            raise TypeError("a selector is a function (plans, request) -> plan or None")
        self._selector = selector

    def set_default_selector(self, selector: Selector) -> None:
        """The selector used when none was set (default: the first plan that fits)."""
        if not callable(selector):
            raise TypeError("a selector is a function (plans, request) -> plan or None")
        self._default_selector = selector

    def get(self, id: str) -> Optional[ExecutionPlanHandle]:
        return self._plans.get(id)

    def get_plans(self, collective: str) -> List[ExecutionPlanHandle]:
        return list(self._by_collective.get(collective, []))

    def select(
        self,
        collective: str,
        world_size: int,
        n_ranks_per_node: int,
        send_buffer: int = 0,
        recv_buffer: int = 0,
        message_size: int = 0,
        hints: Optional[Dict[str, Any]] = None,
    ) -> Optional[ExecutionPlanHandle]:
        """The registered plan to run, or None when none is registered for ``collective`` or the selector
        declines. A selector may return a handle or one of the plans; anything else is an error."""
        plans = self.get_plans(collective)
        if not plans:
            return None
        req = ExecutionRequest(collective, world_size, n_ranks_per_node, send_buffer, recv_buffer, message_size,
                               dict(hints or {}))
        chosen = (self._selector or self._default_selector)(plans, req)
        if chosen is None or isinstance(chosen, ExecutionPlanHandle):
            return chosen
        for h in plans:
            if h.plan is chosen:
                return h
        raise Error(f"the plan selector returned {chosen!r}, which is not one of the registered plans it was given")

    def clear(self) -> None:
        self._plans.clear()
        self._by_collective.clear()


class _PlanFunction:
    """``mscclpp.plan``: call it to compile a registered program (``mscclpp.plan(name, world_size=...)``); its
    attributes reach the plan registry as MSCCL++ names them (``register``, ``set_selector``, ``select``)."""

    __doc__ = _make_plan.__doc__

    def __call__(self, *args: Any, **kwargs: Any) -> ExecutionPlan:
        return _make_plan(*args, **kwargs)

    @property
    def registry(self) -> ExecutionPlanRegistry:
        return ExecutionPlanRegistry()

    def register(self, plan: Any, tags: Iterable[str] = (), verify: bool = True) -> ExecutionPlanHandle:
        return ExecutionPlanRegistry().register_plan(plan, tags, verify)

    def set_selector(self, selector: Optional[Selector]) -> None:
        ExecutionPlanRegistry().set_selector(selector)

    def select(self, *args: Any, **kwargs: Any) -> Optional[ExecutionPlanHandle]:
        return ExecutionPlanRegistry().select(*args, **kwargs)

    def __repr__(self) -> str:
        return "<mscclpp.plan: plan(name, world_size=...), .register(plan), .set_selector(fn)>"


plan = _PlanFunction()
PlanHandle = ExecutionPlanHandle
Request = ExecutionRequest

__all__ = ["ExecutionPlanHandle", "ExecutionPlanRegistry", "ExecutionRequest", "PlanHandle", "Request", "plan"]
