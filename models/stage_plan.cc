#include "models/stage_plan.h"

namespace geotrain::models {

std::string StagePlan::ToString() const {
  std::string text =
      "layers [" + std::to_string(first_layer) + ", " + std::to_string(last_layer) + ")";
  if (is_first) text = "embeddings + " + text;
  if (is_last) text += " + head";
  return text;
}

StagePlan WholeModelPlan(const ModelConfig& config) {
  return StagePlan{0, config.num_layers, true, true};
}

StatusOr<std::vector<StagePlan>> SplitLayersEvenly(const ModelConfig& config, int64_t num_stages) {
  if (num_stages < 1 || num_stages > config.num_layers) {
    return InvalidArgument("num_stages: " + std::to_string(num_stages) + " is not in [1, " +
                           std::to_string(config.num_layers) + "] (the number of layers)");
  }
  std::vector<StagePlan> plans;
  const int64_t base = config.num_layers / num_stages;
  const int64_t extra = config.num_layers % num_stages;
  int64_t next = 0;
  for (int64_t i = 0; i < num_stages; ++i) {
    const int64_t count = base + (i < extra ? 1 : 0);
    plans.push_back(StagePlan{next, next + count, i == 0, i == num_stages - 1});
    next += count;
  }
  return plans;
}

Status ValidateStagePlan(const StagePlan& plan, const ModelConfig& config) {
  const std::string where = "stage plan (" + plan.ToString() + "): ";
  if (plan.first_layer < 0 || plan.first_layer > plan.last_layer ||
      plan.last_layer > config.num_layers) {
    return InvalidArgument(where + "layer range is not within [0, " +
                           std::to_string(config.num_layers) + "]");
  }
  if (plan.is_first && plan.first_layer != 0) {
    return InvalidArgument(where + "is_first: a first stage must start at layer 0");
  }
  if (plan.is_last && plan.last_layer != config.num_layers) {
    return InvalidArgument(where + "is_last: a last stage must end at layer " +
                           std::to_string(config.num_layers));
  }
  if (!plan.is_first && !plan.is_last && plan.first_layer == plan.last_layer) {
    return InvalidArgument(where + "the stage computes nothing");
  }
  return OkStatus();
}

}  // namespace geotrain::models
