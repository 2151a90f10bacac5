// The plan interpreter: one kernel runs every operation of an MSCCL++ execution plan for one rank.
//
// The host (mscclpp-exec, executor/records.rs; record layouts in mscclpp-sys/src/device_plan.rs) turns a plan into compact records whose byte offsets and sizes are
// final: the chunk math, thread-block-group slices, constant offsets of remote buffers and the 2x expansion of
// packet buffers are all done there, so this kernel divides nothing. Per launch it only adds the pipeline offset
// and, with double scratch buffering, the scratch half chosen by the packet flag.
//
// Packet flags live in device memory: one counter per thread block, read at the start of a launch and bumped at
// its end, so CUDA-graph replays advance the flag exactly like eager launches.
//
// Needs no CUDA toolkit header.
//
// One file on purpose (over 700 lines): it is one NVRTC translation unit whose operation handlers share the
// launch's state, and its entry points are instantiated together at the end.
// Timeout reports carry the operation each block was at (mscclppInterpOp, shared memory).
#define MSCCLPP_INTERPRETER 1
#include "mscclpp/device.hpp"

namespace mscclpp {
namespace interp {

// ---------------------------------------------------------------------------------------------------------------
// Records (mirrored by `mscclpp_sys::device_plan`, filled by mscclpp-exec's executor/records.rs; sizes and
// offsets are checked by a layout probe).

/// Where a buffer reference points.
enum Loc : u8 {
  LocInput = 0,    ///< this rank's input buffer (the caller's pointer)
  LocOutput = 1,   ///< this rank's output buffer (the caller's pointer)
  LocScratch = 2,  ///< this rank's scratch buffer
  LocMemory = 3,   ///< a peer buffer through a memory channel: `offset` is the final device address (the host added
                   ///< the peer buffer's mapped base when it laid the plan out)
  LocPort = 4,     ///< a peer buffer through a port channel (MemoryId, tb-local index `id`)
  LocSwitch = 5,   ///< every member's buffer of a switch channel (tb-local index `id`)
};

/// Reference flags.
enum RefFlag : u8 {
  RefScratch = 1,  ///< the target buffer is a scratch buffer: add the launch's scratch half
  RefPacket = 2,   ///< the target holds packets (the offset is already in packet space)
};

/// One buffer reference of an operation (16 bytes).
struct Ref {
  u64 offset;  ///< final byte offset in the target buffer
  u32 size;    ///< payload bytes
  u8 loc;      ///< a Loc
  u8 id;       ///< tb-local remote-buffer or switch-channel index
  u8 flags;    ///< RefFlag bits
  u8 reserved;
};

/// Operation codes (MSCCL++'s OperationType numbering; GLRE is ours).
enum OpType : u8 {
  OpNop = 0,
  OpBarrier = 1,
  OpPut = 2,
  OpPutPackets = 3,
  OpReadPutPackets = 4,
  OpPutWithSignal = 5,
  OpPutWithSignalAndFlush = 6,
  OpGet = 7,
  OpCopy = 8,
  OpCopyPackets = 9,
  OpUnpackPackets = 10,
  OpSignal = 11,
  OpWait = 12,
  OpFlush = 13,
  OpReduce = 14,
  OpReducePackets = 15,
  OpReduceCopyPackets = 16,
  OpReduceSend = 17,
  OpReduceSendPackets = 18,
  OpReduceCopySendPackets = 19,
  OpReadReduce = 20,
  OpReadReduceSend = 21,
  OpMultiLoadReduceStore = 22,
  OpRelaxedSignal = 23,
  OpRelaxedWait = 24,
  OpPipeline = 25,
  OpSemRelease = 26,
  OpSemAcquire = 27,
  OpMultiStore = 28,
  OpMultiStorePackets = 29,
  OpMultiLoadReduce = 30,
};

enum ChannelKind : u8 { ChannelNone = 0, ChannelMemory = 1, ChannelPort = 2, ChannelSwitch = 3 };
enum Reduction : u8 { RedSum = 0, RedMin = 1, RedMax = 2 };

/// One operation (40 bytes). Its sources are refs[refBegin, refBegin+nSrc), its destinations follow.
struct Op {
  u8 type;         ///< an OpType
  u8 channelType;  ///< a ChannelKind
  u8 nSrc;
  u8 nDst;
  u8 nIds;      ///< entries used in ids
  u8 reduceOp;  ///< a Reduction
  u8 nInner;    ///< pipeline: number of inner operations that follow
  u8 reserved;
  u16 refBegin;   ///< index of the first source in the thread block's refs
  u16 barrierId;  ///< barrier: syncer index
  u32 nBlocks;     ///< barrier: participating thread blocks
  u32 iterations;  ///< pipeline: iteration count
  u32 unitSize;    ///< pipeline: bytes per iteration
  u8 ids[16];      ///< tb-local channel ids, or rank-level device-semaphore ids
};

/// Emulated or real switch channel: the unicast addresses of every member's bound buffer (this rank's too), and
/// the multicast address when NVLink multicast is really set up (0 otherwise). 80 bytes.
struct SwitchInfo {
  u64 mcPtr;
  u32 nMembers;
  u32 reserved;
  u64 members[8];
};

/// The head of one thread block's records (32 bytes). A block's records are one contiguous piece of the plan,
/// `blockStride` bytes apart: this head, its operations from byte 32, its references from byte `refOffset`.
struct TbInfo {
  u16 nOps;
  u16 nRefs;
  u32 refOffset;         ///< byte offset of the references in the block's records (16-byte aligned)
  u32 memChannelBegin;   ///< tb-local memory channel c is memChannels[memChannelBegin + c]
  u32 portChannelBegin;  ///< same for port channels
  u32 portBufferBegin;   ///< tb-local port remote buffer b is portBuffers[portBufferBegin + b] (MemoryIds)
  u32 switchBegin;       ///< tb-local switch channel s is switches[switchBegin + s]
  u32 variant;           ///< which of a plan-specialised program's operation sequences the block runs
  u32 reserved;
};

/// Byte offset of the operations in a block's records.
constexpr u32 kOpsOffset = 32;

/// The device plan of one rank: a header followed by its arrays, in one allocation.
struct PlanHeader {
  u32 nTbs;
  u32 localMemoryIdBegin;  ///< MemoryId of this rank's input; output and scratch follow
  u32 blockStride;         ///< bytes of one block's records (head, ops, refs), a multiple of 16; also the dynamic
                           ///< shared memory of a block
  u32 reserved;
  const char* blocks;      ///< the blocks' records, block b at blocks + b * blockStride
  BaseMemoryChannelDeviceHandle* memChannels;
  BasePortChannelDeviceHandle* portChannels;
  const u32* portBuffers;
  const SwitchInfo* switches;
};

/// Kernel parameters (by value).
struct LaunchArgs {
  const PlanHeader* plan;
  char* input;
  char* output;
  char* scratch;
  u64 scratchHalf;     ///< bytes of one half of a double-buffered scratch, else 0
  u32* flags;          ///< per-block packet flag counters (device memory, persist across launches)
  const char* blocks;  ///< plan->blocks and plan->blockStride, passed directly: a block's records are one load away
  u32 blockStride;
  u32 reserved;
  DeviceSyncer* syncers;
  DeviceSemaphore* semaphores;
  BaseMemoryChannelDeviceHandle* memChannels;  ///< plan->memChannels, passed directly: a signal's handle is one load
                                               ///< away, not two
};

// ---------------------------------------------------------------------------------------------------------------
// Element-wise reduction of packed lanes carried in 32-bit words.

struct F16 {};
struct BF16 {};
struct F32 {};
struct I32 {};
struct U32 {};
struct U8 {};

template <class T>
struct ElemBytes;
template <>
struct ElemBytes<F16> {
  static constexpr u32 value = 2;
};
template <>
struct ElemBytes<BF16> {
  static constexpr u32 value = 2;
};
template <>
struct ElemBytes<F32> {
  static constexpr u32 value = 4;
};
template <>
struct ElemBytes<I32> {
  static constexpr u32 value = 4;
};
template <>
struct ElemBytes<U32> {
  static constexpr u32 value = 4;
};
template <>
struct ElemBytes<U8> {
  static constexpr u32 value = 1;
};

template <class T>
MSCCLPP_DEVICE_INLINE u32 opWord(u32 a, u32 b, u8 op);

// F16 and BF16 lanes use the PTX wrappers of mscclpp/reduce_device.hpp.
template <>
MSCCLPP_DEVICE_INLINE u32 opWord<F16>(u32 a, u32 b, u8 op) {
  return op == RedSum ? addF16x2(a, b) : (op == RedMin ? minF16x2(a, b) : maxF16x2(a, b));
}
template <>
MSCCLPP_DEVICE_INLINE u32 opWord<BF16>(u32 a, u32 b, u8 op) {
  return op == RedSum ? addBF16x2(a, b) : (op == RedMin ? minBF16x2(a, b) : maxBF16x2(a, b));
}
template <>
MSCCLPP_DEVICE_INLINE u32 opWord<F32>(u32 a, u32 b, u8 op) {
  float x = __uint_as_float(a), y = __uint_as_float(b);
  float r = op == RedSum ? x + y : (op == RedMin ? fminf(x, y) : fmaxf(x, y));
  return __float_as_uint(r);
}
template <>
MSCCLPP_DEVICE_INLINE u32 opWord<I32>(u32 a, u32 b, u8 op) {
  i32 x = (i32)a, y = (i32)b;
  return (u32)(op == RedSum ? (i32)((u32)x + (u32)y) : (op == RedMin ? (x < y ? x : y) : (x > y ? x : y)));
}
template <>
MSCCLPP_DEVICE_INLINE u32 opWord<U32>(u32 a, u32 b, u8 op) {
  return op == RedSum ? a + b : (op == RedMin ? (a < b ? a : b) : (a > b ? a : b));
}
template <>
MSCCLPP_DEVICE_INLINE u32 opWord<U8>(u32 a, u32 b, u8 op) {
  if (op == RedSum) {
    // Four independent byte additions modulo 256.
    return ((a & 0x7f7f7f7fu) + (b & 0x7f7f7f7fu)) ^ ((a ^ b) & 0x80808080u);
  }
  u32 r = 0;
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    u32 x = (a >> (8 * i)) & 0xffu, y = (b >> (8 * i)) & 0xffu;
    u32 v = op == RedMin ? (x < y ? x : y) : (x > y ? x : y);
    r |= v << (8 * i);
  }
  return r;
}

MSCCLPP_DEVICE_INLINE Bytes16 ld16(const char* p) {
  Bytes16 v;
  asm volatile("ld.global.v4.u32 {%0,%1,%2,%3}, [%4];" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p));
  return v;
}
MSCCLPP_DEVICE_INLINE void st16(char* p, const Bytes16& v) {
  asm volatile("st.global.v4.u32 [%0], {%1,%2,%3,%4};" ::"l"(p), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w)
               : "memory");
}

