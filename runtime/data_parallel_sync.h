// DataParallelSync: how the replicas of one pipeline stage agree on their parameters.
//
// The runtime calls the hooks in this order in every step, on every replica of the stage:
//
//   forward/backward of all micro-batches   (gradients accumulated in each parameter's grad())
//   BeforeClip(step, compress)     allreduce / powersgd / warm-up: average the gradients
//   [global-norm clipping; AdamW::UpdateMoments]
//   AfterMoments(step, compress)   quantized-momentum: average AdamW's first moments
//   [AdamW::ApplyUpdate]
//   AfterUpdate(step, compress)    cocktail: exchange model differences (in the background with
//                                  overlap: step t's exchange is applied in step t+1's AfterUpdate)
//   Flush()                        before a checkpoint, an evaluation or the end: wait for and
//                                  apply any exchange still in flight
//
// `compress` is false during the job's uncompressed warm-up: every mode then averages gradients
// with a plain all-reduce in BeforeClip (as AC-SGD, Optimus-CC and CocktailSGD all do).
//
// Parameters come in groups; each group is flattened into one bucket (a unit of compression). The
// runtime puts a tied embedding in a group of its own so that its two copies (first and last
// stage) stay identical under bucket-position-dependent codecs.
//
// Every collective goes through the stage's data-parallel Transport with the given timeout; an
// error names the mode and the operation. Not thread-safe (one runtime thread calls it; cocktail
// owns one background thread internally).
#pragma once

#include <ATen/ATen.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/status.h"
#include "models/transformer/parameter_table.h"
#include "net/device_all_reduce.h"
#include "net/transport.h"
#include "runtime/adamw.h"
#include "runtime/stage_assignment.h"
#include "runtime/traffic_counter.h"

namespace geotrain::runtime {

class DataParallelSync {
 public:
  virtual ~DataParallelSync() = default;

  virtual Status BeforeClip(int64_t step, bool compress) = 0;
  virtual Status AfterMoments(int64_t step, bool compress) = 0;
  virtual Status AfterUpdate(int64_t step, bool compress) = 0;
  virtual Status Flush() = 0;

  // State a checkpoint must keep to resume bit for bit (cocktail: the global copy and the server
  // errors; powersgd: error buffers and Q), as named float32 tensors; and its restore.
  virtual std::map<std::string, at::Tensor> StateTensors() = 0;
  virtual Status LoadStateTensors(const std::map<std::string, at::Tensor>& state) = 0;

  // The data-parallel traffic this rank sent so far: raw_bytes is what a float32 ring all-reduce
  // of the same tensors would send, wire_bytes what was actually sent.
  virtual TrafficCount traffic() const = 0;

  // Adaptive compression: new cocktail quant_bits / topk_ratio (0 keeps one) from the next
  // exchange on; an exchange in flight keeps the settings it started with, and codec state
  // (the server residuals) is kept. The replicas of the stage should make the same change at the
  // same step (the coordinator sends it so); frames name their bits and counts and the shared
  // random mask does not change, so a replica that applies it a step late still interoperates.
  // Modes without such a codec refuse (FailedPrecondition) and change nothing.
  virtual Status AdjustCodec(uint32_t quant_bits, double topk_ratio) {
    static_cast<void>(quant_bits);
    static_cast<void>(topk_ratio);
    return FailedPrecondition("this data-parallel mode has no adjustable codec");
  }
};

struct DataParallelContext {
  int stage = 0;                    // selects powersgd's selective stages
  net::Transport* group = nullptr;  // this stage's replicas; size() = D
                                    // (null: no replicas, D = 1)
  // The same replicas over NCCL (dp_backend.h): when set, the plain gradient all-reduce (mode
  // allreduce) sums a flat float32 tensor on the device through it instead of `group`; null:
  // everything goes through `group`.
  net::DeviceAllReduce* device_group = nullptr;
  std::vector<std::vector<models::NamedParameter>> groups;  // parameter groups (buckets)
  AdamW* optimizer = nullptr;                               // quantized-momentum reads its moments
  net::Timeout timeout{300000};
  uint64_t seed = 0;  // shared by all replicas
};

// Builds the sync `settings.mode` names. With D = 1 every hook does nothing.
StatusOr<std::unique_ptr<DataParallelSync>> CreateDataParallelSync(
    const DataParallelSettings& settings, DataParallelContext context);

}  // namespace geotrain::runtime
