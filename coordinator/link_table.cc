#include "coordinator/link_table.h"

#include <algorithm>
#include <cmath>

namespace geotrain::coordinator {
namespace {

// Rebuilds an estimator holding `samples` samples whose estimate is `value` (see the header:
// the weight depends on the count alone, so replaying the value reproduces the state).
void Replay(LinkEstimate& estimate, double value, uint64_t samples) {
  const uint64_t replay = std::min(samples, LinkTable::kMaxReplaySamples);
  for (uint64_t i = 0; i < replay; ++i) estimate.Add(value);
}

bool IsLatency(double seconds) { return std::isfinite(seconds) && seconds > 0; }

}  // namespace

std::vector<PassiveLinkSample> PassiveLinkSamples(
    const v1::StepReport& report, const std::string& self_worker_id,
    const google::protobuf::RepeatedPtrField<v1::Placement>& placements) {
  // Keyed by (sent, peer worker): the directed link, in a stable order.
  std::map<std::pair<bool, std::string>, PassiveLinkSample> by_link;
  for (const v1::LinkTraffic& traffic : report.traffic()) {
    const auto peer =
        std::find_if(placements.begin(), placements.end(), [&](const v1::Placement& p) {
          return p.stage() == traffic.peer_stage() && p.replica() == traffic.peer_replica();
        });
    if (peer == placements.end() || peer->worker_id() == self_worker_id) continue;
    PassiveLinkSample& sample = by_link[{traffic.sent(), peer->worker_id()}];
    if (sample.src_worker_id.empty()) {
      sample.src_worker_id = traffic.sent() ? self_worker_id : peer->worker_id();
      sample.dst_worker_id = traffic.sent() ? peer->worker_id() : self_worker_id;
    }
    sample.wire_bytes += traffic.wire_bytes();
    if (std::isfinite(traffic.seconds()) && traffic.seconds() > 0) {
      sample.seconds += traffic.seconds();
    }
    // The fastest small frame of the kinds: the figure closest to the path's own delay.
    if (traffic.has_latency_seconds() && IsLatency(traffic.latency_seconds()) &&
        (!sample.latency_seconds || traffic.latency_seconds() < *sample.latency_seconds)) {
      sample.latency_seconds = traffic.latency_seconds();
    }
  }
  std::vector<PassiveLinkSample> samples;
  samples.reserve(by_link.size());
  for (auto& [key, sample] : by_link) samples.push_back(std::move(sample));
  return samples;
}

LinkTable::Entry& LinkTable::At(const std::string& src, const std::string& dst) {
  auto it = links_.find({src, dst});
  if (it == links_.end()) {
    it = links_.emplace(Key{src, dst}, Entry(decay_)).first;
    it->second.figures.src_worker_id = src;
    it->second.figures.dst_worker_id = dst;
  }
  return it->second;
}

void LinkTable::Sync(Entry& entry) const {
  entry.figures.throughput_bytes_per_second = entry.throughput.value();
  entry.figures.latency_seconds = entry.latency.value();
}

bool LinkTable::AddPassive(const PassiveLinkSample& sample, int64_t now_unix_ms) {
  if (sample.src_worker_id.empty() || sample.dst_worker_id.empty() ||
      sample.src_worker_id == sample.dst_worker_id) {
    return false;
  }
  const std::optional<double> throughput =
      PassiveThroughputSample(sample.wire_bytes, sample.seconds);
  const bool latency = sample.latency_seconds && IsLatency(*sample.latency_seconds);
  if (!throughput && !latency) return false;
  Entry& entry = At(sample.src_worker_id, sample.dst_worker_id);
  if (throughput && entry.throughput.Add(*throughput)) ++entry.figures.samples;
  if (latency && entry.latency.Add(*sample.latency_seconds)) ++entry.figures.latency_samples;
  entry.figures.updated_unix_ms = now_unix_ms;
  Sync(entry);
  dirty_.insert({sample.src_worker_id, sample.dst_worker_id});
  return true;
}

bool LinkTable::AddProbe(const std::string& src_worker_id, const v1::ProbeResult& result,
                         int64_t now_unix_ms) {
  const std::string& dst = result.dst_worker_id();
  if (src_worker_id.empty() || dst.empty() || src_worker_id == dst) return false;
  Entry& entry = At(src_worker_id, dst);
  dirty_.insert({src_worker_id, dst});
  const double throughput = result.throughput_bytes_per_second();
  if (!result.error().empty() || !std::isfinite(throughput) || throughput <= 0) {
    ++entry.figures.probe_failures;
    return true;
  }
  entry.throughput.Add(throughput);
  ++entry.figures.samples;
  ++entry.figures.probe_samples;
  entry.figures.probe_throughput_bytes_per_second = throughput;
  entry.figures.probe_latency_seconds = 0;
  if (IsLatency(result.latency_seconds())) {
    entry.latency.Add(result.latency_seconds());
    ++entry.figures.latency_samples;
    entry.figures.probe_latency_seconds = result.latency_seconds();
  }
  // The coordinator's clock, not the worker's: every time in the table is on one scale.
  entry.figures.probed_unix_ms = now_unix_ms;
  entry.figures.updated_unix_ms = now_unix_ms;
  Sync(entry);
  return true;
}

std::optional<LinkFigures> LinkTable::Lookup(const std::string& src_worker_id,
                                             const std::string& dst_worker_id) const {
  const auto it = links_.find({src_worker_id, dst_worker_id});
  if (it == links_.end()) return std::nullopt;
  return it->second.figures;
}

v1::LinkMatrix LinkTable::Matrix(const std::vector<v1::Worker>& live) const {
  v1::LinkMatrix matrix;
  for (const v1::Worker& src : live) {
    for (const v1::Worker& dst : live) {
      if (src.id() == dst.id()) continue;
      v1::Link* link = matrix.add_links();
      link->set_src_worker_id(src.id());
      link->set_dst_worker_id(dst.id());
      link->set_src_region(src.capabilities().region());
      link->set_dst_region(dst.capabilities().region());
      const auto it = links_.find({src.id(), dst.id()});
      if (it == links_.end()) continue;
      const LinkFigures& figures = it->second.figures;
      link->set_throughput_bytes_per_second(figures.throughput_bytes_per_second);
      link->set_latency_seconds(figures.latency_seconds);
      link->set_samples(figures.samples);
      link->set_updated_unix_ms(figures.updated_unix_ms);
      link->set_probe_samples(figures.probe_samples);
      link->set_probe_throughput_bytes_per_second(figures.probe_throughput_bytes_per_second);
      link->set_probed_unix_ms(figures.probed_unix_ms);
    }
  }
  return matrix;
}

std::vector<LinkFigures> LinkTable::Export() const {
  std::vector<LinkFigures> out;
  out.reserve(links_.size());
  for (const auto& [key, entry] : links_) out.push_back(entry.figures);
  return out;
}

void LinkTable::Restore(const std::vector<LinkFigures>& links) {
  links_.clear();
  dirty_.clear();
  forgotten_.clear();
  for (const LinkFigures& figures : links) {
    if (figures.src_worker_id.empty() || figures.dst_worker_id.empty()) continue;
    Entry& entry = At(figures.src_worker_id, figures.dst_worker_id);
    entry.figures = figures;
    Replay(entry.throughput, figures.throughput_bytes_per_second, figures.samples);
    Replay(entry.latency, figures.latency_seconds, figures.latency_samples);
    // No Sync: the figures stay exactly as stored; the replayed estimators differ from them by
    // rounding only, and take over with the next sample.
  }
}

void LinkTable::Forget(const std::string& worker_id) {
  for (auto it = links_.begin(); it != links_.end();) {
    if (it->first.first == worker_id || it->first.second == worker_id) {
      dirty_.erase(it->first);
      it = links_.erase(it);
    } else {
      ++it;
    }
  }
  forgotten_.insert(worker_id);
}

LinkTable::Changes LinkTable::TakeChanges() {
  Changes changes;
  for (const Key& key : dirty_) {
    const auto it = links_.find(key);
    if (it != links_.end()) changes.links.push_back(it->second.figures);
  }
  changes.forgotten_workers.assign(forgotten_.begin(), forgotten_.end());
  dirty_.clear();
  forgotten_.clear();
  return changes;
}

}  // namespace geotrain::coordinator
