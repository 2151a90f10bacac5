"""The DSL's enumerations, as MSCCL++ names them."""

from enum import Enum


class SyncType(Enum):
    """Where the lowering puts a `nop` around a synchronisation operation."""

    none = "none"
    before = "before"
    after = "after"
    both = "both"


class ReduceOperationType(Enum):
    """The reduction of `reduce` and `read_reduce`."""

    sum = "sum"
    min = "min"
    max = "max"


class BufferType(Enum):
    """Which buffer a chunk lies in."""

    input = "i"
    output = "o"
    scratch = "s"

    def __str__(self):
        return self.name


class ChannelType(Enum):
    """The kinds of channel."""

    port = "port"
    memory = "memory"
    switch = "switch"
    none = "none"


class ReplicationPolicy(Enum):
    """How instances of a program are laid out."""

    interleaved = "interleaved"
    none = "none"

    def __str__(self):
        return self.value
