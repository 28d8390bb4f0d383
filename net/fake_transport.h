// The in-process fake transport: N ranks of one group inside one process, for tests of the
// runtime (one thread per rank) without sockets.
//
// Same contract as Gloo (transport.h), the collectives being literally the same code
// (collectives.h over ExchangeTransport); in particular sends are rendezvous (a Send returns once
// the receiver has taken the frame), so code that would deadlock on Gloo deadlocks here, until
// its timeout. Frames are copied once per hop; nothing is serialised.
//
// Failure injection: destroying a rank's Transport is a clean exit (its peers' operations with it
// fail with UNAVAILABLE "rank 2 left the group"); KillFakeRank is a crash at any moment, also
// while its own threads are inside operations.
//
// Sealing: with a frame_key the group seals its frames exactly as a Gloo group does
// (SealedPeerExchange), and a wire tap lets tests alter, replay or drop the sealed bytes.
//
// Thread-safety: as transport.h; the transports of a group may be used from any threads and
// destroyed in any order.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/status.h"
#include "net/peer_exchange.h"
#include "net/transport.h"

namespace geotrain::net {

// Returns the `size` ranks of a new group, indexed by rank. size >= 1.
std::vector<std::unique_ptr<Transport>> CreateFakeTransportGroup(int size);

// Sees every buffer as it enters the wire (sealed, if the group seals), under the group's lock:
// it may change *bytes (a bit flipped, another frame put in its place), and returning false drops
// the buffer as a lossy network that still acknowledged it would (the sender's step completes,
// the receiver never sees it). For tests only.
using FakeWireTap =
    std::function<bool(int from, int to, Channel channel, std::vector<uint8_t>* bytes)>;

struct FakeTransportOptions {
  int size = 1;
  // Empty: frames in the clear. Otherwise the job key (kFrameKeyBytes, frame_sealer.h), sealed
  // under group_name as GlooTransportOptions::frame_key is.
  std::string frame_key;
  std::string group_name = "fake";
  FakeWireTap wire_tap;
};

// The group `options` describes; INVALID_ARGUMENT for a size below 1 or a key of another length.
StatusOr<std::vector<std::unique_ptr<Transport>>> CreateFakeTransportGroup(
    const FakeTransportOptions& options);

// Makes `rank` of the fake group that `member` belongs to (any rank of it, `rank` itself included)
// die like a killed process: every pending and later operation of its peers that involves it fails
// with UNAVAILABLE ("recv from rank 2: rank 2 died"), and its own operations fail too.
// INVALID_ARGUMENT if `member` is not a fake transport or `rank` is not in its group.
Status KillFakeRank(Transport& member, int rank);

}  // namespace geotrain::net
