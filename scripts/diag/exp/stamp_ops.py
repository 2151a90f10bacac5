#!/usr/bin/env python3
"""A stamped build of the interpreter (MSCCLPP_INTERPRETER_SOURCE=FILE runs it on the generic interpreter, and with
MSCCLPP_FIXED_KERNELS=compile through plan-specialised programs compiled from it): thread 0 of every block reads
clock64 at entry, after staging its records and after each of its first 15 operations (the last iteration's, in a
pipeline); every N launches (200 unless given), blocks 0 and the last print the mean SM cycles of staging and of each
operation, then start again.

usage: stamp_ops.py execution_kernel.cu out.cu [N]"""
from stamping import arguments, must_replace

src, out, N = arguments(200)

GLOBALS = '''extern "C" __device__ int vprintf(const char*, const char*);
__device__ unsigned long long gStampSum[1024][16];
__device__ unsigned int gStampN[1024];
__shared__ unsigned long long sStamp[16];
__device__ __forceinline__ unsigned long long stampClock() { unsigned long long t; asm volatile("mov.u64 %0, %%clock64;" : "=l"(t)); return t; }
'''
s = must_replace(src, '#include "mscclpp/device.hpp"\n', '#include "mscclpp/device.hpp"\n' + GLOBALS)
s = must_replace(s, '''    run<T, P, F>(ops[i], extra, unit);
''', '''    run<T, P, F>(ops[i], extra, unit);
    if (tid == 0 && i < 15u) sStamp[1 + i] = stampClock();
''')
s = must_replace(s, '''  u32 flag = 0;
  if (threadIdx.x == 0) flag = a.flags[blockIdx.x];
''', '''  const unsigned long long st0 = stampClock();
  u32 flag = 0;
  if (threadIdx.x == 0) flag = a.flags[blockIdx.x];
''')
s = must_replace(s, '''  const TbInfo& tb = *(const TbInfo*)smem;
  const Op* ops = (const Op*)(smem + kOpsOffset);
''', '''  if (threadIdx.x == 0) sStamp[0] = stampClock();
  const TbInfo& tb = *(const TbInfo*)smem;
  const Op* ops = (const Op*)(smem + kOpsOffset);
''')
s = must_replace(s, '''  if (threadIdx.x == 0) a.flags[blockIdx.x] = x.flag;
}''', '''  if (threadIdx.x == 0) a.flags[blockIdx.x] = x.flag;
  if (threadIdx.x == 0) {
    unsigned long long* sum = gStampSum[blockIdx.x];
    const u32 n = tb.nOps < 15u ? tb.nOps : 15u;
    unsigned long long prev = st0;
    for (u32 k = 0; k <= n; ++k) { sum[k] += sStamp[k] - prev; prev = sStamp[k]; }
    if (++gStampN[blockIdx.x] == NLAUNCHu && (blockIdx.x == 0 || blockIdx.x + 1 == gridDim.x)) {
      struct { unsigned long long b, n, v[16]; } pa;
      pa.b = blockIdx.x; pa.n = n;
      for (int k = 0; k < 16; ++k) pa.v[k] = sum[k] / NLAUNCH;
      vprintf("STAMP block %llu ops %llu: stage %llu | %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu cyc\\n", (const char*)&pa);
    }
    if (gStampN[blockIdx.x] == NLAUNCHu) {
      for (int k = 0; k < 16; ++k) sum[k] = 0;
      gStampN[blockIdx.x] = 0;
    }
  }
}''')
out.write_text(s.replace('NLAUNCH', str(N)))
print("wrote", out)
