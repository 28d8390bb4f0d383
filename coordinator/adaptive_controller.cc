// The predictions and rules of adaptive compression (docs/adaptive.md has them as formulas).
#include "coordinator/adaptive_controller.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <tuple>
#include <utility>

namespace geotrain::coordinator {
namespace {

namespace cz = compression;

// Observations the medians of a link look at. Even, so that a value alternating between two
// levels gives their mean rather than flipping with every step.
constexpr size_t kWindow = 6;
// Consecutive decisions the raise condition must hold on.
constexpr int kRaiseStreak = 2;

bool SameRatio(double a, double b) { return std::fabs(a - b) <= 1e-9 * std::max(1.0, b); }

double Median(const std::deque<double>& values) {
  std::vector<double> sorted(values.begin(), values.end());
  std::sort(sorted.begin(), sorted.end());
  const size_t n = sorted.size();
  return n % 2 == 1 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
}

void Push(std::deque<double>* window, double value) {
  window->push_back(value);
  if (window->size() > kWindow) window->pop_front();
}

const char* KindName(v1::TrafficKind kind) {
  switch (kind) {
    case v1::TRAFFIC_KIND_ACTIVATION:
      return "forward";
    case v1::TRAFFIC_KIND_GRADIENT:
      return "backward";
    case v1::TRAFFIC_KIND_DATA_PARALLEL:
      return "data_parallel";
    default:
      return "other";
  }
}

// "6.2 MB/s"
std::string FormatRate(double bytes_per_second) {
  const char* unit = "B/s";
  double value = bytes_per_second;
  if (value >= 1e9) {
    value /= 1e9;
    unit = "GB/s";
  } else if (value >= 1e6) {
    value /= 1e6;
    unit = "MB/s";
  } else if (value >= 1e3) {
    value /= 1e3;
    unit = "kB/s";
  }
  char text[48];
  std::snprintf(text, sizeof(text), "%.3g %s", value, unit);
  return text;
}

std::string FormatSeconds(double seconds) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.2f s", seconds);
  return text;
}

// The codec block of a pipeline kind, when its bits can be adjusted.
bool Adjustable(const cz::CodecConfig& codec) {
  return codec.codec == cz::CodecId::kFixpoint || codec.codec == cz::CodecId::kDelta ||
         codec.codec == cz::CodecId::kDeltaLowBits || codec.codec == cz::CodecId::kTah;
}

// One RankChange per rank, in the order of global rank; the clauses of one rank joined.
std::vector<RankChange> MergeByRank(std::vector<RankChange> changes) {
  std::map<std::pair<int, int>, RankChange> by_rank;  // (replica, stage): global-rank order
  for (RankChange& change : changes) {
    auto [it, inserted] = by_rank.try_emplace({change.replica, change.stage}, change);
    if (inserted) continue;
    RankChange& merged = it->second;
    if (change.forward.bits() != 0) merged.forward = change.forward;
    if (change.backward.bits() != 0) merged.backward = change.backward;
    if (change.data_parallel.bits() != 0) merged.data_parallel = change.data_parallel;
    merged.reason += "; " + change.reason;
  }
  std::vector<RankChange> merged;
  for (auto& [rank, change] : by_rank) merged.push_back(std::move(change));
  return merged;
}

}  // namespace

