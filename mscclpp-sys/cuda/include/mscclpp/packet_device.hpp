// LL (low-latency) packets: data travels with a flag in the same store, so the reader needs no separate signal.
#pragma once
#include "mscclpp/copy_device.hpp"

namespace mscclpp {

/// 16-byte packet: {data1, flag1, data2, flag2}; 8 bytes of payload. Valid iff both flags equal the expected
/// flag. Written and read with one 128-bit access.
struct alignas(16) LL16Packet {
  u32 data1;
  u32 flag1;
  u32 data2;
  u32 flag2;

  static constexpr u32 kPayloadBytes = 8;

  /// Packet bytes that carry `bytes` of data.
  MSCCLPP_DEVICE_INLINE static u64 packetBytes(u64 bytes) {
    return (bytes + kPayloadBytes - 1) / kPayloadBytes * sizeof(LL16Packet);
  }

  MSCCLPP_DEVICE_INLINE void write(u32 v1, u32 v2, u32 flag) {
    stVolatile16(this, Bytes16{v1, flag, v2, flag});
  }
  MSCCLPP_DEVICE_INLINE void write(u64 v, u32 flag) { write((u32)v, (u32)(v >> 32), flag); }

  /// One attempt: true and the payload when both flags match.
  MSCCLPP_DEVICE_INLINE bool readOnce(u32 flag, u64& out) const {
    const Bytes16 v = ldVolatile16(this);
    out = (u64)v.x | ((u64)v.z << 32);
    return v.y == flag && v.w == flag;
  }

  /// Spin (bounded) until the packet carries `flag`; returns the 8-byte payload.
  MSCCLPP_DEVICE_INLINE u64 read(u32 flag, u32 channelId = 0xffffffffu, u32 peer = 0xffffffffu) const {
    u64 v;
    SpinBound bound;
    while (!readOnce(flag, v)) {
      if (u64 el = bound.expired()) waitFailed(WaitPacket, channelId, peer, flag, v, el);
    }
    return v;
  }
};

/// 8-byte packet: {data, flag}; 4 bytes of payload.
struct alignas(8) LL8Packet {
  u32 data;
  u32 flag;

  static constexpr u32 kPayloadBytes = 4;

  /// Packet bytes that carry `bytes` of data.
  MSCCLPP_DEVICE_INLINE static u64 packetBytes(u64 bytes) {
    return (bytes + kPayloadBytes - 1) / kPayloadBytes * sizeof(LL8Packet);
  }

  MSCCLPP_DEVICE_INLINE void write(u32 v, u32 f) {
    asm volatile("st.volatile.global.v2.u32 [%0], {%1,%2};" ::"l"(this), "r"(v), "r"(f) : "memory");
  }

  MSCCLPP_DEVICE_INLINE bool readOnce(u32 f, u32& out) const {
    u32 a, g;
    asm volatile("ld.volatile.global.v2.u32 {%0,%1}, [%2];" : "=r"(a), "=r"(g) : "l"(this) : "memory");
    out = a;
    return g == f;
  }

  MSCCLPP_DEVICE_INLINE u32 read(u32 f, u32 channelId = 0xffffffffu, u32 peer = 0xffffffffu) const {
    u32 v;
    SpinBound bound;
    while (!readOnce(f, v)) {
      if (u64 el = bound.expired()) waitFailed(WaitPacket, channelId, peer, f, v, el);
    }
    return v;
  }
};

/// 128-byte line packets (LL128): a line is eight 16-byte slots; slots 0-6 carry 16 data bytes each, slot 7 carries
/// 8 data bytes and the 8-byte flag {flag, 0}: 120 payload bytes per 128. Eight lanes of one warp write a line with
/// one vector store each, in one instruction, and NVLink delivers the line whole, so a reader whose load of the
/// line (eight lanes, one instruction) sees the flag sees the line's data. A warp moves groups of four lines (480
/// data bytes in 512), counted from the start of the reference that moves them: the writer and the reader of a
/// packet range must use the same ranges (the host splits thread-block groups at multiples of 480 data bytes). A
/// marker type: the interpreter's packet operations handle it warp by warp.
struct LL128Packet {
  static constexpr u32 kSlotBytes = 16;
  static constexpr u32 kSlotsPerLine = 8;
  static constexpr u32 kLinesPerGroup = 4;
  static constexpr u32 kFlagBytes = 8;
  static constexpr u32 kLineBytes = kSlotBytes * kSlotsPerLine;                  // 128
  static constexpr u32 kPayloadBytes = kLineBytes - kFlagBytes;                  // 120
  static constexpr u32 kGroupBytes = kLineBytes * kLinesPerGroup;                // 512
  static constexpr u32 kGroupPayloadBytes = kPayloadBytes * kLinesPerGroup;      // 480
  /// Data bytes the data slots (0-6) of a group's lines carry; the flag slots' data bytes follow them.
  static constexpr u32 kGroupSlotDataBytes = kGroupPayloadBytes - kLinesPerGroup * (kSlotBytes - kFlagBytes);  // 448
  static constexpr u32 kLanesPerGroup = kSlotsPerLine * kLinesPerGroup;         // 32: one warp

