// DeviceAllReduce: a sum over a group of ranks of a tensor that lives on a GPU, for the
// data-parallel gradients of replicas inside one region (runtime/dp_backend.h decides when).
//
// The one implementation is c10d ProcessGroupNCCL (nccl_all_reduce.cc), compiled only against a
// CUDA build of LibTorch; other builds link nccl_unavailable.cc, whose factory refuses. This
// header names no NCCL or CUDA type, so the runtime includes it in every build.
//
// Unlike Transport (transport.h), the operation is stream-ordered: AllReduceSum queues the sum
// on the device and makes the caller's current CUDA stream wait for it, without blocking the
// host; later kernels on that stream (and any host read of the result, which synchronises) see
// the sum. A stuck collective is found by ProcessGroupNCCL's watchdog after `timeout`, which
// then tears the process down (TORCH_NCCL_ASYNC_ERROR_HANDLING's default): NCCL cannot abandon
// one operation and go on, so a timeout ends the rank, and the job restarts from its checkpoint.
// NCCL's bytes are neither sealed (net/frame_sealer.h) nor counted per link (LinkStats).
//
// Thread-safety: one thread (the stage's training thread) calls AllReduceSum.
#pragma once

#include <ATen/core/Tensor.h>

#include <memory>
#include <string>
#include <torch/csrc/distributed/c10d/Store.hpp>

#include "common/status.h"
#include "net/transport.h"

namespace geotrain::net {

class DeviceAllReduce {
 public:
  virtual ~DeviceAllReduce() = default;

  virtual int rank() const = 0;
  virtual int size() const = 0;

  // Replaces `values` (a contiguous float32 tensor on this rank's device, the same number of
  // elements on every rank) by its sum over the group, in stream order (see above). Errors that
  // NCCL reports when queueing (a wrong device or dtype, a failed communicator) are INTERNAL or
  // UNAVAILABLE.
  virtual Status AllReduceSum(const at::Tensor& values, Timeout timeout) = 0;
};

struct NcclAllReduceOptions {
  int rank = 0;  // this process's rank in the group, 0 <= rank < size
  int size = 1;  // ranks in the group
  // The CUDA device of this rank (cuda:device_index). NCCL refuses two ranks of one group on the
  // same GPU.
  int device_index = 0;
  // The group's name in the store: its keys live under "geotrain/nccl/<group_name>/", apart from
  // the Gloo groups' "geotrain/net/...". New for every incarnation of a group, as Gloo's.
  std::string group_name = "default";
  // The watchdog's limit of one operation (and of the communicator's set-up at the first one).
  Timeout timeout = std::chrono::minutes(5);
};

// Whether this build has NCCL (its LibTorch is a CUDA build).
bool NcclBuilt();

// The group through `store`, the rendezvous store the Gloo transports use. The communicator is
// set up at the first AllReduceSum, which every rank of the group reaches in the same order as
// its other collectives. FAILED_PRECONDITION when !NcclBuilt().
StatusOr<std::unique_ptr<DeviceAllReduce>> CreateNcclAllReduce(
    const NcclAllReduceOptions& options, c10::intrusive_ptr<c10d::Store> store);

}  // namespace geotrain::net
