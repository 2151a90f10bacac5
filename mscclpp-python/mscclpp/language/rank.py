"""Ranks, their buffers and chunks, and the operations a rank runs on its own data."""

from __future__ import annotations

from typing import List, Optional

from ._state import get_program, record, tb_ref
from .thread_block_group import ThreadBlockGroup
from .types import BufferType, ReduceOperationType, SyncType  # noqa: F401 (MSCCL++ re-exports them here)


class Chunk:
    """`size` chunks from chunk `index` of a rank's buffer (for a scratch `Buffer`, `index` counts from the rank's
    scratch space, as in MSCCL++)."""

    def __init__(self, rank: int, buffer: BufferType, index: int, size: int, scratch=None):
        self.rank = rank
        self.buffer = buffer
        self.index = index
        self.size = size
        self._scratch = scratch  # (id, first chunk) of the Buffer it comes from

    def _ref(self):
        if self.buffer == BufferType.scratch:
            sid, base = self._scratch
            return {"rank": self.rank, "buffer": self.buffer.value, "scratch": sid, "index": self.index - base,
                    "size": self.size}
        return {"rank": self.rank, "buffer": self.buffer.value, "index": self.index, "size": self.size}

    def __repr__(self):
        return f"Chunk(rank={self.rank}, buffer={self.buffer}, index={self.index}, size={self.size})"


class BaseBuffer:
    """A buffer of a rank; `buffer[a:b]` is the chunk slice `[a, b)`."""

    def __init__(self, rank: int, buffer_type: BufferType, offset: int, size: int, scratch_id=None):
        self.rank = rank
        self.buffer_type = buffer_type
        self.offset = offset
        self.size = offset + size
        self._scratch_id = scratch_id

    def __getitem__(self, key):
        if not isinstance(key, slice):
            raise TypeError(f"Buffer indices must be slices, not {type(key).__name__}")
        if key.step is not None and key.step != 1:
            raise ValueError(f"Buffer slicing does not support step != 1 (got step={key.step})")
        length = self.size - self.offset
        start = 0 if key.start is None else key.start
        stop = length if key.stop is None else key.stop
        if start < 0 or stop < 0:
            raise ValueError(f"Buffer slicing does not support negative indices (got start={key.start}, stop={key.stop})")
        if start > stop:
            raise ValueError(f"Buffer slice start ({start}) must be <= stop ({stop})")
        scratch = None if self._scratch_id is None else (self._scratch_id, self.offset)
        return Chunk(self.rank, self.buffer_type, self.offset + start, stop - start, scratch)


class Buffer(BaseBuffer):
    """`size` scratch chunks of `rank`, after the rank's earlier scratch buffers."""

    def __init__(self, rank: int, size: int):
        program = get_program()
        if not 0 <= rank < program.num_ranks:
            raise RuntimeError(f"Rank {rank} is out of bounds. Number of ranks: {program.num_ranks}")
        sid = len(program._scratch)
        offset = program._scratch_used[rank]
        program._scratch.append((rank, size))
        program._scratch_used[rank] += size
        record({"call": "scratch", "id": sid, "rank": rank, "size": size})
        BaseBuffer.__init__(self, rank, BufferType.scratch, offset, size, sid)


class Rank:
    """One rank of the program: its buffers and local operations."""

    def __init__(self, rank: int):
        program = get_program()
        if not 0 <= rank < program.num_ranks:
            raise RuntimeError(f"Rank {rank} is out of bounds. Number of ranks: {program.num_ranks}")
        self.rank = rank

    def get_input_buffer(self) -> BaseBuffer:
        inputs, _ = get_program().collective.sizes()
        return BaseBuffer(self.rank, BufferType.input, 0, inputs)

    def get_output_buffer(self) -> BaseBuffer:
        _, outputs = get_program().collective.sizes()
        return BaseBuffer(self.rank, BufferType.output, 0, outputs)

    def _local(self, name, dst_chunk, src_chunk, tb, tb_group):
        record({"call": "copy", "name": name, "rank": self.rank, "dst": dst_chunk._ref(), "src": src_chunk._ref(),
                "tb": tb_ref(tb, tb_group, name)})

    def copy(self, dst_chunk: Chunk, src_chunk: Chunk, tb: int = None, tb_group: ThreadBlockGroup = None):
        """dst = src on this rank."""
        self._local("copy", dst_chunk, src_chunk, tb, tb_group)

    def copy_packets(self, dst_chunk: Chunk, src_chunk: Chunk, tb: int = None, tb_group: ThreadBlockGroup = None):
        """Write `src` as LL packets into scratch chunk `dst`."""
        self._local("copy_packets", dst_chunk, src_chunk, tb, tb_group)

    def unpack_packets(self, dst_chunk: Chunk, src_chunk: Chunk, tb: int = None, tb_group: ThreadBlockGroup = None):
        """Unpack the LL packets of scratch chunk `src` into `dst`."""
        self._local("unpack_packets", dst_chunk, src_chunk, tb, tb_group)

    def reduce(self, src_chunk: Chunk, other_chunks: List[Chunk], tb: int = None,
               tb_group: ThreadBlockGroup = None, dst_chunk: Optional[Chunk] = None,
               reduce_op: ReduceOperationType = ReduceOperationType.sum, packet: bool = False):
        """dst = src ⊕ others (dst defaults to src); `packet`: the others are LL packets in scratch."""
        name = "reduce_packets" if packet else "reduce"
        dst = src_chunk if dst_chunk is None else dst_chunk
        record({"call": "reduce", "name": name, "rank": self.rank, "dst": dst._ref(), "src": src_chunk._ref(),
                "others": [c._ref() for c in other_chunks], "tb": tb_ref(tb, tb_group, name),
                "op": reduce_op.value})

    def barrier(self, tb_list: List[int]):
        """Synchronise thread blocks `tb_list` of this rank."""
        record({"call": "barrier", "rank": self.rank, "tbs": list(tb_list)})


class Semaphore:
    """A device semaphore of `rank`, starting at `initial_value`: `acquire` waits for and takes one unit,
    `release` adds one."""

    def __init__(self, rank: int, initial_value: int):
        program = get_program()
        if not 0 <= rank < program.num_ranks:
            raise RuntimeError(f"Rank {rank} is out of bounds. Number of ranks: {program.num_ranks}")
        self.rank = rank
        self.initial_value = initial_value
        self._id = program._next_semaphore()
        record({"call": "semaphore", "id": self._id, "rank": rank, "initial_value": int(initial_value)})

    @classmethod
    def reset(cls):
        """Kept for MSCCL++'s API: semaphores are counted per program."""

    def acquire(self, tb: int, data_sync: SyncType = SyncType.both):
        """Wait for the semaphore to be positive and decrement it."""
        record({"call": "semaphore_op", "semaphore": self._id, "acquire": True, "tb": tb_ref(tb, None, "acquire"),
                "sync": data_sync.value})

    def release(self, tb: int, data_sync: SyncType = SyncType.both):
        """Increment the semaphore."""
        record({"call": "semaphore_op", "semaphore": self._id, "acquire": False, "tb": tb_ref(tb, None, "release"),
                "sync": data_sync.value})


__all__ = ["Chunk", "BaseBuffer", "Buffer", "Rank", "Semaphore", "ThreadBlockGroup", "BufferType",
           "ReduceOperationType", "SyncType"]
