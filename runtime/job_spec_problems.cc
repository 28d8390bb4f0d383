#include "runtime/job_spec_problems.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <utility>

#include "runtime/job_file_log.h"

namespace geotrain::runtime {
namespace {

// Limits on what a job may ask for. Specs arrive over the network (SubmitJob), and the
// coordinator sizes per-rank tables by stages x replicas, so absurd values are refused here
// rather than allocated. Far beyond any real job: the largest pipelines have ~100 stages.
constexpr int kMaxStages = 1024;
constexpr int kMaxReplicas = 4096;
constexpr int64_t kMaxRanks = 65536;
// The name appears in logs, events and metric labels.
constexpr size_t kMaxJobNameBytes = 256;

// StageAssignment names struct fields; the user wrote YAML keys (BindJob's names).
std::string YamlPathOf(const std::string& field) {
  static const std::map<std::string, std::string> kRenames = {
      {"model_dir", "model.dir"},
      {"model_init_seed", "model.init_seed"},
      {"dtype", "model.dtype"},
      {"device", "model.device"},
      {"autocast", "model.autocast"},
      {"first_layer, last_layer", "model.layers"},
      {"num_stages", "pipeline.stages"},
      {"dp_size", "data_parallel.replicas"},
      {"data.tokenizer_dir", "data.tokenizer"},
      {"optimizer.lr_warmup_steps", "optimizer.warmup_steps"},
      {"optimizer.lr_decay", "optimizer.decay"},
      {"training.micro_batch_size", "pipeline.micro_batch_size"},
      {"training.micro_batches", "pipeline.micro_batches"},
      {"training.schedule", "pipeline.schedule"},
      {"training.total_steps", "training.steps"},
      {"training.profile_path", "training.profile"},
  };
  if (const auto it = kRenames.find(field); it != kRenames.end()) return it->second;
  const std::string dp = "compression.data_parallel";
  if (field == dp || IsWithin(field, dp)) return "data_parallel" + field.substr(dp.size());
  return field;
}

// model.layers: one range per stage, contiguous from layer 0.
std::vector<FieldProblem> LayerRangeProblems(const JobSpec& spec) {
  if (spec.stage_layers.empty()) return {};
  if (static_cast<int>(spec.stage_layers.size()) != spec.num_stages) {
    return {{"model.layers",
             std::to_string(spec.stage_layers.size()) + " ranges for " +
                 std::to_string(spec.num_stages) + " stages",
             {"pipeline.stages"}}};
  }
  std::vector<FieldProblem> problems;
  int64_t next = 0;
  for (size_t i = 0; i < spec.stage_layers.size(); ++i) {
    const auto& [first, last] = spec.stage_layers[i];
    if (first != next || last <= first) {
      problems.push_back({"model.layers[" + std::to_string(i) + "]",
                          "[" + std::to_string(first) + ", " + std::to_string(last) +
                              ") is not a non-empty range starting at layer " +
                              std::to_string(next)});
    }
    next = last;
  }
  return problems;
}

}  // namespace

std::vector<FieldProblem> JobProblems(const JobSpec& spec) {
  std::vector<FieldProblem> problems;
  if (spec.name.empty()) problems.push_back({"name", "missing", {}});
  if (spec.name.size() > kMaxJobNameBytes) {
    problems.push_back({"name",
                        std::to_string(spec.name.size()) + " bytes exceed the limit of " +
                            std::to_string(kMaxJobNameBytes),
                        {}});
  }
  if (std::any_of(spec.name.begin(), spec.name.end(),
                  [](char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7f; })) {
    problems.push_back({"name", "contains a control character", {}});
  }
  if (spec.num_stages > kMaxStages) {
    problems.push_back(
        {"pipeline.stages",
         std::to_string(spec.num_stages) + " exceeds the limit of " + std::to_string(kMaxStages),
         {}});
  }
  if (spec.dp_size > kMaxReplicas) {
    problems.push_back(
        {"data_parallel.replicas",
         std::to_string(spec.dp_size) + " exceeds the limit of " + std::to_string(kMaxReplicas),
         {}});
  }
  if (spec.num_stages <= kMaxStages && spec.dp_size <= kMaxReplicas &&
      static_cast<int64_t>(spec.num_stages) * spec.dp_size > kMaxRanks) {
    problems.push_back({"data_parallel.replicas",
                        std::to_string(spec.num_stages) + " stages x " +
                            std::to_string(spec.dp_size) + " replicas exceed the limit of " +
                            std::to_string(kMaxRanks) + " ranks",
                        {"pipeline.stages"}});
  }
  for (FieldProblem problem : AssignmentFor(spec, 0, 0).Problems()) {
    problem.field = YamlPathOf(problem.field);
    for (std::string& other : problem.also_reads) other = YamlPathOf(other);
    problems.push_back(std::move(problem));
  }
  for (FieldProblem& problem : LayerRangeProblems(spec)) problems.push_back(std::move(problem));
  if (spec.max_restarts < 0) {
    problems.push_back(
        {"training.max_restarts", std::to_string(spec.max_restarts) + " is negative", {}});
  }
  return problems;
}

}  // namespace geotrain::runtime
