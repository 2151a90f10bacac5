// The registry's LL programs written by hand (f32 sum, in place), each the algorithm of its plan with the same
// grid: block b moves and reduces part b of every chunk, as thread block b of the interpreted plan does.
//   oneshot_ll_allreduce    (`allreduce_oneshot_ll`): every rank sends its buffer as LL16 packets into every peer's
//                           scratch, then adds what its peers sent to its own data;
//   twoshot_ll_allreduce    (`allreduce_twoshot_ll`): chunk p goes to rank p as packets; rank p adds them to its
//                           chunk, keeps the sum and sends it as packets to every peer, which unpacks it;
//   allpairs_ll_allgather   (`allgather_allpairs_ll`): every rank sends its chunk as packets to every peer, which
//                           unpacks it into place;
//   ll_reducescatter        (`reducescatter_ll`): chunk p goes to rank p as packets; rank p adds them to its chunk.
//   twoshot_allreduce       (`allreduce_rsag`, Simple): after a handshake, rank p reads chunk p of every peer's
//                           data, adds its own, writes the sum into its data and every peer's in the same pass; a
//                           closing signal/wait round.
//   twopass_allreduce       (`allreduce_twoshot`, Simple): the same in two passes, as the plan does: the sum into
//                           this rank's data, a block barrier, then the block's part of it read back and put into
//                           every peer's data; a closing signal/wait round.
//   twoshot_ll128_allreduce (`allreduce_twoshot_ll128`): the LL two-shot with 128-byte lines (LL128): a warp moves
//                           four lines of 120 data bytes and a flag each per store; a reader that sees a line's flag
//                           sees its data.
//   oneshot_ll128_allreduce (`allreduce_oneshot_ll128`): the LL one-shot with 128-byte lines: block b sends its part
//                           of the tiles to every peer, synchronises (in place), then adds the peers' same tiles.
//   staged_allreduce        (`allreduce_staged`, Simple): rank r writes chunk q of its data into its slot of peer
//                           q's scratch (launch parity halves) and signals; once every peer's has arrived it adds
//                           them to its chunk, writes the sum into its data and every peer's; a closing
//                           signal/wait round. Nothing crosses a link by a load.
// Built by mscclpp's kernel launcher; uses only the mscclpp headers.
#include "mscclpp/memory_channel_device.hpp"

using namespace mscclpp;

// Every kernel takes the same arguments. chans[p]: src_ = this rank's data, dst_ = peer p's scratch, packetBuffer_
// = this rank's scratch, semaphore_.peer = the peer's rank. `bytes` is the whole buffer: the all-reduce's data, the
// all-gather's output, the reduce-scatter's input; a chunk is bytes / ranks. The scratch has two halves (launch
// parity, so that a launch never overwrites packets a peer still reads); a region of a half holds one slot of
// 2 * slotBytes (packets) per sending peer, the slot of sender s at receiver d being s < d ? s : s - 1. flags[b]
// counts block b's launches in device memory, so that replays of a CUDA graph advance the packet flag as eager
// launches do. The Simple kernel reads and writes the peers' data directly: its chans hold one channel per block and
// peer, chans[b * nPeers + p], dst_ = peer p's data, each with its own semaphore; flags and half are unused. The
// staged kernel's chans are the scratch channels above (nPeers of them) followed by the Simple kernel's; its
// scratch halves and flags are the LL kernels'.
#define INTERP_COST_ARGS                                                                                     \
  MemoryChannelDeviceHandle *chans, int nPeers, int rank, char *data, unsigned long long bytes,             \
      unsigned int *flags, unsigned long long half

MSCCLPP_DEVICE_INLINE u64 slotOf(int sender, int receiver) {
  return sender < receiver ? (u64)sender : (u64)sender - 1;
}

/// This launch's packet flag (thread 0 reads and bumps the block's counter at the end, see `finish`).
MSCCLPP_DEVICE_INLINE u32 startFlag(const unsigned int* flags) {
  __shared__ u32 sflag;
  if (threadIdx.x == 0) sflag = flags[blockIdx.x] + 1;
  __syncthreads();
  return sflag;
}

MSCCLPP_DEVICE_INLINE void finish(unsigned int* flags, u32 flag) {
  if (threadIdx.x == 0) flags[blockIdx.x] = flag;
}

/// Block b's share [u0, u1) of `units` 8-byte units.
MSCCLPP_DEVICE_INLINE void blockPart(u64 units, u64& u0, u64& u1) {
  const u64 per = (units + gridDim.x - 1) / gridDim.x;
  u0 = per * blockIdx.x < units ? per * blockIdx.x : units;
  u1 = u0 + per < units ? u0 + per : units;
}

