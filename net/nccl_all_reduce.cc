// DeviceAllReduce over c10d ProcessGroupNCCL; compiled only against a CUDA build of LibTorch
// (GEOTRAIN_TORCH_CUDA). Written against the PyTorch 2.x wheel's LibTorch; it also fits 1.13's
// (a CUDA build of it, which Debian does not ship). The differences, marked "2.x:" below:
// - Work is c10d::Work (1.13: c10d::ProcessGroup::Work); `auto` takes either.
// - 2.x wants shutdown() before the group is destroyed (it warns otherwise, and the watchdog
//   threads may outlive main); 1.13 has no shutdown and its destructor does the same.
// - Later 2.x honour AllreduceOptions::timeout per operation; 1.13 uses the group's timeout.
//   Both are set to the caller's.
#include <ATen/ATen.h>
#include <c10/cuda/CUDAGuard.h>
#include <torch/version.h>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>

#include <exception>
#include <string>
#include <utility>

#include "net/device_all_reduce.h"

namespace geotrain::net {
namespace {

class NcclAllReduce final : public DeviceAllReduce {
 public:
  NcclAllReduce(const NcclAllReduceOptions& options,
                c10::intrusive_ptr<c10d::ProcessGroupNCCL> group)
      : options_(options), group_(std::move(group)) {}

  ~NcclAllReduce() override {
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
    try {
      group_->shutdown();  // 2.x: see the top of the file
    } catch (const std::exception&) {
      // Destroying after a failure: the communicator may be gone already; nothing to keep.
    }
#endif
  }

  int rank() const override { return options_.rank; }
  int size() const override { return options_.size; }

  Status AllReduceSum(const at::Tensor& values, Timeout timeout) override {
    GEOTRAIN_RETURN_IF_ERROR(CheckValues(values));
    try {
      // NCCL runs on the device that is current when the communicator is made and used.
      const c10::cuda::CUDAGuard on_device(static_cast<c10::DeviceIndex>(options_.device_index));
      std::vector<at::Tensor> tensors = {values};
      c10d::AllreduceOptions all_reduce;
      all_reduce.reduceOp = c10d::ReduceOp::SUM;
      all_reduce.timeout = timeout;
      auto work = group_->allreduce(tensors, all_reduce);
      // Stream-ordered: the current stream waits for NCCL's, the host does not.
      work->wait();
      return OkStatus();
    } catch (const std::exception& e) {
      return Unavailable("NCCL all-reduce of group " + options_.group_name + " (rank " +
                         std::to_string(options_.rank) + " of " + std::to_string(options_.size) +
                         "): " + e.what());
    }
  }

 private:
  Status CheckValues(const at::Tensor& values) const {
    const std::string where = "NCCL all-reduce of group " + options_.group_name + ": values ";
    if (!values.defined()) return InvalidArgument(where + "undefined");
    if (!values.is_cuda() || values.device().index() != options_.device_index) {
      return InvalidArgument(where + "on " + values.device().str() +
                             ", the group is on cuda:" + std::to_string(options_.device_index));
    }
    if (values.scalar_type() != at::kFloat || !values.is_contiguous()) {
      return InvalidArgument(where + "must be a contiguous float32 tensor");
    }
    return OkStatus();
  }

  NcclAllReduceOptions options_;
  c10::intrusive_ptr<c10d::ProcessGroupNCCL> group_;
};

}  // namespace

bool NcclBuilt() { return true; }

StatusOr<std::unique_ptr<DeviceAllReduce>> CreateNcclAllReduce(
    const NcclAllReduceOptions& options, c10::intrusive_ptr<c10d::Store> store) {
  if (options.size < 1 || options.rank < 0 || options.rank >= options.size) {
    return InvalidArgument("NCCL all-reduce: rank " + std::to_string(options.rank) +
                           " is outside a group of " + std::to_string(options.size));
  }
  if (!store) return InvalidArgument("NCCL all-reduce: no rendezvous store");
  if (options.timeout.count() <= 0) return InvalidArgument("NCCL all-reduce: timeout not positive");
  try {
    auto prefixed = c10::make_intrusive<c10d::PrefixStore>("geotrain/nccl/" + options.group_name,
                                                           std::move(store));
    auto nccl_options = c10d::ProcessGroupNCCL::Options::create();
    nccl_options->timeout = options.timeout;
    // Lazy: no communicator (and no wait for the peers) until the first collective.
    auto group = c10::make_intrusive<c10d::ProcessGroupNCCL>(prefixed, options.rank, options.size,
                                                             nccl_options);
    return std::unique_ptr<DeviceAllReduce>(new NcclAllReduce(options, std::move(group)));
  } catch (const std::exception& e) {
    return Unavailable("NCCL all-reduce: creating group " + options.group_name + ": " + e.what());
  }
}

}  // namespace geotrain::net
