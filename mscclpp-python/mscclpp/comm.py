"""MSCCL++'s ``mscclpp.comm`` module: ``from mscclpp.comm import CommGroup`` works as in MSCCL++'s guides."""

from ._mscclpp import CommGroup

__all__ = ["CommGroup"]
