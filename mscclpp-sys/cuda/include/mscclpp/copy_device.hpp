// Cooperative copies: each of `nThreads` threads moves a strided share. 16-byte vectors when aligned.
#pragma once
#include "mscclpp/core_device.hpp"

namespace mscclpp {

struct alignas(16) Bytes16 {
  u32 x, y, z, w;
};
struct alignas(8) Bytes8 {
  u32 x, y;
};

/// One 16-byte volatile load from global memory (`p` 16-byte aligned): every call reads memory again, as a reader
/// polling for a peer's packet needs.
MSCCLPP_DEVICE_INLINE Bytes16 ldVolatile16(const void* p) {
  Bytes16 v;
  asm volatile("ld.volatile.global.v4.u32 {%0,%1,%2,%3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(p)
               : "memory");
  return v;
}

/// One 16-byte volatile store to global memory (`p` 16-byte aligned), in one instruction: a peer's 16-byte load
/// sees all of it or none of it.
MSCCLPP_DEVICE_INLINE void stVolatile16(void* p, const Bytes16& v) {
  asm volatile("st.volatile.global.v4.u32 [%0], {%1,%2,%3,%4};" ::"l"(p), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w)
               : "memory");
}

/// Copy `bytes` from `src` to `dst` cooperatively (thread `tid` of `nThreads`).
MSCCLPP_DEVICE_INLINE void copy(void* dst, const void* src, u64 bytes, u32 tid, u32 nThreads) {
  char* d = (char*)dst;
  const char* s = (const char*)src;
  u64 head = 0;
  if ((((u64)d | (u64)s) & 15ull) == 0) {
    Bytes16* d16 = (Bytes16*)d;
    const Bytes16* s16 = (const Bytes16*)s;
    u64 n = bytes >> 4;
    u64 i = tid;
    const u64 stride = nThreads;
    for (; i + 3 * stride < n; i += 4 * stride) {
      Bytes16 a = s16[i];
      Bytes16 b = s16[i + stride];
      Bytes16 c = s16[i + 2 * stride];
      Bytes16 e = s16[i + 3 * stride];
      d16[i] = a;
      d16[i + stride] = b;
      d16[i + 2 * stride] = c;
      d16[i + 3 * stride] = e;
    }
    for (; i < n; i += stride) d16[i] = s16[i];
    head = n << 4;
  } else if ((((u64)d | (u64)s) & 3ull) == 0) {
    u32* d4 = (u32*)d;
    const u32* s4 = (const u32*)s;
    u64 n = bytes >> 2;
    for (u64 i = tid; i < n; i += nThreads) d4[i] = s4[i];
    head = n << 2;
  }
  for (u64 i = head + tid; i < bytes; i += nThreads) d[i] = s[i];
}

}  // namespace mscclpp
