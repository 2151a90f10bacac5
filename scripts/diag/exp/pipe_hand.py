#!/usr/bin/env python3
"""A variant of interp_cost's hand-written `staged_allreduce` (INTERP_COST_HAND_SOURCE=FILE runs it against the
interpreter's `allreduce_staged`) that overlaps its two phases with a signalling warp: a question for two GPUs,
whether the link stays busy from the puts into the sums when no warp that moves data waits for a fence.

The block version puts its part of each peer's slice, then a block barrier, then thread 0 releases the block's writes
with a system-scope fence and signals, and every thread waits for the peer's signal before reducing: the block sends
nothing from its last put until the peer's signal is back (its own fence draining, then the peer's flag's flight).
Here the block's last warp moves no data: the other warps put their part in S sub-chunks and, after each, arrive
(without waiting) at named barrier 1 + s; the signalling warp syncs on that barrier, fences and writes the launch's
flag into the peer's slot for (sub-chunk, block). The moving warps go on with the next sub-chunk, then, for each
sub-chunk, wait (lane 0 of each warp) for the peer's flag of it, add the peer's sub-chunk to their own and write the
sum into their data and the peer's; they arrive at barrier 1 + S, after which the signalling warp fences, writes the
closing flag and waits for the peer's. Flags live at the end of each launch-parity half of the scratch,
(S + 1) x peers x blocks x 4 bytes, written with the block's launch count (equal on every rank: the example zeroes
flags and scratch on every rank before a size).

usage: pipe_hand.py interp_cost.cu out.cu S    (1 <= S <= 14)"""
import pathlib
import sys

from stamping import WARP_WAIT, must_replace

src = pathlib.Path(sys.argv[1]).read_text()
out = pathlib.Path(sys.argv[2])
subs = int(sys.argv[3])
assert 1 <= subs <= 14, "S names barriers 1..S+1 of 16"

start = src.index('extern "C" __global__ void staged_allreduce(')
end = src.index('\n}\n', start) + 3

KERNEL = r'''constexpr int kSubs = @S@;

MSCCLPP_DEVICE_INLINE void namedArrive(int id, u32 count) {
  asm volatile("bar.arrive %0, %1;" ::"r"(id), "r"(count) : "memory");
}

MSCCLPP_DEVICE_INLINE void namedSync(int id, u32 count) {
  asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(count) : "memory");
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
  const u32 movers = blockDim.x - 32;
  const u64 area = (u64)(kSubs + 1) * (u64)nPeers * gridDim.x * 4ull;
  // Slot of (phase: a sub-chunk or kSubs for the closing flag, sender's slot at the receiver, this block).
  auto slotOff = [&](u64 phase, u64 sender) {
    return region + half - area + 4ull * ((phase * (u64)nPeers + sender) * gridDim.x + blockIdx.x);
  };
  auto subBounds = [&](int s, u64& a, u64& b) {
    a = u0 + (u1 - u0) * (u64)s / kSubs;
    b = u0 + (u1 - u0) * (u64)(s + 1) / kSubs;
  };
  char* ownScratch = (char*)toScratch[0].packetBuffer_;
  if (threadIdx.x >= movers) {
    // The signalling warp: each sub-chunk's flag once the moving warps have put it, then the closing round.
    const bool lead = threadIdx.x == movers;
    for (int s = 0; s <= kSubs; ++s) {
      namedSync(1 + s, blockDim.x);
      if (lead) {
        __threadfence_system();
        for (int p = 0; p < nPeers; ++p) {
          const int q = (int)mine[p].semaphore_.peer;
          *(volatile u32*)((char*)toScratch[p].dst_ + slotOff((u64)s, slotOf(rank, q))) = flag;
        }
      }
      __syncwarp();
    }
    for (int p = 0; p < nPeers; ++p) {
      const int q = (int)mine[p].semaphore_.peer;
      warpWait(ownScratch, slotOff(kSubs, slotOf(q, rank)), flag, q);
    }
  } else {
    const u64 t = threadIdx.x;
    // Phase 1: sub-chunk s of chunk q of this rank's data into its slot of peer q's scratch.
    for (int s = 0; s < kSubs; ++s) {
      u64 a, b;
      subBounds(s, a, b);
      for (int p = 0; p < nPeers; ++p) {
        const int q = (int)mine[p].semaphore_.peer;
        const float4* src = (const float4*)(data + (u64)q * chunk);
        float4* dst = (float4*)((char*)toScratch[p].dst_ + region + slotOf(rank, q) * chunk);
        for (u64 i = a + t; i < b; i += movers) dst[i] = src[i];
      }
      namedArrive(1 + s, blockDim.x);
    }
    // Phase 2: as each sub-chunk of every peer has landed, the sum into this rank's data and every peer's.
    const char* scratch = ownScratch + region;
    float4* own = (float4*)(data + (u64)rank * chunk);
    for (int s = 0; s < kSubs; ++s) {
      for (int p = 0; p < nPeers; ++p) {
        const int q = (int)mine[p].semaphore_.peer;
        warpWait(ownScratch, slotOff((u64)s, slotOf(q, rank)), flag, q);
      }
      u64 a, b;
      subBounds(s, a, b);
      for (u64 i = a + t; i < b; i += movers) {
        float4 acc = own[i];
        for (int p = 0; p < nPeers; ++p) {
          const int q = (int)mine[p].semaphore_.peer;
          acc = add4(acc, ((const float4*)(scratch + slotOf(q, rank) * chunk))[i]);
        }
        storeSum(mine, nPeers, own, (u64)rank * chunk, i, acc);
      }
    }
    namedArrive(1 + kSubs, blockDim.x);
  }
  finish(flags, flag);
}
'''.replace('@S@', str(subs)).replace('@WARP_WAIT@', WARP_WAIT)

s = src[:start] + KERNEL + src[end:]
s = must_replace(s, '// Built by mscclpp\'s kernel launcher',
                 f'// (pipe_hand.py: staged_allreduce with a signalling warp, {subs} sub-chunks.)\n// Built by mscclpp\'s kernel launcher')
out.write_text(s)
print("wrote", out)
