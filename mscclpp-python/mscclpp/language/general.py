"""`JSON()`: the active program's plan."""

from ._state import get_program


def JSON() -> str:
    """The active program's MSCCL++ JSON execution plan, built by mscclpp's program builder."""
    return get_program().to_json()


__all__ = ["JSON"]
