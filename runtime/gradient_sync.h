// GradientSync: what happens to a rank's gradients between the schedule's last backward and
// AdamW, in this order:
//   1. the tied embedding (embedding_sync.h): the first and last stages' copies get the sum of
//      their two parts (fused with the replicas' average, or the pair's sum; compressed with
//      compress_embedding_sync once the warm-up is over);
//   2. the pipeline-shared tensors (DeBERTa's relative embeddings): their gradients are summed
//      over the stages, so every stage's copy gets the whole pipeline's;
//   3. the data-parallel sync's BeforeClip: the replicas average (data_parallel_sync.h);
//   4. the global norm: the squared norms of the stage summed over the pipeline, counting each
//      synced copy once;
// and, apart, the clipping to optimizer.max_grad_norm that the caller asks for with that norm.
//
// Every stage of every replica must call Synchronize at the same point of the same step: each
// part is a collective of its group. Errors name the part that failed. The tied-embedding sync's
// bytes go to the StepLedger. Not thread-safe: the runtime thread calls it.
#pragma once

#include <ATen/ATen.h>

#include <cstdint>

#include "common/status.h"
#include "runtime/stage_parts.h"
#include "runtime/step_ledger.h"

namespace geotrain::runtime {

class GradientSync {
 public:
  // `parts` and `ledger` must outlive the sync.
  GradientSync(const StageParts& parts, StepLedger* ledger);

  // Steps 1-4 for the step numbered `step` (0-based); `compress` is false during the warm-up.
  // Returns the replica's global gradient norm, before clipping.
  StatusOr<double> Synchronize(int64_t step, bool compress);

  // Scales every gradient so that a global norm of `global_norm` becomes at most
  // optimizer.max_grad_norm.
  void Clip(double global_norm) const;

 private:
  Status SyncTiedEmbedding(int64_t step, bool compress);
  // Adds the gradients of the pipeline-shared tensors over the stages.
  Status SumSharedGradients();
  double LocalSquaredNorm() const;

  const StageParts& parts_;
  StepLedger* ledger_;
  const at::Tensor* tied_embedding_ = nullptr;  // this stage's copy, when it takes part
};

}  // namespace geotrain::runtime
