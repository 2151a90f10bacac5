// The proxy FIFO: GPU threads push 16-byte triggers into pinned host memory; one host thread pops them.
#pragma once
#include "mscclpp/atomic_device.hpp"

namespace mscclpp {

/// Trigger types (OR-able).
enum TriggerType : u64 {
  TriggerData = 0x1,  ///< copy size bytes from (srcMemoryId, srcOffset) to (dstMemoryId, dstOffset)
  TriggerFlag = 0x2,  ///< signal the semaphore
  TriggerSync = 0x4,  ///< flush: the proxy completes all prior copies before popping this trigger
};

constexpr u64 kTriggerBitsSize = 32;
constexpr u64 kTriggerBitsOffset = 32;
constexpr u64 kTriggerBitsMemoryId = 9;
constexpr u64 kTriggerBitsType = 3;
constexpr u64 kTriggerBitsSemaphoreId = 10;

/// One FIFO entry (ProxyTrigger in Rust; 16 bytes).
/// fst: [0,32) size, [32,64) srcOffset. snd: [0,32) dstOffset, [32,41) srcMemoryId, [41,50) dstMemoryId,
/// [50,53) type, [53,63) semaphoreId, bit 63 = lap parity (lap 0 writes 1, so zeroed memory reads as empty).
struct alignas(16) ProxyTrigger {
  u64 fst;
  u64 snd;
};

MSCCLPP_DEVICE_INLINE ProxyTrigger makeTrigger(u64 type, u32 dst, u64 dstOffset, u32 src, u64 srcOffset, u64 bytes,
                                               u32 semaphoreId) {
  ProxyTrigger t;
  t.fst = (bytes & 0xffffffffull) | ((srcOffset & 0xffffffffull) << 32);
  t.snd = (dstOffset & 0xffffffffull) | ((u64)(src & 0x1ffu) << 32) | ((u64)(dst & 0x1ffu) << 41) |
          ((type & 0x7ull) << 50) | ((u64)(semaphoreId & 0x3ffu) << 53);
  return t;
}

/// Device side of the FIFO (FifoDeviceHandle in Rust; 40 bytes).
struct FifoDeviceHandle {
  ProxyTrigger* triggers;  ///< pinned host memory, `size` entries
  u64* tail;               ///< pinned host memory: number of triggers the proxy has completed
  u64* head;               ///< device memory: number of triggers reserved by GPU threads
  u64* tailCache;          ///< device memory: last tail value seen by the GPU
  u32 size;                ///< power of two
  u32 log2Size;

  /// Reserve a slot and publish `trigger`; returns its position. Waits (bounded) while the FIFO is full.
  MSCCLPP_DEVICE_INLINE u64 push(ProxyTrigger trigger, u32 channelId = 0xffffffffu, u32 peer = 0xffffffffu) {
    u64 pos = fetchAddRelaxedGpu(head, 1);
    if (pos >= (u64)size + *(volatile u64*)tailCache) {
      SpinBound bound;
      u64 t;
      while (pos >= (u64)size + (t = loadAcquireSys(tail))) {
        if (u64 el = bound.expired()) waitFailed(WaitFifoPush, channelId, peer, pos - size + 1, t, el);
      }
      *(volatile u64*)tailCache = t;
    }
    ProxyTrigger* slot = &triggers[pos & (size - 1)];
    u64 parity = (((pos >> log2Size) & 1ull) ^ 1ull) << 63;
    storeRelaxedSys(&slot->fst, trigger.fst);
    storeReleaseSys(&slot->snd, trigger.snd | parity);
    return pos;
  }

  /// Wait (bounded) until the proxy has completed the trigger at `pos`.
  MSCCLPP_DEVICE_INLINE void sync(u64 pos, u32 channelId = 0xffffffffu, u32 peer = 0xffffffffu) {
    SpinBound bound;
    u64 t;
    while ((t = loadAcquireSys(tail)) <= pos) {
      if (u64 el = bound.expired()) waitFailed(WaitPortChannelFlush, channelId, peer, pos + 1, t, el);
    }
  }
};

}  // namespace mscclpp
