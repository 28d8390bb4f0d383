// Integer and bool tensors of a checkpoint as JSON: the "integer_tensors" of state.json.
//
// The safetensors writer offers only float types, and the integer tensors a rank saves are small
// counters ("adamw.step", codec step counts), so CheckpointStore keeps them in state.json as
// {"dtype": "int64", "shape": [2], "values": [3, 4]}, at most kMaxIntegerTensorElements each, and
// reads them back with their dtype. Reading validates every field of hostile input and names it
// ("<file>: <path>.shape: too many elements"). Thread-safe (no shared state).
#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "common/status.h"

namespace geotrain::runtime {

// Largest integer tensor kept in state.json (counters, not data).
constexpr int64_t kMaxIntegerTensorElements = 1 << 16;

// `tensor` (an integer or bool dtype) as its JSON entry; `field` names it in errors
// (INVALID_ARGUMENT: another dtype, too many elements).
StatusOr<nlohmann::json> IntegerTensorToJson(const at::Tensor& tensor, const std::string& field);

// One entry back into a CPU tensor of its dtype; DATA_LOSS errors are "<file>: <path>...: why".
StatusOr<at::Tensor> IntegerTensorFromJson(const nlohmann::json& entry, const std::string& file,
                                           const std::string& path);

}  // namespace geotrain::runtime
