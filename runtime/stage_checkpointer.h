// StageCheckpointer: this rank's part of a checkpoint, written and restored.
//
// A part holds the stage's weights (model), AdamW's state (optimizer), the data-parallel sync's
// state and the autoencoder halves (extra), and the step and data position (state); the store
// (checkpoint_store.h) makes it atomic and the checkpoint complete once every rank wrote. Codec
// state of the pipeline links is not saved: a resumed run starts with fresh link codecs on both
// ends (empty delta caches, whose first visits resend full activations; zero PowerSGD error and a
// fresh Q), which both ends do alike, so they never disagree.
//
// Restore validates the whole part (every tensor present with the model's shape, the data
// position readable, AdamW's and the sync's state accepted) before it changes any weight, so a
// refused checkpoint leaves the weights as they were.
//
// Not thread-safe: the runtime thread calls it. `parts` (with its checkpoint store) must outlive
// it.
#pragma once

#include <cstdint>
#include <optional>

#include "common/status.h"
#include "runtime/stage_parts.h"

namespace geotrain::runtime {

class StageCheckpointer {
 public:
  // `parts.checkpoints` must be set.
  explicit StageCheckpointer(StageParts& parts) : parts_(parts) {}

  // Writes the part of step `step` and prunes to training.keep_checkpoints. The data-parallel
  // sync must have been flushed (no exchange in flight).
  Status Write(int64_t step);

  // Restores the newest complete checkpoint; its step, or none when there is none.
  StatusOr<std::optional<int64_t>> RestoreNewest();

 private:
  StageParts& parts_;
};

}  // namespace geotrain::runtime
