// The link-probe wire protocol between a worker's LinkProbeClient and a peer's LinkProbeServer:
// plain TCP, one request per connection, every integer big-endian.
//
//   client -> server  header (24 bytes):
//     magic    8 bytes  "GTPROBE1"
//     version  u32      kProbeVersion (1)
//     mode     u32      1 PING, 2 BULK
//     length   u64      PING: 0. BULK: the bytes the client means to send, 1..kMaxProbeBytes.
//
//   PING: the client sends kPingMessageBytes-byte messages; the server writes each one back once
//         it has all of it, until the client closes. Latency is half the fastest round trip.
//   BULK: the client sends up to `length` bytes of anything, then waits; the server reads (and
//         discards) until it has `length` bytes or the client half-closes (shutdown SHUT_WR),
//         then answers an 8-byte u64: the bytes it received. A client that runs out of time
//         half-closes early, so a shortened stream is still answered, and the answer only comes
//         once every byte has been delivered: the client measures delivery, not how fast its
//         own socket buffer filled.
//
// A header with the wrong magic, an unknown version or mode, or a length out of range is
// answered by closing the connection. Bytes past `length` are never read.
#pragma once

#include <cstddef>
#include <cstdint>

namespace geotrain::worker::probe {

inline constexpr char kProbeMagic[8] = {'G', 'T', 'P', 'R', 'O', 'B', 'E', '1'};
inline constexpr uint32_t kProbeVersion = 1;
inline constexpr size_t kProbeHeaderBytes = 24;
inline constexpr size_t kPingMessageBytes = 64;
inline constexpr size_t kBulkAnswerBytes = 8;
// The most one connection may carry in either mode (the server's cap; a BULK announcing more is
// refused).
inline constexpr uint64_t kMaxProbeBytes = uint64_t{1} << 30;

enum class ProbeMode : uint32_t { kPing = 1, kBulk = 2 };

struct ProbeHeader {
  ProbeMode mode = ProbeMode::kPing;
  uint64_t length = 0;
};

inline void PutU32(uint32_t value, unsigned char* out) {
  for (int i = 3; i >= 0; --i, value >>= 8) out[i] = static_cast<unsigned char>(value & 0xff);
}
inline void PutU64(uint64_t value, unsigned char* out) {
  for (int i = 7; i >= 0; --i, value >>= 8) out[i] = static_cast<unsigned char>(value & 0xff);
}
inline uint32_t GetU32(const unsigned char* in) {
  uint32_t value = 0;
  for (int i = 0; i < 4; ++i) value = (value << 8) | in[i];
  return value;
}
inline uint64_t GetU64(const unsigned char* in) {
  uint64_t value = 0;
  for (int i = 0; i < 8; ++i) value = (value << 8) | in[i];
  return value;
}

inline void EncodeHeader(const ProbeHeader& header, unsigned char out[kProbeHeaderBytes]) {
  for (size_t i = 0; i < sizeof(kProbeMagic); ++i) {
    out[i] = static_cast<unsigned char>(kProbeMagic[i]);
  }
  PutU32(kProbeVersion, out + 8);
  PutU32(static_cast<uint32_t>(header.mode), out + 12);
  PutU64(header.length, out + 16);
}

// Why `in` is not a header this version accepts ("" when it is one; then *header is filled).
inline const char* DecodeHeader(const unsigned char in[kProbeHeaderBytes], ProbeHeader* header) {
  for (size_t i = 0; i < sizeof(kProbeMagic); ++i) {
    if (in[i] != static_cast<unsigned char>(kProbeMagic[i])) return "bad magic";
  }
  if (GetU32(in + 8) != kProbeVersion) return "unknown version";
  const uint32_t mode = GetU32(in + 12);
  const uint64_t length = GetU64(in + 16);
  if (mode == static_cast<uint32_t>(ProbeMode::kPing)) {
    if (length != 0) return "PING with a non-zero length";
  } else if (mode == static_cast<uint32_t>(ProbeMode::kBulk)) {
    if (length == 0 || length > kMaxProbeBytes) return "BULK length outside 1..1 GiB";
  } else {
    return "unknown mode";
  }
  header->mode = static_cast<ProbeMode>(mode);
  header->length = length;
  return "";
}

}  // namespace geotrain::worker::probe
