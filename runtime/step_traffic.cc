#include "runtime/step_traffic.h"

namespace geotrain::runtime {
namespace {

// Counters only grow; a smaller reading means someone reset them, and then everything since
// counts.
uint64_t Since(uint64_t now, uint64_t before) { return now >= before ? now - before : now; }
double Since(double now, double before) { return now >= before ? now - before : now; }

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
uint64_t ScaledRaw(uint64_t frame_bytes, const DataParallelTraffic& delta,
                   const DataParallelTraffic& cumulative) {
  const DataParallelTraffic& basis = delta.wire_bytes > 0 ? delta : cumulative;
  if (basis.wire_bytes == 0) return frame_bytes;
  const double ratio = static_cast<double>(basis.raw_bytes) / static_cast<double>(basis.wire_bytes);
  return static_cast<uint64_t>(static_cast<double>(frame_bytes) * ratio + 0.5);
}

DataParallelTraffic Since(const DataParallelTraffic& now, const DataParallelTraffic& before) {
  return {Since(now.raw_bytes, before.raw_bytes), Since(now.wire_bytes, before.wire_bytes)};
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
}

void StepTrafficMeter::Add(Group group, net::Transport* transport,
                           const StageAssignment& assignment) {
  if (!transport) return;
  const int s = assignment.stage;
  const int r = assignment.dp_rank;
  const int last = assignment.num_stages - 1;
  Link link{group, transport, {}, transport->link_stats().Snapshot()};
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

void StepTrafficMeter::Measure(const TrafficPeriod& period, std::vector<LinkTraffic>* traffic) {
  traffic->clear();
  const DataParallelTraffic dp = Since(period.data_parallel, data_parallel_previous_);
  const DataParallelTraffic embedding = Since(period.embedding, embedding_previous_);
  data_parallel_previous_ = period.data_parallel;
  embedding_previous_ = period.embedding;

  static const net::LinkCounters kNothing;
  for (Link& link : links_) {
    std::vector<net::LinkCounters> now = link.transport->link_stats().Snapshot();
    const int me = link.transport->rank();
    for (size_t peer = 0; peer < now.size() && peer < link.peers.size(); ++peer) {
      if (static_cast<int>(peer) == me) continue;
      const net::LinkCounters& after = now[peer];
      const net::LinkCounters& before =
          peer < link.previous.size() ? link.previous[peer] : kNothing;
      const std::optional<double> latency = FastestSmallFrame(after);
      for (const bool sent : {true, false}) {
        LinkTraffic entry;
        entry.peer_stage = link.peers[peer].first;
        entry.peer_replica = link.peers[peer].second;
        entry.sent = sent;
        entry.wire_bytes = sent ? Since(after.bytes_sent, before.bytes_sent)
                                : Since(after.bytes_received, before.bytes_received);
        if (entry.wire_bytes == 0) continue;
        entry.seconds = sent ? Since(after.send_seconds, before.send_seconds)
                             : Since(after.recv_seconds, before.recv_seconds);
        entry.latency_seconds = latency;
        const uint64_t declared_raw =
            sent ? Since(after.raw_bytes_sent, before.raw_bytes_sent)
                 : Since(after.raw_bytes_received, before.raw_bytes_received);
        switch (link.group) {
          case Group::kUpstream:
          case Group::kDownstream: {
            const bool activation = sent == (link.group == Group::kDownstream);
            entry.kind = activation ? TrafficKind::kActivation : TrafficKind::kGradient;
            entry.raw_bytes = declared_raw;
            if (sent) {
              entry.bits = activation ? period.activation_bits : period.gradient_bits;
            } else {
              entry.bits = activation
                               ? period.received_activation_bits.value_or(period.activation_bits)
                               : period.received_gradient_bits.value_or(period.gradient_bits);
            }
            if (sent) {
              entry.relative_error =
                  activation ? period.activation_relative_error : period.gradient_relative_error;
            }
            break;
          }
          case Group::kDataParallel:
            entry.kind = TrafficKind::kDataParallel;
            entry.raw_bytes = ScaledRaw(entry.wire_bytes, dp, period.data_parallel);
            entry.bits = period.data_parallel_bits;
            break;
          case Group::kEmbedding:
            entry.kind = TrafficKind::kEmbedding;
            entry.raw_bytes = ScaledRaw(entry.wire_bytes, embedding, period.embedding);
            entry.bits = period.embedding_bits;
            break;
        }
        traffic->push_back(entry);
      }
    }
    link.previous = std::move(now);
  }
}

}  // namespace geotrain::runtime
