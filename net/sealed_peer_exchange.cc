#include "net/sealed_peer_exchange.h"

#include <new>
#include <utility>

namespace geotrain::net {
namespace {

constexpr int kMaxSealedRanks = 65536;

std::string Where(const char* direction, int peer, Channel channel) {
  return std::string(direction) + " rank " + std::to_string(peer) + " (" + ChannelName(channel) +
         ")";
}

}  // namespace

const char* ChannelName(Channel channel) {
  switch (channel) {
    case Channel::kFrames:
      return "frames";
    case Channel::kAllReduce:
      return "all_reduce";
    case Channel::kAllGather:
      return "all_gather";
    case Channel::kAllToAll:
      return "all_to_all";
    case Channel::kBarrier:
      return "barrier";
  }
  return "unknown channel";
}

SealedPeerExchange::SealedPeerExchange(std::unique_ptr<PeerExchange> inner)
    : inner_(std::move(inner)) {}

StatusOr<std::unique_ptr<SealedPeerExchange>> SealedPeerExchange::Create(
    std::unique_ptr<PeerExchange> inner, const std::string& job_key,
    const std::string& group_name) {
  if (!inner) return InvalidArgument("sealed exchange: no exchange to wrap");
  const int rank = inner->rank();
  const int size = inner->size();
  if (size > kMaxSealedRanks) {
    return InvalidArgument("sealed exchange of group '" + group_name +
                           "': " + std::to_string(size) + " ranks, at most " +
                           std::to_string(kMaxSealedRanks) + " can be sealed");
  }
  StatusOr<SealKey> key = DeriveSealKey(job_key, group_name);
  if (!key.ok()) return key.status().WithContext("group '" + group_name + "'");
  std::unique_ptr<SealedPeerExchange> sealed(new SealedPeerExchange(std::move(inner)));
  sealed->outgoing_.resize(static_cast<size_t>(size) * kNumChannels);
  sealed->incoming_.resize(static_cast<size_t>(size) * kNumChannels);
  for (int peer = 0; peer < size; ++peer) {
    if (peer == rank) continue;
    for (int c = 0; c < kNumChannels; ++c) {
      const size_t at = static_cast<size_t>(peer) * kNumChannels + c;
      const auto channel = static_cast<uint8_t>(c);
      GEOTRAIN_ASSIGN_OR_RETURN(sealed->outgoing_[at].sealer,
                                FrameSealer::Create(*key, {static_cast<uint16_t>(rank),
                                                           static_cast<uint16_t>(peer), channel}));
      GEOTRAIN_ASSIGN_OR_RETURN(sealed->incoming_[at].sealer,
                                FrameSealer::Create(*key, {static_cast<uint16_t>(peer),
                                                           static_cast<uint16_t>(rank), channel}));
    }
  }
  // The derived key leaves memory with *key; only the cipher contexts hold it now.
  return sealed;
}

SealedPeerExchange::Stream& SealedPeerExchange::Outgoing(int peer, Channel channel) {
  return outgoing_[static_cast<size_t>(peer) * kNumChannels + static_cast<size_t>(channel)];
}

SealedPeerExchange::Stream& SealedPeerExchange::Incoming(int peer, Channel channel) {
  return incoming_[static_cast<size_t>(peer) * kNumChannels + static_cast<size_t>(channel)];
}

Status SealedPeerExchange::Exchange(Channel channel, const ExchangeStep& step,
                                    const Deadline& deadline) {
  ExchangeStep sealed_step = step;
  try {
    if (step.send_to != kNoPeer) {
      Stream& out = Outgoing(step.send_to, channel);
      out.buffer.resize(step.send.size() + kSealOverhead);
      Status sealed = out.sealer->Seal(step.send, out.buffer.data());
      if (!sealed.ok()) return sealed.WithContext(Where("send to", step.send_to, channel));
      sealed_step.send = out.buffer;
    }
    if (step.recv_from != kNoPeer) {
      Stream& in = Incoming(step.recv_from, channel);
      if (step.sizes_known) in.buffer.resize(step.recv->size() + kSealOverhead);
      sealed_step.recv = &in.buffer;
    }
  } catch (const std::bad_alloc&) {
    return ResourceExhausted("sealing a step on " + std::string(ChannelName(channel)) +
                             ": out of memory for the sealed buffer");
  }

  GEOTRAIN_RETURN_IF_ERROR(inner_->Exchange(channel, sealed_step, deadline));

  if (step.recv_from != kNoPeer) {
    Stream& in = Incoming(step.recv_from, channel);
    const std::string where = Where("recv from", step.recv_from, channel);
    if (in.buffer.size() < kSealOverhead) {
      step.recv->clear();
      return DataLoss(where + ": frame of " + std::to_string(in.buffer.size()) +
                      " bytes is shorter than a sealed frame's " + std::to_string(kSealOverhead) +
                      " (is the peer sending frames in the clear?)");
    }
    try {
      step.recv->resize(in.buffer.size() - kSealOverhead);
    } catch (const std::bad_alloc&) {
      return ResourceExhausted(where + ": cannot hold a frame of " +
                               std::to_string(in.buffer.size() - kSealOverhead) + " bytes");
    }
    Status opened = in.sealer->Open(in.buffer, step.recv->data());
    if (!opened.ok()) {
      step.recv->clear();  // unauthenticated bytes never reach the caller
      return Status(opened.code(), where + ": " + opened.message());
    }
  }
  return OkStatus();
}

}  // namespace geotrain::net
