// PeerExchange: the one point-to-point primitive a transport implementation provides.
//
// ExchangeTransport (exchange_transport.h) builds the whole Transport contract (locks, counters,
// error policy, collectives) on top of it, so the Gloo adapter and the in-process fake implement
// only this and behave alike by construction. Internal to net/: callers use Transport.
//
// One Exchange is one step: optionally send a buffer to one peer and receive one from another
// (or the same) peer, concurrently. Concurrency is the point: in a ring every rank sends right
// and receives left at once, which would deadlock on rendezvous sends if done one after the other.
#pragma once

#include <cstdint>
#include <vector>

#include "common/span.h"
#include "common/status.h"
#include "net/deadline.h"

namespace geotrain::net {

constexpr int kNoPeer = -1;

// Separate message streams between the same two ranks, one per kind of operation. Frames of
// Send/Recv never match a collective's receives, so both may run in different threads; and ranks
// that call different collectives (a caller bug) time out instead of misreading each other's
// bytes, which on Gloo could abort the process (it enforces sizes in its I/O thread).
enum class Channel { kFrames = 0, kAllReduce, kAllGather, kAllToAll, kBarrier };
constexpr int kNumChannels = 5;

struct ExchangeStep {
  int send_to = kNoPeer;  // kNoPeer: nothing to send
  Span<const uint8_t> send;
  int recv_from = kNoPeer;  // kNoPeer: nothing to receive
  std::vector<uint8_t>* recv = nullptr;
  // false: the receiver learns the length from the wire (a fixed-size length precedes the bytes)
  //   and resizes *recv.
  // true: both ends know the size in advance; *recv already has it, no length crosses the wire and
  //   a mismatch is an error. Collectives use this where sizes follow from their arguments.
  bool sizes_known = false;
};

class PeerExchange {
 public:
  virtual ~PeerExchange() = default;

  virtual int rank() const = 0;
  virtual int size() const = 0;

  // Runs `step` on `channel`, waiting until `deadline` at most. On failure the message names the
  // direction and the peer ("recv from rank 2: timed out after 5000 ms", "send to rank 1: rank 1
  // died") and the code is DEADLINE_EXCEEDED, UNAVAILABLE or DATA_LOSS. Peers are valid ranks
  // other than ours (the caller checks). Thread-safe; one step per (peer, direction, channel) at
  // a time (the caller serialises).
  virtual Status Exchange(Channel channel, const ExchangeStep& step, const Deadline& deadline) = 0;

  // Closes every link of this rank, as a crashed process would: steps of its peers that involve
  // it fail with UNAVAILABLE, and so do its own later steps. Idempotent and thread-safe; may run
  // while other threads are inside Exchange.
  virtual void Close() = 0;
};

}  // namespace geotrain::net
