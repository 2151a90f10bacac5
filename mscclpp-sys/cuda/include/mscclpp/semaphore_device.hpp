// Device handles of semaphores: GPU-to-GPU (memory channels) and host-to-GPU (port channels).
#pragma once
#include "mscclpp/atomic_device.hpp"

namespace mscclpp {

/// Shared by the semaphore handles below (`Handle` has `expectedInboundToken`, `channelId` and `peer`):
/// non-blocking, true (and consumes one signal) once `received()`, the signals received so far, covers the next.
template <typename Handle, typename Received>
MSCCLPP_DEVICE_INLINE bool pollSignal(Handle& h, Received received) {
  u64 expected = *h.expectedInboundToken + 1;
  if (received() >= expected) {
    *h.expectedInboundToken = expected;
    return true;
  }
  return false;
}

/// Shared by the semaphore handles below: take the next signal and spin until `received()` covers it, bounded by
/// MSCCLPP_WAIT_TIMEOUT_MS (a timeout reports `kind` and the handle's channel and peer).
template <typename Handle, typename Received>
MSCCLPP_DEVICE_INLINE void waitSignal(Handle& h, Received received, u32 kind) {
  u64 expected = fetchAddRelaxedGpu(h.expectedInboundToken, 1) + 1;
  SpinBound bound;
  u64 seen;
  while ((seen = received()) < expected) {
    if (u64 el = bound.expired()) waitFailed(kind, h.channelId, h.peer, expected, seen, el);
  }
}

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
    return pollSignal(*this, [&] { return loadAcquireSys(inboundToken); });
  }

  /// Wait for the next signal of the peer (acquire). Bounded by MSCCLPP_WAIT_TIMEOUT_MS.
  MSCCLPP_DEVICE_INLINE void wait() {
    waitSignal(*this, [&] { return loadAcquireSys(inboundToken); }, WaitMemoryChannel);
  }

  /// Like wait() but with a relaxed load: the caller orders memory itself.
  MSCCLPP_DEVICE_INLINE void relaxedWait() {
    waitSignal(*this, [&] { return loadRelaxedSys(inboundToken); }, WaitMemoryChannel);
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
    return pollSignal(*this, [&] { return received(); });
  }

  MSCCLPP_DEVICE_INLINE void wait() {
    waitSignal(*this, [&] { return received(); }, WaitPortChannel);
  }
};

}  // namespace mscclpp
