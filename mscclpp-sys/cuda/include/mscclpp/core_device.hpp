// Core device definitions shared by every mscclpp device header: integer types, the per-module device
// environment (wait timeout, error slot), bounded spinning and the error report written before a kernel stops.
//
// Needs no CUDA toolkit header: only what NVRTC provides built in.
#pragma once

#define MSCCLPP_DEVICE_INLINE __forceinline__ __device__
#define MSCCLPP_HOST_DEVICE_INLINE __forceinline__ __host__ __device__

namespace mscclpp {

typedef unsigned char u8;
typedef unsigned short u16;
typedef unsigned int u32;
typedef unsigned long long u64;
typedef int i32;
typedef long long i64;

/// Which kind of wait ran past its deadline (DeviceWaitKind in Rust).
enum WaitKind : u32 {
  WaitNone = 0,
  WaitMemoryChannel = 1,
  WaitPortChannel = 2,
  WaitPortChannelFlush = 3,
  WaitFifoPush = 4,
  WaitPacket = 5,
  WaitDeviceSyncer = 6,
  WaitSwitchChannel = 7,
  WaitDeviceSemaphore = 8,
  WaitUser = 9,
  // Not a wait: a plan-specialised interpreter program met records it was not made for (expected: its variant
  // count; observed: the block's variant and operation count).
  WaitProgramMismatch = 10,
};

/// Written once, by the first thread whose wait expires, into mapped pinned host memory (DeviceErrorRecord in
/// Rust). `state` is 0 while empty, 1 while being written, 2 once complete.
struct DeviceErrorRecord {
  u32 state;
  u32 kind;
  u32 rank;
  u32 block;
  u32 thread;
  u32 channel;
  u32 peer;
  u32 op;  ///< the plan interpreter's operation (thread 0 of the block) plus one; 0 outside the interpreter
  u64 expected;
  u64 observed;
  u64 elapsedNs;
};

/// Per-module environment, filled by the host launcher before launches (DeviceEnv in Rust).
struct DeviceEnv {
  DeviceErrorRecord* errorSlot;
  u64 waitTimeoutNs;
  u32 rank;
  u32 flags;
};

}  // namespace mscclpp

/// The per-module environment. The host writes it through cuModuleGetGlobal("mscclppDeviceEnv"). This is its
/// single definition: NVRTC compiles one translation unit and #pragma once includes this header once.
extern "C" __constant__ mscclpp::DeviceEnv mscclppDeviceEnv = {nullptr, 0ull, 0u, 0u};

namespace mscclpp {

/// Default bound when the host did not fill the environment: 10 s.
constexpr u64 kDefaultWaitTimeoutNs = 10ull * 1000ull * 1000ull * 1000ull;

/// Nanoseconds since an arbitrary epoch (the GPU global timer).
MSCCLPP_DEVICE_INLINE u64 globalTimerNs() {
  u64 t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

#ifdef MSCCLPP_INTERPRETER
/// The plan interpreter's current operation in this block, plus one (written by thread 0 before each operation;
/// shared memory, so tracking it costs no global traffic). Reported by waitFailed.
__shared__ u32 mscclppInterpOp;
#endif

/// How long a thread that gives up waits for another one's record to be complete before its trap: 100 ms.
constexpr u64 kRecordWaitNs = 100ull * 1000ull * 1000ull;

/// Record why this thread gives up, then stop the kernel with a trap. The host reads the record and reports
/// rank, block, wait kind, channel and peer.
__noinline__ __device__ void waitFailed(u32 kind, u32 channel, u32 peer, u64 expected, u64 observed, u64 elapsedNs) {
  DeviceErrorRecord* slot = mscclppDeviceEnv.errorSlot;
  if (slot != nullptr) {
    if (atomicCAS(&slot->state, 0u, 1u) == 0u) {
      volatile DeviceErrorRecord* s = slot;
      s->kind = kind;
      s->rank = mscclppDeviceEnv.rank;
      s->block = blockIdx.x;
      s->thread = threadIdx.x;
      s->channel = channel;
      s->peer = peer;
#ifdef MSCCLPP_INTERPRETER
      s->op = mscclppInterpOp;
#else
      s->op = 0u;
#endif
      s->expected = expected;
      s->observed = observed;
      s->elapsedNs = elapsedNs;
      __threadfence_system();
      s->state = 2u;
      __threadfence_system();
    } else {
      // Another thread (often of this kernel: every thread of a wait gives up at once) is writing its record; the
      // trap would stop the kernel before that record is complete and the host would never see it. Wait for it,
      // bounded (a record left half-written by a kernel that died elsewhere must not hang this one).
      volatile u32* state = &slot->state;
      u64 start = globalTimerNs();
      while (*state != 2u && globalTimerNs() - start < kRecordWaitNs) {
      }
    }
  }
  asm volatile("trap;");
}

/// Bounds a spin loop by MSCCLPP_WAIT_TIMEOUT_MS. Reads the timer only every 1024 iterations, so the fast path
/// costs one increment and a compare.
struct SpinBound {
  u64 start;
  u32 spins;
  MSCCLPP_DEVICE_INLINE SpinBound() : start(0), spins(0) {}
  /// Returns the elapsed nanoseconds once the bound is exceeded, else 0.
  MSCCLPP_DEVICE_INLINE u64 expired() {
    if (((++spins) & 1023u) != 0u) return 0;
    u64 now = globalTimerNs();
    if (start == 0) {
      start = now;
      return 0;
    }
    u64 bound = mscclppDeviceEnv.waitTimeoutNs ? mscclppDeviceEnv.waitTimeoutNs : kDefaultWaitTimeoutNs;
    u64 elapsed = now - start;
    return elapsed > bound ? elapsed : 0;
  }
};

}  // namespace mscclpp