/// Send units [u0, u1) of the data at `origin` as packets into every peer's slot of the region at `region` (or,
/// with `perPeer`, the data at origin + peer * chunkBytes to each peer).
MSCCLPP_DEVICE_INLINE void sendPackets(MemoryChannelDeviceHandle* chans, int nPeers, int rank, u64 region,
                                       u64 slotBytes, u64 origin, bool perPeer, u64 chunkBytes, u64 u0, u64 u1,
                                       u32 flag) {
  for (int p = 0; p < nPeers; ++p) {
    const int peer = (int)chans[p].semaphore_.peer;
    const u64 from = origin + (perPeer ? (u64)peer * chunkBytes : 0);
    chans[p].putPackets<LL16Packet>(region + slotOf(rank, peer) * 2 * slotBytes + 16 * u0, from + 8 * u0,
                                    8 * (u1 - u0), threadIdx.x, blockDim.x, flag);
  }
}

/// The packet unit `i` peer p sent into this rank's slot of the region at `region`.
MSCCLPP_DEVICE_INLINE u64 received(const MemoryChannelDeviceHandle& c, int rank, u64 region, u64 slotBytes, u64 i,
                                   u32 flag) {
  const int peer = (int)c.semaphore_.peer;
  const LL16Packet* pk = (const LL16Packet*)((const char*)c.packetBuffer_ + region + slotOf(peer, rank) * 2 * slotBytes);
  return pk[i].read(flag, c.semaphore_.channelId, c.semaphore_.peer);
}

MSCCLPP_DEVICE_INLINE u64 add2(u64 x, u64 y) {
  const float a = __uint_as_float((u32)x) + __uint_as_float((u32)y);
  const float b = __uint_as_float((u32)(x >> 32)) + __uint_as_float((u32)(y >> 32));
  return (u64)__float_as_uint(a) | ((u64)__float_as_uint(b) << 32);
}

extern "C" __global__ void oneshot_ll_allreduce(INTERP_COST_ARGS) {
  const u32 flag = startFlag(flags);
  u64 u0, u1;
  blockPart(bytes / 8, u0, u1);
  const u64 base = (flag & 1u) ? 0 : half;
  sendPackets(chans, nPeers, rank, base, bytes, 0, false, 0, u0, u1, flag);
  // In place: every thread has read its share of the part before any thread overwrites it.
  __syncthreads();
  u64* d = (u64*)data;
  for (u64 i = u0 + threadIdx.x; i < u1; i += blockDim.x) {
    u64 acc = d[i];
    for (int p = 0; p < nPeers; ++p) acc = add2(acc, received(chans[p], rank, base, bytes, i, flag));
    d[i] = acc;
  }
  finish(flags, flag);
}

extern "C" __global__ void twoshot_ll_allreduce(INTERP_COST_ARGS) {
  const u32 flag = startFlag(flags);
  const u64 chunk = bytes / (u64)(nPeers + 1);
  u64 u0, u1;
  blockPart(chunk / 8, u0, u1);
  const u64 base = (flag & 1u) ? 0 : half;
  const u64 second = base + (u64)nPeers * 2 * chunk;  // the region of the reduced chunks
  sendPackets(chans, nPeers, rank, base, chunk, 0, true, chunk, u0, u1, flag);
  __syncthreads();
  u64* mine = (u64*)(data + (u64)rank * chunk);
  for (u64 i = u0 + threadIdx.x; i < u1; i += blockDim.x) {
    u64 acc = mine[i];
    for (int p = 0; p < nPeers; ++p) acc = add2(acc, received(chans[p], rank, base, chunk, i, flag));
    mine[i] = acc;
    for (int p = 0; p < nPeers; ++p) {
      const int peer = (int)chans[p].semaphore_.peer;
      LL16Packet* out = (LL16Packet*)((char*)chans[p].dst_ + second + slotOf(rank, peer) * 2 * chunk);
      out[i].write(acc, flag);
    }
  }
  for (int p = 0; p < nPeers; ++p) {
    const int peer = (int)chans[p].semaphore_.peer;
    u64* theirs = (u64*)(data + (u64)peer * chunk);
    for (u64 i = u0 + threadIdx.x; i < u1; i += blockDim.x) theirs[i] = received(chans[p], rank, second, chunk, i, flag);
  }
  finish(flags, flag);
}

