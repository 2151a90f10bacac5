// Built-in kernels for the runtime's self-tests, examples and benchmarks. Every kernel is `extern "C"` so the
// host finds it by name.
#include "mscclpp/device.hpp"

using namespace mscclpp;

/// Single-thread ping-pong over a memory channel: rank 0 signals first, rank 1 answers. `iters` round trips.
extern "C" __global__ void mscclpp_ping_pong(MemoryChannelDeviceHandle* ch, int rank, int iters) {
  if (threadIdx.x != 0 || blockIdx.x != 0) return;
  MemoryChannelDeviceHandle c = *ch;
  for (int i = 0; i < iters; ++i) {
    if (rank == 0) {
      c.signal();
      c.wait();
    } else {
      c.wait();
      c.signal();
    }
  }
  *ch = c;
}

/// Copy `bytes` with every thread of the grid: mode 0 = put (local src_+srcOffset → peer dst_+dstOffset),
/// mode 1 = get (peer dst_+dstOffset → local src_+srcOffset).
extern "C" __global__ void mscclpp_memory_copy(MemoryChannelDeviceHandle* ch, u64 dstOffset, u64 srcOffset, u64 bytes,
                                               int mode) {
  MemoryChannelDeviceHandle c = *ch;
  u32 tid = blockIdx.x * blockDim.x + threadIdx.x;
  u32 n = gridDim.x * blockDim.x;
  if (mode == 0) {
    c.put(dstOffset, srcOffset, bytes, tid, n);
  } else {
    c.get(dstOffset, srcOffset, bytes, tid, n);
  }
}

/// Each block copies one contiguous slice (better locality for large copies): mode 0 put, 1 get.
extern "C" __global__ void mscclpp_memory_copy_sliced(MemoryChannelDeviceHandle* ch, u64 bytes, int mode) {
  MemoryChannelDeviceHandle c = *ch;
  // Ceil-divide, then round up to 1 KiB: the slices cover every byte and each starts on a 1 KiB boundary
  // (slices that start on odd multiples of 16 bytes split NVLink writes and cost about 5% of bandwidth).
  u64 per = (((bytes + gridDim.x - 1) / gridDim.x) + 1023ull) & ~1023ull;
  u64 off = per * blockIdx.x;
  if (off >= bytes) return;
  u64 len = (off + per > bytes) ? bytes - off : per;
  if (mode == 0) {
    c.put(off, off, len, threadIdx.x, blockDim.x);
  } else {
    c.get(off, off, len, threadIdx.x, blockDim.x);
  }
}

/// Thread 0 of block 0 signals, then waits: a device-side barrier between two ranks.
extern "C" __global__ void mscclpp_channel_barrier(MemoryChannelDeviceHandle* ch) {
  if (threadIdx.x == 0 && blockIdx.x == 0) {
    ch->signal();
    ch->wait();
  }
}

/// Sends packets of `bytes` payload to the peer and unpacks the peer's packets into src at `bytes` offset.
extern "C" __global__ void mscclpp_packet_exchange(MemoryChannelDeviceHandle* ch, u64 bytes, u32 flag) {
  MemoryChannelDeviceHandle c = *ch;
  u32 tid = blockIdx.x * blockDim.x + threadIdx.x;
  u32 n = gridDim.x * blockDim.x;
  c.putPackets<LL16Packet>(0, 0, bytes, tid, n, flag);
  c.unpackPackets<LL16Packet>(bytes, 0, bytes, tid, n, flag);
}

/// Waits on a semaphore nobody signals: stops after MSCCLPP_WAIT_TIMEOUT_MS and reports the wait.
extern "C" __global__ void mscclpp_wait_unsignalled(MemoryChannelDeviceHandle* ch) {
  if (threadIdx.x == 0 && blockIdx.x == 0) ch->wait();
}

/// The seed kernel of the port-channel example: thread i handles peer i; each rank puts its slice
/// (rank * slice) to every peer with putWithSignalAndFlush, then waits for every peer's slice.
extern "C" __global__ void mscclpp_port_exchange(PortChannelDeviceHandle* chans, int nPeers, int rank, u64 slice) {
  int i = threadIdx.x;
  if (blockIdx.x != 0 || i >= nPeers) return;
  PortChannelDeviceHandle c = chans[i];
  c.putWithSignalAndFlush((u64)rank * slice, (u64)rank * slice, slice);
  c.wait();
  chans[i] = c;
}