StatusOr<AdaptiveController> AdaptiveController::Create(const runtime::JobSpec& spec) {
  const runtime::CompressionSettings& c = spec.base.compression;
  if (!c.adaptive.enabled) {
    return FailedPrecondition("compression.adaptive is off for job \"" + spec.name + "\"");
  }
  AdaptiveController controller;
  controller.settings_ = c.adaptive;
  controller.num_stages_ = spec.num_stages;
  controller.replicas_ = spec.dp_size;
  const runtime::AdaptiveCompressionSettings& a = c.adaptive;
  const int messages = static_cast<int>(std::max<int64_t>(1, spec.base.training.micro_batches));

  const auto add_pipeline = [&](v1::TrafficKind kind, const cz::CodecConfig& codec) {
    if (spec.num_stages < 2 || !Adjustable(codec)) return;
    KindModel model;
    model.kind = kind;
    model.default_messages = messages;
    int lowest = a.min_bits;
    if (codec.codec == cz::CodecId::kTah) {
      model.family = Family::kTah;
      model.start.bits = codec.high_bits;
      model.tah_low_bits = codec.low_bits;
      model.tah_high_ratio = codec.high_ratio;
      lowest = std::max(lowest, 3);  // low units take bits - 1, and the codec needs 2 at least
    } else {
      model.start.bits = codec.bits;
    }
    for (int bits = lowest; bits <= a.max_bits; ++bits) model.ladder.push_back({bits, 0});
    if (model.ladder.empty()) return;  // tah with max_bits 2: ParseJobSpec refuses it
    controller.models_.push_back(std::move(model));
  };
  add_pipeline(v1::TRAFFIC_KIND_ACTIVATION, c.forward);
  add_pipeline(v1::TRAFFIC_KIND_GRADIENT, c.backward);
  if (spec.dp_size > 1 && c.data_parallel.mode == runtime::DataParallelMode::kCocktail) {
    const cz::CodecConfig& codec = c.data_parallel.codec;
    KindModel model;
    model.kind = v1::TRAFFIC_KIND_DATA_PARALLEL;
    model.family = Family::kCocktail;
    model.start = {codec.quant_bits, codec.topk_ratio};
    model.scale_bits = 16.0 / std::max(1, codec.quant_group);
    model.default_messages = 2 * (spec.dp_size - 1);
    // Below min_bits the top-k ratio halves, down to min_topk_ratio; then the bits.
    std::vector<double> ratios;
    for (double ratio = codec.topk_ratio / 2;
         ratio > a.min_topk_ratio && !SameRatio(ratio, a.min_topk_ratio); ratio /= 2) {
      ratios.push_back(ratio);
    }
    if (codec.topk_ratio > a.min_topk_ratio && !SameRatio(codec.topk_ratio, a.min_topk_ratio)) {
      ratios.push_back(a.min_topk_ratio);
    }
    for (auto it = ratios.rbegin(); it != ratios.rend(); ++it) {
      model.ladder.push_back({a.min_bits, *it});
    }
    for (int bits = a.min_bits; bits <= a.max_bits; ++bits) {
      model.ladder.push_back({bits, codec.topk_ratio});
    }
    controller.models_.push_back(std::move(model));
  }
  if (controller.models_.empty()) {
    return InvalidArgument(
        "compression.adaptive: nothing to adapt: it needs pipeline.stages > 1 with a "
        "compression.forward or compression.backward codec of fixpoint, delta, delta-lowbits or "
        "tah, or data_parallel.replicas > 1 with data_parallel.mode cocktail");
  }

  for (size_t m = 0; m < controller.models_.size(); ++m) {
    const KindModel& model = controller.models_[m];
    for (int stage = 0; stage < spec.num_stages; ++stage) {
      if (model.kind == v1::TRAFFIC_KIND_ACTIVATION && stage == spec.num_stages - 1) continue;
      if (model.kind == v1::TRAFFIC_KIND_GRADIENT && stage == 0) continue;
      Unit group;  // data-parallel: every replica of the stage
      for (int replica = 0; replica < spec.dp_size; ++replica) {
        Link link;
        link.stage = stage;
        link.replica = replica;
        link.model = m;
        link.current = link.previous = model.start;
        controller.links_.push_back(std::move(link));
        const size_t index = controller.links_.size() - 1;
        if (model.family == Family::kCocktail) {
          group.links.push_back(index);
        } else {
          Unit single;
          single.links.push_back(index);
          controller.units_.push_back(std::move(single));
        }
      }
      if (!group.links.empty()) controller.units_.push_back(std::move(group));
    }
  }
  return controller;
}

double AdaptiveController::WireCost(const KindModel& model, const Setting& setting) const {
  switch (model.family) {
    case Family::kQuantizer:
      return setting.bits;  // codes of b bits; the per-channel scales are ignored
    case Family::kTah: {
      const int low = std::min(model.tah_low_bits, setting.bits - 1);
      return model.tah_high_ratio * setting.bits + (1 - model.tah_high_ratio) * low;
    }
    case Family::kCocktail:
      // Per sampled coordinate: its bit in the kept-bitmap, and for the kept share its code and
      // its share of a group's f16 scale.
      return 1 + setting.topk_ratio * (setting.bits + model.scale_bits);
  }
  return setting.bits;
}

