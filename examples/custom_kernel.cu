// A user kernel built by mscclpp's kernel launcher: an all-reduce (sum of f32) over memory channels with LL16
// packets. Each rank sends its whole vector as packets into every peer's scratch, then waits for every peer's
// packets and adds them in. Uses only the mscclpp headers (no CUDA toolkit header).
#include "mscclpp/memory_channel_device.hpp"

using namespace mscclpp;

// chans[p]: src_ = local data, dst_ = peer p's scratch, packetBuffer_ = local scratch; semaphore_.peer = its rank.
// Scratch holds one region of 2 * bytes per sending rank, at rank * 2 * bytes.
extern "C" __global__ void packet_allreduce(MemoryChannelDeviceHandle* chans, int nPeers, int rank, float* data,
                                            unsigned long long count, unsigned int flag) {
  const u32 tid = blockIdx.x * blockDim.x + threadIdx.x;
  const u32 nThreads = gridDim.x * blockDim.x;
  const u64 bytes = count * sizeof(float);
  for (int p = 0; p < nPeers; ++p) {
    chans[p].putPackets<LL16Packet>((u64)rank * 2 * bytes, 0, bytes, tid, nThreads, flag);
  }
  for (int p = 0; p < nPeers; ++p) {
    MemoryChannelDeviceHandle& c = chans[p];
    const LL16Packet* pk = (const LL16Packet*)((char*)c.packetBuffer_ + (u64)c.semaphore_.peer * 2 * bytes);
    for (u64 i = tid; i < count / 2; i += nThreads) {
      u64 v = pk[i].read(flag, c.semaphore_.channelId, c.semaphore_.peer);
      data[2 * i] += __uint_as_float((u32)v);
      data[2 * i + 1] += __uint_as_float((u32)(v >> 32));
    }
  }
}
