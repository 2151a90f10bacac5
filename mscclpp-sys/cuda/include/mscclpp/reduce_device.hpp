// Element-wise arithmetic on packed f16/bf16/f32/i32 lanes through inline PTX (no cuda_fp16.h needed).
// Lanes are carried in u32 words: one f32/i32/u32, or two f16/bf16.
#pragma once
#include "mscclpp/core_device.hpp"

namespace mscclpp {

enum ReduceOp : u32 { ReduceSum = 0, ReduceMin = 1, ReduceMax = 2 };
enum DataType : u32 { DataI32 = 0, DataU32 = 1, DataF16 = 2, DataF32 = 3, DataBF16 = 4 };

MSCCLPP_DEVICE_INLINE u32 addF16x2(u32 a, u32 b) {
  u32 r;
  asm("add.rn.f16x2 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b));
  return r;
}
MSCCLPP_DEVICE_INLINE u32 minF16x2(u32 a, u32 b) {
  u32 r;
  asm("min.f16x2 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b));
  return r;
}
MSCCLPP_DEVICE_INLINE u32 maxF16x2(u32 a, u32 b) {
  u32 r;
  asm("max.f16x2 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b));
  return r;
}
MSCCLPP_DEVICE_INLINE u32 addBF16x2(u32 a, u32 b) {
  u32 r;
#if __CUDA_ARCH__ >= 900
  asm("add.rn.bf16x2 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b));
#else
  // sm_8x has no bf16x2 add: a * 1.0 + b with one rounding is the same sum.
  asm("fma.rn.bf16x2 %0, %1, %2, %3;" : "=r"(r) : "r"(a), "r"(0x3f803f80u), "r"(b));
#endif
  return r;
}
MSCCLPP_DEVICE_INLINE u32 minBF16x2(u32 a, u32 b) {
  u32 r;
  asm("min.bf16x2 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b));
  return r;
}
MSCCLPP_DEVICE_INLINE u32 maxBF16x2(u32 a, u32 b) {
  u32 r;
  asm("max.bf16x2 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b));
  return r;
}
MSCCLPP_DEVICE_INLINE u32 addF32(u32 a, u32 b) { return __float_as_uint(__uint_as_float(a) + __uint_as_float(b)); }
MSCCLPP_DEVICE_INLINE u32 minF32(u32 a, u32 b) { return __float_as_uint(fminf(__uint_as_float(a), __uint_as_float(b))); }
MSCCLPP_DEVICE_INLINE u32 maxF32(u32 a, u32 b) { return __float_as_uint(fmaxf(__uint_as_float(a), __uint_as_float(b))); }

/// Reduce one 32-bit word of lanes of type `dt` with `op`.
MSCCLPP_DEVICE_INLINE u32 reduceWord(u32 a, u32 b, DataType dt, ReduceOp op) {
  switch (dt) {
    case DataF16:
      return op == ReduceSum ? addF16x2(a, b) : (op == ReduceMin ? minF16x2(a, b) : maxF16x2(a, b));
    case DataBF16:
      return op == ReduceSum ? addBF16x2(a, b) : (op == ReduceMin ? minBF16x2(a, b) : maxBF16x2(a, b));
    case DataF32:
      return op == ReduceSum ? addF32(a, b) : (op == ReduceMin ? minF32(a, b) : maxF32(a, b));
    case DataI32: {
      i32 x = (i32)a, y = (i32)b;
      return (u32)(op == ReduceSum ? x + y : (op == ReduceMin ? (x < y ? x : y) : (x > y ? x : y)));
    }
    default:
      return op == ReduceSum ? a + b : (op == ReduceMin ? (a < b ? a : b) : (a > b ? a : b));
  }
}

}  // namespace mscclpp
