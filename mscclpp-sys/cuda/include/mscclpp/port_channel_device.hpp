// Port channel: the GPU asks a host proxy thread (through the FIFO) to copy, signal and flush on its behalf
// (copy engine over CUDA IPC, TCP, or RDMA).
#pragma once
#include "mscclpp/fifo_device.hpp"
#include "mscclpp/semaphore_device.hpp"

namespace mscclpp {

typedef u32 MemoryId;
typedef u32 SemaphoreId;

// The operations shared by both port channel handles (kept standard-layout: no inheritance).
#define MSCCLPP_PORT_CHANNEL_BASE_OPS                                                                          \
  MSCCLPP_DEVICE_INLINE u64 push(u64 type, MemoryId dst, u64 dstOffset, MemoryId src, u64 srcOffset, u64 bytes) { \
    return fifo_.push(makeTrigger(type, dst, dstOffset, src, srcOffset, bytes, semaphoreId_),                   \
                      semaphore_.channelId, semaphore_.peer);                                                  \
  }                                                                                                            \
  /** Ask the proxy to copy `bytes` from (src, srcOffset) to (dst, dstOffset). Returns at once. */             \
  MSCCLPP_DEVICE_INLINE void put(MemoryId dst, u64 dstOffset, MemoryId src, u64 srcOffset, u64 bytes) {        \
    push(TriggerData, dst, dstOffset, src, srcOffset, bytes);                                                  \
  }                                                                                                            \
  /** Ask the proxy to signal the peer after all previously requested copies. */                              \
  MSCCLPP_DEVICE_INLINE void signal() { push(TriggerFlag, 0, 0, 0, 0, 0); }                                    \
  /** put() then signal() in one trigger. */                                                                  \
  MSCCLPP_DEVICE_INLINE void putWithSignal(MemoryId dst, u64 dstOffset, MemoryId src, u64 srcOffset, u64 bytes) { \
    push(TriggerData | TriggerFlag, dst, dstOffset, src, srcOffset, bytes);                                    \
  }                                                                                                            \
  /** putWithSignal() then wait (bounded) until the proxy has completed it. */                                \
  MSCCLPP_DEVICE_INLINE void putWithSignalAndFlush(MemoryId dst, u64 dstOffset, MemoryId src, u64 srcOffset,    \
                                                   u64 bytes) {                                               \
    u64 pos = push(TriggerData | TriggerFlag | TriggerSync, dst, dstOffset, src, srcOffset, bytes);            \
    fifo_.sync(pos, semaphore_.channelId, semaphore_.peer);                                                    \
  }                                                                                                            \
  /** Wait (bounded) until every copy requested so far has completed. */                                      \
  MSCCLPP_DEVICE_INLINE void flush() {                                                                         \
    u64 pos = push(TriggerSync, 0, 0, 0, 0, 0);                                                                \
    fifo_.sync(pos, semaphore_.channelId, semaphore_.peer);                                                    \
  }                                                                                                            \
  /** Non-blocking check for the peer's signal. */                                                            \
  MSCCLPP_DEVICE_INLINE bool poll() { return semaphore_.poll(); }                                              \
  /** Wait (bounded by MSCCLPP_WAIT_TIMEOUT_MS) for the peer's next signal. */                                 \
  MSCCLPP_DEVICE_INLINE void wait() { semaphore_.wait(); }

/// BasePortChannelDeviceHandle in Rust; 72 bytes. Memories are named per call.
struct BasePortChannelDeviceHandle {
  SemaphoreId semaphoreId_;
  u32 reserved_;
  Host2DeviceSemaphoreDeviceHandle semaphore_;
  FifoDeviceHandle fifo_;
  MSCCLPP_PORT_CHANNEL_BASE_OPS
};

/// PortChannelDeviceHandle in Rust; 80 bytes. Same prefix as the base handle, plus fixed destination and source
/// memories for the offset-only overloads.
struct PortChannelDeviceHandle {
  SemaphoreId semaphoreId_;
  u32 reserved_;
  Host2DeviceSemaphoreDeviceHandle semaphore_;
  FifoDeviceHandle fifo_;
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
