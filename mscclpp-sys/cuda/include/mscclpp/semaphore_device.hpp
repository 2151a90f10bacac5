// Device handles of semaphores: GPU-to-GPU (memory channels) and host-to-GPU (port channels).
#pragma once
#include "mscclpp/atomic_device.hpp"

namespace mscclpp {

/// Semaphore between two GPUs (MemoryDevice2DeviceSemaphoreDeviceHandle in Rust; 32 bytes).
/// `inboundToken` is local and incremented by the peer; `remoteInboundToken` is the peer's inbound token mapped
/// here; `expectedInboundToken` counts the waits done so far (local device memory, so it survives launches).
struct MemoryDevice2DeviceSemaphoreDeviceHandle {
  u64* inboundToken;
  u64* remoteInboundToken;
  u64* expectedInboundToken;
  u32 channelId;  ///< reported when a wait times out
  u32 peer;       ///< the remote rank, reported when a wait times out

  /// Non-blocking: true (and consumes one signal) if the peer has signalled.
  MSCCLPP_DEVICE_INLINE bool poll() {
    u64 expected = *expectedInboundToken + 1;
    if (loadAcquireSys(inboundToken) >= expected) {
      *expectedInboundToken = expected;
      return true;
    }
    return false;
  }

  /// Wait for the next signal of the peer (acquire). Bounded by MSCCLPP_WAIT_TIMEOUT_MS.
  MSCCLPP_DEVICE_INLINE void wait() {
    u64 expected = fetchAddRelaxedGpu(expectedInboundToken, 1) + 1;
    SpinBound bound;
    u64 seen;
    while ((seen = loadAcquireSys(inboundToken)) < expected) {
      if (u64 el = bound.expired()) waitFailed(WaitMemoryChannel, channelId, peer, expected, seen, el);
    }
  }

  /// Like wait() but with a relaxed load: the caller orders memory itself.
  MSCCLPP_DEVICE_INLINE void relaxedWait() {
    u64 expected = fetchAddRelaxedGpu(expectedInboundToken, 1) + 1;
    SpinBound bound;
    u64 seen;
    while ((seen = loadRelaxedSys(inboundToken)) < expected) {
      if (u64 el = bound.expired()) waitFailed(WaitMemoryChannel, channelId, peer, expected, seen, el);
    }
  }

  /// Signal the peer, releasing all prior writes of this thread (system scope).
  MSCCLPP_DEVICE_INLINE void signal() { redAddReleaseSys(remoteInboundToken, 1); }

  /// Signal without ordering prior writes.
  MSCCLPP_DEVICE_INLINE void relaxedSignal() { redAddRelaxedSys(remoteInboundToken, 1); }
};

/// Semaphore signalled by the peer of a port channel (Host2DeviceSemaphoreDeviceHandle in Rust; 32 bytes).
/// Two inbound counters: `inboundToken`, which the peer's proxy thread stores after its copies, and
/// `directInboundToken` (null when the peer is on another host), which the peer's GPU increments itself when it
/// moved a small put directly over NVLink (see PortDirectState). The number of signals received is their sum.
struct Host2DeviceSemaphoreDeviceHandle {
  u64* inboundToken;
  u64* expectedInboundToken;
  u64* directInboundToken;
  u32 channelId;
  u32 peer;

  /// Signals received so far (acquire: the data they cover is visible).
  MSCCLPP_DEVICE_INLINE u64 received() const {
    u64 v = loadAcquireSys(inboundToken);
    if (directInboundToken != nullptr) v += loadAcquireSys(directInboundToken);
    return v;
  }

  MSCCLPP_DEVICE_INLINE bool poll() {
    u64 expected = *expectedInboundToken + 1;
    if (received() >= expected) {
      *expectedInboundToken = expected;
      return true;
    }
    return false;
  }

  MSCCLPP_DEVICE_INLINE void wait() {
    u64 expected = fetchAddRelaxedGpu(expectedInboundToken, 1) + 1;
    SpinBound bound;
    u64 seen;
    while ((seen = received()) < expected) {
      if (u64 el = bound.expired()) waitFailed(WaitPortChannel, channelId, peer, expected, seen, el);
    }
  }
};

}  // namespace mscclpp
