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
// Thread-safety: as transport.h; the transports of a group may be used from any threads and
// destroyed in any order.
#pragma once

#include <memory>
#include <vector>

#include "common/status.h"
#include "net/transport.h"

namespace geotrain::net {

// Returns the `size` ranks of a new group, indexed by rank. size >= 1.
std::vector<std::unique_ptr<Transport>> CreateFakeTransportGroup(int size);

// Makes `rank` of the fake group that `member` belongs to (any rank of it, `rank` itself included)
// die like a killed process: every pending and later operation of its peers that involves it fails
// with UNAVAILABLE ("recv from rank 2: rank 2 died"), and its own operations fail too.
// INVALID_ARGUMENT if `member` is not a fake transport or `rank` is not in its group.
Status KillFakeRank(Transport& member, int rank);

}  // namespace geotrain::net
