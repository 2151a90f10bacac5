// The one-shot LL all-reduce of the registry's `allreduce_oneshot_ll`, written by hand (f32 sum, in place): every
// rank sends its buffer as LL16 packets into every peer's scratch, then adds what its peers sent to its own data.
// Block b sends and reduces part b of the buffer, as thread block b of the interpreted plan does with its chunk.
// Built by mscclpp's kernel launcher; uses only the mscclpp headers.
#include "mscclpp/memory_channel_device.hpp"

using namespace mscclpp;

// chans[p]: src_ = this rank's data, dst_ = peer p's scratch, packetBuffer_ = this rank's scratch,
// semaphore_.peer = the peer's rank. The scratch has two halves (launch parity, so that a launch never overwrites
// packets a peer still reads); a half holds one slot of 2 * bytes (packets) per sending peer, the slot of sender s
// at receiver d being s < d ? s : s - 1. flags[b] counts block b's launches in device memory, so that replays of a
// CUDA graph advance the packet flag as eager launches do.
extern "C" __global__ void oneshot_ll_allreduce(MemoryChannelDeviceHandle* chans, int nPeers, int rank, float* data,
                                                unsigned long long count, unsigned int* flags,
                                                unsigned long long half) {
  __shared__ u32 sflag;
  if (threadIdx.x == 0) sflag = flags[blockIdx.x] + 1;
  __syncthreads();
  const u32 flag = sflag;
  const u64 bytes = count * sizeof(float);
  const u64 units = bytes / 8;  // 8 payload bytes per packet
  const u64 per = (units + gridDim.x - 1) / gridDim.x;
  const u64 u0 = per * blockIdx.x < units ? per * blockIdx.x : units;
  const u64 u1 = u0 + per < units ? u0 + per : units;
  const u64 base = (flag & 1u) ? 0 : half;
  for (int p = 0; p < nPeers; ++p) {
    const int peer = (int)chans[p].semaphore_.peer;
    const u64 slot = rank < peer ? (u64)rank : (u64)rank - 1;
    chans[p].putPackets<LL16Packet>(base + slot * 2 * bytes + 16 * u0, 8 * u0, 8 * (u1 - u0), threadIdx.x,
                                    blockDim.x, flag);
  }
  // In place: every thread has read its share of the part before any thread overwrites it.
  __syncthreads();
  for (u64 i = u0 + threadIdx.x; i < u1; i += blockDim.x) {
    float a = data[2 * i];
    float b = data[2 * i + 1];
    for (int p = 0; p < nPeers; ++p) {
      const MemoryChannelDeviceHandle& c = chans[p];
      const int peer = (int)c.semaphore_.peer;
      const u64 slot = peer < rank ? (u64)peer : (u64)peer - 1;
      const LL16Packet* pk = (const LL16Packet*)((const char*)c.packetBuffer_ + base + slot * 2 * bytes);
      const u64 v = pk[i].read(flag, c.semaphore_.channelId, c.semaphore_.peer);
      a += __uint_as_float((u32)v);
      b += __uint_as_float((u32)(v >> 32));
    }
    data[2 * i] = a;
    data[2 * i + 1] = b;
  }
  if (threadIdx.x == 0) flags[blockIdx.x] = flag;
}
