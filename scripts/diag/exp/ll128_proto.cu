// Experiment: a two-shot all-reduce with 128-byte packets (LL128), f32 sum, in place, as a drop-in for interp_cost's
// hand-written kernels (INTERP_COST_HAND_SOURCE=this file; same entry points and arguments). Both entry points run
// it: `twoshot_ll_allreduce` (against the interpreted LL two-shot) and `staged_allreduce` (against the interpreted
// staged Simple two-shot); in both, chans[0, nPeers) are the scratch channels.
//
// A line is 128 bytes, eight 16-byte slots: slots 0-6 carry data, slot 7 carries 8 data bytes and an 8-byte flag.
// One warp store writes four whole lines, which NVLink delivers whole: a reader that sees a line's flag sees its
// data. A warp moves tiles of 480 data bytes as 512 packet bytes: lanes with slot < 7 carry data bytes
// [16 k, 16 k + 16) (k = line * 7 + slot), the flag lanes of lines 0-3 bytes [448 + 8 line, 456 + 8 line).
#include "mscclpp/memory_channel_device.hpp"

using namespace mscclpp;

#define INTERP_COST_ARGS                                                                                     \
  MemoryChannelDeviceHandle *chans, int nPeers, int rank, char *data, unsigned long long bytes,             \
      unsigned int *flags, unsigned long long half

MSCCLPP_DEVICE_INLINE u64 slotOf(int sender, int receiver) {
  return sender < receiver ? (u64)sender : (u64)sender - 1;
}

MSCCLPP_DEVICE_INLINE u32 startFlag(const unsigned int* flags) {
  __shared__ u32 sflag;
  if (threadIdx.x == 0) sflag = flags[blockIdx.x] + 1;
  __syncthreads();
  return sflag;
}

MSCCLPP_DEVICE_INLINE void finish(unsigned int* flags, u32 flag) {
  if (threadIdx.x == 0) flags[blockIdx.x] = flag;
}

constexpr u64 kTileData = 480;
constexpr u64 kTilePk = 512;
#ifndef LL128_UNROLL
#define LL128_UNROLL 2
#endif
constexpr int U = LL128_UNROLL;

struct LaneMap {
  u32 lane;
  u32 off;  // data byte offset in the tile
  u32 len;  // 16, or 8 on a flag lane
  bool flagLane;
};

MSCCLPP_DEVICE_INLINE LaneMap laneMap() {
  const u32 lane = threadIdx.x & 31u, line = lane >> 3, slot = lane & 7u;
  LaneMap m;
  m.lane = lane;
  m.flagLane = slot == 7u;
  m.off = m.flagLane ? 448u + 8u * line : 16u * (line * 7u + slot);
  m.len = m.flagLane ? 8u : 16u;
  return m;
}

MSCCLPP_DEVICE_INLINE uint4 ldData(const char* base, u64 tile, const LaneMap& m, u64 chunk) {
  const u64 at = tile * kTileData + m.off;
  uint4 v = make_uint4(0, 0, 0, 0);
  if (at + m.len <= chunk) {
    if (m.len == 16) {
      v = *(const uint4*)(base + at);
    } else {
      const uint2 w = *(const uint2*)(base + at);
      v.x = w.x;
      v.y = w.y;
    }
  }
  return v;
}

MSCCLPP_DEVICE_INLINE void stData(char* base, u64 tile, const LaneMap& m, u64 chunk, uint4 v) {
  const u64 at = tile * kTileData + m.off;
  if (at + m.len <= chunk) {
    if (m.len == 16) {
      *(uint4*)(base + at) = v;
    } else {
      *(uint2*)(base + at) = make_uint2(v.x, v.y);
    }
  }
}

MSCCLPP_DEVICE_INLINE void stPk(char* pk, u64 tile, const LaneMap& m, uint4 v, u32 flag) {
  if (m.flagLane) {
    v.z = flag;
    v.w = 0;
  }
  char* p = pk + tile * kTilePk + 16u * m.lane;
  asm volatile("st.volatile.global.v4.u32 [%0], {%1,%2,%3,%4};" ::"l"(p), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w)
               : "memory");
}

/// Spin until the warp's four lines of the tile carry `flag`; this lane's slot.
MSCCLPP_DEVICE_INLINE uint4 ldPk(const char* pk, u64 tile, const LaneMap& m, u32 flag) {
  const char* p = pk + tile * kTilePk + 16u * m.lane;
  uint4 v;
  SpinBound bound;
  while (true) {
    asm volatile("ld.volatile.global.v4.u32 {%0,%1,%2,%3}, [%4];"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                 : "l"(p)
                 : "memory");
    const bool bad = m.flagLane && (v.z != flag || v.w != 0);
    if (!__any_sync(0xffffffffu, bad)) break;
    if (u64 el = bound.expired()) waitFailed(WaitPacket, 0, 0, flag, v.z, el);
  }
  return v;
}

