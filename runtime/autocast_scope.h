// CudaAutocastScope: CUDA autocast (automatic mixed precision) for the life of the object, the
// C++ form of `with torch.autocast("cuda", dtype=...)`.
//
// Inside it, ops on CUDA tensors that autocast lists (matmuls, linear layers, attention) run in
// the lower-precision type, casting their float32 inputs (the parameters: master weights stay
// float32, and so do their gradients and AdamW's state); precision-sensitive ops (softmax, norms,
// losses) run in float32. The runtime opens one around each micro-batch's forward and loss;
// the backward runs outside, in the types the forward chose, as PyTorch recommends.
//
// The destructor restores the previous state (enabled, type, cache switch) and, when it leaves
// the outermost scope, clears the autocast cache as torch.autocast's __exit__ does: the cache
// holds the lower-precision copies of the parameters made during the forward, which go stale
// at the next optimizer step.
//
// Autocast state is per thread: a scope affects, and must be destroyed on, the thread that made
// it. The LibTorch 1.13 / 2.x difference in the autocast API lives in the .cc.
#pragma once

#include <ATen/ATen.h>

#include <optional>

namespace geotrain::runtime {

class CudaAutocastScope {
 public:
  // Autocast to `dtype` (at::kBFloat16); nullopt makes a scope that changes nothing.
  explicit CudaAutocastScope(std::optional<at::ScalarType> dtype);
  ~CudaAutocastScope();
  CudaAutocastScope(const CudaAutocastScope&) = delete;
  CudaAutocastScope& operator=(const CudaAutocastScope&) = delete;

 private:
  bool active_ = false;
  bool previous_enabled_ = false;
  at::ScalarType previous_dtype_ = at::kHalf;
  bool previous_cache_enabled_ = true;
};

// This thread's CUDA autocast state (for tests and logs).
bool CudaAutocastEnabled();
at::ScalarType CudaAutocastDtype();

}  // namespace geotrain::runtime
