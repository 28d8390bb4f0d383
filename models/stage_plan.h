// StagePlan: which part of a model one pipeline stage computes.
//
// A stage owns the transformer layers [first_layer, last_layer), plus the token (and position)
// embeddings when it is the first stage and the final norm, LM head and loss when it is the last.
// The flags are explicit rather than derived from the layer range because a stage may hold no
// layers at all (an embeddings-only first stage, a head-only last stage). Plain value; thread-safe
// to read.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"
#include "models/model_config.h"

namespace geotrain::models {

struct StagePlan {
  int64_t first_layer = 0;
  int64_t last_layer = 0;  // exclusive
  bool is_first = false;   // embeds token ids
  bool is_last = false;    // final norm + LM head; computes the loss

  // "layers [2, 4) + head"
  std::string ToString() const;
};

// The whole model as one stage.
StagePlan WholeModelPlan(const ModelConfig& config);

// Splits the layers into `num_stages` consecutive ranges whose sizes differ by at most one (the
// earlier stages take the extra layers). INVALID_ARGUMENT unless 1 <= num_stages <= num_layers.
StatusOr<std::vector<StagePlan>> SplitLayersEvenly(const ModelConfig& config, int64_t num_stages);

// INVALID_ARGUMENT naming the field when the range leaves [0, num_layers], is reversed, a first
// stage does not start at layer 0, a last stage does not end at the last layer, or the stage
// would compute nothing.
Status ValidateStagePlan(const StagePlan& plan, const ModelConfig& config);

}  // namespace geotrain::models
