"""``python3 -m mscclpp --install``: write the default plans into the plan cache, as MSCCL++'s
``python -m mscclpp --install`` (and this project's ``mscclpp install``) do.

    python3 -m mscclpp --install [--world-sizes 2,4,8] [--dir DIR]
    python3 -m mscclpp COMMAND ...   (the command line, as the wheel's `mscclpp` console script runs it)

The interpreter kernel itself needs no install step: it is embedded in the module for the GPUs it was built for,
and otherwise compiled by NVRTC on first use and cached (``mscclpp install`` of the command line also warms that
cache ahead of time).
"""

from __future__ import annotations

import argparse
import sys
from typing import List, Optional

from ._mscclpp import _install_plans


def main(argv: Optional[List[str]] = None) -> int:
    args = sys.argv[1:] if argv is None else list(argv)
    if args and not args[0].startswith("-"):
        # A command of the command line (`python3 -m mscclpp list`, `... verify PLAN`): the console script's.
        from .cli import main as cli_main

        return cli_main(args)
    p = argparse.ArgumentParser(prog="python3 -m mscclpp", description=__doc__.splitlines()[0])
    p.add_argument("--install", action="store_true", help="write the default plans into the plan cache")
    p.add_argument("--world-sizes", default=None, help="comma list of world sizes (default: the library's set)")
    p.add_argument("--dir", default=None, help="cache directory (default: MSCCLPP_CACHE_DIR or ~/.cache/mscclpp)")
    args = p.parse_args(args)
    if not args.install:
        p.print_help()
        return 2
    sizes = [int(s) for s in args.world_sizes.split(",")] if args.world_sizes else None
    where, count = _install_plans(sizes, args.dir)
    print(f"installed {count} plans into {where}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
