"""`AlgoSpec` and `ReplicationPolicy`, where MSCCL++ keeps them."""

from .program import AlgoSpec
from .types import ReplicationPolicy

__all__ = ["AlgoSpec", "ReplicationPolicy"]
