"""The collectives a program implements, with MSCCL++'s names and buffer sizes (in chunks)."""

from .types import BufferType


class Collective:
    """A collective over `num_ranks` ranks; `chunk_factor` chunks per rank's piece; in place or not."""

    name = "custom"

    def __init__(self, num_ranks, chunk_factor, inplace):
        self.num_ranks = num_ranks
        self.chunk_factor = chunk_factor
        self.inplace = inplace

    def sizes(self):
        """(input chunks, output chunks) of each rank."""
        n = self.num_ranks * self.chunk_factor
        return n, n


class TestCollective(Collective):
    """A test program's own buffer sizes."""

    name = "test"

    def __init__(self, num_ranks, input_size, output_size):
        Collective.__init__(self, num_ranks, 1, False)
        self.input_size = input_size
        self.output_size = output_size

    def sizes(self):
        return self.input_size, self.output_size


class AllGather(Collective):
    """Every rank ends with every rank's piece."""

    name = "allgather"

    def sizes(self):
        return self.chunk_factor, self.num_ranks * self.chunk_factor


class AllReduce(Collective):
    """Every rank ends with the reduction of every rank's buffer."""

    name = "allreduce"


class ReduceScatter(Collective):
    """Rank r ends with piece r of the reduction."""

    name = "reducescatter"

    def sizes(self):
        return self.num_ranks * self.chunk_factor, self.chunk_factor


class AllToAll(Collective):
    """Rank r sends its piece q to rank q."""

    name = "alltoall"


class SendRecv(Collective):
    """Point-to-point transfers."""

    name = "sendrecv"

    def sizes(self):
        return self.chunk_factor, self.chunk_factor


__all__ = ["Collective", "TestCollective", "AllGather", "AllReduce", "ReduceScatter", "AllToAll", "SendRecv",
           "BufferType"]
