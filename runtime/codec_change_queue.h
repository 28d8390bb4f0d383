// CodecChangeQueue: adaptive compression's changes to this rank's sends, held until their step.
//
// Schedule queues a CodecChange (config_change.h) for the first step numbered >= its
// effective_step (StepResult::step numbering); ApplyDue, called between steps when the send
// queues are flushed, applies every change due at the step about to run, in effective_step order,
// then in the order they were scheduled; a late one applies at the next step. Applying:
//   forward_bits / backward_bits  reconfigure the downstream / upstream TensorSender's codec in
//                                 place (its state, such as a delta cache, is kept);
//   dp_bits / dp_topk_ratio       go to the data-parallel sync's AdjustCodec (cocktail), whose
//                                 exchange in flight keeps the settings it started with.
// Frames name their bits, so receivers follow without being told. A change the codec or mode
// cannot take, or one for a link the stage does not have, is logged and skipped: it never stops
// training. Each applied change logs "step 12: forward bits 8 -> 4 (reason)".
//
// Not thread-safe: the runtime thread calls it. The senders and the sync must outlive it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/config_change.h"
#include "runtime/data_parallel_sync.h"
#include "runtime/stage_assignment.h"
#include "runtime/tensor_link.h"

namespace geotrain::runtime {

class CodecChangeQueue {
 public:
  // `to_next` / `to_prev` may be null where the stage has no such link.
  CodecChangeQueue(const StageAssignment& assignment, TensorSender* to_next, TensorSender* to_prev,
                   DataParallelSync* data_parallel);

  void Schedule(const CodecChange& change);
  // Applies the changes due at the step numbered `step` and forgets them.
  void ApplyDue(int64_t step);

  // The data-parallel settings as the applied changes left them (the step reports' bits); the
  // job's stay in the assignment, since the peers' frames arrive in those.
  const DataParallelSettings& data_parallel_settings() const { return data_parallel_settings_; }

 private:
  void AdjustPipelineLink(TensorSender* sender, const char* direction, uint32_t bits,
                          const std::string& when, const std::string& why);
  void AdjustDataParallel(const CodecChange& change, const std::string& when,
                          const std::string& why);

  const int stage_;
  const int dp_size_;
  TensorSender* to_next_;
  TensorSender* to_prev_;
  DataParallelSync* data_parallel_;
  std::vector<CodecChange> scheduled_;  // sorted by effective_step, until applied
  DataParallelSettings data_parallel_settings_;
};

}  // namespace geotrain::runtime
