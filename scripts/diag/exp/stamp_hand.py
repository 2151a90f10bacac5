#!/usr/bin/env python3
"""A stamped build of interp_cost's hand-written `staged_allreduce` (INTERP_COST_HAND_SOURCE=FILE runs it): thread 0
of every block reads clock64 at entry, after the launch flag, after its puts, after each barrier, signal and wait,
and after its reduction; every N launches (3 unless given: interp_cost checks 3 launches per size when ranks share
a GPU) blocks 0 and the last print the mean SM cycles of each phase, then start again. The phases line up with
stamp_ops.py's operations of `allreduce_staged`: stage | put | barrier | signal | wait | barrier | res | barrier |
signal | wait.

Also `twoshot_allreduce` (the hand-written kernel of `allreduce_rsag` and `allreduce_twoshot`), printed as
TWOSTAMP with the phases of `allreduce_rsag`'s operations: stage (none: 0) | signal | wait | sync | pass | sync |
signal | wait.

usage: stamp_hand.py interp_cost.cu out.cu [N]"""
from stamping import arguments, must_replace

src, out, N = arguments(3)

GLOBALS = '''extern "C" __device__ int vprintf(const char*, const char*);
__device__ unsigned long long gHandSum[1024][12];
__device__ unsigned int gHandN[1024];
__device__ __forceinline__ unsigned long long handClock() { unsigned long long t; asm volatile("mov.u64 %0, %%clock64;" : "=l"(t)); return t; }
#define HAND_STAMP(k) do { if (threadIdx.x == 0) st[k] = handClock(); } while (0)
MSCCLPP_DEVICE_INLINE void handRound(MemoryChannelDeviceHandle* mine, int nPeers, unsigned long long* st, int k) {
  __syncthreads();
  HAND_STAMP(k);
  if ((int)threadIdx.x < nPeers) {
    mine[threadIdx.x].signal();
    HAND_STAMP(k + 1);
    mine[threadIdx.x].wait();
  }
  HAND_STAMP(k + 2);
}
MSCCLPP_DEVICE_INLINE void handReport(const unsigned long long* st) {
  if (threadIdx.x != 0) return;
  unsigned long long* sum = gHandSum[blockIdx.x];
  for (int k = 1; k <= 10; ++k) sum[k - 1] += st[k] - st[k - 1];
  if (++gHandN[blockIdx.x] == NLAUNCHu) {
    if (blockIdx.x == 0 || blockIdx.x + 1 == gridDim.x) {
      struct { unsigned long long b, v[10]; } pa;
      pa.b = blockIdx.x;
      for (int k = 0; k < 10; ++k) pa.v[k] = sum[k] / NLAUNCH;
      vprintf("HANDSTAMP block %llu: stage %llu | %llu %llu %llu %llu %llu %llu %llu %llu %llu cyc\\n", (const char*)&pa);
    }
    for (int k = 0; k < 10; ++k) sum[k] = 0;
    gHandN[blockIdx.x] = 0;
  }
}
'''
start = src.index('extern "C" __global__ void staged_allreduce(')
end = src.index('\n}\n', start) + 3
body = src[start:end]
body = must_replace(body, '''  const MemoryChannelDeviceHandle* toScratch = chans;''', '''  unsigned long long st[11];
  HAND_STAMP(0);
  const MemoryChannelDeviceHandle* toScratch = chans;''')
body = must_replace(body, '''  const u32 flag = startFlag(flags);''', '''  const u32 flag = startFlag(flags);
  HAND_STAMP(1);''')
body = must_replace(body, '''  signalRound(mine, nPeers);
  __syncthreads();
''', '''  HAND_STAMP(2);
  handRound(mine, nPeers, st, 3);
  __syncthreads();
  HAND_STAMP(6);
''')
body = must_replace(body, '''  // Closing round: the sum has landed in every peer's data.
  signalRound(mine, nPeers);''', '''  // Closing round: the sum has landed in every peer's data.
  HAND_STAMP(7);
  handRound(mine, nPeers, st, 8);
  handReport(st);''')
# twoshot_allreduce: st[1] after the handshake's signal, st[2] after its wait, st[3] after the barrier, st[4] after
# the fused pass, then the closing round (handRound: barrier, signal, wait) at st[5..7].
TWO_GLOBALS = '''__device__ unsigned long long gTwoSum[1024][8];
__device__ unsigned int gTwoN[1024];
MSCCLPP_DEVICE_INLINE void twoReport(const unsigned long long* st) {
  if (threadIdx.x != 0) return;
  unsigned long long* sum = gTwoSum[blockIdx.x];
  for (int k = 1; k <= 7; ++k) sum[k - 1] += st[k] - st[k - 1];
  if (++gTwoN[blockIdx.x] == NLAUNCHu) {
    if (blockIdx.x == 0 || blockIdx.x + 1 == gridDim.x) {
      struct { unsigned long long b, v[7]; } pa;
      pa.b = blockIdx.x;
      for (int k = 0; k < 7; ++k) pa.v[k] = sum[k] / NLAUNCH;
      vprintf("TWOSTAMP block %llu: stage 0 | %llu %llu %llu %llu %llu %llu %llu cyc\\n", (const char*)&pa);
    }
    for (int k = 0; k < 7; ++k) sum[k] = 0;
    gTwoN[blockIdx.x] = 0;
  }
}
'''
tstart = src.index('extern "C" __global__ void twoshot_allreduce(')
tend = src.index('\n}\n', tstart) + 3
two = src[tstart:tend]
two = must_replace(two, '''  MemoryChannelDeviceHandle* mine = chans + (u64)blockIdx.x * nPeers;
  entryHandshake(mine, nPeers);''', '''  unsigned long long st[8];
  HAND_STAMP(0);
  MemoryChannelDeviceHandle* mine = chans + (u64)blockIdx.x * nPeers;
  // Handshake: every peer has entered the launch, so its data is this launch's input.
  if ((int)threadIdx.x < nPeers) {
    mine[threadIdx.x].relaxedSignal();
    HAND_STAMP(1);
    mine[threadIdx.x].wait();
  }
  HAND_STAMP(2);
  __syncthreads();
  HAND_STAMP(3);''')
two = must_replace(two, '''  // Closing round: the sum has landed in every peer's data and this rank reads theirs no more.
  signalRound(mine, nPeers);''', '''  // Closing round: the sum has landed in every peer's data and this rank reads theirs no more.
  HAND_STAMP(4);
  handRound(mine, nPeers, st, 5);
  twoReport(st);''')
assert tstart < start, "twoshot_allreduce is expected before staged_allreduce"
# st[3] is the first barrier's end, so the puts phase ends at st[2] and the barrier is st[3] - st[2].
s = (src[:tstart] + (GLOBALS + TWO_GLOBALS).replace('NLAUNCH', str(N)) + two + src[tend:start] + body + src[end:])
out.write_text(s)
print("wrote", out)