extern "C" __global__ void allpairs_ll_allgather(INTERP_COST_ARGS) {
  const u32 flag = startFlag(flags);
  const u64 chunk = bytes / (u64)(nPeers + 1);
  u64 u0, u1;
  blockPart(chunk / 8, u0, u1);
  const u64 base = (flag & 1u) ? 0 : half;
  sendPackets(chans, nPeers, rank, base, chunk, (u64)rank * chunk, false, chunk, u0, u1, flag);
  for (int p = 0; p < nPeers; ++p) {
    const int peer = (int)chans[p].semaphore_.peer;
    u64* theirs = (u64*)(data + (u64)peer * chunk);
    for (u64 i = u0 + threadIdx.x; i < u1; i += blockDim.x) theirs[i] = received(chans[p], rank, base, chunk, i, flag);
  }
  finish(flags, flag);
}

extern "C" __global__ void ll_reducescatter(INTERP_COST_ARGS) {
  const u32 flag = startFlag(flags);
  const u64 chunk = bytes / (u64)(nPeers + 1);
  u64 u0, u1;
  blockPart(chunk / 8, u0, u1);
  const u64 base = (flag & 1u) ? 0 : half;
  sendPackets(chans, nPeers, rank, base, chunk, 0, true, chunk, u0, u1, flag);
  u64* mine = (u64*)(data + (u64)rank * chunk);
  for (u64 i = u0 + threadIdx.x; i < u1; i += blockDim.x) {
    u64 acc = mine[i];
    for (int p = 0; p < nPeers; ++p) acc = add2(acc, received(chans[p], rank, base, chunk, i, flag));
    mine[i] = acc;
  }
  finish(flags, flag);
}

MSCCLPP_DEVICE_INLINE float4 add4(float4 a, float4 b) {
  return make_float4(a.x + b.x, a.y + b.y, a.z + b.z, a.w + b.w);
}

/// The sum `acc` of unit i of this rank's chunk into its data and every peer's (the Simple kernels' all-gather).
MSCCLPP_DEVICE_INLINE void storeSum(MemoryChannelDeviceHandle* mine, int nPeers, float4* own, u64 offset, u64 i,
                                    float4 acc) {
  own[i] = acc;
  for (int p = 0; p < nPeers; ++p) ((float4*)((char*)mine[p].dst_ + offset))[i] = acc;
}

/// A signal/wait round with every peer, after the block's writes so far (the signal releases them).
MSCCLPP_DEVICE_INLINE void signalRound(MemoryChannelDeviceHandle* mine, int nPeers) {
  __syncthreads();
  if ((int)threadIdx.x < nPeers) {
    mine[threadIdx.x].signal();
    mine[threadIdx.x].wait();
  }
}

/// The Simple kernels' entry: every peer has entered the launch, so its data is this launch's input (a relaxed
/// signal: the launch has written nothing yet).
MSCCLPP_DEVICE_INLINE void entryHandshake(MemoryChannelDeviceHandle* mine, int nPeers) {
  if ((int)threadIdx.x < nPeers) {
    mine[threadIdx.x].relaxedSignal();
    mine[threadIdx.x].wait();
  }
  __syncthreads();
}

extern "C" __global__ void twoshot_allreduce(INTERP_COST_ARGS) {
  MemoryChannelDeviceHandle* mine = chans + (u64)blockIdx.x * nPeers;
  entryHandshake(mine, nPeers);
  const u64 chunk = bytes / (u64)(nPeers + 1);
  u64 u0, u1;
  blockPart(chunk / 16, u0, u1);
  float4* own = (float4*)(data + (u64)rank * chunk);
  for (u64 i = u0 + threadIdx.x; i < u1; i += blockDim.x) {
    float4 acc = own[i];
    for (int p = 0; p < nPeers; ++p) acc = add4(acc, ((const float4*)((const char*)mine[p].dst_ + (u64)rank * chunk))[i]);
    storeSum(mine, nPeers, own, (u64)rank * chunk, i, acc);
  }
  // Closing round: the sum has landed in every peer's data and this rank reads theirs no more.
  signalRound(mine, nPeers);
}