template <class T>
MSCCLPP_DEVICE_INLINE Bytes16 op16(const Bytes16& a, const Bytes16& b, u8 op) {
  Bytes16 r;
  r.x = opWord<T>(a.x, b.x, op);
  r.y = opWord<T>(a.y, b.y, op);
  r.z = opWord<T>(a.z, b.z, op);
  r.w = opWord<T>(a.w, b.w, op);
  return r;
}

/// Load element `i` (ElemBytes<T> bytes) zero-extended into a word.
template <class T>
MSCCLPP_DEVICE_INLINE u32 ldElem(const char* p, u64 i) {
  if (ElemBytes<T>::value == 4) return ((const u32*)p)[i];
  if (ElemBytes<T>::value == 2) return ((const u16*)p)[i];
  return ((const u8*)p)[i];
}
template <class T>
MSCCLPP_DEVICE_INLINE void stElem(char* p, u64 i, u32 v) {
  if (ElemBytes<T>::value == 4) {
    ((u32*)p)[i] = v;
  } else if (ElemBytes<T>::value == 2) {
    ((u16*)p)[i] = (u16)v;
  } else {
    ((u8*)p)[i] = (u8)v;
  }
}

constexpr int kMaxPtrs = 16;

/// dsts[d][0, bytes) = srcs[0] (op) srcs[1] (op) ... for every d, cooperatively. With one source this is a
/// copy to every destination. 16-byte vectors (4 in flight per thread) wherever every pointer is 16-byte aligned:
/// when all pointers share one misalignment (a thread-block-group slice or a pipeline unit that starts inside a
/// 16-byte word, e.g. one third of a chunk), the few bytes up to the next 16-byte boundary go element-wise first
/// and the rest in vectors; only pointers with different misalignments go element-wise throughout. `bytes` must be
/// a multiple of the element size (the host checks).
template <class T>
MSCCLPP_DEVICE_INLINE void reduceData(char* const* dsts, int nDst, const char* const* srcs, int nSrc, u64 bytes,
                                      u8 op, u32 tid, u32 nThreads) {
  constexpr u32 E = ElemBytes<T>::value;
  const u64 first = nSrc > 0 ? (u64)srcs[0] : (u64)dsts[0];
  u64 differ = 0;
  for (int k = 0; k < nSrc; ++k) differ |= ((u64)srcs[k] ^ first);
  for (int d = 0; d < nDst; ++d) differ |= ((u64)dsts[d] ^ first);
  // Bytes before the vector body (element-wise) and the end of the body.
  u64 head = bytes;
  u64 bodyEnd = bytes;
  if ((differ & 15ull) == 0) {
    const u64 h = (16ull - (first & 15ull)) & 15ull;
    if (h % E == 0) {
      head = h < bytes ? h : bytes;
      const u64 n16 = (bytes - head) >> 4;
      bodyEnd = head + (n16 << 4);
      constexpr int U = 4;
      u64 i = tid;
      for (; i + (U - 1) * (u64)nThreads < n16; i += U * (u64)nThreads) {
        Bytes16 acc[U];
#pragma unroll
        for (int u = 0; u < U; ++u) acc[u] = ld16(srcs[0] + head + ((i + u * (u64)nThreads) << 4));
        for (int k = 1; k < nSrc; ++k) {
          Bytes16 v[U];
#pragma unroll
          for (int u = 0; u < U; ++u) v[u] = ld16(srcs[k] + head + ((i + u * (u64)nThreads) << 4));
#pragma unroll
          for (int u = 0; u < U; ++u) acc[u] = op16<T>(acc[u], v[u], op);
        }
        for (int d = 0; d < nDst; ++d) {
#pragma unroll
          for (int u = 0; u < U; ++u) st16(dsts[d] + head + ((i + u * (u64)nThreads) << 4), acc[u]);
        }
      }
      for (; i < n16; i += nThreads) {
        Bytes16 acc = ld16(srcs[0] + head + (i << 4));
        for (int k = 1; k < nSrc; ++k) acc = op16<T>(acc, ld16(srcs[k] + head + (i << 4)), op);
        for (int d = 0; d < nDst; ++d) st16(dsts[d] + head + (i << 4), acc);
      }
    }
  }
  // Element-wise: the head [0, head) and the tail [bodyEnd, bytes) (everything when there was no vector body).
  const u64 headElems = head / E;
  const u64 tailFirst = bodyEnd / E;
  const u64 nElems = bytes / E;
  const u64 rest = headElems + (nElems - tailFirst);
  for (u64 j = tid; j < rest; j += nThreads) {
    const u64 e = j < headElems ? j : tailFirst + (j - headElems);
    u32 acc = ldElem<T>(srcs[0], e);
    for (int k = 1; k < nSrc; ++k) acc = opWord<T>(acc, ldElem<T>(srcs[k], e), op);
    for (int d = 0; d < nDst; ++d) stElem<T>(dsts[d], e, acc);
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Packets.

template <class P>
struct PacketTraits;

template <>
struct PacketTraits<LL16Packet> {
  typedef u64 Payload;
  static constexpr u32 kPayload = 8;
  MSCCLPP_DEVICE_INLINE static Payload read(const char* pk, u64 i, u32 flag) {
    return ((const LL16Packet*)pk)[i].read(flag);
  }
  MSCCLPP_DEVICE_INLINE static void write(char* pk, u64 i, Payload v, u32 flag) {
    ((LL16Packet*)pk)[i].write(v, flag);
  }
  template <class T>
  MSCCLPP_DEVICE_INLINE static Payload reduce(Payload a, Payload b, u8 op) {
    u32 lo = opWord<T>((u32)a, (u32)b, op);
    u32 hi = opWord<T>((u32)(a >> 32), (u32)(b >> 32), op);
    return (u64)lo | ((u64)hi << 32);
  }
};

template <>
struct PacketTraits<LL8Packet> {
  typedef u32 Payload;
  static constexpr u32 kPayload = 4;
  MSCCLPP_DEVICE_INLINE static Payload read(const char* pk, u64 i, u32 flag) {
    return ((const LL8Packet*)pk)[i].read(flag);
  }
  MSCCLPP_DEVICE_INLINE static void write(char* pk, u64 i, Payload v, u32 flag) {
    ((LL8Packet*)pk)[i].write(v, flag);
  }
  template <class T>
  MSCCLPP_DEVICE_INLINE static Payload reduce(Payload a, Payload b, u8 op) {
    return opWord<T>(a, b, op);
  }
};

/// Load payload `i` of plain data; the last payload may be partial (`bytes` is the total data size).
template <class V>
MSCCLPP_DEVICE_INLINE V loadPayload(const char* p, u64 i, u64 bytes, bool aligned) {
  const u64 at = i * sizeof(V);
  if (aligned && at + sizeof(V) <= bytes) return *(const V*)(p + at);
  V v = 0;
  for (u32 b = 0; b < sizeof(V) && at + b < bytes; ++b) v |= (V)((const u8*)p)[at + b] << (8 * b);
  return v;
}

template <class V>
MSCCLPP_DEVICE_INLINE void storePayload(char* p, u64 i, u64 bytes, bool aligned, V v) {
  const u64 at = i * sizeof(V);
  if (aligned && at + sizeof(V) <= bytes) {
    *(V*)(p + at) = v;
    return;
  }
  for (u32 b = 0; b < sizeof(V) && at + b < bytes; ++b) ((u8*)p)[at + b] = (u8)(v >> (8 * b));
}

/// The general packet operation: for every payload i of `bytes` data bytes,
///   acc = dataSrc[i] (op) pkSrcs[0][i] (op) ... (packets read with `flag`, spinning until they arrive),
///   dataDst[i] = acc, pkDsts[d][i] = packet(acc, flag).
/// Any of dataSrc / dataDst may be null; every packet operation of the schema is one instance.
template <class T, class P>
struct PacketOp {
  MSCCLPP_DEVICE_INLINE static void run(char* dataDst, char* const* pkDsts, int nPkDst, const char* dataSrc,
                                        const char* const* pkSrcs, int nPkSrc, u64 bytes, u8 op, u32 flag, u32 tid,
                                        u32 nThreads) {
    typedef PacketTraits<P> Tr;
    typedef typename Tr::Payload V;
    const u64 n = (bytes + Tr::kPayload - 1) / Tr::kPayload;
    const bool srcAligned = ((u64)dataSrc & (sizeof(V) - 1)) == 0;
    const bool dstAligned = ((u64)dataDst & (sizeof(V) - 1)) == 0;
    for (u64 i = tid; i < n; i += nThreads) {
      V acc;
      int k = 0;
      if (dataSrc != nullptr) {
        acc = loadPayload<V>(dataSrc, i, bytes, srcAligned);
      } else {
        acc = Tr::read(pkSrcs[0], i, flag);
        k = 1;
      }
      for (; k < nPkSrc; ++k) acc = Tr::template reduce<T>(acc, Tr::read(pkSrcs[k], i, flag), op);
      if (dataDst != nullptr) storePayload<V>(dataDst, i, bytes, dstAligned, acc);
      for (int d = 0; d < nPkDst; ++d) Tr::write(pkDsts[d], i, acc, flag);
    }
  }
};

/// `len` (at most 16) data bytes at `p`, the rest of the vector zero: vector loads where `p` is 8-byte aligned (the
/// fast path: every slot but a message's last), bytes otherwise.
MSCCLPP_DEVICE_INLINE Bytes16 loadPart(const char* p, u32 len) {
  if (((u64)p & 7) == 0 && (len == 16 || len == 8)) {
    if (len == 16 && ((u64)p & 15) == 0) return ld16(p);
    const uint2 a = *(const uint2*)p;
    const uint2 b = len == 16 ? *(const uint2*)(p + 8) : make_uint2(0u, 0u);
    return Bytes16{a.x, a.y, b.x, b.y};
  }
  u32 w[4] = {0u, 0u, 0u, 0u};
#pragma unroll
  for (u32 i = 0; i < 16; ++i) {
    if (i < len) w[i / 4] |= (u32)((const u8*)p)[i] << (8 * (i % 4));
  }
  return Bytes16{w[0], w[1], w[2], w[3]};
}

MSCCLPP_DEVICE_INLINE void storePart(char* p, u32 len, const Bytes16& v) {
  if (((u64)p & 7) == 0 && (len == 16 || len == 8)) {
    if (len == 16 && ((u64)p & 15) == 0) {
      st16(p, v);
      return;
    }
    *(uint2*)p = make_uint2(v.x, v.y);
    if (len == 16) *(uint2*)(p + 8) = make_uint2(v.z, v.w);
    return;
  }
  const u32 w[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
  for (u32 i = 0; i < 16; ++i) {
    if (i < len) ((u8*)p)[i] = (u8)(w[i / 4] >> (8 * (i % 4)));
  }
}

/// This lane's slots of two groups of four lines at `p0` and `p1` (each lane's own slot addresses; without `has1`,
/// the same for every lane of the warp, only the first) once every line of each carries `flag`: both loads are in
/// flight before either is waited for. Every lane of the warp calls it together.
MSCCLPP_DEVICE_INLINE void readGroups(const char* p0, const char* p1, bool has1, bool flagSlot, u32 flag, u32 mask,
                                      Bytes16& v0, Bytes16& v1) {
  SpinBound bound;
  bool need0 = true, need1 = has1;
  while (true) {
    if (need0) v0 = ldVolatile16(p0);
    if (need1) v1 = ldVolatile16(p1);
    const bool bad0 = need0 && flagSlot && (v0.z != flag || v0.w != 0u);
    const bool bad1 = need1 && flagSlot && (v1.z != flag || v1.w != 0u);
    need0 = __any_sync(mask, bad0);
    need1 = __any_sync(mask, bad1);
    if (!need0 && !need1) return;
    if (u64 el = bound.expired()) {
      if (bad0) waitFailed(WaitPacket, 0xffffffffu, 0xffffffffu, flag, ((u64)v0.w << 32) | v0.z, el);
      if (bad1) waitFailed(WaitPacket, 0xffffffffu, 0xffffffffu, flag, ((u64)v1.w << 32) | v1.z, el);
    }
  }
}

/// This lane's slot of a group: the data, and on a flag slot the flag in the upper 8 bytes.
MSCCLPP_DEVICE_INLINE void writeGroup(char* p, bool flagSlot, Bytes16 v, u32 flag) {
  if (flagSlot) {
    v.z = flag;
    v.w = 0u;
  }
  stVolatile16(p, v);
}

/// The packet operation on LL128 lines, two groups of four lines per warp and step (both groups' loads in flight
/// together): lane l holds slot l % 8 of line l / 8 (packet bytes [16 l, 16 l + 16) of the group); the slots 0-6 of
/// line j carry the group's data bytes [16 k, 16 k + 16), k = 7 j + slot (448 bytes, 16-byte aligned where the group
/// is), slot 7 carries data bytes [448 + 8 j, 456 + 8 j) and the flag. Every line is thus written, and read, by one
/// instruction of eight lanes. Warp w of W moves the groups w, w + W, w + 2 W, ... Needs whole warps (the host
/// checks that the threads per block are a multiple of 32).
template <class T>
struct PacketOp<T, LL128Packet> {
  MSCCLPP_DEVICE_INLINE static void run(char* dataDst, char* const* pkDsts, int nPkDst, const char* dataSrc,
                                        const char* const* pkSrcs, int nPkSrc, u64 bytes, u8 op, u32 flag, u32 tid,
                                        u32 nThreads) {
    using L = LL128Packet;
    const u32 mask = __activemask();
    const u32 lane = tid % L::kLanesPerGroup;
    const bool flagSlot = L::isFlagLane(lane);
    const u32 off = L::laneDataOffset(lane);
    const u64 want = L::laneDataBytes(lane);
    const u64 groups = (bytes + L::kGroupPayloadBytes - 1) / L::kGroupPayloadBytes;
    const u64 warps = nThreads / L::kLanesPerGroup;
    auto lenAt = [&](u64 at) -> u32 { return at >= bytes ? 0u : (u32)(bytes - at < want ? bytes - at : want); };
    for (u64 g0 = tid / L::kLanesPerGroup; g0 < groups; g0 += 2 * warps) {
      const u64 g1 = g0 + warps;
      const bool has1 = g1 < groups;
      const u64 at0 = g0 * L::kGroupPayloadBytes + off, at1 = g1 * L::kGroupPayloadBytes + off;
      const u32 len0 = lenAt(at0), len1 = has1 ? lenAt(at1) : 0u;
      const u64 pk0 = g0 * L::kGroupBytes + L::kSlotBytes * lane, pk1 = g1 * L::kGroupBytes + L::kSlotBytes * lane;
      Bytes16 a0{0, 0, 0, 0}, a1{0, 0, 0, 0};
      int k = 0;
      if (dataSrc != nullptr) {
        a0 = loadPart(dataSrc + at0, len0);
        if (has1) a1 = loadPart(dataSrc + at1, len1);
      } else {
        readGroups(pkSrcs[0] + pk0, pkSrcs[0] + pk1, has1, flagSlot, flag, mask, a0, a1);
        k = 1;
      }
      for (; k < nPkSrc; ++k) {
        Bytes16 b0{0, 0, 0, 0}, b1{0, 0, 0, 0};
        readGroups(pkSrcs[k] + pk0, pkSrcs[k] + pk1, has1, flagSlot, flag, mask, b0, b1);
        a0 = op16<T>(a0, b0, op);
        if (has1) a1 = op16<T>(a1, b1, op);
      }
      if (dataDst != nullptr) {
        storePart(dataDst + at0, len0, a0);
        if (has1) storePart(dataDst + at1, len1, a1);
      }
      for (int d = 0; d < nPkDst; ++d) {
        writeGroup(pkDsts[d] + pk0, flagSlot, a0, flag);
        if (has1) writeGroup(pkDsts[d] + pk1, flagSlot, a1, flag);
      }
    }
  }
};

template <class T, class P>
MSCCLPP_DEVICE_INLINE void packetOp(char* dataDst, char* const* pkDsts, int nPkDst, const char* dataSrc,
                                    const char* const* pkSrcs, int nPkSrc, u64 bytes, u8 op, u32 flag, u32 tid,
                                    u32 nThreads) {
  PacketOp<T, P>::run(dataDst, pkDsts, nPkDst, dataSrc, pkSrcs, nPkSrc, bytes, op, flag, tid, nThreads);
}

// ---------------------------------------------------------------------------------------------------------------
// Real NVLink multicast (only when the host set up a multicast object; never on hosts where it is disabled).

template <class T>
MSCCLPP_DEVICE_INLINE bool multimemReduceSupported() {
  return false;
}
template <>
MSCCLPP_DEVICE_INLINE bool multimemReduceSupported<F32>() {
  return true;
}
template <>
MSCCLPP_DEVICE_INLINE bool multimemReduceSupported<F16>() {
  return true;
}
template <>
MSCCLPP_DEVICE_INLINE bool multimemReduceSupported<BF16>() {
  return true;
}

template <class T>
MSCCLPP_DEVICE_INLINE Bytes16 multimemLoadReduce(const char* mc);

// One specialization per element type; only the PTX vector type differs.
#if __CUDA_ARCH__ >= 900
#define MSCCLPP_MULTIMEM_LD_REDUCE(T, PTX_TYPE)                                                       \
  template <>                                                                                        \
  MSCCLPP_DEVICE_INLINE Bytes16 multimemLoadReduce<T>(const char* mc) {                              \
    Bytes16 v;                                                                                       \
    asm volatile("multimem.ld_reduce.relaxed.sys.global.add.v4." PTX_TYPE " {%0,%1,%2,%3}, [%4];"   \
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)                                        \
                 : "l"(mc)                                                                           \
                 : "memory");                                                                        \
    return v;                                                                                        \
  }
#else
#define MSCCLPP_MULTIMEM_LD_REDUCE(T, PTX_TYPE)                          \
  template <>                                                           \
  MSCCLPP_DEVICE_INLINE Bytes16 multimemLoadReduce<T>(const char*) {    \
    asm volatile("trap;");                                              \
    return Bytes16{0, 0, 0, 0};                                         \
  }
#endif
MSCCLPP_MULTIMEM_LD_REDUCE(F32, "f32")
MSCCLPP_MULTIMEM_LD_REDUCE(F16, "f16x2")
MSCCLPP_MULTIMEM_LD_REDUCE(BF16, "bf16x2")
#undef MSCCLPP_MULTIMEM_LD_REDUCE
template <class T>
MSCCLPP_DEVICE_INLINE Bytes16 multimemLoadReduce(const char*) {
  asm volatile("trap;");
  return Bytes16{0, 0, 0, 0};
}

MSCCLPP_DEVICE_INLINE void multimemStore16(char* mc, const Bytes16& v) {
#if __CUDA_ARCH__ >= 900
  asm volatile("multimem.st.relaxed.sys.global.v4.f32 [%0], {%1,%2,%3,%4};" ::"l"(mc), "r"(v.x), "r"(v.y), "r"(v.z),
               "r"(v.w)
               : "memory");
#else
  asm volatile("trap;");
#endif
}

// ---------------------------------------------------------------------------------------------------------------
// The interpreter.

/// No fixed reference locations (LOCS of Fixed).
constexpr unsigned long long kLocsDynamic = ~0ull;

/// What a plan-specialised entry point fixes about one operation at compile time: its type, channel type,
/// numbers of source and destination references (-1: read from the record, as the generic interpreter does) and
/// where each reference points (LOCS, kLocsDynamic: read from the record). With everything fixed, the dispatch
/// below folds away, the handler's loops over references unroll and an address is the record's offset plus a
/// base chosen at compile time.
template <int TYPE, int CHANNEL, int NSRC, int NDST, unsigned long long LOCS = kLocsDynamic>
struct Fixed {
  MSCCLPP_DEVICE_INLINE static u8 type(const Op& op) { return TYPE >= 0 ? (u8)TYPE : op.type; }
  MSCCLPP_DEVICE_INLINE static u8 channel(const Op& op) { return CHANNEL >= 0 ? (u8)CHANNEL : op.channelType; }
  MSCCLPP_DEVICE_INLINE static int nSrc(const Op& op) { return NSRC >= 0 ? NSRC : (int)op.nSrc; }
  MSCCLPP_DEVICE_INLINE static int nDst(const Op& op) { return NDST >= 0 ? NDST : (int)op.nDst; }
  /// Whether the reference counts are fixed, which says the operation has no switch reference (a switch
  /// reference leaves them to the record, mscclpp-sys's fixed.rs): one pointer per reference.
  static constexpr bool kRefsFixed = NSRC >= 0 && NDST >= 0;
  /// Whether every reference's location and scratch flag are fixed: reference k (sources first, then
  /// destinations) in bits [4k, 4k + 4) of LOCS, its Loc in the low three and RefScratch in the fourth. The
  /// caller's buffers share one class, LocInput (which of the two stays in the record), so that a plan in place
  /// and out of place share their program.
  static constexpr bool kLocsFixed = kRefsFixed && LOCS != kLocsDynamic;
  static constexpr unsigned long long kLocs = LOCS;
};
/// Nothing fixed: the generic interpreter.
typedef Fixed<-1, -1, -1, -1> Generic;

// The launch's state lives where it costs no registers: the kernel parameters (`a`, constant memory) and the
// block's head in shared memory (`tb`). Registers hold only the packet flag, the scratch half and the thread
// index, so the operation handlers keep theirs and the dispatch loop does not spill its state.
struct Exec {
  const LaunchArgs& a;  // the kernel's __grid_constant__ parameters
  const TbInfo& tb;     // this block's head (shared memory)
  const Ref* refs;      // this block's refs (shared memory)
  u64 scratchOff;       // the scratch half of this launch
  u32 flag;
  u32 tid;
  u32 nThreads;

  /// Base address of a local, memory-channel or switch-member reference, before the reference's offset.
  MSCCLPP_DEVICE_INLINE char* localBase(u8 loc) const {
    // The three bases read first, then selected.
    char* const in = a.input;
    char* const out = a.output;
    char* const scratch = a.scratch;
    return loc == LocInput ? in : (loc == LocOutput ? out : scratch);
  }

  /// Address of reference `r` (not for port or switch refs), with the pipeline offset `extra`. A memory-channel
  /// reference carries its final address, so no reference costs a memory load. Summed as integers: a memory
  /// reference's base is 0, and offsetting a null pointer is undefined (with the location known at compile time
  /// the optimiser dropped the element-wise part of a copy to a peer).
  MSCCLPP_DEVICE_INLINE char* addr(const Ref& r, u64 extra) const {
    const u64 base = r.loc == LocMemory ? 0ull : (u64)localBase(r.loc);
    return (char*)(base + r.offset + extra + ((r.flags & RefScratch) ? scratchOff : 0));
  }

  /// Address of reference `k` of an operation (sources first, then destinations) with the pipeline offset
  /// `extra`: with the locations fixed (`F::kLocsFixed`) the base and the scratch half are compile-time choices
  /// (for the caller's buffers, which of the two), so only the offset (and a caller's buffer's side) is read from
  /// the record.
  template <class F>
  MSCCLPP_DEVICE_INLINE char* refAddr(const Ref& r, int k, u64 extra) const {
    if constexpr (F::kLocsFixed) {
      const u32 nib = k < 16 ? (u32)((F::kLocs >> (4 * k)) & 15ull) : 0u;
      const u32 loc = nib & 7u;
      const u64 user = (u64)(r.loc == LocInput ? a.input : a.output);
      const u64 base = loc == LocMemory ? 0ull : (loc == LocInput ? user : (u64)a.scratch);
      return (char*)(base + r.offset + extra + ((nib & 8u) ? scratchOff : 0));
    } else {
      return addr(r, extra);
    }
  }

  /// Expand references into pointers: a switch reference yields one pointer per member. Returns the count. With
  /// the counts fixed (`F::kRefsFixed`: no switch reference), `n` is a compile-time count and the loops over the
  /// pointers unroll, so they stay in registers instead of the stack.
  template <class F>
  MSCCLPP_DEVICE_INLINE int expand(const Ref* rs, int n, u64 extra, char** out, int k0) const {
    if constexpr (F::kRefsFixed) {
#pragma unroll
      for (int i = 0; i < kMaxPtrs; ++i) {
        if (i < n) out[i] = refAddr<F>(rs[i], k0 + i, extra);
      }
      return n < 0 ? 0 : (n < kMaxPtrs ? n : kMaxPtrs);
    }
    int m = 0;
    for (int i = 0; i < n; ++i) {
      const Ref& r = rs[i];
      if (r.loc == LocSwitch) {
        const SwitchInfo& sw = a.plan->switches[tb.switchBegin + r.id];
        const u64 off = r.offset + extra + ((r.flags & RefScratch) ? scratchOff : 0);
        for (u32 k = 0; k < sw.nMembers && m < kMaxPtrs; ++k) out[m++] = (char*)sw.members[k] + off;
      } else if (m < kMaxPtrs) {
        out[m++] = addr(r, extra);
      }
    }
    return m;
  }

  /// Size of reference `r` in a pipeline iteration at byte `extra` with `unit` bytes per iteration.
  MSCCLPP_DEVICE_INLINE static u64 clampSize(u64 size, u64 extra, u64 unit) {
    if (unit == 0) return size;
    if (extra >= size) return 0;
    u64 left = size - extra;
    return left < unit ? left : unit;
  }

  MSCCLPP_DEVICE_INLINE BaseMemoryChannelDeviceHandle& memChannel(u8 c) const {
    return a.memChannels[tb.memChannelBegin + c];
  }
  MSCCLPP_DEVICE_INLINE BasePortChannelDeviceHandle& portChannel(u8 c) const {
    return a.plan->portChannels[tb.portChannelBegin + c];
  }

  /// Thread i signals or waits on the operation's channel i. The type and channel type come from `F` (fixed in
  /// a plan-specialised program: one path, no branch on the record).
  template <class F>
  MSCCLPP_DEVICE_INLINE void signalOrWait(const Op& op) const {
    if (tid >= op.nIds) return;
    const u8 c = op.ids[tid];
    const u8 type = F::type(op);
    const u8 channelType = F::channel(op);
    if (channelType == ChannelMemory) {
      BaseMemoryChannelDeviceHandle& ch = memChannel(c);
      switch (type) {
        case OpSignal:
          ch.signal();
          break;
        case OpRelaxedSignal:
          ch.relaxedSignal();
          break;
        case OpWait:
          ch.wait();
          break;
        default:
          ch.relaxedWait();
          break;
      }
    } else if (channelType == ChannelPort) {
      BasePortChannelDeviceHandle& ch = portChannel(c);
      if (type == OpSignal || type == OpRelaxedSignal) {
        ch.signal();
      } else {
        ch.wait();
      }
    }
  }

  /// Port-channel transfers: thread d pushes the trigger of destination d.
  template <class P>
  MSCCLPP_DEVICE_INLINE void portPut(const Op& op, u64 extra, u64 unit, u64 type, bool packets) const {
    const Ref* src = refs + op.refBegin;
    const Ref* dst = src + op.nSrc;
    for (u32 d = tid; d < op.nDst; d += nThreads) {
      const Ref& s = src[d < op.nSrc ? d : op.nSrc - 1];
      const Ref& t = dst[d];
      const u8 c = op.ids[d < op.nIds ? d : op.nIds - 1];
      BasePortChannelDeviceHandle& ch = portChannel(c);
      const u64 e = packets ? 0 : extra;
      u64 bytes = packets ? P::packetBytes(t.size) : clampSize(t.size, extra, unit);
      const u32 dstId = a.plan->portBuffers[tb.portBufferBegin + t.id];
      const u32 srcId = a.plan->localMemoryIdBegin + s.loc;
      const u64 dstOff = t.offset + e + ((t.flags & RefScratch) ? scratchOff : 0);
      const u64 srcOff = s.offset + e + ((s.flags & RefScratch) ? scratchOff : 0);
      if (bytes == 0 && type == TriggerData) continue;
      u64 left = type;
      // Small puts to a peer on this host: this thread moves the data and signals directly.
      if (ch.directPut(dstId, dstOff, srcId, srcOff, bytes)) {
        if ((type & TriggerFlag) == 0 || ch.direct_->signal()) continue;
        left = type & ~(u64)TriggerData;
      }
      if (left & TriggerSync) {
        u64 pos = ch.push(left, dstId, dstOff, srcId, srcOff, bytes);
        ch.fifo_.sync(pos, ch.semaphore_.channelId, ch.semaphore_.peer);
      } else {
        ch.push(left, dstId, dstOff, srcId, srcOff, bytes);
      }
    }
  }

  template <class T, class P, class F>
  MSCCLPP_DEVICE_INLINE void run(const Op& op, u64 extra, u64 unit) const {
    const int nSrc = F::nSrc(op);
    const int nDst = F::nDst(op);
    const u8 channelType = F::channel(op);
    const Ref* src = refs + op.refBegin;
    const Ref* dst = src + nSrc;
    char* sp[kMaxPtrs];
    char* dp[kMaxPtrs];
    switch (F::type(op)) {
      case OpNop:
        __syncthreads();
        break;
      case OpBarrier:
        a.syncers[op.barrierId].sync(op.nBlocks);
        break;
      case OpSignal:
      case OpRelaxedSignal:
      case OpWait:
      case OpRelaxedWait:
        signalOrWait<F>(op);
        break;
      case OpFlush:
        if (tid < op.nIds) portChannel(op.ids[tid]).flush();
        break;
      case OpSemAcquire:
        if (tid < op.nIds) a.semaphores[op.ids[tid]].acquire();
        break;
      case OpSemRelease:
        if (tid < op.nIds) a.semaphores[op.ids[tid]].release();
        break;
      case OpPut:
      case OpPutWithSignal:
      case OpPutWithSignalAndFlush:
      case OpGet:
      case OpCopy:
        if (channelType == ChannelPort) {
          const u64 type = F::type(op) == OpPut ? TriggerData
                                            : (F::type(op) == OpPutWithSignal ? (TriggerData | TriggerFlag)
                                                                          : (TriggerData | TriggerFlag | TriggerSync));
          portPut<P>(op, extra, unit, type, false);
        } else {
          // Pairwise copies: source i to destination i.
          const int n = nDst < nSrc ? nDst : nSrc;
          for (int i = 0; i < n; ++i) {
            sp[0] = refAddr<F>(src[i], i, extra);
            dp[0] = refAddr<F>(dst[i], nSrc + i, extra);
            reduceData<U8>(dp, 1, sp, 1, clampSize(dst[i].size, extra, unit), RedSum, tid, nThreads);
          }
        }
        break;
      case OpReduce:
      case OpReduceSend:
      case OpReadReduce:
      case OpReadReduceSend:
      case OpMultiLoadReduceStore:
      case OpMultiLoadReduce:
      case OpMultiStore: {
        const u64 bytes = clampSize(dst[0].size, extra, unit);
        if (bytes == 0) break;
        // Real multicast: one switch source or destination with a multicast address (never with fixed counts).
        const bool swSrc = !F::kRefsFixed && src[0].loc == LocSwitch;
        const bool swDst = !F::kRefsFixed && dst[0].loc == LocSwitch;
        const SwitchInfo* ssw = swSrc ? &a.plan->switches[tb.switchBegin + src[0].id] : nullptr;
        const SwitchInfo* dsw = swDst ? &a.plan->switches[tb.switchBegin + dst[0].id] : nullptr;
        if (((ssw && ssw->mcPtr) || (dsw && dsw->mcPtr)) && (!swSrc || multimemReduceSupported<T>()) &&
            (bytes & 15) == 0 && op.reduceOp == RedSum && nSrc == 1 && nDst == 1) {
          const u64 so = src[0].offset + extra + ((src[0].flags & RefScratch) ? scratchOff : 0);
          const u64 dof = dst[0].offset + extra + ((dst[0].flags & RefScratch) ? scratchOff : 0);
          const char* s = swSrc ? (const char*)ssw->mcPtr + so : refAddr<F>(src[0], 0, extra);
          char* dd = swDst ? (char*)dsw->mcPtr + dof : refAddr<F>(dst[0], nSrc, extra);
          if ((((u64)s | (u64)dd) & 15) == 0) {
            for (u64 i = tid; i < (bytes >> 4); i += nThreads) {
              Bytes16 v = swSrc ? multimemLoadReduce<T>(s + (i << 4)) : ld16(s + (i << 4));
              if (swDst) {
                multimemStore16(dd + (i << 4), v);
              } else {
                st16(dd + (i << 4), v);
              }
            }
            break;
          }
        }
        const int ns = expand<F>(src, nSrc, extra, sp, 0);
        const int nd = expand<F>(dst, nDst, extra, dp, nSrc);
        reduceData<T>(dp, nd, (const char* const*)sp, ns, bytes, op.reduceOp, tid, nThreads);
        break;
      }
      case OpPutPackets:
        if (channelType == ChannelPort) {
          portPut<P>(op, extra, unit, TriggerData, true);
        } else {
          const int n = nDst < nSrc ? nDst : nSrc;
          for (int i = 0; i < n; ++i) {
            dp[0] = refAddr<F>(dst[i], nSrc + i, 0);
            packetOp<T, P>(nullptr, dp, 1, refAddr<F>(src[i], i, 0), nullptr, 0, dst[i].size, RedSum, flag, tid,
                           nThreads);
          }
        }
        break;
      case OpReadPutPackets:
        if (channelType == ChannelPort) {
          // Wait until every local packet has arrived, then let the proxy copy them raw.
          const char* pk = addr(src[0], 0);
          packetOp<T, P>(nullptr, nullptr, 0, nullptr, &pk, 1, src[0].size, RedSum, flag, tid, nThreads);
          __syncthreads();
          portPut<P>(op, 0, 0, TriggerData, true);
        } else {
          sp[0] = refAddr<F>(src[0], 0, 0);
          const int nd = expand<F>(dst, nDst, 0, dp, nSrc);
          packetOp<T, P>(nullptr, dp, nd, nullptr, (const char* const*)sp, 1, src[0].size, RedSum, flag, tid,
                         nThreads);
        }
        break;
      case OpCopyPackets:
        dp[0] = refAddr<F>(dst[0], nSrc, 0);
        packetOp<T, P>(nullptr, dp, 1, refAddr<F>(src[0], 0, 0), nullptr, 0, dst[0].size, RedSum, flag, tid, nThreads);
        break;
      case OpUnpackPackets:
        sp[0] = refAddr<F>(src[0], 0, 0);
        packetOp<T, P>(refAddr<F>(dst[0], nSrc, 0), nullptr, 0, nullptr, (const char* const*)sp, 1, dst[0].size,
                       RedSum, flag, tid, nThreads);
        break;
      case OpReducePackets:
      case OpReduceSendPackets:
      case OpReduceCopyPackets:
      case OpReduceCopySendPackets: {
        const int ns = expand<F>(src + 1, nSrc - 1, 0, sp, 1);
        const int nd = expand<F>(dst + 1, nDst - 1, 0, dp, nSrc + 1);
        packetOp<T, P>(refAddr<F>(dst[0], nSrc, 0), dp, nd, refAddr<F>(src[0], 0, 0), (const char* const*)sp, ns,
                       dst[0].size, op.reduceOp, flag, tid, nThreads);
        break;
      }
      case OpMultiStorePackets: {
        sp[0] = refAddr<F>(src[0], 0, 0);
        const int nd = expand<F>(dst, nDst, 0, dp, nSrc);
        packetOp<T, P>(nullptr, dp, nd, nullptr, (const char* const*)sp, 1, src[0].size, RedSum, flag, tid,
                       nThreads);
        break;
      }
      default:
        break;
    }
  }

  /// Run operation `i` of the block: the timeout report's position first, then the handler.
  template <class T, class P, class F>
  MSCCLPP_DEVICE_INLINE void step(const Op* ops, u32 i, u64 extra, u64 unit) const {
    if (tid == 0) mscclppInterpOp = i + 1u;
    run<T, P, F>(ops[i], extra, unit);
  }
};

/// A plan-specialised program's end when no variant matched the block's records: unreachable (the executor runs a
/// program only on records of its signature), reported like an expired wait, with the block's variant and
/// operation count, and the kernel stopped.
__noinline__ __device__ void fixedProgramMismatch(const TbInfo& tb, u32 nVariants) {
  waitFailed(WaitProgramMismatch, 0xffffffffu, 0xffffffffu, nVariants, ((u64)tb.variant << 32) | tb.nOps, 0ull);
}

/// The generic interpreter's body: one loop walks every operation, a pipeline's inner operations `iterations`
/// times over, so run() has a single call site: it is inlined once, which halves the entry point's code and its
/// compile time. Its state is two registers: the operation index with the enclosing pipeline's index above it,
/// and the iteration; the pipeline's shape is read back from its (shared-memory) record.
struct Loop {
  template <class T, class P>
  MSCCLPP_DEVICE_INLINE static void run(const Exec& x, const Op* ops, const TbInfo& tb) {
    u32 pos = 0;  // bits 0-15: operation index; bits 16-31: 1 + index of the enclosing pipeline, 0 outside one
    u32 it = 0;
    while ((pos & 0xffffu) < tb.nOps) {
      const u32 i = pos & 0xffffu;
      const Op& op = ops[i];
      if (op.type == OpPipeline) {
        // An empty pipeline (no iterations or no inner operations) is skipped.
        const bool empty = op.iterations == 0u || op.nInner == 0u;
        pos = empty ? (i + 1u + op.nInner) : ((i + 1u) | ((i + 1u) << 16));
        it = 0;
        continue;
      }
      const u32 pipe = pos >> 16;
      const u64 unit = pipe == 0u ? 0ull : (u64)ops[pipe - 1u].unitSize;
      x.step<T, P, Generic>(ops, i, (u64)it * unit, unit);
      pos = (i + 1u) | (pipe << 16);
      if (pipe != 0u && i + 1u == pipe + ops[pipe - 1u].nInner) {
        pos = (++it < ops[pipe - 1u].iterations) ? (pipe | (pipe << 16)) : (i + 1u);
      }
    }
  }
};

/// One launch of a plan: stage the block's records, run them with `Body` (the generic [`Loop`], or a plan's
/// straight-line program from mscclpp/interp_fixed.hpp), carry the packet flag to the next launch.
template <class T, class P, class Body>
MSCCLPP_DEVICE_INLINE void interpret(const LaunchArgs& a) {
  extern __shared__ __align__(16) char smem[];
  __shared__ u32 sFlag;

  // Stage this block's records (head, operations, references: a few hundred bytes for most plans) in shared
  // memory: one 16-byte load per thread, issued together with the packet flag's load, so the block waits for
  // global memory once before its first operation.
  u32 flag = 0;
  if (threadIdx.x == 0) flag = a.flags[blockIdx.x];
  {
    const Bytes16* s = (const Bytes16*)(a.blocks + (u64)blockIdx.x * a.blockStride);
    Bytes16* d = (Bytes16*)smem;
    const u32 n = a.blockStride / 16u;
    for (u32 i = threadIdx.x; i < n; i += blockDim.x) d[i] = s[i];
  }
  if (threadIdx.x == 0) {
    sFlag = flag + 1u;
    mscclppInterpOp = 1u;
  }
  __syncthreads();
  const TbInfo& tb = *(const TbInfo*)smem;
  const Op* ops = (const Op*)(smem + kOpsOffset);
  flag = sFlag;
  // Odd flags use the low half of a double-buffered scratch, even flags the high half.
  const Exec x{a, tb, (const Ref*)(smem + tb.refOffset), (flag & 1u) ? 0ull : a.scratchHalf, flag, threadIdx.x,
               blockDim.x};
  Body::template run<T, P>(x, ops, tb);
  // Thread 0 alone carries the flag to the next launch (every thread holds the same value).
  if (threadIdx.x == 0) a.flags[blockIdx.x] = x.flag;
}

}  // namespace interp
}  // namespace mscclpp

