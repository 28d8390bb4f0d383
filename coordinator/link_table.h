// LinkTable: the coordinator's estimate of every directed link between two workers, fed by
// passive samples (the bytes and seconds of each step's transfers, from step reports) and by
// active probes (ProbeResults). Both feed ONE throughput estimator per link, the bias-corrected
// EWMA of common/link_estimate.h, so a probe and a training step count alike.
//
// Latency is a second LinkEstimate over latency samples (a probe's half round trip; a step
// report's fastest small frame). Each sample is already a minimum over several messages, which
// filters out queueing at the source; averaging those minima then follows a route change within
// a few samples, where a minimum over a window would keep reporting the old, faster route until
// the window rolls past it.
//
// The table is coordinator state: Export() gives the figures the state store persists and
// Restore() rebuilds a table from them. LinkEstimate keeps its weighted sum and weight private,
// but both follow from (value, samples): W_n = (1 - b^n) / (1 - b) and S_n = value x W_n, which
// replaying `value` min(n, kMaxReplaySamples) times reproduces up to rounding (b^k falls below
// double precision long before k reaches kMaxReplaySamples).
//
// A plain class, not thread-safe: the core guards it with its mutex.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "common/link_estimate.h"
#include "geotrain/v1/coordinator.pb.h"
#include "geotrain/v1/job.pb.h"
#include "geotrain/v1/worker.pb.h"

namespace geotrain::coordinator {

// One directed link's figures: what Lookup returns and what the state store keeps.
struct LinkFigures {
  std::string src_worker_id;
  std::string dst_worker_id;
  // The bias-corrected EWMA over passive and probe samples (0 before the first).
  double throughput_bytes_per_second = 0;
  uint64_t samples = 0;        // throughput samples, passive and probe
  uint64_t probe_samples = 0;  // of which probes
  double latency_seconds = 0;  // EWMA of latency samples (0 before the first)
  uint64_t latency_samples = 0;
  // The newest successful probe (0: none yet).
  double probe_throughput_bytes_per_second = 0;
  double probe_latency_seconds = 0;
  int64_t probed_unix_ms = 0;
  uint64_t probe_failures = 0;
  // The newest sample of any kind.
  int64_t updated_unix_ms = 0;

  uint64_t passive_samples() const { return samples - probe_samples; }
};

// One step report's traffic turned into directed links: `src` -> `dst` moved `wire_bytes` in
// `seconds` (summed over the kinds that crossed that link in the step) and saw `latency_seconds`.
struct PassiveLinkSample {
  std::string src_worker_id;
  std::string dst_worker_id;
  uint64_t wire_bytes = 0;
  double seconds = 0;
  std::optional<double> latency_seconds;
};

// The traffic of `report` (sent by the rank on `self_worker_id`), with each peer rank resolved
// to its worker through `placements` (the job's placements of the report's generation): sent
// traffic is self -> peer, received traffic peer -> self. One sample per directed link, so a
// step counts once however many kinds it moved; peers outside the placements (or on the same
// worker) are skipped.
std::vector<PassiveLinkSample> PassiveLinkSamples(
    const v1::StepReport& report, const std::string& self_worker_id,
    const google::protobuf::RepeatedPtrField<v1::Placement>& placements);

class LinkTable {
 public:
  // Replays beyond this many samples change an estimate by less than b^k, below double precision
  // for the default decay (0.8^256 ~ 1e-25).
  static constexpr uint64_t kMaxReplaySamples = 256;

  // The coordinator's decay: faster than a worker's metrics (0.8), because adaptive compression
  // acts on it. A link dropping from 25 MB/s to 1 MB/s reads below 4 MB/s after three samples
  // (0.8 would take eight), and a step gives a sample per direction, so bits follow a drop within
  // a few steps instead of a dozen.
  static constexpr double kDecay = 0.5;
  explicit LinkTable(double decay = kDecay) : decay_(decay) {}

  // A passive sample: throughput when PassiveThroughputSample gives one (enough bytes, positive
  // seconds), latency when present and finite. Returns whether the link changed.
  bool AddPassive(const PassiveLinkSample& sample, int64_t now_unix_ms);
  // One result of a probe order `src_worker_id` ran: a success (empty error, positive finite
  // throughput) adds a throughput sample, and a latency sample when it measured one; a failure
  // only counts. Returns whether the link changed.
  bool AddProbe(const std::string& src_worker_id, const v1::ProbeResult& result,
                int64_t now_unix_ms);

  // nullopt when nothing was ever recorded for src -> dst.
  std::optional<LinkFigures> Lookup(const std::string& src_worker_id,
                                    const std::string& dst_worker_id) const;

  // Every directed pair of `live` workers (their order, src then dst), measured or not
  // (unmeasured: zeros), with the workers' regions: what GetLinks answers.
  v1::LinkMatrix Matrix(const std::vector<v1::Worker>& live) const;

  // Every link with figures, by (src, dst).
  std::vector<LinkFigures> Export() const;
  // Replaces the table's content with `links` (as Export gave them); the table starts clean.
  void Restore(const std::vector<LinkFigures>& links);

  // Drops every link from or to `worker_id` (a worker gone for good); only on request.
  void Forget(const std::string& worker_id);

  // What changed since the last call: the links to write and the workers whose links to delete.
  struct Changes {
    std::vector<LinkFigures> links;
    std::vector<std::string> forgotten_workers;
    bool empty() const { return links.empty() && forgotten_workers.empty(); }
  };
  Changes TakeChanges();
  bool dirty() const { return !dirty_.empty() || !forgotten_.empty(); }

  size_t size() const { return links_.size(); }

 private:
  struct Entry {
    LinkEstimate throughput;
    LinkEstimate latency;
    LinkFigures figures;
    explicit Entry(double decay) : throughput(decay), latency(decay) {}
  };
  using Key = std::pair<std::string, std::string>;

  Entry& At(const std::string& src, const std::string& dst);
  void Sync(Entry& entry) const;

  double decay_;
  std::map<Key, Entry> links_;
  std::set<Key> dirty_;
  std::set<std::string> forgotten_;
};

}  // namespace geotrain::coordinator
