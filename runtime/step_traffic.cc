#include "runtime/step_traffic.h"

namespace geotrain::runtime {
namespace {

const TrafficKey kDataParallelSync = TrafficKey::Sync(TrafficKind::kDataParallel);
const TrafficKey kEmbeddingSync = TrafficKey::Sync(TrafficKind::kEmbedding);

std::optional<double> FastestSmallFrame(const net::LinkCounters& link) {
  std::optional<double> fastest;
  for (const auto* samples : {&link.recent_sends, &link.recent_recvs}) {
    for (const net::ThroughputSample& sample : *samples) {
      if (sample.bytes > kLatencySampleMaxBytes) continue;
      if (!fastest || sample.seconds < *fastest) fastest = sample.seconds;
    }
  }
  return fastest;
}

// Frame bytes of a collective scaled to raw by the sync's raw/wire over the period. A background
// exchange (cocktail's overlap) may move its frames in one period and account for them when it
// ends, in the next: a period without accounting takes the ratio of everything so far, and 1
// when there was none yet.
uint64_t ScaledRaw(uint64_t frame_bytes, const TrafficCount& delta,
                   const TrafficCount& cumulative) {
  const TrafficCount& basis = delta.wire_bytes > 0 ? delta : cumulative;
  if (basis.wire_bytes == 0) return frame_bytes;
  const double ratio = static_cast<double>(basis.raw_bytes) / static_cast<double>(basis.wire_bytes);
  return static_cast<uint64_t>(static_cast<double>(frame_bytes) * ratio + 0.5);
}

}  // namespace

uint32_t CodecBits(const compression::CodecConfig& config) {
  using compression::CodecId;
  switch (config.codec) {
    case CodecId::kNone:
      return static_cast<uint32_t>(8 * compression::DTypeSize(config.wire_dtype));
    case CodecId::kFixpoint:
    case CodecId::kDelta:
    case CodecId::kDeltaLowBits:
      return static_cast<uint32_t>(config.bits);
    case CodecId::kCocktail:
      return static_cast<uint32_t>(config.quant_bits);
    case CodecId::kTah:
    case CodecId::kTopK:
    case CodecId::kRandK:
    case CodecId::kPowerSgd:
      return 0;
  }
  return 0;
}

uint32_t DataParallelBits(const DataParallelSettings& settings, int stage) {
  switch (settings.mode) {
    case DataParallelMode::kAllReduce:
      return 32;
    case DataParallelMode::kPowerSgd:
      return settings.compressed_stages < 0 || stage < settings.compressed_stages ? 0 : 32;
    case DataParallelMode::kCocktail:
      return static_cast<uint32_t>(settings.codec.quant_bits);
    case DataParallelMode::kQuantizedMomentum:
      // dp_quantized_momentum.cc: the codec's bits when it names fixpoint, else AC-SGD's 8.
      return settings.codec.codec == compression::CodecId::kFixpoint
                 ? static_cast<uint32_t>(settings.codec.bits)
                 : 8;
  }
  return 0;
}

StepTrafficMeter::StepTrafficMeter(const StageAssignment& assignment, const StageLinks& links) {
  Add(Group::kUpstream, links.upstream.get(), assignment);
  Add(Group::kDownstream, links.downstream.get(), assignment);
  Add(Group::kDataParallel, links.data_parallel.get(), assignment);
  Add(Group::kEmbedding, links.embedding.get(), assignment);
  for (const Link& link : links_) Read(link, link.transport->link_stats().Snapshot(), &previous_);
}

void StepTrafficMeter::Add(Group group, net::Transport* transport,
                           const StageAssignment& assignment) {
  if (!transport) return;
  const int s = assignment.stage;
  const int r = assignment.dp_rank;
  const int last = assignment.num_stages - 1;
  Link link{group, transport, {}};
  const int size = transport->size();
  for (int peer = 0; peer < size; ++peer) {
    switch (group) {
      case Group::kUpstream:  // {s-1, s}: peer rank 0
        link.peers.emplace_back(s - 1 + peer, r);
        break;
      case Group::kDownstream:  // {s, s+1}: peer rank 1
        link.peers.emplace_back(s + peer, r);
        break;
      case Group::kDataParallel:  // rank = replica
        link.peers.emplace_back(s, peer);
        break;
      case Group::kEmbedding:
        // The pair {first, last} of our replica, or the fused group (2p: first, 2p+1: last of
        // replica p); a fused group of one replica is that same pair.
        link.peers.emplace_back(peer % 2 == 0 ? 0 : last, size == 2 ? r : peer / 2);
        break;
    }
  }
  links_.push_back(std::move(link));
}

TrafficKey StepTrafficMeter::KeyOf(const Link& link, int peer, bool sent) const {
  TrafficKey key{link.peers[peer].first, link.peers[peer].second, TrafficKind::kDataParallel, sent};
  switch (link.group) {
    case Group::kUpstream:
    case Group::kDownstream:
      key.kind = sent == (link.group == Group::kDownstream) ? TrafficKind::kActivation
                                                            : TrafficKind::kGradient;
      break;
    case Group::kDataParallel:
      break;
    case Group::kEmbedding:
      key.kind = TrafficKind::kEmbedding;
      break;
  }
  return key;
}

void StepTrafficMeter::Read(const Link& link, const std::vector<net::LinkCounters>& counters,
                            TrafficCounter* counter) const {
  const int me = link.transport->rank();
  for (size_t peer = 0; peer < counters.size() && peer < link.peers.size(); ++peer) {
    if (static_cast<int>(peer) == me) continue;
    const net::LinkCounters& c = counters[peer];
    counter->Set(KeyOf(link, static_cast<int>(peer), true),
                 {c.frames_sent, c.raw_bytes_sent, c.bytes_sent, 0, c.send_seconds, 0});
    counter->Set(KeyOf(link, static_cast<int>(peer), false),
                 {c.frames_received, c.raw_bytes_received, c.bytes_received, 0, c.recv_seconds, 0});
  }
}

void StepTrafficMeter::Measure(const TrafficPeriod& period, std::vector<LinkTraffic>* traffic) {
  traffic->clear();
  TrafficCounter now;
  now.Set(kDataParallelSync, period.data_parallel);
  now.Set(kEmbeddingSync, period.embedding);
  const TrafficCount dp = now.Since(previous_, kDataParallelSync);
  const TrafficCount embedding = now.Since(previous_, kEmbeddingSync);

  for (const Link& link : links_) {
    const std::vector<net::LinkCounters> counters = link.transport->link_stats().Snapshot();
    Read(link, counters, &now);
    const int me = link.transport->rank();
    for (size_t peer = 0; peer < counters.size() && peer < link.peers.size(); ++peer) {
      if (static_cast<int>(peer) == me) continue;
      const std::optional<double> latency = FastestSmallFrame(counters[peer]);
      for (const bool sent : {true, false}) {
        const TrafficKey key = KeyOf(link, static_cast<int>(peer), sent);
        const TrafficCount gained = now.Since(previous_, key);
        if (gained.wire_bytes == 0) continue;
        LinkTraffic entry;
        entry.peer_stage = key.peer_stage;
        entry.peer_replica = key.peer_replica;
        entry.kind = key.kind;
        entry.sent = sent;
        entry.wire_bytes = gained.wire_bytes;
        entry.seconds = gained.wait_seconds;
        entry.latency_seconds = latency;
        switch (key.kind) {
          case TrafficKind::kActivation:
          case TrafficKind::kGradient: {
            const bool activation = key.kind == TrafficKind::kActivation;
            entry.raw_bytes = gained.raw_bytes;  // as the frames declared it
            if (sent) {
              entry.bits = activation ? period.activation_bits : period.gradient_bits;
              entry.relative_error =
                  activation ? period.activation_relative_error : period.gradient_relative_error;
            } else {
              entry.bits = activation
                               ? period.received_activation_bits.value_or(period.activation_bits)
                               : period.received_gradient_bits.value_or(period.gradient_bits);
            }
            break;
          }
          case TrafficKind::kDataParallel:
            entry.raw_bytes = ScaledRaw(entry.wire_bytes, dp, period.data_parallel);
            entry.bits = period.data_parallel_bits;
            break;
          case TrafficKind::kEmbedding:
            entry.raw_bytes = ScaledRaw(entry.wire_bytes, embedding, period.embedding);
            entry.bits = period.embedding_bits;
            break;
        }
        traffic->push_back(entry);
      }
    }
  }
  previous_ = std::move(now);
}

}  // namespace geotrain::runtime
