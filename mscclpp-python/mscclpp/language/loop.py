"""Pipelined loops: the operations inside `with LoopIterationContext(unit, num_chunks):` run as one `pipeline`
operation per thread block, iterating over the data `unit` bytes at a time."""

from ._state import record


class LoopIterationContext:
    """A pipelined loop of `unit` bytes per iteration over operations that span `num_chunks` chunks."""

    def __init__(self, unit, num_chunks):
        self.unit = unit
        self.num_chunks = num_chunks

    def __enter__(self):
        record({"call": "pipeline_begin", "unit": int(self.unit), "num_chunks": int(self.num_chunks)})
        return self

    def __exit__(self, exc_type, exc_value, traceback):
        record({"call": "pipeline_end"})


__all__ = ["LoopIterationContext"]
