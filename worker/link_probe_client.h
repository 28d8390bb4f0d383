// ProbeLink: measures the link from this worker to a peer's LinkProbeServer
// (worker/link_probe_protocol.h) and says what it found as a ProbeResult.
//
//   latency     half the fastest of `pings` round trips of a 64-byte message, on one connection
//   throughput  `streams` parallel BULK connections (one thread each), each sending its share of
//               max_bytes in chunks; a stream stops early, half-closing, once max_ms have passed
//               since the first stream began. Throughput = bytes the peer acknowledged / seconds
//               from the first byte sent to the last acknowledgement, so bytes still sitting in
//               a socket buffer never count. The acknowledgements (and the pings) come on top of
//               max_ms: the bound is loose by one socket buffer's drain time.
//
// Any failure (refused, timed out, the peer closed, a wrong answer) gives a result with
// throughput 0 and an error naming the peer: "probe to w-3 (10.77.2.1:40123): connection
// refused". Blocking; safe to call from several threads at once.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

#include "geotrain/v1/coordinator.pb.h"

namespace geotrain::worker {

// The most parallel BULK streams one probe opens (a server takes 16 connections at once, and
// several workers may probe it together).
inline constexpr uint32_t kMaxProbeStreams = 8;

struct LinkProbeClientOptions {
  int pings = 5;                                    // round trips for the latency
  std::chrono::milliseconds connect_timeout{5000};  // each connection
  std::chrono::milliseconds io_timeout{10000};      // each read and write
  size_t chunk_bytes = 64 * 1024;                   // a stream looks at the clock between chunks
  // When it becomes true the probe ends at its next ping or chunk with the error "cancelled".
  const std::atomic<bool>* cancel = nullptr;
};

// max_bytes 0 measures the latency only (throughput and bytes 0, no error); streams is clamped to
// 1..kMaxProbeStreams and to max_bytes. The result's unix_ms is when the probe ended.
geotrain::v1::ProbeResult ProbeLink(const geotrain::v1::ProbeTarget& target, uint64_t max_bytes,
                                    uint32_t max_ms, uint32_t streams,
                                    const LinkProbeClientOptions& options = {});

}  // namespace geotrain::worker
