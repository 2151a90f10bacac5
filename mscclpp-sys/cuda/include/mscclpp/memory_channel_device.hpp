// Memory channel: direct load/store access to a peer GPU's buffer (CUDA IPC / NVLink) plus a GPU-to-GPU
// semaphore.
#pragma once
#include "mscclpp/copy_device.hpp"
#include "mscclpp/packet_device.hpp"
#include "mscclpp/semaphore_device.hpp"

namespace mscclpp {

// The semaphore operations shared by both memory channel handles (kept standard-layout: no inheritance).
#define MSCCLPP_MEMORY_CHANNEL_SEMAPHORE_OPS                                        \
  /** Signal the peer, releasing this thread's prior writes. */                    \
  MSCCLPP_DEVICE_INLINE void signal() { semaphore_.signal(); }                      \
  /** Signal without release ordering. */                                          \
  MSCCLPP_DEVICE_INLINE void relaxedSignal() { semaphore_.relaxedSignal(); }        \
  /** Non-blocking check for a signal. */                                          \
  MSCCLPP_DEVICE_INLINE bool poll() { return semaphore_.poll(); }                   \
  /** Wait (bounded by MSCCLPP_WAIT_TIMEOUT_MS) for the peer's next signal. */      \
  MSCCLPP_DEVICE_INLINE void wait() { semaphore_.wait(); }                          \
  /** Wait without acquire ordering. */                                            \
  MSCCLPP_DEVICE_INLINE void relaxedWait() { semaphore_.relaxedWait(); }

/// Semaphore-only channel (BaseMemoryChannelDeviceHandle in Rust; 32 bytes).
struct BaseMemoryChannelDeviceHandle {
  MemoryDevice2DeviceSemaphoreDeviceHandle semaphore_;
  MSCCLPP_MEMORY_CHANNEL_SEMAPHORE_OPS
};

/// Full memory channel (MemoryChannelDeviceHandle in Rust; 56 bytes).
/// `dst_`: the peer's buffer mapped here; `src_`: the local buffer; `packetBuffer_`: local buffer that the peer
/// writes packets into.
struct MemoryChannelDeviceHandle {
  MemoryDevice2DeviceSemaphoreDeviceHandle semaphore_;
  void* dst_;
  void* src_;
  void* packetBuffer_;
  MSCCLPP_MEMORY_CHANNEL_SEMAPHORE_OPS

  /// The semaphore-only view of this channel.
  MSCCLPP_DEVICE_INLINE BaseMemoryChannelDeviceHandle base() const { return BaseMemoryChannelDeviceHandle{semaphore_}; }

  /// Read element `index` of the peer buffer.
  template <typename T>
  MSCCLPP_DEVICE_INLINE T read(u64 index) {
    return ((T*)dst_)[index];
  }
  /// Write element `index` of the peer buffer.
  template <typename T>
  MSCCLPP_DEVICE_INLINE void write(u64 index, const T& v) {
    ((T*)dst_)[index] = v;
  }

  /// Copy local src_[originOffset..+bytes] to peer dst_[targetOffset..], cooperatively.
  MSCCLPP_DEVICE_INLINE void put(u64 targetOffset, u64 originOffset, u64 bytes, u32 tid, u32 nThreads) {
    copy((char*)dst_ + targetOffset, (const char*)src_ + originOffset, bytes, tid, nThreads);
  }
  MSCCLPP_DEVICE_INLINE void put(u64 offset, u64 bytes, u32 tid, u32 nThreads) {
    put(offset, offset, bytes, tid, nThreads);
  }

  /// Copy peer dst_[targetOffset..+bytes] into local src_[originOffset..], cooperatively.
  MSCCLPP_DEVICE_INLINE void get(u64 targetOffset, u64 originOffset, u64 bytes, u32 tid, u32 nThreads) {
    copy((char*)src_ + originOffset, (const char*)dst_ + targetOffset, bytes, tid, nThreads);
  }
  MSCCLPP_DEVICE_INLINE void get(u64 offset, u64 bytes, u32 tid, u32 nThreads) {
    get(offset, offset, bytes, tid, nThreads);
  }

  /// Send local src_[originOffset..+originBytes] as packets to peer dst_ at byte `targetOffset` (packet space).
  template <typename Packet = LL16Packet>
  MSCCLPP_DEVICE_INLINE void putPackets(u64 targetOffset, u64 originOffset, u64 originBytes, u32 tid, u32 nThreads,
                                        u32 flag) {
    copyToPackets<Packet>((char*)dst_ + targetOffset, (const char*)src_ + originOffset, originBytes, tid, nThreads,
                          flag);
  }

  /// Wait for packets in the local packetBuffer_ at byte `originOffset` and write `originBytes` of payload to
  /// local src_ at `targetOffset`.
  template <typename Packet = LL16Packet>
  MSCCLPP_DEVICE_INLINE void unpackPackets(u64 targetOffset, u64 originOffset, u64 originBytes, u32 tid,
                                           u32 nThreads, u32 flag) {
    copyFromPackets<Packet>((char*)src_ + targetOffset, (const char*)packetBuffer_ + originOffset, originBytes, tid,
                            nThreads, flag, semaphore_.channelId, semaphore_.peer);
  }

  /// Wait for one LL16 packet at index `index` of the local packet buffer; returns its payload.
  MSCCLPP_DEVICE_INLINE u64 unpackPacket(u64 index, u32 flag) {
    return ((const LL16Packet*)packetBuffer_)[index].read(flag, semaphore_.channelId, semaphore_.peer);
  }
};

}  // namespace mscclpp