void AdaptiveController::Observe(const SendObservation& o) {
  if (!o.compressed || o.bits > 8) return;
  const auto it = std::find_if(links_.begin(), links_.end(), [&](const Link& link) {
    return link.stage == o.stage && link.replica == o.replica && models_[link.model].kind == o.kind;
  });
  if (it == links_.end()) return;
  Link& link = *it;
  if (link.has_observed && o.step == link.last_observed_step) return;
  link.has_observed = true;
  link.last_observed_step = o.step;
  const KindModel& model = models_[link.model];

  // Which setting the bytes measured: the announced one from its effective step on, unless the
  // frames say otherwise (a rank that applied a change late or early).
  Setting measured = o.step >= link.effective_step ? link.current : link.previous;
  if (o.bits != 0) measured.bits = static_cast<int>(o.bits);
  if (measured.bits < 2) return;

  if (o.wire_bytes > 0) Push(&link.wire_per_cost, o.wire_bytes / WireCost(model, measured));
  if (o.compute_seconds > 0) Push(&link.compute, o.compute_seconds);
  if (o.relative_error > 0 && model.family != Family::kCocktail) {
    Push(&link.error_at_zero_bits, o.relative_error * std::ldexp(1.0, measured.bits));
    link.relative_error = o.relative_error;
  }
  link.throughput = o.throughput_bytes_per_second;
  link.latency = std::max(0.0, o.latency_seconds);
  link.messages = o.messages > 0 ? o.messages : model.default_messages;
}

bool AdaptiveController::Ready(const Link& link) const {
  return link.throughput > 0 && !link.wire_per_cost.empty() && !link.compute.empty() &&
         Budget(link) > 0;
}

double AdaptiveController::TransferSeconds(const Link& link, const Setting& setting) const {
  const double wire = Median(link.wire_per_cost) * WireCost(models_[link.model], setting);
  return wire / link.throughput + link.messages * link.latency;
}

double AdaptiveController::Budget(const Link& link) const {
  return link.compute.empty() ? 0 : Median(link.compute);
}

AdaptiveController::Prediction AdaptiveController::Predict(const Unit& unit,
                                                           const Setting& setting) const {
  Prediction worst;
  worst.ratio = -1;
  for (size_t index : unit.links) {
    const Link& link = links_[index];
    const double transfer = TransferSeconds(link, setting);
    const double budget = Budget(link);
    if (transfer / budget > worst.ratio) {
      worst = {transfer / budget, index, transfer, budget};
    }
  }
  return worst;
}

const AdaptiveController::Setting* AdaptiveController::ErrorFloor(const Link& link) const {
  const KindModel& model = models_[link.model];
  if (link.error_at_zero_bits.empty()) return &model.ladder.front();
  const double error_at_zero_bits = Median(link.error_at_zero_bits);
  for (const Setting& setting : model.ladder) {
    if (error_at_zero_bits * std::ldexp(1.0, -setting.bits) <= settings_.max_relative_error) {
      return &setting;
    }
  }
  return nullptr;
}

std::string AdaptiveController::Describe(const KindModel& model, const Setting& setting) const {
  std::string text = std::to_string(setting.bits) + " bits";
  if (model.family == Family::kCocktail) {
    char ratio[32];
    std::snprintf(ratio, sizeof(ratio), ", topk %g", setting.topk_ratio);
    text += ratio;
  }
  return text;
}

std::string AdaptiveController::UnitName(const Unit& unit, size_t link_index) const {
  const Link& link = links_[link_index];
  const KindModel& model = models_[link.model];
  std::string name = "stage " + std::to_string(link.stage);
  if (model.family != Family::kCocktail) {
    return name + " replica " + std::to_string(link.replica) + " " + KindName(model.kind);
  }
  name += " " + std::string(KindName(model.kind));
  if (unit.links.size() > 1) name += " (slowest replica " + std::to_string(link.replica) + ")";
  return name;
}

std::string AdaptiveController::Measured(const Unit& unit, const Prediction& worst) const {
  return UnitName(unit, worst.worst) + ": " + FormatRate(links_[worst.worst].throughput) + ", " +
         FormatSeconds(worst.transfer_seconds) + " transfer vs " +
         FormatSeconds(worst.compute_seconds) + " compute";
}

void AdaptiveController::AddOverrides(const Unit& unit, const Setting& to, int64_t effective_step,
                                      const std::string& reason,
                                      std::vector<RankChange>* changes) const {
  for (size_t index : unit.links) {
    const Link& link = links_[index];
    const KindModel& model = models_[link.model];
    RankChange change;
    change.stage = link.stage;
    change.replica = link.replica;
    change.effective_step = effective_step;
    v1::CodecOverride* override = model.kind == v1::TRAFFIC_KIND_ACTIVATION ? &change.forward
                                  : model.kind == v1::TRAFFIC_KIND_GRADIENT ? &change.backward
                                                                            : &change.data_parallel;
    override->set_bits(static_cast<uint32_t>(to.bits));
    if (model.family == Family::kCocktail) override->set_topk_ratio(to.topk_ratio);
    change.reason = reason;
    changes->push_back(std::move(change));
  }
}

