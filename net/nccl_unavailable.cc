// CreateNcclAllReduce where LibTorch is a CPU build (no GEOTRAIN_TORCH_CUDA): there is no NCCL,
// and no CUDA tensor for it to reduce either. runtime/dp_backend.h never asks for it there,
// since a stage refuses a CUDA device in such a build.
#include "net/device_all_reduce.h"

namespace geotrain::net {

bool NcclBuilt() { return false; }

StatusOr<std::unique_ptr<DeviceAllReduce>> CreateNcclAllReduce(const NcclAllReduceOptions&,
                                                               c10::intrusive_ptr<c10d::Store>) {
  return FailedPrecondition("NCCL all-reduce: this build's LibTorch has no CUDA (docs/gpu.md)");
}

}  // namespace geotrain::net
