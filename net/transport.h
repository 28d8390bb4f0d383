// Transport: one process's view of a group of ranks on the data plane.
//
// A Transport moves opaque byte frames between the ranks 0..size()-1 of one group (an adjacent
// stage pair, or a data-parallel group) and runs the few collectives the runtime needs. It knows
// nothing of tensors or codecs: geotrain frames are self-describing (compression/frame.h), so the
// transport only delimits them (a fixed-size length goes first, then the bytes).
//
// Implementations: CreateGlooTransport (gloo_transport.h, c10d ProcessGroupGloo over TCP) and
// CreateFakeTransportGroup (fake_transport.h, N ranks in one process). Callers hold a Transport and
// never name the concrete class. tests/net/transport_conformance_test.cc checks every promise
// below against both.
//
// Contract
// - Every operation takes a timeout and returns within it (plus scheduling slack), never later.
//   Errors are Status values naming the operation and the peer:
//     DEADLINE_EXCEEDED  "recv from rank 2: timed out after 5000 ms"
//     UNAVAILABLE        a peer died or left ("send to rank 1: rank 1 died"), or the link broke
//     INVALID_ARGUMENT   a bad rank, a negative timeout, a wrong number of buffers; or
//                        AllReduceSum lengths that differ between ranks (found by asking them)
//     DATA_LOSS          a peer announced a frame larger than the receiver's limit
//     FAILED_PRECONDITION  the transport failed earlier (see below)
// - A failed operation breaks the transport: its links close (so its peers fail soon as well,
//   instead of waiting out their own timeouts) and every later call fails at once, quoting the
//   first error. Groups are rebuilt, never repaired; Gloo behaves this way too (a timeout closes
//   all of a context's pairs). Argument errors found before anything is sent do not break it.
// - Collectives of different kinds never read each other's traffic: ranks that disagree on which
//   collective comes next (a caller bug) time out rather than misread bytes.
// - Send may block until the peer has posted the matching Recv (Gloo's TCP transport is
//   rendezvous-based), so never rely on buffering: two ranks that both Send before they Recv wait
//   until their timeouts. The fake enforces the same, so such a bug shows in unit tests.
// - Frames between two ranks arrive in the order they were sent, whole and unchanged.
// - Collectives are called by every rank of the group in the same order with matching arguments
//   (AllReduceSum: the same length everywhere). Their traffic uses a channel of its own, so a
//   Send/Recv running in another thread never mixes with them.
//
// Thread-safety: all methods may be called from several threads. Sends to one peer are serialised
// (frames never interleave), as are Recvs from one peer; a Send to and a Recv from the same peer
// may run at once, which is what pipeline schedules need. Collectives are serialised with each
// other. Waiting for one of these locks counts against the caller's timeout.
#pragma once

#include <chrono>
#include <cstdint>
#include <vector>

#include "common/span.h"
#include "common/status.h"
#include "net/link_stats.h"

namespace geotrain::net {

// Every transport operation's time limit.
using Timeout = std::chrono::milliseconds;

class Transport {
 public:
  virtual ~Transport() = default;

  virtual int rank() const = 0;
  virtual int size() const = 0;

  // Sends one frame (any size, 0 included) to `peer`. `raw_bytes` is the size of what the frame
  // encodes before compression; it is recorded in link_stats() next to the frame's own size.
  virtual Status Send(int peer, Span<const uint8_t> frame, Timeout timeout, uint64_t raw_bytes) = 0;
  // Same, for a frame that is its own raw size.
  Status Send(int peer, Span<const uint8_t> frame, Timeout timeout) {
    return Send(peer, frame, timeout, frame.size());
  }

  // Receives the next frame from `peer` into *frame (resized to the frame's length; its capacity
  // is reused; unspecified after a failure). The decoder may add the decoded size with
  // link_stats().AddRawBytesReceived().
  virtual Status Recv(int peer, std::vector<uint8_t>* frame, Timeout timeout) = 0;

  // Replaces `values` on every rank by the element-wise sum over the group. The result is
  // bit-identical on all ranks and independent of timing (a fixed ring order).
  virtual Status AllReduceSum(Span<float> values, Timeout timeout) = 0;

  // Returns every rank's `mine`, indexed by rank; sizes may differ between ranks (0 too).
  virtual StatusOr<std::vector<std::vector<uint8_t>>> AllGather(Span<const uint8_t> mine,
                                                                Timeout timeout) = 0;

  // Sends to_each_rank[r] to rank r (size() buffers, any sizes; our own is kept) and returns
  // what each rank sent to this one, indexed by sender.
  virtual StatusOr<std::vector<std::vector<uint8_t>>> AllToAll(
      const std::vector<std::vector<uint8_t>>& to_each_rank, Timeout timeout) = 0;

  // Returns once every rank of the group has entered Barrier.
  virtual Status Barrier(Timeout timeout) = 0;

  // Per-peer counters of everything this transport moved; lives as long as the transport.
  virtual LinkStats& link_stats() = 0;
};

}  // namespace geotrain::net
