"""What the stamping scripts (stamp_ops.py, stamp_hand.py, make_variants.py) share: the exact-text replacement that
fails loudly when a source has changed under them, and their command line (a source, where to write the stamped
copy, and the launches per printed mean)."""
import pathlib
import sys


def must_replace(s, old, new):
    """`s` with the first `old` replaced by `new`; an AssertionError naming `old` when it is not there."""
    assert old in s, old
    return s.replace(old, new, 1)


def arguments(default_launches):
    """(source text, output path, launches per printed mean) from `SCRIPT SOURCE OUT [N]`."""
    src = pathlib.Path(sys.argv[1]).read_text()
    launches = int(sys.argv[3]) if len(sys.argv) > 3 else default_launches
    return src, pathlib.Path(sys.argv[2]), launches
