"""Helpers that map torch's types to mscclpp's (torch is imported only when a torch object is passed)."""

from __future__ import annotations

from typing import Any

from ._mscclpp import DataType, Error

_BY_NAME = {
    "float16": DataType.float16,
    "half": DataType.float16,
    "bfloat16": DataType.bfloat16,
    "float32": DataType.float32,
    "float": DataType.float32,
    "int32": DataType.int32,
    "int": DataType.int32,
    "uint32": DataType.uint32,
    "uint8": DataType.uint8,
}


def torch_dtype_to_mscclpp_dtype(dtype: Any) -> DataType:
    """The ``mscclpp.DataType`` of a torch dtype (``torch.float16`` -> ``DataType.float16``). Raises
    ``mscclpp.Error`` for a type mscclpp does not run (e.g. ``torch.float64``), naming the ones it does."""
    if isinstance(dtype, DataType):
        return dtype
    name = str(dtype)
    if name.startswith("torch."):
        name = name[len("torch."):]
    found = _BY_NAME.get(name)
    if found is None:
        raise Error(
            f"dtype {dtype!r} is not supported by mscclpp: use one of torch.float16, torch.bfloat16, "
            "torch.float32, torch.int32, torch.uint32 or torch.uint8 (or fall back to torch.distributed)"
        )
    return found
