// InitRandomModel: writes a freshly initialised Hugging Face model directory.
//
// The directory holds config.json (ModelConfigToJson) and model.safetensors (float32) with the
// tensors of ModelTensorSpecs, initialised as transformers initialises them: weights and
// embeddings N(0, initializer_range), GPT-2's residual projections scaled by 1/sqrt(2 n_layer),
// biases zero, norm weights one. Values come from counter-based randomness keyed by (seed, tensor
// name), so a seed gives the same model on every machine and with any LibTorch, and adding a
// tensor never changes the others. Both files are written atomically. Thread-safe (no shared
// state); the caller must not write the same directory concurrently.
#pragma once

#include <cstdint>
#include <string>

#include "common/status.h"
#include "models/model_config.h"

namespace geotrain::models {

// Creates `out_dir` (and its parents) when missing; overwrites config.json and model.safetensors.
// FAILED_PRECONDITION when `out_dir` holds a sharded checkpoint index.
Status InitRandomModel(const ModelConfig& config, const std::string& out_dir, uint64_t seed);

}  // namespace geotrain::models
