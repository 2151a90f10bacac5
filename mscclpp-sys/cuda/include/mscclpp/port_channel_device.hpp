// Port channel: the GPU asks a host proxy thread (through the FIFO) to copy, signal and flush on its behalf
// (copy engine over CUDA IPC, TCP, or RDMA).
#pragma once
#include "mscclpp/copy_device.hpp"
#include "mscclpp/fifo_device.hpp"
#include "mscclpp/semaphore_device.hpp"

namespace mscclpp {

typedef u32 MemoryId;
typedef u32 SemaphoreId;

/// A memory the proxy can name, as this GPU sees it (MemoryWindow in Rust; 16 bytes). `base` is 0 when the
/// memory is not addressable here (another host).
struct MemoryWindow {
  u64 base;
  u64 size;
};

/// The direct path of a same-host port channel (PortDirectState in Rust; 64 bytes, in device memory, one per
/// semaphore of a proxy service). A put of at most `maxBytes` is moved by the calling thread over NVLink and its
/// signal is an atomic increment of the peer's `directInboundToken`, skipping the proxy's round trip. That is
/// only allowed while no proxy work of this channel is in flight (`issued` == what the proxy published in
/// `*done`), so signals still cover every earlier put. `maxBytes` is 0 (direct path off) until the proxy service
/// starts, between hosts, and when MSCCLPP_PORT_DIRECT_MAX=0.
struct PortDirectState {
  u64* remoteDirectToken;       ///< the peer's direct inbound token, mapped here
  const MemoryWindow* memories;  ///< indexed by MemoryId
  u64* done;                    ///< pinned host: triggers of this channel the proxy has completed
  u64 issued;                   ///< triggers with data or a signal pushed on this channel
  u64 doneCache;                ///< last value of *done seen
  u64 maxBytes;
  u32 nMemories;
  u32 reserved;
  u64 reserved2;

  /// True when nothing this channel asked of the proxy is still in flight.
  MSCCLPP_DEVICE_INLINE bool idle() {
    const u64 issuedNow = *(volatile u64*)&issued;
    if (issuedNow == *(volatile u64*)&doneCache) return true;
    const u64 d = loadAcquireSys(done);
    if (d != issuedNow) return false;
    *(volatile u64*)&doneCache = d;
    return true;
  }

  /// Move `bytes` (at most maxBytes) with this thread alone; false (nothing done) when the direct path does not
  /// apply: too large, proxy work in flight, a memory not addressable here, a range the proxy must report, or a
  /// misaligned transfer.
  MSCCLPP_DEVICE_INLINE bool put(MemoryId dst, u64 dstOffset, MemoryId src, u64 srcOffset, u64 bytes) {
    if (maxBytes == 0 || bytes > maxBytes || dst >= nMemories || src >= nMemories) return false;
    const MemoryWindow dw = memories[dst];
    const MemoryWindow sw = memories[src];
    if (dw.base == 0 || sw.base == 0 || dstOffset + bytes > dw.size || srcOffset + bytes > sw.size) return false;
    char* d = (char*)(dw.base + dstOffset);
    const char* s = (const char*)(sw.base + srcOffset);
    if ((((u64)d | (u64)s | bytes) & 3ull) != 0) return false;
    if (!idle()) return false;
    if ((((u64)d | (u64)s | bytes) & 15ull) == 0) {
      // Eight 16-byte loads in flight, then their stores: latency-bound for one thread.
      const Bytes16* s16 = (const Bytes16*)s;
      Bytes16* d16 = (Bytes16*)d;
      const u64 n = bytes >> 4;
      u64 i = 0;
      for (; i + 8 <= n; i += 8) {
        Bytes16 v[8];
#pragma unroll
        for (int k = 0; k < 8; ++k) v[k] = s16[i + k];
#pragma unroll
        for (int k = 0; k < 8; ++k) d16[i + k] = v[k];
      }
      for (; i < n; ++i) d16[i] = s16[i];
    } else {
      const u32* s4 = (const u32*)s;
      u32* d4 = (u32*)d;
      for (u64 i = 0; i < (bytes >> 2); ++i) d4[i] = s4[i];
    }
    return true;
  }

