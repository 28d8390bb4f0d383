// PacedTransport: a Transport whose sends leave no faster than a given bit rate, to emulate WAN
// links between ranks on one machine (several processes sharing one GPU, say) where network
// namespaces and `tc` are not available. bench/wan.sh's namespaces with tbf remain the faithful
// emulation (real TCP over a shaped link); this one needs neither root nor tools.
//
// Every peer of the group is behind its own link of `megabits_per_second`: a frame to a peer
// completes when its last bit would have left, one frame after another per peer (a Send blocks
// until then, as a send into full socket buffers does). Collectives pace the bytes this rank
// sends in them on one link of the same rate: AllReduceSum 2(W-1)/W of the values (a ring),
// AllGather (W-1) copies of `mine`, AllToAll every buffer to another rank. Receives are not
// paced: the sender's pacing already spaces them.
//
// link_stats() are the inner transport's, which measure the inner transfer without the pacing
// wait: link estimation sees the fast link underneath, so adaptive compression does not react to
// the emulated rate. A send whose pacing would outlast its timeout waits out the timeout and
// fails with DEADLINE_EXCEEDED naming the rate (the frame itself was delivered, and the inner
// transport stays usable). Thread-safety: as transport.h.
#pragma once

#include <memory>

#include "net/transport.h"

namespace geotrain::net {

// Wraps `inner`; megabits_per_second > 0.
std::unique_ptr<Transport> PaceTransport(std::unique_ptr<Transport> inner,
                                         double megabits_per_second);

}  // namespace geotrain::net