  /// Whether lane `lane` of a warp (slot `lane % 8` of line `lane / 8`) holds its line's flag.
  MSCCLPP_DEVICE_INLINE static bool isFlagLane(u32 lane) { return lane % kSlotsPerLine == kSlotsPerLine - 1; }
  /// The group's data bytes lane `lane` carries start here: [16 k, 16 k + 16) for a data slot (k = 7 line + slot),
  /// [448 + 8 line, 456 + 8 line) for a flag slot.
  MSCCLPP_DEVICE_INLINE static u32 laneDataOffset(u32 lane) {
    const u32 line = lane / kSlotsPerLine, slot = lane % kSlotsPerLine;
    return isFlagLane(lane) ? kGroupSlotDataBytes + (kSlotBytes - kFlagBytes) * line
                            : kSlotBytes * ((kSlotsPerLine - 1) * line + slot);
  }
  /// How many data bytes lane `lane` carries: 16, or 8 on a flag slot.
  MSCCLPP_DEVICE_INLINE static u32 laneDataBytes(u32 lane) {
    return isFlagLane(lane) ? kSlotBytes - kFlagBytes : kSlotBytes;
  }
  /// Packet bytes that carry `bytes` of data: whole groups.
  MSCCLPP_DEVICE_INLINE static u64 packetBytes(u64 bytes) {
    return (bytes + kGroupPayloadBytes - 1) / kGroupPayloadBytes * kGroupBytes;
  }
};

/// Turn `srcBytes` of data at `src` into packets at `dst` (remote or local), cooperatively.
/// `srcBytes` must be a multiple of the packet's payload size (8 for LL16, 4 for LL8).
template <typename Packet>
MSCCLPP_DEVICE_INLINE void copyToPackets(void* dst, const void* src, u64 srcBytes, u32 tid, u32 nThreads, u32 flag);

template <>
MSCCLPP_DEVICE_INLINE void copyToPackets<LL16Packet>(void* dst, const void* src, u64 srcBytes, u32 tid, u32 nThreads,
                                                     u32 flag) {
  const u32* s = (const u32*)src;
  LL16Packet* d = (LL16Packet*)dst;
  u64 n = srcBytes / 8;
  for (u64 i = tid; i < n; i += nThreads) d[i].write(s[2 * i], s[2 * i + 1], flag);
}

template <>
MSCCLPP_DEVICE_INLINE void copyToPackets<LL8Packet>(void* dst, const void* src, u64 srcBytes, u32 tid, u32 nThreads,
                                                    u32 flag) {
  const u32* s = (const u32*)src;
  LL8Packet* d = (LL8Packet*)dst;
  u64 n = srcBytes / 4;
  for (u64 i = tid; i < n; i += nThreads) d[i].write(s[i], flag);
}

/// Wait for packets at `src` (local) carrying `flag` and write their payload, `dstBytes` in total, to `dst`.
template <typename Packet>
MSCCLPP_DEVICE_INLINE void copyFromPackets(void* dst, const void* src, u64 dstBytes, u32 tid, u32 nThreads, u32 flag,
                                           u32 channelId = 0xffffffffu, u32 peer = 0xffffffffu);

template <>
MSCCLPP_DEVICE_INLINE void copyFromPackets<LL16Packet>(void* dst, const void* src, u64 dstBytes, u32 tid, u32 nThreads,
                                                       u32 flag, u32 channelId, u32 peer) {
  const LL16Packet* s = (const LL16Packet*)src;
  u64* d = (u64*)dst;
  u64 n = dstBytes / 8;
  for (u64 i = tid; i < n; i += nThreads) d[i] = s[i].read(flag, channelId, peer);
}

template <>
MSCCLPP_DEVICE_INLINE void copyFromPackets<LL8Packet>(void* dst, const void* src, u64 dstBytes, u32 tid, u32 nThreads,
                                                      u32 flag, u32 channelId, u32 peer) {
  const LL8Packet* s = (const LL8Packet*)src;
  u32* d = (u32*)dst;
  u64 n = dstBytes / 4;
  for (u64 i = tid; i < n; i += nThreads) d[i] = s[i].read(flag, channelId, peer);
}

}  // namespace mscclpp
