// CoordinatorCore's link-aware decisions about a job: where its ranks run (the planner over the
// measured links and the job's measured or nominal step shape), and, with compression.adaptive,
// the bits of every rank's sends (AdaptiveController fed from step reports and the link table,
// its changes sent as ConfigChanges). Everything here runs under mu_.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <map>

#include "coordinator/coordinator_core.h"

namespace geotrain::coordinator {
namespace {

// The planner runs under the core's mutex: keep it short (it stops early when nothing improves).
constexpr double kPlannerBudgetSeconds = 0.2;

}  // namespace

void CoordinatorCore::InitTuning(JobEntry& entry) {
  StatusOr<runtime::JobSpec> spec = runtime::ParseJobSpec(entry.job.spec_yaml());
  if (!spec.ok()) return;  // StoredJobFigures already said why
  entry.cuda_devices_needed = CudaDevicesNeeded(*spec);
  entry.shape_meter =
      StepShapeMeter(spec->num_stages, static_cast<int>(spec->base.training.micro_batches));
  if (!spec->base.compression.adaptive.enabled) return;
  StatusOr<AdaptiveController> controller = AdaptiveController::Create(*spec);
  if (!controller.ok()) {
    spdlog::warn("{}: adaptive compression off: {}", entry.job.id(),
                 controller.status().ToString());
    return;
  }
  if (entry.job.compression_size() > 0) {
    Status restored =
        controller->Restore({entry.job.compression().begin(), entry.job.compression().end()});
    if (!restored.ok()) {
      spdlog::warn("{}: adaptive compression starts from the spec's settings: {}", entry.job.id(),
                   restored.ToString());
    }
  }
  entry.adaptive = std::move(*controller);
  const std::vector<v1::LinkCompression> current = entry.adaptive->Current();
  *entry.job.mutable_compression() = {current.begin(), current.end()};
}

std::optional<PlannedPlacement> CoordinatorCore::PlanPlacement(
    const JobEntry& entry, const std::vector<PlacementCandidate>& idle) const {
  StatusOr<runtime::JobSpec> spec = runtime::ParseJobSpec(entry.job.spec_yaml());
  if (!spec.ok()) {
    std::optional<std::vector<v1::Placement>> placements =
        PlaceInOrder(idle, entry.figures.num_stages, entry.figures.replicas);
    if (!placements) return std::nullopt;
    PlannedPlacement in_order;
    in_order.placements = std::move(*placements);
    in_order.start = "in-order (the stored spec no longer parses)";
    return in_order;
  }
  planner::JobShape shape = NominalShapeOf(*spec, entry.job.model_shape());
  if (entry.shape_meter.complete()) entry.shape_meter.ApplyTo(shape);
  const LinkLookup lookup = [this](const std::string& src,
                                   const std::string& dst) -> std::optional<planner::LinkCost> {
    std::optional<LinkFigures> figures = links_.Lookup(src, dst);
    if (!figures || figures->throughput_bytes_per_second <= 0) return std::nullopt;
    return planner::LinkCost{figures->throughput_bytes_per_second, figures->latency_seconds};
  };
  planner::PlannerOptions options;
  options.time_budget_seconds = kPlannerBudgetSeconds;
  // A fixed seed: the same pool and links give the same placement.
  options.seed = 1;
  return PlacePlanned(idle, shape, lookup, options);
}

void CoordinatorCore::ObserveForTuning(JobEntry& entry, const WorkerEntry& worker,
                                       const v1::StepReport& report) {
  entry.shape_meter.Add(report,
                        WorkerSpeed(worker.record.capabilities(), entry.cuda_devices_needed > 0));
  if (!entry.adaptive || entry.ranks.empty()) return;
  const int num_stages = entry.figures.num_stages;
  const int replicas = entry.figures.replicas;
  const auto worker_of = [&](int stage, int replica) -> const std::string* {
    if (stage < 0 || stage >= num_stages || replica < 0 || replica >= replicas) return nullptr;
    const size_t rank = static_cast<size_t>(replica) * num_stages + stage;
    return rank < entry.ranks.size() ? &entry.ranks[rank].worker_id : nullptr;
  };
  const std::string& self = worker.record.id();
  const size_t self_rank = static_cast<size_t>(report.replica()) * num_stages + report.stage();
  if (entry.rank_compute_seconds.size() != entry.ranks.size()) {
    entry.rank_compute_seconds.assign(entry.ranks.size(), 0);
  }
  if (self_rank < entry.rank_compute_seconds.size()) {
    entry.rank_compute_seconds[self_rank] = report.phases().forward() + report.phases().backward();
  }
  const double step_compute =
      *std::max_element(entry.rank_compute_seconds.begin(), entry.rank_compute_seconds.end());
  // The estimate of self -> dst; {0, 0} while unmeasured.
  const auto link_to = [&](const std::string* dst) -> planner::LinkCost {
    if (dst == nullptr) return {};
    std::optional<LinkFigures> figures = links_.Lookup(self, *dst);
    if (!figures) return {};
    return {figures->throughput_bytes_per_second, figures->latency_seconds};
  };

  struct Sent {
    uint64_t wire_bytes = 0;
    uint32_t bits = 0;
    double relative_error = 0;
  };
  std::map<v1::TrafficKind, Sent> sent;
  for (const v1::LinkTraffic& traffic : report.traffic()) {
    if (!traffic.sent()) continue;
    Sent& kind = sent[traffic.kind()];
    kind.wire_bytes += traffic.wire_bytes();
    kind.bits = std::max(kind.bits, traffic.bits());
    kind.relative_error = std::max(kind.relative_error, traffic.relative_error());
  }
  for (const auto& [kind, figures] : sent) {
    SendObservation observation;
    observation.stage = report.stage();
    observation.replica = report.replica();
    observation.kind = kind;
    observation.step = report.step();
    observation.wire_bytes = figures.wire_bytes;
    observation.bits = figures.bits;
    observation.relative_error = figures.relative_error;
    observation.compute_seconds = step_compute;
    observation.compressed = report.compressed();
    planner::LinkCost link;
    if (kind == v1::TRAFFIC_KIND_ACTIVATION) {
      link = link_to(worker_of(report.stage() + 1, report.replica()));
    } else if (kind == v1::TRAFFIC_KIND_GRADIENT) {
      link = link_to(worker_of(report.stage() - 1, report.replica()));
    } else if (kind == v1::TRAFFIC_KIND_DATA_PARALLEL) {
      // The slowest link to another replica of the stage paces the group's ring.
      bool first = true;
      for (int peer = 0; peer < replicas; ++peer) {
        if (peer == report.replica()) continue;
        const planner::LinkCost to_peer = link_to(worker_of(report.stage(), peer));
        link.bytes_per_second = first ? to_peer.bytes_per_second
                                      : std::min(link.bytes_per_second, to_peer.bytes_per_second);
        link.latency_seconds = std::max(link.latency_seconds, to_peer.latency_seconds);
        first = false;
      }
    }
    observation.throughput_bytes_per_second = link.bytes_per_second;
    observation.latency_seconds = link.latency_seconds;
    entry.adaptive->Observe(observation);
  }
}

void CoordinatorCore::AdaptCompression(JobEntry& entry, int64_t complete_step) {
  if (!entry.adaptive) return;
  const std::vector<RankChange> changes = entry.adaptive->Decide(complete_step);
  if (changes.empty()) return;
  SendCodecChanges(entry, changes);
}

void CoordinatorCore::SendCodecChanges(JobEntry& entry, const std::vector<RankChange>& changes) {
  const int num_stages = entry.figures.num_stages;
  std::string summary;
  for (const RankChange& change : changes) {
    const size_t rank = static_cast<size_t>(change.replica) * num_stages + change.stage;
    WorkerEntry* worker =
        rank < entry.ranks.size() ? FindWorker(entry.ranks[rank].worker_id) : nullptr;
    if (worker == nullptr || worker->session == nullptr) {
      // The rank is lost or its worker reconnecting: a re-placement re-announces the settings.
      spdlog::warn("{}: cannot send stage {} replica {} its new compression (no session): {}",
                   entry.job.id(), change.stage, change.replica, change.reason);
      continue;
    }
    v1::CoordinatorMessage message;
    v1::ConfigChange* config = message.mutable_config();
    config->set_job_id(entry.job.id());
    config->set_generation(entry.job.generation());
    config->set_effective_step(change.effective_step);
    *config->mutable_forward() = change.forward;
    *config->mutable_backward() = change.backward;
    *config->mutable_data_parallel() = change.data_parallel;
    config->set_reason(change.reason);
    worker->session->Send(message);
    spdlog::info("{}: from step {}: {}", entry.job.id(), change.effective_step, change.reason);
    summary += (summary.empty() ? "" : "; ") + change.reason;
  }
  const std::vector<v1::LinkCompression> current = entry.adaptive->Current();
  *entry.job.mutable_compression() = {current.begin(), current.end()};
  if (!summary.empty()) {
    AppendEvent(entry, "adaptive compression from step " +
                           std::to_string(changes.front().effective_step) + ": " + summary);
  }
}

}  // namespace geotrain::coordinator