void AdaptiveController::Apply(Unit& unit, const Setting& to, int64_t newest_step,
                               int64_t effective_step, const std::string& reason,
                               std::vector<RankChange>* changes) {
  for (size_t index : unit.links) {
    Link& link = links_[index];
    link.previous = link.current;
    link.current = to;
    link.effective_step = effective_step;
    ++link.changes;
  }
  unit.has_decided = true;
  unit.last_decision_step = newest_step;
  unit.raise_streak = 0;
  AddOverrides(unit, to, effective_step, reason, changes);
}

std::vector<RankChange> AdaptiveController::Decide(int64_t newest_step) {
  std::vector<RankChange> changes;
  const int64_t effective_step = newest_step + settings_.announce_steps;
  for (Unit& unit : units_) {
    const bool ready = std::all_of(unit.links.begin(), unit.links.end(),
                                   [&](size_t index) { return Ready(links_[index]); });
    const Link& first = links_[unit.links.front()];
    if (!ready) {
      unit.raise_streak = 0;
      continue;
    }
    // A change not yet in force: its effect cannot be seen yet.
    if (newest_step < first.effective_step) continue;
    const KindModel& model = models_[first.model];
    const Setting current = first.current;
    const double current_cost = WireCost(model, current);
    const bool interval_allows =
        !unit.has_decided || newest_step - unit.last_decision_step >= settings_.interval_steps;
    const Prediction now = Predict(unit, current);

    if (now.ratio > settings_.hide_fraction) {
      unit.raise_streak = 0;
      // Lower, down the ladder (cocktail: bits first, the top-k ratio once the bits are at the
      // bottom) to the heaviest setting that hides, or the floor when none does.
      const Setting* floor =
          model.family == Family::kCocktail ? &model.ladder.front() : ErrorFloor(first);
      if (floor == nullptr) continue;
      const double floor_cost = WireCost(model, *floor);
      // Any setting down the ladder, so that one decision reaches a hiding setting even when it
      // lies past min_bits on the top-k axis (cocktail).
      std::vector<const Setting*> candidates;  // in increasing wire bytes
      for (const Setting& setting : model.ladder) {
        const double cost = WireCost(model, setting);
        if (cost < current_cost && cost >= floor_cost) candidates.push_back(&setting);
      }
      if (candidates.empty() || !interval_allows) continue;
      const Setting* chosen = candidates.front();
      for (auto it = candidates.rbegin(); it != candidates.rend(); ++it) {
        if (Predict(unit, **it).ratio <= settings_.hide_fraction) {
          chosen = *it;
          break;
        }
      }
      std::string reason =
          Measured(unit, now) + ": " + Describe(model, current) + " -> " + Describe(model, *chosen);
      const bool floor_binds = chosen == floor && floor != &model.ladder.front() &&
                               Predict(unit, *chosen).ratio > settings_.hide_fraction;
      if (floor_binds) reason += " (error floor)";
      Apply(unit, *chosen, newest_step, effective_step, reason, &changes);
      continue;
    }

    // Raise once the next setting up would hide with room to spare twice in a row; then to the
    // heaviest setting that would, so that a link that came back regains its precision at once.
    const Setting* next = nullptr;
    for (const Setting& setting : model.ladder) {
      if (WireCost(model, setting) > current_cost) {
        next = &setting;
        break;
      }
    }
    if (next == nullptr || Predict(unit, *next).ratio > settings_.raise_fraction) {
      unit.raise_streak = 0;
      continue;
    }
    ++unit.raise_streak;
    if (unit.raise_streak < kRaiseStreak || !interval_allows) continue;
    const Setting* chosen = next;
    for (const Setting& setting : model.ladder) {
      if (WireCost(model, setting) > WireCost(model, *chosen) &&
          Predict(unit, setting).ratio <= settings_.raise_fraction) {
        chosen = &setting;
      }
    }
    Apply(unit, *chosen, newest_step, effective_step,
          Measured(unit, now) + ": " + Describe(model, current) + " -> " + Describe(model, *chosen),
          &changes);
  }
  return MergeByRank(std::move(changes));
}

