// ParameterTable: the trainable tensors of one stage, loaded from a checkpoint by TensorSpec.
//
// Load reads exactly the tensors of the given specs (model_layout.h) from a SafetensorsCheckpoint,
// checks each shape against the config, converts to the stage's device and dtype and marks it
// trainable (a leaf with requires_grad). A family's parts then Get their tensors by spec name;
// CheckComplete catches any disagreement between model_layout and a family's code (a name asked
// for but not listed, or listed and loaded but never used, whose gradient would silently stay
// zero). Owns the tensors (shared with the parts that Get them). Not thread-safe while loading;
// read-only afterwards.
#pragma once

#include <ATen/ATen.h>

#include <map>
#include <string>
#include <vector>

#include "common/status.h"
#include "models/model_layout.h"
#include "models/safetensors_checkpoint.h"

namespace geotrain::models {

// A trainable tensor under its Hugging Face name.
struct NamedParameter {
  std::string name;
  at::Tensor tensor;
};

class ParameterTable {
 public:
  // Errors name the tensor: NOT_FOUND when the checkpoint lacks it (under both its name and its
  // legacy name), INVALID_ARGUMENT when its shape differs from the spec or its dtype is not
  // F32/F16/BF16.
  static StatusOr<ParameterTable> Load(SafetensorsCheckpoint& checkpoint,
                                       const std::vector<TensorSpec>& specs, at::Device device,
                                       at::ScalarType dtype);

  // The tensor of spec `name`. A name without a spec records an INTERNAL error (reported by
  // CheckComplete) and yields an undefined tensor.
  at::Tensor Get(const std::string& name);
  // Get(name) when `present`, else an undefined tensor (an optional bias).
  at::Tensor GetIf(bool present, const std::string& name) {
    return present ? Get(name) : at::Tensor();
  }

  // OK when every Get found its tensor and every loaded tensor was asked for.
  Status CheckComplete() const;

  // In spec order, named as in the checkpoint (so a GPT-2 stage loaded from a checkpoint without
  // the "transformer." prefix saves without it too).
  std::vector<NamedParameter> Parameters() const;

 private:
  struct Entry {
    std::string checkpoint_name;
    at::Tensor tensor;
    bool used = false;
  };
  std::vector<std::string> order_;        // spec names, in spec order
  std::map<std::string, Entry> entries_;  // by spec name
  std::string missing_;                   // first name asked for without a spec
};

}  // namespace geotrain::models
