"""Channels between ranks: memory channels (direct peer access) and port channels (the host proxy)."""

from __future__ import annotations

from typing import List, Optional

from ._state import get_program, record, tb_ref
from .rank import Chunk
from .thread_block_group import ThreadBlockGroup
from .types import BufferType, ChannelType, ReduceOperationType, SyncType  # noqa: F401 (re-exported as in MSCCL++)


class _PeerChannel:
    kind = ""

    def __init__(self, dst_rank: int, src_rank: int):
        program = get_program()
        for r in (dst_rank, src_rank):
            if not 0 <= r < program.num_ranks:
                raise RuntimeError(f"Rank {r} is out of bounds. Number of ranks: {program.num_ranks}")
        if dst_rank == src_rank:
            raise RuntimeError(f"a channel connects two ranks, but dst_rank and src_rank are both {dst_rank}")
        self.dst_rank = dst_rank
        self.src_rank = src_rank
        self._id = program._next_channel()
        record({"call": "channel", "id": self._id, "kind": self.kind, "dst": dst_rank, "src": src_rank})

    def _sync(self, call, tb, data_sync, relaxed=False):
        record({"call": call, "channel": self._id, "tb": tb_ref(tb, None, call), "sync": data_sync.value,
                "relaxed": bool(relaxed)})

    def _transfer(self, name, dst_chunk, src_chunk, tb, tb_group=None):
        record({"call": "transfer", "name": name, "channel": self._id, "dst": dst_chunk._ref(),
                "src": src_chunk._ref(), "tb": tb_ref(tb, tb_group, name)})

    def signal(self, tb: int, data_sync: SyncType = SyncType.both, relaxed: bool = False):
        """Signal the peer."""
        self._sync("signal", tb, data_sync, relaxed)

    def wait(self, tb: int, data_sync: SyncType = SyncType.both, relaxed: bool = False):
        """Wait for one signal of the peer."""
        self._sync("wait", tb, data_sync, relaxed)

    def put(self, dst_chunk: Chunk, src_chunk: Chunk, tb: int = None, tb_group: ThreadBlockGroup = None):
        """Copy local `src` to the peer's `dst`."""
        self._transfer("put", dst_chunk, src_chunk, tb, tb_group)

    def put_packets(self, dst_chunk: Chunk, src_chunk: Chunk, tb: int = None, tb_group: ThreadBlockGroup = None):
        """Send local `src` as LL packets into the peer's scratch chunk `dst`."""
        self._transfer("put_packets", dst_chunk, src_chunk, tb, tb_group)

    def read_put_packets(self, dst_chunk: Chunk, src_chunk: Chunk, tb: int = None,
                         tb_group: ThreadBlockGroup = None):
        """Forward the LL packets of local scratch chunk `src` into the peer's scratch chunk `dst`."""
        self._transfer("read_put_packets", dst_chunk, src_chunk, tb, tb_group)


class MemoryChannel(_PeerChannel):
    """A channel from `src_rank` (where its operations run) to `dst_rank`, by direct peer memory access."""

    kind = "memory"

    @classmethod
    def reset(cls):
        """Kept for MSCCL++'s API: channels are counted per program."""

    def get(self, dst_chunk: Chunk, src_chunk: Chunk, tb: int = None, tb_group: ThreadBlockGroup = None):
        """Copy the peer's `src` into local `dst`."""
        self._transfer("get", dst_chunk, src_chunk, tb, tb_group)

    def reduce(self, local_src_chunk: Chunk, remote_src_chunks: List[Chunk], tb: int = None,
               tb_group: ThreadBlockGroup = None, local_dst_chunk: Optional[Chunk] = None,
               reduce_op: ReduceOperationType = ReduceOperationType.sum):
        """local dst = local src ⊕ the peer's chunks (read directly); dst defaults to the source."""
        dst = local_src_chunk if local_dst_chunk is None else local_dst_chunk
        record({"call": "read_reduce", "channel": self._id, "dst": dst._ref(), "src": local_src_chunk._ref(),
                "remotes": [c._ref() for c in remote_src_chunks], "tb": tb_ref(tb, tb_group, "reduce"),
                "op": reduce_op.value})