MSCCLPP_DEVICE_INLINE uint4 addF4(uint4 a, uint4 b) {
  return make_uint4(__float_as_uint(__uint_as_float(a.x) + __uint_as_float(b.x)),
                    __float_as_uint(__uint_as_float(a.y) + __uint_as_float(b.y)),
                    __float_as_uint(__uint_as_float(a.z) + __uint_as_float(b.z)),
                    __float_as_uint(__uint_as_float(a.w) + __uint_as_float(b.w)));
}

MSCCLPP_DEVICE_INLINE void ll128TwoShot(INTERP_COST_ARGS) {
  const u32 flag = startFlag(flags);
  const u64 chunk = bytes / (u64)(nPeers + 1);
  const u64 tiles = (chunk + kTileData - 1) / kTileData;
  const u64 warps = (u64)gridDim.x * (blockDim.x >> 5);
  const u64 gw = (u64)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
  const LaneMap m = laneMap();
  const u64 base = (flag & 1u) ? 0 : half;
  const u64 second = base + (u64)nPeers * 2 * chunk;
  // Reduce-scatter: chunk q to peer q's slot.
  for (int p = 0; p < nPeers; ++p) {
    const int q = (int)chans[p].semaphore_.peer;
    const char* src = data + (u64)q * chunk;
    char* dst = (char*)chans[p].dst_ + base + slotOf(rank, q) * 2 * chunk;
    for (u64 t0 = gw; t0 < tiles; t0 += U * warps) {
      uint4 v[U];
#pragma unroll
      for (int u = 0; u < U; ++u) v[u] = ldData(src, t0 + u * warps, m, chunk);
#pragma unroll
      for (int u = 0; u < U; ++u)
        if (t0 + u * warps < tiles) stPk(dst, t0 + u * warps, m, v[u], flag);
    }
  }
  // Own chunk: add the peers' packets, keep the sum, send it to every peer's second region.
  char* own = data + (u64)rank * chunk;
  for (u64 t0 = gw; t0 < tiles; t0 += U * warps) {
    uint4 acc[U];
#pragma unroll
    for (int u = 0; u < U; ++u) acc[u] = ldData(own, t0 + u * warps, m, chunk);
    for (int p = 0; p < nPeers; ++p) {
      const int q = (int)chans[p].semaphore_.peer;
      const char* pk = (const char*)chans[p].packetBuffer_ + base + slotOf(q, rank) * 2 * chunk;
#pragma unroll
      for (int u = 0; u < U; ++u)
        if (t0 + u * warps < tiles) acc[u] = addF4(acc[u], ldPk(pk, t0 + u * warps, m, flag));
    }
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const u64 t = t0 + u * warps;
      if (t < tiles) {
        stData(own, t, m, chunk, acc[u]);
        for (int p = 0; p < nPeers; ++p) {
          const int q = (int)chans[p].semaphore_.peer;
          stPk((char*)chans[p].dst_ + second + slotOf(rank, q) * 2 * chunk, t, m, acc[u], flag);
        }
      }
    }
  }
  // All-gather: the peers' sums into their chunks.
  for (int p = 0; p < nPeers; ++p) {
    const int q = (int)chans[p].semaphore_.peer;
    const char* pk = (const char*)chans[p].packetBuffer_ + second + slotOf(q, rank) * 2 * chunk;
    char* dst = data + (u64)q * chunk;
    for (u64 t0 = gw; t0 < tiles; t0 += U * warps) {
      uint4 v[U];
#pragma unroll
      for (int u = 0; u < U; ++u)
        if (t0 + u * warps < tiles) v[u] = ldPk(pk, t0 + u * warps, m, flag);
#pragma unroll
      for (int u = 0; u < U; ++u)
        if (t0 + u * warps < tiles) stData(dst, t0 + u * warps, m, chunk, v[u]);
    }
  }
  finish(flags, flag);
}

extern "C" __global__ void twoshot_ll_allreduce(INTERP_COST_ARGS) {
  ll128TwoShot(chans, nPeers, rank, data, bytes, flags, half);
}

extern "C" __global__ void staged_allreduce(INTERP_COST_ARGS) {
  ll128TwoShot(chans, nPeers, rank, data, bytes, flags, half);
}
