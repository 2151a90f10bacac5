"""PyTorch integration: ``CustomizedComm`` runs all_reduce, all_gather, reduce_scatter and broadcast on torch
tensors on torch's current stream, and falls back to ``torch.distributed`` for what it does not accelerate.

Calls are staged through two buffers of the communicator (copy in, run the plan, copy out), so any tensor works
and the ranks' caching allocators never need to agree. Inside ``torch.cuda.graph`` capture a call is ours only
when the same call (collective, size, dtype, op) already ran eagerly; otherwise it falls back, on every rank
alike. Run each shape once before capturing it.

torch is imported when this module is imported (``import mscclpp`` itself never imports torch).
"""

from __future__ import annotations

from typing import Any, Dict, Optional

import torch
import torch.distributed as dist

from ._mscclpp import CommGroup, Error, Executor, ReduceOp
from .plan_registry import ExecutionPlanRegistry
from .utils import torch_dtype_to_mscclpp_dtype

#: The collectives this module runs, each with the largest piece (one rank's part: the smaller of a call's input
#: and output) it takes when ``max_bytes`` is not given: ``None`` asks the library, which takes every size this
#: machine's tuned table says ours win (tables for 2 and 4 H200s ship with it; ``mscclpp tune`` writes one), else
#: up to 4 MiB on up to 4 ranks (256 KiB on more) -- the same rule as the NCCL-ABI library.
DEFAULT_MAX_BYTES: Dict[str, Optional[int]] = {
    "allreduce": None,
    "allgather": None,
    "reducescatter": None,
    "broadcast": None,
}

# The dtypes this module runs, with their mscclpp types looked up once (not on every call).
_DTYPES = {t: torch_dtype_to_mscclpp_dtype(t) for t in (torch.float16, torch.bfloat16, torch.float32, torch.int32, torch.uint8)}


def _reduce_op(op: Any) -> Optional[ReduceOp]:
    """Our operator for a torch.distributed or mscclpp one; None for those we do not run (AVG, PRODUCT ...)."""
    if isinstance(op, ReduceOp):
        return op
    if op is None:
        return ReduceOp.SUM
    for name, ours in (("SUM", ReduceOp.SUM), ("MIN", ReduceOp.MIN), ("MAX", ReduceOp.MAX)):
        if op == getattr(dist.ReduceOp, name, object()):
            return ours
    if isinstance(op, str) and op.upper() in ("SUM", "MIN", "MAX"):
        return getattr(ReduceOp, op.upper())
    return None


def _dist_op(op: Any) -> Any:
    """The torch.distributed operator for the fallback."""
    if op is None:
        return dist.ReduceOp.SUM
    if isinstance(op, ReduceOp) or isinstance(op, str):
        ours = _reduce_op(op)
        if ours is None:
            raise Error(f"unknown reduction operator {op!r}: use SUM, MIN or MAX")
        return {ReduceOp.SUM: dist.ReduceOp.SUM, ReduceOp.MIN: dist.ReduceOp.MIN, ReduceOp.MAX: dist.ReduceOp.MAX}[ours]
    return op


