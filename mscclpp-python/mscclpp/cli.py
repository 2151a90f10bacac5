"""The ``mscclpp`` command line of the wheel (its console script): the same commands as the ``mscclpp`` binary
(``list``, ``plan``, ``install``, ``verify``, ``test``, ``bench``, ``tune``, ``info``, ``plot``), run in this
interpreter's process by the extension module."""

from __future__ import annotations

import sys
from typing import List, Optional

from ._mscclpp import _cli_main


def main(argv: Optional[List[str]] = None) -> int:
    """Run the command line on ``argv`` (default: this process's arguments) and return its exit status."""
    args = sys.argv[1:] if argv is None else list(argv)
    sys.stdout.flush()
    return _cli_main(["mscclpp", *args])


def console() -> None:
    """The console script's entry point: exits with the command's status."""
    sys.exit(main())