// Every entry point, or only the one selected: NVRTC compiles just the entry point a launch needs when no embedded
// kernel fits the GPU (-DMSCCLPP_INTERP_ONLY -DMSCCLPP_INTERP_NAME=... -DMSCCLPP_INTERP_T=F32
// -DMSCCLPP_INTERP_P=LL16Packet -DMSCCLPP_INTERP_THREADS=512; see interpreter.rs). Each element type and packet
// format has two: blocks of up to 1024 threads (64 registers per thread) and, suffixed _t512, of up to 512 (128
// registers, so the dispatch loop and the handlers do not spill).
#define MSCCLPP_INTERP_KERNEL(NAME, T, P, THREADS)                                                              \
  extern "C" __global__ void __launch_bounds__(THREADS, 1)                                                    \
      NAME(const __grid_constant__ mscclpp::interp::LaunchArgs args) {                                        \
    mscclpp::interp::interpret<mscclpp::interp::T, mscclpp::P, mscclpp::interp::Loop>(args);           \
  }

// Plan-specialised entry points: a program (the operation sequences of a plan's thread blocks, written out as
// straight-line code) run by the same prologue and handlers. mscclpp/interp_fixed.hpp holds the default
// programs' (generated, embedded with the rest); -DMSCCLPP_FIXED_ONLY compiles the one in the in-memory header
// mscclpp/interp_fixed_one.hpp instead (see mscclpp-sys's fixed.rs).
#define MSCCLPP_FIXED_KERNEL(NAME, PROGRAM, T, P, THREADS)                                              \
  extern "C" __global__ void __launch_bounds__(THREADS, 1)                                             \
      NAME(const __grid_constant__ mscclpp::interp::LaunchArgs args) {                                 \
    mscclpp::interp::interpret<mscclpp::interp::T, mscclpp::P, mscclpp::interp::PROGRAM>(args);         \
  }