/// Port-channel bandwidth: one put of `bytes` then a flush, `iters` times, then a signal; the peer waits.
extern "C" __global__ void mscclpp_port_put(PortChannelDeviceHandle* ch, u64 bytes, int iters) {
  if (threadIdx.x != 0 || blockIdx.x != 0) return;
  PortChannelDeviceHandle c = *ch;
  for (int i = 0; i < iters; ++i) {
    c.put(0, 0, bytes);
    c.flush();
  }
  *ch = c;
}

/// Port-channel ping-pong with data: rank 0 putWithSignal then wait; rank 1 wait then putWithSignal.
extern "C" __global__ void mscclpp_port_ping_pong(PortChannelDeviceHandle* ch, int rank, int iters, u64 bytes) {
  if (threadIdx.x != 0 || blockIdx.x != 0) return;
  PortChannelDeviceHandle c = *ch;
  for (int i = 0; i < iters; ++i) {
    if (rank == 0) {
      c.putWithSignal(0, 0, bytes);
      c.wait();
    } else {
      c.wait();
      c.putWithSignal(0, 0, bytes);
    }
  }
  c.flush();
  *ch = c;
}

/// Ordering of the port channel's two paths. Each rank puts `bigBytes` (through the proxy: too large for the
/// direct path) to rank * bigBytes, then `smallBytes` with a signal (small enough for the direct path) to
/// 2 * bigBytes + rank * smallBytes, then waits for the peer's signal and samples the peer's big region in `buf`
/// (filled by the peer with mscclpp_fill_pattern and `peerSeed`). The small put must not signal before the big
/// one has landed: result[0] counts sampled words that were not there yet.
extern "C" __global__ void mscclpp_port_order_check(PortChannelDeviceHandle* ch, const u32* buf, int rank,
                                                    u64 bigBytes, u64 smallBytes, u32 peerSeed, u32* result) {
  if (threadIdx.x != 0 || blockIdx.x != 0) return;
  PortChannelDeviceHandle c = *ch;
  c.put((u64)rank * bigBytes, (u64)rank * bigBytes, bigBytes);
  c.putWithSignal(2 * bigBytes + (u64)rank * smallBytes, 2 * bigBytes + (u64)rank * smallBytes, smallBytes);
  c.wait();
  const volatile u32* peer = (const volatile u32*)(buf + (u64)(1 - rank) * (bigBytes / 4));
  const u64 words = bigBytes / 4;
  u32 bad = 0;
  for (u64 i = 0; i < words; i += (i + 1024 >= words) ? 1 : 4093) {
    if (peer[i] != ((u32)(i * 2654435761ull) ^ peerSeed)) ++bad;
  }
  result[0] = bad;
  c.flush();
  *ch = c;
}

/// Port-channel wait only (the receiving side of mscclpp_port_put).
extern "C" __global__ void mscclpp_port_wait(PortChannelDeviceHandle* ch) {
  if (threadIdx.x == 0 && blockIdx.x == 0) ch->wait();
}

/// Port-channel signal only.
extern "C" __global__ void mscclpp_port_signal(PortChannelDeviceHandle* ch) {
  if (threadIdx.x == 0 && blockIdx.x == 0) {
    ch->signal();
    ch->flush();
  }
}

/// Fill `words` u32 with a pattern derived from `seed`.
extern "C" __global__ void mscclpp_fill_pattern(u32* buf, u64 words, u32 seed) {
  for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < words; i += (u64)gridDim.x * blockDim.x) {
    buf[i] = (u32)(i * 2654435761ull) ^ seed;
  }
}

/// Count words that differ from the pattern of `seed` into *errors.
extern "C" __global__ void mscclpp_check_pattern(const u32* buf, u64 words, u32 seed, unsigned long long* errors) {
  unsigned long long bad = 0;
  for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < words; i += (u64)gridDim.x * blockDim.x) {
    if (buf[i] != ((u32)(i * 2654435761ull) ^ seed)) ++bad;
  }
  if (bad) atomicAdd(errors, bad);
}

/// Grid barrier check: every block increments a counter between two syncs.
extern "C" __global__ void mscclpp_syncer_check(DeviceSyncer* syncer, u32* counter, u32* out) {
  syncer->sync(gridDim.x);
  if (threadIdx.x == 0) atomicAdd(counter, 1u);
  syncer->sync(gridDim.x);
  if (threadIdx.x == 0) out[blockIdx.x] = *(volatile u32*)counter;
}
