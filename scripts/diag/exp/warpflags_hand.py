#!/usr/bin/env python3
"""A variant of interp_cost's hand-written `staged_allreduce` (INTERP_COST_HAND_SOURCE=FILE runs it against the
interpreter's `allreduce_staged`) whose signals are per warp instead of per thread block: a question for two GPUs,
whether warps that signal on their own overlap the staged all-reduce's two phases where blocks do not.

The block version puts its part of each peer's slice, then a block barrier, then thread 0 releases the block's
writes with a system-scope fence and signals; every warp of the peer's block waits for it before reducing. Here each
warp puts its own elements (thread t of block b handles the same elements on every rank), then its lane 0 fences and
writes the launch's flag into the peer's flag slot of (block, warp); the peer's same warp waits for that slot alone,
reduces, writes the sum into its data and the peer's, and closes with a second flag per warp. No block barrier, no
thread waits for another warp: a warp whose data has landed reduces while other warps still send. The flags live
at the end of each launch-parity half of the scratch, 2 phases x peers x blocks x 32 warps x 4 bytes, written with
the block's launch count (equal on every rank: the example zeroes flags and scratch on every rank before a size).

usage: warpflags_hand.py interp_cost.cu out.cu"""
import pathlib
import sys

from stamping import WARP_WAIT, must_replace

src = pathlib.Path(sys.argv[1]).read_text()
out = pathlib.Path(sys.argv[2])

start = src.index('extern "C" __global__ void staged_allreduce(')
end = src.index('\n}\n', start) + 3

KERNEL = r'''/// This launch's flag into the peer's slot (lane 0, after the warp's writes: the fence releases them).
MSCCLPP_DEVICE_INLINE void warpSignal(char* peerScratch, u64 off, u32 flag) {
  __syncwarp();
  if (threadIdx.x % 32 == 0) {
    __threadfence_system();
    *(volatile u32*)(peerScratch + off) = flag;
  }
}

@WARP_WAIT@
extern "C" __global__ void staged_allreduce(INTERP_COST_ARGS) {
  const MemoryChannelDeviceHandle* toScratch = chans;
  MemoryChannelDeviceHandle* mine = chans + nPeers + (u64)blockIdx.x * nPeers;
  const u32 flag = startFlag(flags);
  const u64 region = (u64)(flag & 1) * half;
  const u64 chunk = bytes / (u64)(nPeers + 1);
  u64 u0, u1;
  blockPart(chunk / 16, u0, u1);
  const u64 warp = threadIdx.x / 32;
  const u64 area = 2ull * (u64)nPeers * gridDim.x * 32ull * 4ull;
  // Slot of (phase, sender's slot at the receiver, this block, this warp) in a half.
  auto slotOff = [&](u64 phase, u64 sender) {
    return region + half - area + 4ull * (((phase * (u64)nPeers + sender) * gridDim.x + blockIdx.x) * 32ull + warp);
  };
  char* own = (char*)toScratch[0].packetBuffer_;
  // Phase 1: chunk q of this rank's data into its slot of peer q's scratch, then this warp's flag.
  for (int p = 0; p < nPeers; ++p) {
    const int q = (int)mine[p].semaphore_.peer;
    const float4* src = (const float4*)(data + (u64)q * chunk);
    float4* dst = (float4*)((char*)toScratch[p].dst_ + region + slotOf(rank, q) * chunk);
    for (u64 i = u0 + threadIdx.x; i < u1; i += blockDim.x) dst[i] = src[i];
  }
  for (int p = 0; p < nPeers; ++p) {
    const int q = (int)mine[p].semaphore_.peer;
    warpSignal((char*)toScratch[p].dst_, slotOff(0, slotOf(rank, q)), flag);
  }
  for (int p = 0; p < nPeers; ++p) {
    const int q = (int)mine[p].semaphore_.peer;
    warpWait(own, slotOff(0, slotOf(q, rank)), flag, q);
  }
  // Phase 2: this warp's elements of the sum into this rank's data and every peer's, then the closing flags.
  const char* scratch = own + region;
  float4* mineData = (float4*)(data + (u64)rank * chunk);
  for (u64 i = u0 + threadIdx.x; i < u1; i += blockDim.x) {
    float4 acc = mineData[i];
    for (int p = 0; p < nPeers; ++p) {
      const int q = (int)mine[p].semaphore_.peer;
      acc = add4(acc, ((const float4*)(scratch + slotOf(q, rank) * chunk))[i]);
    }
    storeSum(mine, nPeers, mineData, (u64)rank * chunk, i, acc);
  }
  for (int p = 0; p < nPeers; ++p) {
    const int q = (int)mine[p].semaphore_.peer;
    warpSignal((char*)toScratch[p].dst_, slotOff(1, slotOf(rank, q)), flag);
  }
  for (int p = 0; p < nPeers; ++p) {
    const int q = (int)mine[p].semaphore_.peer;
    warpWait(own, slotOff(1, slotOf(q, rank)), flag, q);
  }
  finish(flags, flag);
}
'''

s = src[:start] + KERNEL.replace('@WARP_WAIT@', WARP_WAIT) + src[end:]
s = must_replace(s, '// Built by mscclpp\'s kernel launcher', '// (warpflags_hand.py: staged_allreduce signals per warp.)\n// Built by mscclpp\'s kernel launcher')
out.write_text(s)
print("wrote", out)