extern "C" __global__ void twopass_allreduce(INTERP_COST_ARGS) {
  MemoryChannelDeviceHandle* mine = chans + (u64)blockIdx.x * nPeers;
  entryHandshake(mine, nPeers);
  const u64 chunk = bytes / (u64)(nPeers + 1);
  u64 u0, u1;
  blockPart(chunk / 16, u0, u1);
  float4* own = (float4*)(data + (u64)rank * chunk);
  // Reduce pass: this rank's chunk of every peer's data added into its own.
  for (u64 i = u0 + threadIdx.x; i < u1; i += blockDim.x) {
    float4 acc = own[i];
    for (int p = 0; p < nPeers; ++p) acc = add4(acc, ((const float4*)((const char*)mine[p].dst_ + (u64)rank * chunk))[i]);
    own[i] = acc;
  }
  // The block's part of the sum is written before any thread puts it.
  __syncthreads();
  // Put pass: the block's part of the sum, read back, into every peer's data.
  for (int p = 0; p < nPeers; ++p) {
    float4* theirs = (float4*)((char*)mine[p].dst_ + (u64)rank * chunk);
    for (u64 i = u0 + threadIdx.x; i < u1; i += blockDim.x) theirs[i] = own[i];
  }
  signalRound(mine, nPeers);
}

extern "C" __global__ void staged_allreduce(INTERP_COST_ARGS) {
  const MemoryChannelDeviceHandle* toScratch = chans;
  MemoryChannelDeviceHandle* mine = chans + nPeers + (u64)blockIdx.x * nPeers;
  const u32 flag = startFlag(flags);
  const u64 region = (u64)(flag & 1) * half;
  const u64 chunk = bytes / (u64)(nPeers + 1);
  u64 u0, u1;
  blockPart(chunk / 16, u0, u1);
  // Chunk q of this rank's data into its slot of peer q's scratch, then the signal that it has landed (and that
  // this rank has entered the launch: its data may be written).
  for (int p = 0; p < nPeers; ++p) {
    const int q = (int)mine[p].semaphore_.peer;
    const float4* src = (const float4*)(data + (u64)q * chunk);
    float4* dst = (float4*)((char*)toScratch[p].dst_ + region + slotOf(rank, q) * chunk);
    for (u64 i = u0 + threadIdx.x; i < u1; i += blockDim.x) dst[i] = src[i];
  }
  signalRound(mine, nPeers);
  __syncthreads();
  const char* scratch = (const char*)toScratch[0].packetBuffer_ + region;
  float4* own = (float4*)(data + (u64)rank * chunk);
  for (u64 i = u0 + threadIdx.x; i < u1; i += blockDim.x) {
    float4 acc = own[i];
    for (int p = 0; p < nPeers; ++p) {
      const int q = (int)mine[p].semaphore_.peer;
      acc = add4(acc, ((const float4*)(scratch + slotOf(q, rank) * chunk))[i]);
    }
    storeSum(mine, nPeers, own, (u64)rank * chunk, i, acc);
  }
  // Closing round: the sum has landed in every peer's data.
  signalRound(mine, nPeers);
  finish(flags, flag);
}

// LL128 lines (twoshot_ll128_allreduce): a warp moves tiles of 480 data bytes as 512 packet bytes, four lines of
// eight 16-byte slots; lanes with slot < 7 carry data bytes [16 k, 16 k + 16) (k = line * 7 + slot), the flag lanes
// (slot 7) 8 data bytes at 448 + 8 line and the flag.
constexpr u64 kTileData = LL128Packet::kGroupPayloadBytes;
constexpr u64 kTilePk = LL128Packet::kGroupBytes;
/// Tiles each warp has in flight.
constexpr int U = 2;

struct LaneMap {
  u32 lane;
  u32 off;  // data byte offset in the tile
  u32 len;  // 16, or 8 on a flag lane
  bool flagLane;
};

MSCCLPP_DEVICE_INLINE LaneMap laneMap() {
  const u32 lane = threadIdx.x % LL128Packet::kLanesPerGroup;
  LaneMap m;
  m.lane = lane;
  m.flagLane = LL128Packet::isFlagLane(lane);
  m.off = LL128Packet::laneDataOffset(lane);
  m.len = LL128Packet::laneDataBytes(lane);
  return m;
}

MSCCLPP_DEVICE_INLINE Bytes16 ldData(const char* base, u64 tile, const LaneMap& m, u64 chunk) {
  const u64 at = tile * kTileData + m.off;
  Bytes16 v = {0, 0, 0, 0};
  if (at + m.len <= chunk) {
    if (m.len == 16) {
      v = *(const Bytes16*)(base + at);
    } else {
      const uint2 w = *(const uint2*)(base + at);
      v.x = w.x;
      v.y = w.y;
    }
  }
  return v;
}

