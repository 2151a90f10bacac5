"""MSCCL++'s Python DSL (`from mscclpp.language import *`) on mscclpp's program builder.

A program written for MSCCL++ — `CollectiveProgram`, collectives, `Rank`, buffers and chunks, `MemoryChannel`,
`PortChannel`, thread-block groups, `JSON()` — is recorded call by call and built by the same builder, lowering
and checks as the Rust eDSL (`mscclpp_lang::dsl`); an error names the Python file and line of the call. Differences from
MSCCL++'s own DSL: docs/python.md."""

from .channel import *  # noqa: F401,F403
from .collectives import *  # noqa: F401,F403
from .general import *  # noqa: F401,F403
from .loop import *  # noqa: F401,F403
from .program import *  # noqa: F401,F403
from .rank import *  # noqa: F401,F403
from .thread_block_group import *  # noqa: F401,F403
from .types import BufferType, ChannelType, ReduceOperationType, ReplicationPolicy, SyncType  # noqa: F401
from .program import AlgoSpec  # noqa: F401
