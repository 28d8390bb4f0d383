#include "coordinator/coordinator_metrics.h"

#include <cstdint>
#include <map>
#include <string>
#include <utility>

#include "coordinator/job_state_machine.h"

namespace geotrain::coordinator {
namespace {

using prometheus::ClientMetric;
using prometheus::MetricFamily;
using prometheus::MetricType;

struct WorkerStateLabel {
  v1::WorkerState state;
  const char* name;
};
// Every state a registered worker can be in: each gets a series, 0 when no worker is in it.
constexpr WorkerStateLabel kWorkerStates[] = {
    {v1::WORKER_STATE_IDLE, "idle"},
    {v1::WORKER_STATE_BUSY, "busy"},
    {v1::WORKER_STATE_DISCONNECTED, "disconnected"},
    {v1::WORKER_STATE_DEAD, "dead"},
};

constexpr v1::JobState kJobStates[] = {
    v1::JOB_STATE_QUEUED,     v1::JOB_STATE_PLACING,   v1::JOB_STATE_RUNNING,
    v1::JOB_STATE_RECOVERING, v1::JOB_STATE_SUCCEEDED, v1::JOB_STATE_FAILED,
    v1::JOB_STATE_CANCELLED,
};

// The `kind` label of the byte counters and where JobProgress keeps each kind's totals.
struct TrafficKindBytes {
  const char* kind;
  uint64_t (v1::JobProgress::*raw)() const;
  uint64_t (v1::JobProgress::*wire)() const;
};
const TrafficKindBytes kTrafficKinds[] = {
    {"activation", &v1::JobProgress::raw_bytes_forward, &v1::JobProgress::wire_bytes_forward},
    {"gradient", &v1::JobProgress::raw_bytes_backward, &v1::JobProgress::wire_bytes_backward},
    {"data_parallel", &v1::JobProgress::raw_bytes_dp, &v1::JobProgress::wire_bytes_dp},
    {"embedding", &v1::JobProgress::raw_bytes_embedding, &v1::JobProgress::wire_bytes_embedding},
};

// The `kind` label of a send kind, as the worker's traffic series name it.
const char* TrafficKindLabel(v1::TrafficKind kind) {
  switch (kind) {
    case v1::TRAFFIC_KIND_ACTIVATION:
      return "activation";
    case v1::TRAFFIC_KIND_GRADIENT:
      return "gradient";
    case v1::TRAFFIC_KIND_DATA_PARALLEL:
      return "data_parallel";
    case v1::TRAFFIC_KIND_EMBEDDING:
      return "embedding";
    default:
      return "unspecified";
  }
}

MetricFamily Family(const char* name, const char* help, MetricType type) {
  MetricFamily family;
  family.name = name;
  family.help = help;
  family.type = type;
  return family;
}

// One series of `family`, as a gauge or a counter according to the family's type.
void Add(MetricFamily& family, std::vector<ClientMetric::Label> labels, double value) {
  ClientMetric metric;
  metric.label = std::move(labels);
  if (family.type == MetricType::Counter) {
    metric.counter.value = value;
  } else {
    metric.gauge.value = value;
  }
  family.metric.push_back(std::move(metric));
}

MetricFamily WorkerCounts(const std::vector<v1::Worker>& workers) {
  MetricFamily family =
      Family("geotrain_coordinator_workers", "Registered workers by state", MetricType::Gauge);
  for (const WorkerStateLabel& state : kWorkerStates) {
    int64_t count = 0;
    for (const v1::Worker& worker : workers) count += worker.state() == state.state ? 1 : 0;
    Add(family, {{"state", state.name}}, static_cast<double>(count));
  }
  return family;
}

MetricFamily JobCounts(const std::map<v1::JobState, int64_t>& count_by_state) {
  MetricFamily family = Family("geotrain_coordinator_jobs", "Jobs by state", MetricType::Gauge);
  for (v1::JobState state : kJobStates) {
    const auto it = count_by_state.find(state);
    Add(family, {{"state", JobStateName(state)}},
        static_cast<double>(it == count_by_state.end() ? 0 : it->second));
  }
  return family;
}

}  // namespace

std::vector<MetricFamily> CoordinatorMetricFamilies(const std::vector<v1::Worker>& workers,
                                                    const JobWindow& jobs) {
  MetricFamily info =
      Family("geotrain_job_info", "1 per job; the labels name it and its state", MetricType::Gauge);
  MetricFamily step = Family("geotrain_job_step", "Steps every rank completed", MetricType::Gauge);
  MetricFamily total_steps =
      Family("geotrain_job_total_steps", "training.steps (0 while unknown)", MetricType::Gauge);
  MetricFamily loss =
      Family("geotrain_job_loss", "Training loss of the newest complete step", MetricType::Gauge);
  MetricFamily eval_loss =
      Family("geotrain_job_eval_loss", "Newest evaluation loss (absent before the first)",
             MetricType::Gauge);
  MetricFamily eval_score = Family(
      "geotrain_job_eval_score",
      "Newest evaluation score of a sequence classifier: accuracy, f1 or mcc", MetricType::Gauge);
  MetricFamily tokens_per_second =
      Family("geotrain_job_tokens_per_second",
             "Tokens per second over the recent steps, all replicas", MetricType::Gauge);
  MetricFamily wire_bytes_per_second =
      Family("geotrain_job_wire_bytes_per_second",
             "Bytes on the wire per second, all ranks, recent steps", MetricType::Gauge);
  MetricFamily step_seconds =
      Family("geotrain_job_step_seconds", "Recent mean step time", MetricType::Gauge);
  MetricFamily raw_bytes =
      Family("geotrain_job_raw_bytes_total", "Bytes before compression sent by every rank",
             MetricType::Counter);
  MetricFamily wire_bytes = Family("geotrain_job_wire_bytes_total",
                                   "Bytes on the wire sent by every rank", MetricType::Counter);
  MetricFamily checkpoint_step =
      Family("geotrain_job_checkpoint_step", "Newest checkpoint every rank wrote (0: none)",
             MetricType::Gauge);
  MetricFamily restarts =
      Family("geotrain_job_restarts_total", "Re-placements after failures", MetricType::Counter);
  MetricFamily steps_lost = Family("geotrain_job_steps_lost_total",
                                   "Steps done and lost to failures", MetricType::Counter);
  MetricFamily link_bits =
      Family("geotrain_job_link_bits", "Adaptive compression: bits of a rank's sends of one kind",
             MetricType::Gauge);
  MetricFamily link_topk = Family("geotrain_job_link_topk_ratio",
                                  "Adaptive compression: cocktail top-k ratio of a rank's "
                                  "data-parallel sends",
                                  MetricType::Gauge);
  MetricFamily link_changes =
      Family("geotrain_job_link_compression_changes_total",
             "Adaptive compression: changes of a rank's sends of one kind", MetricType::Counter);

  for (const v1::Job& job : jobs.jobs) {
    const v1::JobProgress& progress = job.progress();
    const ClientMetric::Label id{"job_id", job.id()};
    Add(info, {id, {"name", job.name()}, {"state", JobStateName(job.state())}}, 1);
    Add(step, {id}, static_cast<double>(progress.step()));
    Add(total_steps, {id}, static_cast<double>(progress.total_steps()));
    // Before its first complete step a job has no loss; a 0 would pull every loss panel down.
    if (progress.step() > 0) Add(loss, {id}, progress.loss());
    if (progress.eval_step() > 0) Add(eval_loss, {id}, progress.eval_loss());
    if (progress.has_eval_scores()) {
      const v1::EvalScores& scores = progress.eval_scores();
      Add(eval_score, {id, {"score", "accuracy"}}, scores.accuracy());
      Add(eval_score, {id, {"score", "f1"}}, scores.f1());
      Add(eval_score, {id, {"score", "mcc"}}, scores.mcc());
    }
    Add(tokens_per_second, {id}, progress.tokens_per_second());
    Add(wire_bytes_per_second, {id}, progress.wire_bytes_per_second());
    Add(step_seconds, {id}, progress.step_seconds());
    for (const TrafficKindBytes& kind : kTrafficKinds) {
      Add(raw_bytes, {id, {"kind", kind.kind}}, static_cast<double>((progress.*kind.raw)()));
      Add(wire_bytes, {id, {"kind", kind.kind}}, static_cast<double>((progress.*kind.wire)()));
    }
    Add(checkpoint_step, {id}, static_cast<double>(progress.checkpoint_step()));
    Add(restarts, {id}, job.restarts());
    Add(steps_lost, {id}, static_cast<double>(job.steps_lost()));
    for (const v1::LinkCompression& link : job.compression()) {
      std::vector<ClientMetric::Label> labels = {id,
                                                 {"stage", std::to_string(link.stage())},
                                                 {"replica", std::to_string(link.replica())},
                                                 {"kind", TrafficKindLabel(link.kind())}};
      Add(link_bits, labels, link.bits());
      if (link.topk_ratio() > 0) Add(link_topk, labels, link.topk_ratio());
      Add(link_changes, labels, link.changes());
    }
  }

  std::vector<MetricFamily> families;
  families.reserve(19);
  families.push_back(WorkerCounts(workers));
  families.push_back(JobCounts(jobs.count_by_state));
  for (MetricFamily* family :
       {&info, &step, &total_steps, &loss, &eval_loss, &eval_score, &tokens_per_second,
        &wire_bytes_per_second, &step_seconds, &raw_bytes, &wire_bytes, &checkpoint_step, &restarts,
        &steps_lost, &link_bits, &link_topk, &link_changes}) {
    families.push_back(std::move(*family));
  }
  return families;
}

std::vector<MetricFamily> LinkMetricFamilies(const std::vector<v1::Worker>& workers,
                                             const std::vector<LinkFigures>& links) {
  MetricFamily throughput =
      Family("geotrain_coordinator_link_throughput_bytes_per_second",
             "Bias-corrected EWMA of a directed link's throughput, passive samples and probes",
             MetricType::Gauge);
  MetricFamily latency =
      Family("geotrain_coordinator_link_latency_seconds",
             "EWMA of a directed link's one-way latency samples", MetricType::Gauge);
  MetricFamily samples =
      Family("geotrain_coordinator_link_samples_total",
             "Throughput samples behind a link's estimate, by source", MetricType::Counter);
  MetricFamily failures = Family("geotrain_coordinator_link_probe_failures_total",
                                 "Probes of a link that failed", MetricType::Counter);
  std::map<std::string, std::string> regions;
  for (const v1::Worker& worker : workers) regions[worker.id()] = worker.capabilities().region();
  const auto region = [&](const std::string& id) {
    const auto it = regions.find(id);
    return it == regions.end() ? std::string() : it->second;
  };
  for (const LinkFigures& link : links) {
    const std::vector<ClientMetric::Label> ends = {{"src_worker", link.src_worker_id},
                                                   {"dst_worker", link.dst_worker_id},
                                                   {"src_region", region(link.src_worker_id)},
                                                   {"dst_region", region(link.dst_worker_id)}};
    // An unmeasured link has no series: a 0 would read as a dead link on every panel.
    if (link.samples > 0) {
      Add(throughput, ends, link.throughput_bytes_per_second);
      std::vector<ClientMetric::Label> passive = ends;
      passive.push_back({"source", "passive"});
      Add(samples, std::move(passive), static_cast<double>(link.passive_samples()));
      std::vector<ClientMetric::Label> probe = ends;
      probe.push_back({"source", "probe"});
      Add(samples, std::move(probe), static_cast<double>(link.probe_samples));
    }
    if (link.latency_samples > 0) Add(latency, ends, link.latency_seconds);
    // Every known link, 0 included: a counter that appears only at its first failure cannot be
    // rate()d across that failure.
    Add(failures, {ends[0], ends[1]}, static_cast<double>(link.probe_failures));
  }
  std::vector<MetricFamily> families;
  for (MetricFamily* family : {&throughput, &latency, &samples, &failures}) {
    families.push_back(std::move(*family));
  }
  return families;
}

MetricFamily StateStoreFailedFamily(bool failed) {
  MetricFamily family = Family("geotrain_coordinator_state_store_failed",
                               "1 once a state store write failed: no changes are accepted until "
                               "the coordinator is restarted",
                               MetricType::Gauge);
  Add(family, {}, failed ? 1 : 0);
  return family;
}

std::vector<MetricFamily> CoordinatorMetrics::Collect() const {
  const std::vector<v1::Worker> workers = core_->ListWorkers(/*include_dead=*/true);
  std::vector<MetricFamily> families =
      CoordinatorMetricFamilies(workers, core_->ListJobWindow(kMetricsFinishedJobs));
  for (MetricFamily& family : LinkMetricFamilies(workers, core_->ListLinkFigures())) {
    families.push_back(std::move(family));
  }
  return families;
}

std::vector<MetricFamily> StateStoreMetrics::Collect() const {
  return {StateStoreFailedFamily(!core_->StateStoreFailure().empty())};
}

}  // namespace geotrain::coordinator
