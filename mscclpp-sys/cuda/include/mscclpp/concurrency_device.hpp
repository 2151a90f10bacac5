// Synchronisation between the thread blocks of one kernel.
#pragma once
#include "mscclpp/atomic_device.hpp"

namespace mscclpp {

/// Grid-wide barrier over `nBlocks` co-resident blocks (DeviceSyncer in Rust; 16 bytes, zero-initialised in
/// device memory). Every block must call sync() the same number of times.
struct DeviceSyncer {
  u32 count_;
  u32 generation_;
  u32 reserved_[2];

  MSCCLPP_DEVICE_INLINE void sync(u32 nBlocks) {
    __syncthreads();
    if (threadIdx.x == 0) {
      u32 gen = loadAcquireGpu(&generation_);
      u32 arrived = fetchAddAcqRelGpu(&count_, 1u) + 1u;
      if (arrived == nBlocks) {
        *(volatile u32*)&count_ = 0u;
        storeReleaseGpu(&generation_, gen + 1u);
      } else {
        SpinBound bound;
        while (loadAcquireGpu(&generation_) == gen) {
          if (u64 el = bound.expired()) waitFailed(WaitDeviceSyncer, 0xffffffffu, 0xffffffffu, nBlocks, arrived, el);
        }
      }
    }
    __syncthreads();
  }
};

/// Counting semaphore in device memory (DeviceSemaphore in Rust; 4 bytes).
struct DeviceSemaphore {
  i32 value_;

  MSCCLPP_DEVICE_INLINE void release() { fetchAddAcqRelGpu(&value_, 1); }
  MSCCLPP_DEVICE_INLINE void acquire() {
    i32 old = fetchAddAcqRelGpu(&value_, -1);
    if (old <= 0) {
      SpinBound bound;
      i32 v;
      while ((v = loadAcquireGpu(&value_)) < old) {
        if (u64 el = bound.expired()) waitFailed(WaitDeviceSemaphore, 0xffffffffu, 0xffffffffu, old, v, el);
      }
    }
  }
};

}  // namespace mscclpp
