// SealedPeerExchange: a PeerExchange that seals every byte buffer another PeerExchange moves.
//
// The decorator sits between ExchangeTransport and the implementation (Gloo or the fake), so the
// whole Transport contract, collectives included, runs over sealed frames without knowing it:
// each step's send buffer is sealed (frame_sealer.h) into a buffer of this stream's own, and the
// received buffer is opened into the caller's. sizes_known steps stay so: both ends add the
// same kSealOverhead. A frame that does not open fails the step with DATA_LOSS naming the peer
// and the channel ("recv from rank 1 (frames): frame 7 replayed (expected 9)"), and the
// transport then fails as its contract says (the links close, later calls quote it).
//
// State per (peer, channel, direction): a FrameSealer (its cipher context and sequence number)
// and a buffer. Channels get their own because a Send/Recv and a collective to the same peer may
// run at once in different threads; the caller serialises steps per (peer, direction, channel),
// so each stream's state is touched by one thread at a time and needs no lock.
//
// Link counters (ExchangeTransport) count the frames before sealing; the wire carries
// kSealOverhead (33) bytes more per buffer.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "common/status.h"
#include "net/frame_sealer.h"
#include "net/peer_exchange.h"

namespace geotrain::net {

class SealedPeerExchange final : public PeerExchange {
 public:
  // `job_key`: kFrameKeyBytes bytes; `group_name`: unique per group incarnation (the subkey is
  // derived from it). At most 65536 ranks (the nonce holds u16 ranks).
  static StatusOr<std::unique_ptr<SealedPeerExchange>> Create(std::unique_ptr<PeerExchange> inner,
                                                              const std::string& job_key,
                                                              const std::string& group_name);

  int rank() const override { return inner_->rank(); }
  int size() const override { return inner_->size(); }
  Status Exchange(Channel channel, const ExchangeStep& step, const Deadline& deadline) override;
  void Close() override { inner_->Close(); }

  // The exchange underneath (KillFakeRank reaches the fake through it).
  PeerExchange& inner() { return *inner_; }

 private:
  struct Stream {
    std::unique_ptr<FrameSealer> sealer;
    std::vector<uint8_t> buffer;  // the sealed bytes of the step in flight; capacity reused
  };

  explicit SealedPeerExchange(std::unique_ptr<PeerExchange> inner);
  Stream& Outgoing(int peer, Channel channel);
  Stream& Incoming(int peer, Channel channel);

  const std::unique_ptr<PeerExchange> inner_;
  // Indexed by peer * kNumChannels + channel; this rank's own entries stay unused.
  std::vector<Stream> outgoing_;
  std::vector<Stream> incoming_;
};

// "frames", "all_reduce", ...: how errors name a channel.
const char* ChannelName(Channel channel);

}  // namespace geotrain::net
