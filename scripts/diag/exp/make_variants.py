#!/usr/bin/env python3
"""Variants of the interpreter for measuring where its time goes (MSCCLPP_INTERPRETER_SOURCE=FILE).

prof.cu: thread 0 of every block stamps clock64 at entry, after staging, after each operation and at exit, and
the global timer at entry and exit; every 500 launches of a block it prints the mean cycles per phase and the
mean gap (ns) between the previous launch's last exit and this block's entry, then starts again."""
import pathlib, sys

from stamping import must_replace
src = pathlib.Path(sys.argv[1]).read_text()
out = pathlib.Path(sys.argv[2])
out.mkdir(parents=True, exist_ok=True)


# The stamps' accumulators and clock, after the first include of both stamped builds.
PROFILE_GLOBALS = '''extern "C" __device__ int vprintf(const char*, const char*);
__device__ unsigned long long gProfSum[1024][12];
__device__ unsigned int gProfN[1024];
__device__ unsigned long long gProfLastExit;
__device__ __forceinline__ unsigned long long profClock() { unsigned long long t; asm volatile("mov.u64 %0, %%clock64;" : "=l"(t)); return t; }
'''

prof = must_replace(src, '#include "mscclpp/device.hpp"\n', '#include "mscclpp/device.hpp"\n' + PROFILE_GLOBALS)
prof = must_replace(prof, '''  extern __shared__ __align__(16) char smem[];
  __shared__ u32 sFlag;
''', '''  extern __shared__ __align__(16) char smem[];
  __shared__ u32 sFlag;
  unsigned long long pc[10];
  const unsigned long long pc0 = profClock();
  const unsigned long long pg0 = globalTimerNs();
  unsigned long long pgap = 0;
  if (threadIdx.x == 0) { unsigned long long le = *(volatile unsigned long long*)&gProfLastExit; pgap = pg0 > le ? pg0 - le : 0; }
  for (int k = 0; k < 10; ++k) pc[k] = pc0;
''')
prof = must_replace(prof, '''  __syncthreads();
  const TbInfo& tb = *(const TbInfo*)smem;''', '''  __syncthreads();
  const unsigned long long pc1 = profClock();
  const TbInfo& tb = *(const TbInfo*)smem;''')
prof = must_replace(prof, '''    x.run<T, P>(op, (u64)it * unit, unit);
''', '''    x.run<T, P>(op, (u64)it * unit, unit);
    if (i < 10) pc[i] = profClock();
''')
prof = must_replace(prof, '''  if (threadIdx.x == 0) a.flags[blockIdx.x] = x.flag;
}''', '''  if (threadIdx.x == 0) a.flags[blockIdx.x] = x.flag;
  if (threadIdx.x == 0) {
    const unsigned long long pend = profClock();
    const unsigned long long pge = globalTimerNs();
    atomicMax(&gProfLastExit, pge);
    unsigned long long* s = gProfSum[blockIdx.x];
    s[0] += pc1 - pc0;
    unsigned long long prev = pc1;
    const int nops = tb.nOps < 10 ? tb.nOps : 10;
    for (int k = 0; k < nops; ++k) { s[1 + k] += pc[k] - prev; prev = pc[k]; }
    s[11] += (pgap < 100000ull ? pgap : 0ull);
    if (++gProfN[blockIdx.x] == 100u) {
      struct { unsigned long long b, n, t0, o[8], gap, total; } pa;
      pa.b = blockIdx.x; pa.n = nops; pa.t0 = s[0] / 100;
      for (int k = 0; k < 8; ++k) pa.o[k] = s[1 + k] / 100;
      pa.gap = s[11] / 100; pa.total = (pend - pc0);
      vprintf("PROF block %llu ops %llu: stage %llu cyc; ops %llu %llu %llu %llu %llu %llu %llu %llu cyc; gap %llu ns; last total %llu cyc\\n", (const char*)&pa);
      for (int k = 0; k < 12; ++k) s[k] = 0;
      gProfN[blockIdx.x] = 0;
    }
  }
}''')
(out / "prof.cu").write_text(prof)
(out / "base.cu").write_text(src)
print("wrote", out / "prof.cu", out / "base.cu")