std::vector<v1::LinkCompression> AdaptiveController::Current() const {
  std::vector<size_t> order(links_.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const Link& x = links_[a];
    const Link& y = links_[b];
    return std::make_tuple(x.stage, x.replica, static_cast<int>(models_[x.model].kind)) <
           std::make_tuple(y.stage, y.replica, static_cast<int>(models_[y.model].kind));
  });
  std::vector<v1::LinkCompression> current;
  for (size_t index : order) {
    const Link& link = links_[index];
    const KindModel& model = models_[link.model];
    v1::LinkCompression entry;
    entry.set_stage(link.stage);
    entry.set_replica(link.replica);
    entry.set_kind(model.kind);
    entry.set_bits(static_cast<uint32_t>(link.current.bits));
    if (model.family == Family::kCocktail) entry.set_topk_ratio(link.current.topk_ratio);
    entry.set_effective_step(link.effective_step);
    if (Ready(link)) entry.set_transfer_seconds(TransferSeconds(link, link.current));
    entry.set_compute_seconds(Budget(link));
    entry.set_throughput_bytes_per_second(link.throughput);
    entry.set_relative_error(link.relative_error);
    entry.set_changes(link.changes);
    current.push_back(std::move(entry));
  }
  return current;
}

Status AdaptiveController::Restore(const std::vector<v1::LinkCompression>& entries) {
  std::vector<std::pair<size_t, const v1::LinkCompression*>> matched;
  for (size_t i = 0; i < entries.size(); ++i) {
    const v1::LinkCompression& e = entries[i];
    const std::string where = "compression[" + std::to_string(i) + "] (stage " +
                              std::to_string(e.stage()) + " replica " +
                              std::to_string(e.replica()) + " " + KindName(e.kind()) + ")";
    const auto it = std::find_if(links_.begin(), links_.end(), [&](const Link& link) {
      return link.stage == e.stage() && link.replica == e.replica() &&
             models_[link.model].kind == e.kind();
    });
    if (it == links_.end()) return InvalidArgument(where + ": not an adapted send of this job");
    if (e.bits() < 2 || e.bits() > 8) {
      return InvalidArgument(where + ": bits " + std::to_string(e.bits()) + " is outside 2..8");
    }
    const bool cocktail = models_[it->model].family == Family::kCocktail;
    if (cocktail && !(e.topk_ratio() > 0 && e.topk_ratio() <= 1)) {
      return InvalidArgument(where + ": topk_ratio " + std::to_string(e.topk_ratio()) +
                             " is outside (0, 1]");
    }
    matched.emplace_back(static_cast<size_t>(it - links_.begin()), &e);
  }
  // The replicas of a stage's exchange must agree, as Decide keeps them.
  std::vector<const v1::LinkCompression*> given(links_.size(), nullptr);
  for (const auto& [index, e] : matched) given[index] = e;
  for (const Unit& unit : units_) {
    const v1::LinkCompression* first = given[unit.links.front()];
    for (size_t index : unit.links) {
      const v1::LinkCompression* other = given[index];
      const bool agree = (first == nullptr && other == nullptr) ||
                         (first != nullptr && other != nullptr && first->bits() == other->bits() &&
                          SameRatio(first->topk_ratio(), other->topk_ratio()) &&
                          first->effective_step() == other->effective_step());
      if (!agree) {
        return InvalidArgument("compression: the replicas of stage " +
                               std::to_string(links_[index].stage) +
                               "'s data_parallel exchange disagree");
      }
    }
  }
  for (const auto& [index, e] : matched) {
    Link& link = links_[index];
    const bool cocktail = models_[link.model].family == Family::kCocktail;
    link.current = {static_cast<int>(e->bits()), cocktail ? e->topk_ratio() : 0};
    link.previous = link.current;
    link.effective_step = e->effective_step();
    link.changes = e->changes();
  }
  for (Unit& unit : units_) {
    const Link& first = links_[unit.links.front()];
    unit.raise_streak = 0;
    unit.has_decided = first.changes > 0;
    unit.last_decision_step = first.effective_step - settings_.announce_steps;
  }
  return OkStatus();
}

std::vector<RankChange> AdaptiveController::Reannounce(int64_t effective_step) {
  std::vector<RankChange> changes;
  for (Unit& unit : units_) {
    const KindModel& model = models_[links_[unit.links.front()].model];
    const Setting current = links_[unit.links.front()].current;
    if (current.bits == model.start.bits && SameRatio(current.topk_ratio, model.start.topk_ratio)) {
      continue;
    }
    // Not a new decision: the change count and the interval stay those of the last real one.
    for (size_t index : unit.links) {
      links_[index].previous = model.start;
      links_[index].effective_step = effective_step;
    }
    unit.raise_streak = 0;
    AddOverrides(unit, current, effective_step,
                 UnitName(unit, unit.links.front()) + ": restarted ranks get " +
                     Describe(model, current) + " back (the spec has " +
                     Describe(model, model.start) + ")",
                 &changes);
  }
  return MergeByRank(std::move(changes));
}

}  // namespace geotrain::coordinator
