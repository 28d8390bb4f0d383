// AdaptiveController: adaptive compression's decisions for one job (compression.adaptive).
//
// It tracks every adjustable send of the job, per rank and kind: ACTIVATION (a stage's forward
// sends to stage + 1, when compression.forward is fixpoint/delta/delta-lowbits/tah), GRADIENT
// (backward sends to stage - 1, same codecs for compression.backward) and DATA_PARALLEL (a
// stage's cocktail exchange, with replicas > 1). From what the ranks report it predicts each
// send's transfer time at other bits (and, for cocktail, top-k ratios) and chooses settings
// whose transfer hides behind the rank's compute, keeping as much precision as hides; the rules
// and formulas are in docs/adaptive.md. Its output is the changes to announce (RankChange, one
// per rank, sent as ConfigChange) and its current view (LinkCompression, for Job.compression,
// status and metrics).
//
// Pure logic: no clock, no I/O, no locks. Steps are the only time it knows. Not thread-safe:
// the owner (CoordinatorCore, under its mutex) serialises every call. A plain copyable value.
//
// Use, per job with adaptive compression on:
//   Create(spec) when the job is placed;
//   for every step report: Observe() each of its sends (one SendObservation per adjustable kind
//     the rank sends), then, when a job step became complete, Decide(newest complete step) and
//     send each RankChange as a ConfigChange to its rank;
//   Current() into Job.compression (persisted), status and metrics;
//   after a coordinator restart with the ranks still running: Create + Restore(Job.compression);
//   after a re-placement (the new ranks start from the spec's settings): Create +
//     Restore(Job.compression) + Reannounce(resume step), and send those changes too.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <string>
#include <vector>

#include "common/status.h"
#include "geotrain/v1/job.pb.h"
#include "runtime/job_spec.h"

namespace geotrain::coordinator {

// One rank's sends of one kind in one reported step.
struct SendObservation {
  int stage = 0;
  int replica = 0;
  // ACTIVATION, GRADIENT or DATA_PARALLEL; other kinds, and kinds the job does not adapt, are
  // ignored, so a caller may feed every kind of every report.
  v1::TrafficKind kind = v1::TRAFFIC_KIND_UNSPECIFIED;
  int64_t step = 0;
  // This step's wire bytes of the kind, summed over the kind's peers (sent only).
  uint64_t wire_bytes = 0;
  // The bits the frames used (LinkTraffic.bits; 0: unknown, e.g. tah). Tells which setting the
  // bytes measured when a change was due around this step.
  uint32_t bits = 0;
  // Pipeline kinds: mean ||x - x̂|| / ||x|| of the frames sent (0: none reported).
  double relative_error = 0;
  // The rank's compute in the step (its forward + backward phases): what the sends hide behind.
  double compute_seconds = 0;
  // False during the uncompressed warm-up: then the observation is ignored.
  bool compressed = true;
  // The link estimate (data-parallel: the slowest link of the rank's group); 0: unknown, and
  // then no decision is made for the link.
  double throughput_bytes_per_second = 0;
  double latency_seconds = 0;
  // Frames per step on the link (the latency term); 0: the kind's default (pipeline:
  // micro_batches; data-parallel: 2 (replicas - 1), a ring's reduce-scatter + all-gather).
  int messages = 0;
};

// New settings for one rank: what its ConfigChange carries.
struct RankChange {
  int stage = 0;
  int replica = 0;
  // The first step that uses them (the newest complete step + compression.adaptive.announce_steps).
  int64_t effective_step = 0;
  // Only the kinds that change are set (bits != 0; cocktail also topk_ratio); an unset override
  // (bits 0) keeps the rank's current setting.
  v1::CodecOverride forward;
  v1::CodecOverride backward;
  v1::CodecOverride data_parallel;
  // One clause per changed kind, "; "-separated: "stage 1 replica 0 forward: 6.2 MB/s, 0.84 s
  // transfer vs 0.50 s compute: 8 -> 4 bits".
  std::string reason;
};

class AdaptiveController {
 public:
  // From the parsed job: the starting settings (forward/backward bits or tah high_bits; cocktail
  // quant_bits and topk_ratio), stages, replicas, micro_batches and compression.adaptive.
  // FailedPrecondition when compression.adaptive is off; InvalidArgument when the job has
  // nothing to adapt (as ParseJobSpec reports it).
  static StatusOr<AdaptiveController> Create(const runtime::JobSpec& spec);

  // Records one observation. Ignored: untracked (stage, replica, kind), compressed == false, a
  // step already observed for that link, bits that no adjustable setting has (above 8).
  void Observe(const SendObservation& observation);

