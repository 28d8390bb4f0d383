// Buckets: how the data-parallel modes see a parameter group — one flat float32 CPU vector.
//
// Every mode moves whole groups (a gradient all-reduce, a model difference, a first moment) as one
// contiguous float32 buffer, because the transport and the codecs work on flat host memory and a
// bucket costs one collective instead of one per tensor. The parameters themselves may live on
// any device and in any floating dtype; the copies convert.
//
// Internal to runtime/ (data_parallel_sync.cc and the dp_*.cc modes). Not thread-safe: the
// runtime thread owns the parameters; the cocktail exchange thread only reads snapshots.
#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <vector>

#include "models/transformer/parameter_table.h"

namespace geotrain::runtime {

// The parameters of one group and their offsets in the group's bucket.
class ParameterBucket {
 public:
  explicit ParameterBucket(std::vector<models::NamedParameter> parameters);

  int64_t elements() const { return elements_; }
  const std::vector<models::NamedParameter>& parameters() const { return parameters_; }

  // Gives every parameter without a gradient a zero one, so that all replicas end a sync with
  // the same set of defined gradients whoever computed what.
  void DefineMissingGrads() const;
  // A CPU float32 copy of the gradients (DefineMissingGrads first).
  at::Tensor GatherGrads() const;
  // The same as one float32 tensor on the device of the first parameter (NCCL's input).
  at::Tensor GatherGradsOnDevice() const;
  // Copies `flat` (as GatherGrads returns it) into the gradients.
  void ScatterGrads(const at::Tensor& flat) const;

  // A CPU float32 copy of the parameter values.
  at::Tensor GatherParams() const;
  // Adds `flat` (as GatherParams returns it) to the parameter values in place (outside
  // autograd).
  void AddToParams(const at::Tensor& flat) const;

 private:
  std::vector<models::NamedParameter> parameters_;
  std::vector<int64_t> offsets_;
  int64_t elements_ = 0;
};

// Concatenates `tensors` (any devices, floating dtypes) into a new float32 vector on `device`.
at::Tensor FlattenOn(const std::vector<at::Tensor>& tensors, at::Device device);
// The same on the CPU. Tensors on a GPU are flattened there first, so that they cross to the
// host in one copy rather than one synchronising copy each.
at::Tensor FlattenToCpu(const std::vector<at::Tensor>& tensors);
// Copies consecutive slices of `flat` into `tensors` (shapes, devices and dtypes kept); a CPU
// `flat` crosses to the tensors' GPU in one copy first.
void CopyFromFlat(const at::Tensor& flat, const std::vector<at::Tensor>& tensors);

// The part of a bucket of `elements` values that replica `index` of `replicas` owns in the
// sharded exchanges: contiguous, sizes differing by at most one.
struct ChunkRange {
  int64_t begin = 0;
  int64_t size = 0;
};
ChunkRange ChunkOf(int64_t elements, int replicas, int index);

// Bytes one rank sends in a float32 ring all-reduce of `elements` values over `replicas` ranks:
// the baseline every mode's traffic is compared with.
uint64_t RingAllReduceBytes(int64_t elements, int replicas);

}  // namespace geotrain::runtime
