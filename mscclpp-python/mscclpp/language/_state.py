"""The program being recorded and where each call is made (internal)."""

from __future__ import annotations

import os
import sys
from typing import Any, Dict, Optional

_HERE = os.path.dirname(os.path.abspath(__file__))
_current: Optional[Any] = None


def set_program(program) -> None:
    global _current
    _current = program


def get_program():
    if _current is None:
        raise RuntimeError("no CollectiveProgram is active: make the calls inside `with CollectiveProgram(...):`")
    return _current


def site() -> Dict[str, Any]:
    """The file and line of the user's call (the first frame outside this package)."""
    frame = sys._getframe(1)
    while frame is not None and os.path.dirname(os.path.abspath(frame.f_code.co_filename)) == _HERE:
        frame = frame.f_back
    if frame is None:
        return {"file": "<unknown>", "line": 0}
    return {"file": frame.f_code.co_filename, "line": frame.f_lineno}


def record(call: Dict[str, Any]) -> None:
    call["site"] = site()
    get_program()._calls.append(call)


def tb_ref(tb, tb_group, what: str):
    """A thread block (int) or a ThreadBlockGroup as the recording names it."""
    if tb_group is not None:
        if tb is not None:
            raise ValueError(f"{what}: pass tb or tb_group, not both")
        return list(tb_group.tb_list)
    if tb is None:
        raise ValueError(f"{what}: pass tb (a thread block id) or tb_group")
    return int(tb)