MSCCLPP_DEVICE_INLINE void stData(char* base, u64 tile, const LaneMap& m, u64 chunk, Bytes16 v) {
  const u64 at = tile * kTileData + m.off;
  if (at + m.len <= chunk) {
    if (m.len == 16) {
      *(Bytes16*)(base + at) = v;
    } else {
      *(uint2*)(base + at) = make_uint2(v.x, v.y);
    }
  }
}

MSCCLPP_DEVICE_INLINE void stPk(char* pk, u64 tile, const LaneMap& m, Bytes16 v, u32 flag) {
  if (m.flagLane) {
    v.z = flag;
    v.w = 0;
  }
  char* p = pk + tile * kTilePk + 16u * m.lane;
  stVolatile16(p, v);
}

/// Spin until the warp's four lines of the tile carry `flag`; this lane's slot.
MSCCLPP_DEVICE_INLINE Bytes16 ldPk(const char* pk, u64 tile, const LaneMap& m, u32 flag) {
  const char* p = pk + tile * kTilePk + 16u * m.lane;
  Bytes16 v;
  SpinBound bound;
  while (true) {
    v = ldVolatile16(p);
    const bool bad = m.flagLane && (v.z != flag || v.w != 0);
    if (!__any_sync(0xffffffffu, bad)) break;
    if (u64 el = bound.expired()) waitFailed(WaitPacket, 0, 0, flag, v.z, el);
  }
  return v;
}

MSCCLPP_DEVICE_INLINE Bytes16 addF4(Bytes16 a, Bytes16 b) {
  return Bytes16{__float_as_uint(__uint_as_float(a.x) + __uint_as_float(b.x)),
                 __float_as_uint(__uint_as_float(a.y) + __uint_as_float(b.y)),
                 __float_as_uint(__uint_as_float(a.z) + __uint_as_float(b.z)),
                 __float_as_uint(__uint_as_float(a.w) + __uint_as_float(b.w))};
}

extern "C" __global__ void twoshot_ll128_allreduce(INTERP_COST_ARGS) {
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
      Bytes16 v[U];
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
    Bytes16 acc[U];
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
      Bytes16 v[U];
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


extern "C" __global__ void oneshot_ll128_allreduce(INTERP_COST_ARGS) {
  const u32 flag = startFlag(flags);
  const u64 tiles = (bytes + kTileData - 1) / kTileData;
  // Block b owns a contiguous part of the tiles (as thread block b of the plan owns its chunk), its warps stride it.
  const u64 per = (tiles + gridDim.x - 1) / gridDim.x;
  const u64 t0b = per * blockIdx.x < tiles ? per * blockIdx.x : tiles;
  const u64 t1b = t0b + per < tiles ? t0b + per : tiles;
  const u64 warps = blockDim.x >> 5;
  const u64 w = threadIdx.x >> 5;
  const LaneMap m = laneMap();
  const u64 base = (flag & 1u) ? 0 : half;
  // Send the block's tiles to every peer.
  for (int p = 0; p < nPeers; ++p) {
    const int q = (int)chans[p].semaphore_.peer;
    char* dst = (char*)chans[p].dst_ + base + slotOf(rank, q) * 2 * bytes;
    for (u64 t = t0b + w; t < t1b; t += U * warps) {
      Bytes16 v[U];
#pragma unroll
      for (int u = 0; u < U; ++u) v[u] = ldData(data, t + u * warps, m, bytes);
#pragma unroll
      for (int u = 0; u < U; ++u)
        if (t + u * warps < t1b) stPk(dst, t + u * warps, m, v[u], flag);
    }
  }
  // In place: every thread has read its tiles before any thread overwrites them (the plan's barrier).
  __syncthreads();
  // Add the peers' same tiles and store the sum.
  for (u64 t = t0b + w; t < t1b; t += U * warps) {
    Bytes16 v[U];
#pragma unroll
    for (int u = 0; u < U; ++u) v[u] = ldData(data, t + u * warps, m, bytes);
    for (int p = 0; p < nPeers; ++p) {
      const int q = (int)chans[p].semaphore_.peer;
      const char* pk = (const char*)chans[p].packetBuffer_ + base + slotOf(q, rank) * 2 * bytes;
#pragma unroll
      for (int u = 0; u < U; ++u)
        if (t + u * warps < t1b) v[u] = addF4(v[u], ldPk(pk, t + u * warps, m, flag));
    }
#pragma unroll
    for (int u = 0; u < U; ++u)
      if (t + u * warps < t1b) stData(data, t + u * warps, m, bytes, v[u]);
  }
  finish(flags, flag);
}
