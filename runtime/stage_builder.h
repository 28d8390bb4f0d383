// BuildStageParts: turns a StageAssignment and its transports into the parts one rank trains
// with (stage_parts.h), in this order:
//   1. the assignment and the links checked against each other, the device (a job placed on a
//      machine without its GPU fails before anything is loaded);
//   2. the stage's layers (model_dir, model.layers or an even split, dtype, device) and the
//      data (a task that does not fit the model is refused, naming data.task);
//   3. the MCBench autoencoder halves at the stage's output and input;
//   4. the pipeline-shared tensors (every stage of a pipelined DeBERTa holds one);
//   5. the tied-embedding sync, then AdamW and the data-parallel sync over the parameter groups
//      (a tied embedding gets a bucket of its own, or none with the fused sync);
//   6. the pipeline link ends with their codecs, on the stage's device;
//   7. the step count (training.epochs), the schedule and the compression warm-up in steps;
//   8. the checkpoint store and the trace.
// Errors name the field at fault. Nothing is sent or received: the links' peers need not have
// started building.
#pragma once

#include <memory>

#include "common/status.h"
#include "runtime/stage_assignment.h"
#include "runtime/stage_links.h"
#include "runtime/stage_parts.h"

namespace geotrain::runtime {

// `links` must hold the transports stage_links.h describes for `assignment`.
StatusOr<std::unique_ptr<StageParts>> BuildStageParts(const StageAssignment& assignment,
                                                      StageLinks links);

}  // namespace geotrain::runtime
