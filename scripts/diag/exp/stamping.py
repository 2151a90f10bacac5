"""What the stamping scripts (stamp_ops.py, stamp_hand.py, make_variants.py) share: the exact-text replacement that
fails loudly when a source has changed under them, and their command line (a source, where to write the stamped
copy, and the launches per printed mean)."""
import pathlib
import sys

# The flag-slot wait of the hand-written kernel variants (warpflags_hand.py, pipe_hand.py): lane 0 of a warp spins on
# a slot of this rank's scratch until it holds the launch's flag, bounded like every wait of the library.
WARP_WAIT = r'''/// Lane 0 spins until this rank's slot holds the launch's flag; then the warp may read what the peer wrote.
MSCCLPP_DEVICE_INLINE void warpWait(const char* ownScratch, u64 off, u32 flag, int peer) {
  if (threadIdx.x % 32 == 0) {
    const volatile u32* f = (const volatile u32*)(ownScratch + off);
    SpinBound bound;
    u32 v;
    while ((v = *f) != flag) {
      if (u64 el = bound.expired()) waitFailed(WaitUser, 0, (u32)peer, flag, v, el);
    }
    __threadfence_system();
  }
  __syncwarp();
}
'''


def must_replace(s, old, new):
    """`s` with the first `old` replaced by `new`; an AssertionError naming `old` when it is not there."""
    assert old in s, old
    return s.replace(old, new, 1)


def arguments(default_launches):
    """(source text, output path, launches per printed mean) from `SCRIPT SOURCE OUT [N]`."""
    src = pathlib.Path(sys.argv[1]).read_text()
    launches = int(sys.argv[3]) if len(sys.argv) > 3 else default_launches
    return src, pathlib.Path(sys.argv[2]), launches
