#include "runtime/autocast_scope.h"

#include <ATen/autocast_mode.h>
#include <torch/version.h>

namespace geotrain::runtime {
namespace {

// 2.x: PyTorch 2.4 made autocast per device type (is_autocast_enabled(at::kCUDA),
// set_autocast_dtype(at::kCUDA, ...)) and deprecated the CUDA-only names that LibTorch 1.13 has
// (is_enabled, set_enabled, get/set_autocast_gpu_dtype), which warn on every call there.
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
bool IsEnabled() { return at::autocast::is_autocast_enabled(at::kCUDA); }
void SetEnabled(bool enabled) { at::autocast::set_autocast_enabled(at::kCUDA, enabled); }
at::ScalarType Dtype() { return at::autocast::get_autocast_dtype(at::kCUDA); }
void SetDtype(at::ScalarType dtype) { at::autocast::set_autocast_dtype(at::kCUDA, dtype); }
#else
bool IsEnabled() { return at::autocast::is_enabled(); }
void SetEnabled(bool enabled) { at::autocast::set_enabled(enabled); }
at::ScalarType Dtype() { return at::autocast::get_autocast_gpu_dtype(); }
void SetDtype(at::ScalarType dtype) { at::autocast::set_autocast_gpu_dtype(dtype); }
#endif

}  // namespace

CudaAutocastScope::CudaAutocastScope(std::optional<at::ScalarType> dtype) {
  if (!dtype) return;
  active_ = true;
  previous_enabled_ = IsEnabled();
  previous_dtype_ = Dtype();
  previous_cache_enabled_ = at::autocast::is_autocast_cache_enabled();
  SetEnabled(true);
  SetDtype(*dtype);
  at::autocast::increment_nesting();
  at::autocast::set_autocast_cache_enabled(true);
}

CudaAutocastScope::~CudaAutocastScope() {
  if (!active_) return;
  if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
  SetEnabled(previous_enabled_);
  SetDtype(previous_dtype_);
  at::autocast::set_autocast_cache_enabled(previous_cache_enabled_);
}

bool CudaAutocastEnabled() { return IsEnabled(); }
at::ScalarType CudaAutocastDtype() { return Dtype(); }

}  // namespace geotrain::runtime