class PortChannel(_PeerChannel):
    """A channel from `src_rank` to `dst_rank` through the host proxy (CUDA IPC copies, InfiniBand, Ethernet)."""

    kind = "port"

    @classmethod
    def reset(cls):
        """Kept for MSCCL++'s API: channels are counted per program."""

    def signal(self, tb: int, data_sync: SyncType = SyncType.both):
        """Signal the peer."""
        self._sync("signal", tb, data_sync)

    def wait(self, tb: int, data_sync: SyncType = SyncType.both):
        """Wait for one signal of the peer."""
        self._sync("wait", tb, data_sync)

    def flush(self, tb: int, data_sync: SyncType = SyncType.both):
        """Wait until the proxy finished this channel's transfers."""
        record({"call": "flush", "channel": self._id, "tb": tb_ref(tb, None, "flush"), "sync": data_sync.value})

    def put_with_signal(self, dst_chunk: Chunk, src_chunk: Chunk, tb: int):
        """`put` then `signal` in one proxy request."""
        self._transfer("put_with_signal", dst_chunk, src_chunk, tb)

    def put_with_signal_and_flush(self, dst_chunk: Chunk, src_chunk: Chunk, tb: int):
        """`put`, `signal` and `flush` in one proxy request."""
        self._transfer("put_with_signal_and_flush", dst_chunk, src_chunk, tb)


class SwitchChannel:
    """A multicast group over one buffer of `rank_list` (`buffer_type`): a member reduces the same chunks of every
    member's buffer, or broadcasts a chunk into all of them. mscclpp's executor emulates it through peer pointers;
    NVLink multicast is never set up."""

    def __init__(self, rank_list: List[int], buffer_type: BufferType):
        program = get_program()
        if not all(0 <= r < program.num_ranks for r in rank_list):
            raise RuntimeError(f"One or more ranks in {rank_list} are out of bounds. Number of ranks: {program.num_ranks}")
        self.rank_list = list(rank_list)
        self.buffer_type = buffer_type
        self.channel_type = ChannelType.switch
        self._id = program._next_switch()
        record({"call": "switch", "id": self._id, "ranks": self.rank_list, "buffer": buffer_type.value})

    @classmethod
    def reset(cls):
        """Kept for MSCCL++'s API: channels are counted per program."""

    def at_rank(self, rank):
        """The operations of member `rank`."""
        if rank not in self.rank_list:
            raise RuntimeError(f"Rank {rank} is not part of this SwitchChannel's rank group.")
        return SwitchChannel.SwitchChannelRankView(self, rank)

    def reduce(self, rank, buffer_offset, size, dst_chunk: Chunk, tb, reduce_op=ReduceOperationType.sum):
        """Member `rank` reduces chunks [buffer_offset, +size) of every member's buffer into `dst_chunk`."""
        record({"call": "switch_reduce", "channel": self._id, "rank": rank, "offset": buffer_offset, "size": size,
                "dst": dst_chunk._ref(), "tb": tb_ref(tb, None, "reduce"), "op": reduce_op.value})

    def _broadcast(self, name, rank, src_chunk, buffer_offset, size, tb):
        record({"call": "switch_broadcast", "name": name, "channel": self._id, "rank": rank, "offset": buffer_offset,
                "size": size, "src": src_chunk._ref(), "tb": tb_ref(tb, None, name)})

    def broadcast(self, rank, src_chunk: Chunk, buffer_offset, size, tb):
        """Member `rank` stores `src_chunk` into chunks [buffer_offset, +size) of every member's buffer."""
        self._broadcast("broadcast", rank, src_chunk, buffer_offset, size, tb)

    def broadcast_packets(self, rank, src_chunk: Chunk, buffer_offset, size, tb):
        """`broadcast` of LL packets from a scratch chunk."""
        self._broadcast("broadcast_packets", rank, src_chunk, buffer_offset, size, tb)

    class SwitchChannelRankView:
        """The operations of one member of a switch channel."""

        def __init__(self, channel, rank):
            self._channel = channel
            self._rank = rank

        def reduce(self, buffer_offset, size, dst_chunk: Chunk, tb, reduce_op=ReduceOperationType.sum):
            self._channel.reduce(self._rank, buffer_offset, size, dst_chunk, tb, reduce_op)

        def broadcast(self, src_chunk: Chunk, buffer_offset, size, tb):
            self._channel.broadcast(self._rank, src_chunk, buffer_offset, size, tb)

        def broadcast_packets(self, src_chunk: Chunk, buffer_offset, size, tb):
            self._channel.broadcast_packets(self._rank, src_chunk, buffer_offset, size, tb)


__all__ = ["MemoryChannel", "PortChannel", "SwitchChannel", "ThreadBlockGroup", "BufferType", "ChannelType",
           "ReduceOperationType", "SyncType"]