# The hand-written kernel with the same stamps (INTERP_COST_HAND_SOURCE=FILE): entry, after the flag, after the
# puts, after the barrier, at exit.
if len(sys.argv) > 3:
    hand = pathlib.Path(sys.argv[3]).read_text()
    hand = must_replace(hand, '#include "mscclpp/memory_channel_device.hpp"\n',
                        '#include "mscclpp/memory_channel_device.hpp"\n' + PROFILE_GLOBALS)
    hand = must_replace(hand, '''  __shared__ u32 sflag;
  if (threadIdx.x == 0) sflag = flags[blockIdx.x] + 1;
  __syncthreads();
''', '''  __shared__ u32 sflag;
  const unsigned long long pc0 = profClock();
  const unsigned long long pg0 = mscclpp::globalTimerNs();
  unsigned long long pgap = 0;
  if (threadIdx.x == 0) { unsigned long long le = *(volatile unsigned long long*)&gProfLastExit; pgap = pg0 > le ? pg0 - le : 0; }
  if (threadIdx.x == 0) sflag = flags[blockIdx.x] + 1;
  __syncthreads();
  const unsigned long long pc1 = profClock();
''')
    hand = must_replace(hand, '''  // In place: every thread has read its share of the part before any thread overwrites it.
  __syncthreads();
''', '''  const unsigned long long pc2 = profClock();
  // In place: every thread has read its share of the part before any thread overwrites it.
  __syncthreads();
  const unsigned long long pc3 = profClock();
''')
    hand = must_replace(hand, '''  if (threadIdx.x == 0) flags[blockIdx.x] = flag;
}''', '''  if (threadIdx.x == 0) flags[blockIdx.x] = flag;
  if (threadIdx.x == 0) {
    const unsigned long long pend = profClock();
    atomicMax(&gProfLastExit, mscclpp::globalTimerNs());
    unsigned long long* s = gProfSum[blockIdx.x];
    s[0] += pc1 - pc0; s[1] += pc2 - pc1; s[2] += pc3 - pc2; s[3] += pend - pc3;
    s[11] += (pgap < 100000ull ? pgap : 0ull);
    if (++gProfN[blockIdx.x] == 100u) {
      struct { unsigned long long b, t0, a, c, d, gap, total; } pa;
      pa.b = blockIdx.x; pa.t0 = s[0] / 100; pa.a = s[1] / 100; pa.c = s[2] / 100; pa.d = s[3] / 100;
      pa.gap = s[11] / 100; pa.total = pend - pc0;
      vprintf("HANDPROF block %llu: flag %llu cyc; puts %llu; barrier %llu; reduce+end %llu cyc; gap %llu ns; last total %llu cyc\\n", (const char*)&pa);
      for (int k = 0; k < 12; ++k) s[k] = 0;
      gProfN[blockIdx.x] = 0;
    }
  }
}''')
    (out / "hand_prof.cu").write_text(hand)
    print("wrote", out / "hand_prof.cu")

# pkonly.cu: the interpreter without the Simple data operations (put/get/copy/reduce families): what a packet-only
# entry point would cost (the one-shot LL plan uses only packet operations and nop).
a = src.index("      case OpPut:\n      case OpPutWithSignal:")
b = src.index("      case OpPutPackets:")
pk = src[:a] + src[b:]
(out / "pkonly.cu").write_text(pk)
print("wrote", out / "pkonly.cu")

# regs512.cu / pkregs512.cu: the same with blocks of at most 512 threads, so 128 registers per thread (the one-shot LL
# plans of interp_cost use 256 and 512 threads): what register pressure costs.
# (The interpreter since has entry points for blocks of up to 512 threads, suffixed _t512: on such sources these
# variants are not written.)
for name, text in [("regs512", src), ("pkregs512", pk)]:
    if "__launch_bounds__(1024, 1)" in text:
        (out / f"{name}.cu").write_text(text.replace("__launch_bounds__(1024, 1)", "__launch_bounds__(512, 1)"))
        print("wrote", out / f"{name}.cu")