class CustomizedComm:
    """Collectives on torch tensors through mscclpp, with ``torch.distributed`` as the fallback.

    ``comm``: a ``mscclpp.CommGroup`` (default: ``CommGroup.from_env()``, i.e. torchrun's variables).
    ``group``: the torch.distributed group of the fallback (default: the default group).
    ``max_bytes``: the per-collective window (see ``DEFAULT_MAX_BYTES``), or one int for all.
    ``stats`` counts the calls each path took: ``{"mscclpp": n, "fallback": m, "registered_plan": k}`` (``k`` of
    the ``n``: plans registered with ``mscclpp.plan.register`` and chosen by its selector, which run first, zero
    copy on the tensors); ``last_fallback`` says why the
    last fallback happened.
    """

    def __init__(
        self,
        comm: Optional[CommGroup] = None,
        group: Any = None,
        max_bytes: Any = None,
        staging_bytes: int = 512 << 20,
    ) -> None:
        self.comm = comm if comm is not None else CommGroup.from_env()
        self.group = group
        self.rank = self.comm.rank
        self.world_size = self.comm.size
        if max_bytes is None:
            chosen = dict(DEFAULT_MAX_BYTES)
        elif isinstance(max_bytes, int):
            chosen = {k: max_bytes for k in DEFAULT_MAX_BYTES}
        else:
            chosen = {**DEFAULT_MAX_BYTES, **max_bytes}
        for k, v in chosen.items():
            if v is None:
                chosen[k] = self.comm._window(k)
        self.max_bytes: Dict[str, int] = chosen
        self.staging_bytes = staging_bytes
        self.stats = {"mscclpp": 0, "fallback": 0, "registered_plan": 0}
        self.last_fallback: Optional[str] = None
        self._run = self.comm._run_staged
        self._executor: Optional[Executor] = None

    # -- helpers -----------------------------------------------------------------------------------------------

    @staticmethod
    def _check_cuda(t: torch.Tensor, what: str) -> None:
        if not isinstance(t, torch.Tensor):
            raise Error(f"{what} must be a torch.Tensor, not {type(t).__name__}")
        if not t.is_cuda:
            raise Error(f"{what} is on {t.device}, not a CUDA device: move it to the GPU first (tensor.cuda())")

    def _fallback(self, why: str, fn: Any, *args: Any, **kwargs: Any) -> Any:
        self.stats["fallback"] += 1
        self.last_fallback = why
        if not dist.is_available() or not dist.is_initialized():
            raise Error(
                f"mscclpp does not accelerate this call ({why}) and torch.distributed is not initialized for the "
                "fallback: call torch.distributed.init_process_group(...) first"
            )
        return fn(*args, group=self.group, **kwargs)

    def _ours(self, name: str, send: torch.Tensor, recv: torch.Tensor, in_bytes: int, out_bytes: int, op: ReduceOp) -> Optional[str]:
        """None when queued on the current stream, else why not."""
        dtype = _DTYPES.get(send.dtype)
        if dtype is None:
            return f"dtype {send.dtype} is not run by mscclpp"
        if not (send.is_contiguous() and recv.is_contiguous()):
            return "a tensor is not contiguous"
        stream = torch.cuda.current_stream(send.device).cuda_stream
        # A plan the user registered (mscclpp.plan.register) and the selector chose runs first, at any size, zero
        # copy on the tensors themselves, as MSCCL++ runs it (every rank must pass tensors allocated alike).
        registry = ExecutionPlanRegistry()
        size = out_bytes if name == "allgather" else in_bytes
        handle = registry.select(name, self.world_size, self.comm.nranks_per_node, send.data_ptr(), recv.data_ptr(),
                                 size)
        if handle is not None:
            if self._executor is None:
                self._executor = Executor(self.comm)
            self._executor.execute(handle.plan, send, recv, in_bytes, out_bytes, dtype, stream)
            self.stats["mscclpp"] += 1
            self.stats["registered_plan"] += 1
            return None
        piece = min(in_bytes, out_bytes)
        if piece > self.max_bytes[name]:
            return f"a piece of {piece} B is above the {name} window of {self.max_bytes[name]} B"
        why = self._run(
            name,
            send.data_ptr(),
            recv.data_ptr(),
            in_bytes,
            out_bytes,
            dtype,
            op,
            stream,
            self.staging_bytes,
        )
        if why is None:
            self.stats["mscclpp"] += 1
        return why

    # -- collectives -------------------------------------------------------------------------------------------

    def all_reduce(self, tensor: torch.Tensor, op: Any = None) -> torch.Tensor:
        """Reduce ``tensor`` over all ranks in place (SUM by default; MIN, MAX; others fall back)."""
        self._check_cuda(tensor, "tensor")
        ours = _reduce_op(op)
        n = tensor.numel() * tensor.element_size()
        why = "reduction operator not run by mscclpp" if ours is None else (
            "empty tensor" if n == 0 else self._ours("allreduce", tensor, tensor, n, n, ours))
        if why is not None:
            self._fallback(why, dist.all_reduce, tensor, op=_dist_op(op))
        return tensor

    def all_gather(self, output: torch.Tensor, input: torch.Tensor) -> torch.Tensor:
        """Gather every rank's ``input`` into ``output`` (``world_size`` times its size), rank order."""
        self._check_cuda(output, "output")
        self._check_cuda(input, "input")
        n = input.numel() * input.element_size()
        if output.numel() * output.element_size() != n * self.world_size or output.dtype != input.dtype:
            raise Error(
                f"all_gather: output must hold world_size ({self.world_size}) x input ({n} B) of {input.dtype}, "
                f"got {output.numel() * output.element_size()} B of {output.dtype}"
            )
        why = "empty tensor" if n == 0 else self._ours("allgather", input, output, n, n * self.world_size, ReduceOp.SUM)
        if why is not None:
            self._fallback(why, dist.all_gather_into_tensor, output, input)
        return output

    def reduce_scatter(self, output: torch.Tensor, input: torch.Tensor, op: Any = None) -> torch.Tensor:
        """Reduce ``input`` over all ranks and keep this rank's slice in ``output`` (``input`` / ``world_size``)."""
        self._check_cuda(output, "output")
        self._check_cuda(input, "input")
        n = output.numel() * output.element_size()
        if input.numel() * input.element_size() != n * self.world_size or output.dtype != input.dtype:
            raise Error(
                f"reduce_scatter: input must hold world_size ({self.world_size}) x output ({n} B) of "
                f"{output.dtype}, got {input.numel() * input.element_size()} B of {input.dtype}"
            )
        ours = _reduce_op(op)
        why = "reduction operator not run by mscclpp" if ours is None else (
            "empty tensor" if n == 0 else self._ours("reducescatter", input, output, n * self.world_size, n, ours))
        if why is not None:
            self._fallback(why, dist.reduce_scatter_tensor, output, input, op=_dist_op(op))
        return output

    def broadcast(self, tensor: torch.Tensor, src: int = 0) -> torch.Tensor:
        """Copy rank ``src``'s ``tensor`` to every rank, in place (ours for ``src == 0``)."""
        self._check_cuda(tensor, "tensor")
        if not 0 <= src < self.world_size:
            raise Error(f"broadcast: src {src} is not a rank of this {self.world_size}-rank communicator")
        n = tensor.numel() * tensor.element_size()
        why = "only src=0 is accelerated" if src != 0 else (
            "empty tensor" if n == 0 else self._ours("broadcast", tensor, tensor, n, n, ReduceOp.SUM))
        if why is not None:
            self._fallback(why, dist.broadcast, tensor, src=src)
        return tensor

    def barrier(self) -> None:
        """Host barrier over the communicator's bootstrap."""
        self.comm.barrier()

    def close(self) -> None:
        """Release the communicator (its staging buffers are freed once queued work is done)."""
        self.comm.close()


__all__ = ["CustomizedComm", "DEFAULT_MAX_BYTES"]
