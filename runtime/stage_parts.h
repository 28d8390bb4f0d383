// StageParts: everything one rank trains with, as BuildStageParts (stage_builder.h) makes it.
//
// StageRuntime owns one StageParts on the heap and never moves it; the step's parts
// (PipelineExecutor, GradientSync, CodecChangeQueue, StageCheckpointer, StepLedger) borrow from
// it for the runtime's life. Fields are in dependency order: the transports first, the link ends
// and the syncs that use them after, so destruction (in reverse) stops the users before what
// they use (a link end's send thread before the trace it writes to and the transport it sends
// on).
//
// Like StageRuntime it belongs to one thread (the links' send threads are internal).
#pragma once

#include <ATen/ATen.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "models/transformer/stage.h"
#include "runtime/adamw.h"
#include "runtime/checkpoint_store.h"
#include "runtime/data_parallel_sync.h"
#include "runtime/embedding_sync.h"
#include "runtime/pipeline_schedule.h"
#include "runtime/stage_assignment.h"
#include "runtime/stage_links.h"
#include "runtime/tensor_link.h"
#include "runtime/trace_writer.h"
#include "runtime/training_data.h"

namespace geotrain::runtime {

// The four ends of this stage's pipeline links; null where the stage has no such neighbour.
struct PipelineLinkEnds {
  std::unique_ptr<TensorSender> to_next;      // activations
  std::unique_ptr<TensorReceiver> from_prev;  // activations
  std::unique_ptr<TensorSender> to_prev;      // gradients
  std::unique_ptr<TensorReceiver> from_next;  // gradients
};

struct StageParts {
  // The job as given, with training.total_steps resolved from training.epochs.
  StageAssignment assignment;
  StageLinks links;
  std::unique_ptr<TraceWriter> trace;      // disabled without training.profile_path
  at::Device device = at::kCPU;            // model.device
  std::optional<at::ScalarType> autocast;  // model.autocast's type, or none
  std::unique_ptr<models::Stage> stage;
  std::unique_ptr<TrainingData> data;
  // Every trainable tensor of the rank: the stage's, then any autoencoder halves.
  std::vector<models::NamedParameter> parameters;
  std::optional<models::NamedParameter> encoder;  // autoencoder half at our output
  std::optional<models::NamedParameter> decoder;  // autoencoder half at our input
  // Tensors every stage keeps a copy of (DeBERTa's relative embeddings), when the pipeline has
  // more than one stage: their gradients are summed over it each step.
  std::vector<models::NamedParameter> pipeline_shared;
  // This stage holds a tied embedding copy that the embedding group keeps in sync.
  bool tied_embedding_sync = false;
  std::unique_ptr<CompressedEmbeddingSync> compressed_embedding;  // compress_embedding_sync only
  std::unique_ptr<AdamW> optimizer;
  std::unique_ptr<DataParallelSync> data_parallel;
  PipelineLinkEnds ends;
  std::vector<PipelineOp> schedule;
  int64_t warmup_steps = 0;  // compression warm-up in steps (steps and epochs combined)
  std::optional<CheckpointStore> checkpoints;  // none without training.checkpoint_dir

  // Every link and collective waits at most training.timeout_seconds.
  net::Timeout timeout() const {
    return net::Timeout(static_cast<int64_t>(assignment.training.timeout_seconds * 1000));
  }
  // Compression is on from the end of the warm-up.
  bool CompressionActive(int64_t step) const { return step >= warmup_steps; }
  // What the data-parallel sync's errors get as context: they number peers within the group,
  // so this says what the numbers are.
  std::string DataParallelErrorContext() const {
    return "data-parallel group of stage " + std::to_string(assignment.stage) +
           " (its rank r is replica r, global rank r x " + std::to_string(assignment.num_stages) +
           " + " + std::to_string(assignment.stage) + ")";
  }
};

}  // namespace geotrain::runtime
