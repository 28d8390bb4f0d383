// StageDevice: the at::Device a stage computes on (model.device), checked against this process.
//
// A CUDA device needs a CUDA build of LibTorch (GEOTRAIN_TORCH_CUDA) and a visible GPU with that
// index; otherwise the error names model.device and what is missing, so a job placed on a
// machine without a GPU fails at once, before it loads anything or waits for its peers.
// Thread-safe (asks LibTorch, keeps no state).
#pragma once

#include <ATen/ATen.h>

#include <optional>

#include "common/status.h"
#include "runtime/stage_assignment.h"

namespace geotrain::runtime {

// FAILED_PRECONDITION when the device is not available here ("model.device: cuda:1 asked for,
// but this process sees 1 CUDA device"); INVALID_ARGUMENT for a malformed name.
StatusOr<at::Device> StageDevice(const StageAssignment& assignment);

// The lower-precision type the stage's forward autocasts to (model.autocast), or none.
std::optional<at::ScalarType> AutocastDtype(const StageAssignment& assignment);

}  // namespace geotrain::runtime
