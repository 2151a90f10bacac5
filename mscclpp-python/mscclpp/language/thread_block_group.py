"""Thread-block groups: one operation spread over several thread blocks."""

from typing import List


class ThreadBlockGroup:
    """A group of distinct thread blocks."""

    def __init__(self, tb_list: List[int]):
        self.tb_list: List[int] = list(tb_list)
        self._tb_id = {}
        for i, tb in enumerate(self.tb_list):
            if tb in self._tb_id:
                raise ValueError(f"Duplicate thread block found at index {i}: {tb}")
            self._tb_id[tb] = i

    def get_internal_id(self, tb: int) -> int:
        """The position of thread block `tb` in the group."""
        if tb not in self._tb_id:
            raise ValueError(f"Thread block {tb} not found in thread block group")
        return self._tb_id[tb]

    def numtb(self) -> int:
        """The number of thread blocks in the group."""
        return len(self.tb_list)

    def __len__(self):
        return len(self.tb_list)


__all__ = ["ThreadBlockGroup"]