#if defined(MSCCLPP_FIXED_ONLY)
#include "mscclpp/interp_fixed_one.hpp"
#elif defined(MSCCLPP_INTERP_ONLY)
MSCCLPP_INTERP_KERNEL(MSCCLPP_INTERP_NAME, MSCCLPP_INTERP_T, MSCCLPP_INTERP_P, MSCCLPP_INTERP_THREADS)
#else
#define MSCCLPP_INTERP_KERNELS(NAME, T, P) \
  MSCCLPP_INTERP_KERNEL(NAME, T, P, 1024)  \
  MSCCLPP_INTERP_KERNEL(NAME##_t512, T, P, 512)
MSCCLPP_INTERP_KERNELS(mscclpp_interp_f16_ll16, F16, LL16Packet)
MSCCLPP_INTERP_KERNELS(mscclpp_interp_bf16_ll16, BF16, LL16Packet)
MSCCLPP_INTERP_KERNELS(mscclpp_interp_f32_ll16, F32, LL16Packet)
MSCCLPP_INTERP_KERNELS(mscclpp_interp_i32_ll16, I32, LL16Packet)
MSCCLPP_INTERP_KERNELS(mscclpp_interp_u32_ll16, U32, LL16Packet)
MSCCLPP_INTERP_KERNELS(mscclpp_interp_u8_ll16, U8, LL16Packet)
MSCCLPP_INTERP_KERNELS(mscclpp_interp_f16_ll8, F16, LL8Packet)
MSCCLPP_INTERP_KERNELS(mscclpp_interp_bf16_ll8, BF16, LL8Packet)
MSCCLPP_INTERP_KERNELS(mscclpp_interp_f32_ll8, F32, LL8Packet)
MSCCLPP_INTERP_KERNELS(mscclpp_interp_i32_ll8, I32, LL8Packet)
MSCCLPP_INTERP_KERNELS(mscclpp_interp_u32_ll8, U32, LL8Packet)
MSCCLPP_INTERP_KERNELS(mscclpp_interp_u8_ll8, U8, LL8Packet)
MSCCLPP_INTERP_KERNELS(mscclpp_interp_f16_ll128, F16, LL128Packet)
MSCCLPP_INTERP_KERNELS(mscclpp_interp_bf16_ll128, BF16, LL128Packet)
MSCCLPP_INTERP_KERNELS(mscclpp_interp_f32_ll128, F32, LL128Packet)
MSCCLPP_INTERP_KERNELS(mscclpp_interp_i32_ll128, I32, LL128Packet)
MSCCLPP_INTERP_KERNELS(mscclpp_interp_u32_ll128, U32, LL128Packet)
MSCCLPP_INTERP_KERNELS(mscclpp_interp_u8_ll128, U8, LL128Packet)
#include "mscclpp/interp_fixed.hpp"
#endif
