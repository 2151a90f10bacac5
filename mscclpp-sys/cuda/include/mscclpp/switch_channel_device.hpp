// Switch channel: NVLink multicast (NVLS) load-reduce and store through a multicast address.
// The multimem instructions need sm_90 or newer; on older targets the methods trap.
#pragma once
#include "mscclpp/core_device.hpp"

namespace mscclpp {

/// SwitchChannelDeviceHandle in Rust; 24 bytes.
struct SwitchChannelDeviceHandle {
  void* devicePtr;  ///< this rank's unicast address of the bound buffer
  void* mcPtr;      ///< the multicast address of the same buffer
  u64 bufferSize;

  /// Sum of four f32 over all members at byte offset `offset` (16-byte aligned).
  MSCCLPP_DEVICE_INLINE void reduceF32x4(u64 offset, float& a, float& b, float& c, float& d) {
#if __CUDA_ARCH__ >= 900
    asm volatile("multimem.ld_reduce.relaxed.sys.global.add.v4.f32 {%0,%1,%2,%3}, [%4];"
                 : "=f"(a), "=f"(b), "=f"(c), "=f"(d)
                 : "l"((char*)mcPtr + offset)
                 : "memory");
#else
    asm volatile("trap;");
#endif
  }
  /// Sum of 8 f16 (packed in four u32) over all members.
  MSCCLPP_DEVICE_INLINE void reduceF16x8(u64 offset, u32& a, u32& b, u32& c, u32& d) {
#if __CUDA_ARCH__ >= 900
    asm volatile("multimem.ld_reduce.relaxed.sys.global.add.v4.f16x2 {%0,%1,%2,%3}, [%4];"
                 : "=r"(a), "=r"(b), "=r"(c), "=r"(d)
                 : "l"((char*)mcPtr + offset)
                 : "memory");
#else
    asm volatile("trap;");
#endif
  }
  /// Sum of 8 bf16 (packed in four u32) over all members.
  MSCCLPP_DEVICE_INLINE void reduceBF16x8(u64 offset, u32& a, u32& b, u32& c, u32& d) {
#if __CUDA_ARCH__ >= 900
    asm volatile("multimem.ld_reduce.relaxed.sys.global.add.v4.bf16x2 {%0,%1,%2,%3}, [%4];"
                 : "=r"(a), "=r"(b), "=r"(c), "=r"(d)
                 : "l"((char*)mcPtr + offset)
                 : "memory");
#else
    asm volatile("trap;");
#endif
  }
  /// Store 16 bytes to every member at byte offset `offset`.
  MSCCLPP_DEVICE_INLINE void broadcast16(u64 offset, u32 a, u32 b, u32 c, u32 d) {
#if __CUDA_ARCH__ >= 900
    asm volatile("multimem.st.relaxed.sys.global.v4.f32 [%0], {%1,%2,%3,%4};" ::"l"((char*)mcPtr + offset), "r"(a),
                 "r"(b), "r"(c), "r"(d)
                 : "memory");
#else
    asm volatile("trap;");
#endif
  }
};

}  // namespace mscclpp