  /// Signal directly (release: orders this thread's earlier writes); false when proxy work is in flight.
  MSCCLPP_DEVICE_INLINE bool signal() {
    if (maxBytes == 0 || !idle()) return false;
    redAddReleaseSys(remoteDirectToken, 1);
    return true;
  }
};

// The operations shared by both port channel handles (kept standard-layout: no inheritance).
#define MSCCLPP_PORT_CHANNEL_BASE_OPS                                                                          \
  MSCCLPP_DEVICE_INLINE u64 push(u64 type, MemoryId dst, u64 dstOffset, MemoryId src, u64 srcOffset, u64 bytes) { \
    if (direct_ != nullptr && (type & (TriggerData | TriggerFlag)) != 0) {                                     \
      atomicAdd((unsigned long long*)&direct_->issued, 1ull);                                                 \
    }                                                                                                          \
    return fifo_.push(makeTrigger(type, dst, dstOffset, src, srcOffset, bytes, semaphoreId_),                   \
                      semaphore_.channelId, semaphore_.peer);                                                  \
  }                                                                                                            \
  MSCCLPP_DEVICE_INLINE bool directPut(MemoryId dst, u64 dstOffset, MemoryId src, u64 srcOffset, u64 bytes) {   \
    return direct_ != nullptr && direct_->put(dst, dstOffset, src, srcOffset, bytes);                          \
  }                                                                                                            \
  /** Copy `bytes` from (src, srcOffset) to (dst, dstOffset): through the proxy (returns at once), or, for a \
      small put to a peer on this host, by this thread. */                                                     \
  MSCCLPP_DEVICE_INLINE void put(MemoryId dst, u64 dstOffset, MemoryId src, u64 srcOffset, u64 bytes) {        \
    if (directPut(dst, dstOffset, src, srcOffset, bytes)) return;                                              \
    push(TriggerData, dst, dstOffset, src, srcOffset, bytes);                                                  \
  }                                                                                                            \
  /** Signal the peer after all previously requested copies. */                                               \
  MSCCLPP_DEVICE_INLINE void signal() {                                                                        \
    if (direct_ != nullptr && direct_->signal()) return;                                                       \
    push(TriggerFlag, 0, 0, 0, 0, 0);                                                                          \
  }                                                                                                            \
  /** put() then signal() in one trigger. */                                                                  \
  MSCCLPP_DEVICE_INLINE void putWithSignal(MemoryId dst, u64 dstOffset, MemoryId src, u64 srcOffset, u64 bytes) { \
    if (directPut(dst, dstOffset, src, srcOffset, bytes) && direct_->signal()) return;                         \
    push(TriggerData | TriggerFlag, dst, dstOffset, src, srcOffset, bytes);                                    \
  }                                                                                                            \
  /** putWithSignal() then wait (bounded) until the copy has completed. */                                    \
  MSCCLPP_DEVICE_INLINE void putWithSignalAndFlush(MemoryId dst, u64 dstOffset, MemoryId src, u64 srcOffset,    \
                                                   u64 bytes) {                                               \
    if (directPut(dst, dstOffset, src, srcOffset, bytes) && direct_->signal()) return;                         \
    u64 pos = push(TriggerData | TriggerFlag | TriggerSync, dst, dstOffset, src, srcOffset, bytes);            \
    fifo_.sync(pos, semaphore_.channelId, semaphore_.peer);                                                    \
  }                                                                                                            \
  /** Wait (bounded) until every copy requested so far has completed. */                                      \
  MSCCLPP_DEVICE_INLINE void flush() {                                                                         \
    if (direct_ != nullptr && direct_->maxBytes != 0 && direct_->idle()) {                                     \
      __threadfence_system(); /* this thread's direct puts are performed before flush() returns */             \
      return;                                                                                                  \
    }                                                                                                          \
    u64 pos = push(TriggerSync, 0, 0, 0, 0, 0);                                                                \
    fifo_.sync(pos, semaphore_.channelId, semaphore_.peer);                                                    \
  }                                                                                                            \
  /** Non-blocking check for the peer's signal. */                                                            \
  MSCCLPP_DEVICE_INLINE bool poll() { return semaphore_.poll(); }                                              \
  /** Wait (bounded by MSCCLPP_WAIT_TIMEOUT_MS) for the peer's next signal. */                                 \
  MSCCLPP_DEVICE_INLINE void wait() { semaphore_.wait(); }

/// BasePortChannelDeviceHandle in Rust; 88 bytes. Memories are named per call.
struct BasePortChannelDeviceHandle {
  SemaphoreId semaphoreId_;
  u32 reserved_;
  Host2DeviceSemaphoreDeviceHandle semaphore_;
  FifoDeviceHandle fifo_;
  PortDirectState* direct_;  ///< null: every operation goes through the proxy
  MSCCLPP_PORT_CHANNEL_BASE_OPS
};

/// PortChannelDeviceHandle in Rust; 96 bytes. Same prefix as the base handle, plus fixed destination and source
/// memories for the offset-only overloads.
struct PortChannelDeviceHandle {
  SemaphoreId semaphoreId_;
  u32 reserved_;
  Host2DeviceSemaphoreDeviceHandle semaphore_;
  FifoDeviceHandle fifo_;
  PortDirectState* direct_;
  MemoryId dst_;
  MemoryId src_;
  MSCCLPP_PORT_CHANNEL_BASE_OPS

  MSCCLPP_DEVICE_INLINE void put(u64 dstOffset, u64 srcOffset, u64 bytes) {
    put(dst_, dstOffset, src_, srcOffset, bytes);
  }
  MSCCLPP_DEVICE_INLINE void put(u64 offset, u64 bytes) { put(offset, offset, bytes); }
  MSCCLPP_DEVICE_INLINE void putWithSignal(u64 dstOffset, u64 srcOffset, u64 bytes) {
    putWithSignal(dst_, dstOffset, src_, srcOffset, bytes);
  }
  MSCCLPP_DEVICE_INLINE void putWithSignal(u64 offset, u64 bytes) { putWithSignal(offset, offset, bytes); }
  MSCCLPP_DEVICE_INLINE void putWithSignalAndFlush(u64 dstOffset, u64 srcOffset, u64 bytes) {
    putWithSignalAndFlush(dst_, dstOffset, src_, srcOffset, bytes);
  }
  MSCCLPP_DEVICE_INLINE void putWithSignalAndFlush(u64 offset, u64 bytes) {
    putWithSignalAndFlush(offset, offset, bytes);
  }
};

}  // namespace mscclpp