  // The changes to announce after job step `newest_step` completed: at most one per rank, in the
  // order of global rank (replica x stages + stage). Call once per newly complete step: the raise
  // hysteresis counts calls.
  std::vector<RankChange> Decide(int64_t newest_step);

  // The current choice for every tracked send, ordered by (stage, replica, kind).
  std::vector<v1::LinkCompression> Current() const;

  // Takes back the settings of an earlier Current() (Job.compression): bits, topk_ratio,
  // effective_step and changes. All or nothing: InvalidArgument naming the entry when one is not
  // a tracked send of this job, has bits outside 2..8 or a top-k ratio outside (0, 1], or when the
  // replicas of a stage's data-parallel exchange disagree.
  Status Restore(const std::vector<v1::LinkCompression>& links);

  // For ranks that start afresh from the job spec's settings (a re-placement): every send whose
  // setting differs from the spec's is announced again, effective at `effective_step`.
  std::vector<RankChange> Reannounce(int64_t effective_step);

 private:
  // One value of a kind's adjustable knobs; topk_ratio is 0 except for cocktail.
  struct Setting {
    int bits = 0;
    double topk_ratio = 0;
  };
  enum class Family { kQuantizer, kTah, kCocktail };
  // What one adapted kind's codec is, from the spec.
  struct KindModel {
    v1::TrafficKind kind = v1::TRAFFIC_KIND_UNSPECIFIED;
    Family family = Family::kQuantizer;
    Setting start;
    // Every setting the controller may choose, in increasing wire bytes.
    std::vector<Setting> ladder;
    int tah_low_bits = 0;       // tah: low units use min(low_bits, bits - 1)
    double tah_high_ratio = 0;  // tah: the share of high units
    double scale_bits = 0;      // cocktail: f16 scale bits per kept value (16 / quant_group)
    int default_messages = 1;
  };
  // One rank's sends of one kind.
  struct Link {
    int stage = 0;
    int replica = 0;
    size_t model = 0;  // index into models_
    Setting current;
    Setting previous;  // in use before effective_step
    int64_t effective_step = 0;
    int changes = 0;
    bool has_observed = false;
    int64_t last_observed_step = 0;
    // The last few observations, made independent of the setting they measured: wire bytes per
    // unit of WireCost, compute seconds, and relative error at 0 bits (error x 2^bits).
    std::deque<double> wire_per_cost;
    std::deque<double> compute;
    std::deque<double> error_at_zero_bits;
    double throughput = 0;
    double latency = 0;
    int messages = 0;
    double relative_error = 0;  // the newest reported
  };
  // Links that share one setting and decide together: one pipeline link, or a stage's
  // data-parallel group (its replicas share a random mask and switch at the same step).
  struct Unit {
    std::vector<size_t> links;  // indices into links_
    bool has_decided = false;
    int64_t last_decision_step = 0;
    int raise_streak = 0;
  };
  // A unit's prediction at one setting: the largest transfer / compute ratio over its links.
  struct Prediction {
    double ratio = 0;
    size_t worst = 0;  // the link with that ratio
    double transfer_seconds = 0;
    double compute_seconds = 0;
  };

  AdaptiveController() = default;

  double WireCost(const KindModel& model, const Setting& setting) const;
  bool Ready(const Link& link) const;
  double TransferSeconds(const Link& link, const Setting& setting) const;
  double Budget(const Link& link) const;
  Prediction Predict(const Unit& unit, const Setting& setting) const;
  // The cheapest setting of the ladder whose predicted relative error is within the limit; the
  // ladder's first when the error is unknown; nullptr when none is.
  const Setting* ErrorFloor(const Link& link) const;
  std::string Describe(const KindModel& model, const Setting& setting) const;
  // "stage 1 replica 0 forward", "stage 1 data_parallel (slowest replica 1)".
  std::string UnitName(const Unit& unit, size_t link_index) const;
  // UnitName + ": 6.2 MB/s, 0.84 s transfer vs 0.50 s compute".
  std::string Measured(const Unit& unit, const Prediction& worst) const;
  // One override of `to` per link of `unit`.
  void AddOverrides(const Unit& unit, const Setting& to, int64_t effective_step,
                    const std::string& reason, std::vector<RankChange>* changes) const;
  // Sets `to` on every link of `unit`, effective at `effective_step`, and adds the per-rank
  // overrides to `changes`.
  void Apply(Unit& unit, const Setting& to, int64_t newest_step, int64_t effective_step,
             const std::string& reason, std::vector<RankChange>* changes);

  runtime::AdaptiveCompressionSettings settings_;
  int num_stages_ = 1;
  int replicas_ = 1;
  std::vector<KindModel> models_;
  std::vector<Link> links_;
  std::vector<Unit> units_;
};

}  // namespace geotrain::coordinator
