"""Paths that need torch but no GPU: torch dtypes, and CPU tensors refused with a clear error. Marked `torch`."""

from __future__ import annotations

import pytest

import mscclpp

pytestmark = pytest.mark.torch



def test_torch_dtype_mapping(torch) -> None:
    from mscclpp.utils import torch_dtype_to_mscclpp_dtype

    assert torch_dtype_to_mscclpp_dtype(torch.float16) == mscclpp.DataType.float16
    assert torch_dtype_to_mscclpp_dtype(torch.half) == mscclpp.DataType.float16
    assert torch_dtype_to_mscclpp_dtype(torch.bfloat16) == mscclpp.DataType.bfloat16
    assert torch_dtype_to_mscclpp_dtype(torch.float32) == mscclpp.DataType.float32
    assert torch_dtype_to_mscclpp_dtype(torch.int32) == mscclpp.DataType.int32
    assert torch_dtype_to_mscclpp_dtype(torch.uint8) == mscclpp.DataType.uint8
    for bad in (torch.float64, torch.int64, torch.bool):
        with pytest.raises(mscclpp.Error, match="not supported by mscclpp"):
            torch_dtype_to_mscclpp_dtype(bad)


def test_a_cpu_tensor_is_refused(torch) -> None:
    t = torch.ones(16)
    with pytest.raises(mscclpp.Error, match="not on a CUDA device.*cuda"):
        mscclpp.ptr(t)
    import mscclpp.torch as mt

    with pytest.raises(mscclpp.Error, match="not a CUDA device.*cuda"):
        mt.CustomizedComm._check_cuda(t, "tensor")
    with pytest.raises(mscclpp.Error, match="must be a torch.Tensor"):
        mt.CustomizedComm._check_cuda([1, 2], "tensor")


def test_torch_reduce_ops_map(torch) -> None:
    import torch.distributed as dist

    import mscclpp.torch as mt

    assert mt._reduce_op(dist.ReduceOp.SUM) == mscclpp.ReduceOp.SUM
    assert mt._reduce_op(dist.ReduceOp.MAX) == mscclpp.ReduceOp.MAX
    assert mt._reduce_op(None) == mscclpp.ReduceOp.SUM
    assert mt._reduce_op(dist.ReduceOp.PRODUCT) is None
    assert mt._dist_op(mscclpp.ReduceOp.MIN) == dist.ReduceOp.MIN
