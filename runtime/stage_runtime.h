// StageRuntime: the training loop of one rank, stage s of replica r.
//
// One step (runtime/README.md draws it):
//   1. the pipeline schedule (GPipe or 1F1B) over the step's micro-batches: the first stage
//      embeds its replica's micro-batches; every other stage receives activations, runs its
//      layers and sends them on; the last stage computes the loss against the labels of the
//      sample ids that came with the activation; gradients flow back the same way. Sends go
//      through the link's codec (forward / backward settings) on a background thread;
//   2. gradient synchronisation: tied embeddings (embedding_sync.h), then the data-parallel
//      sync's BeforeClip (data_parallel_sync.h);
//   3. global-norm clipping over every stage of the replica (pipeline_reduce.h);
//   4. AdamW: moments, the data-parallel AfterMoments, the update with the scheduled learning
//      rate, the data-parallel AfterUpdate; gradients are zeroed.
// Every stage decides the same things from the step number alone (warm-up, learning rate), so
// they need no extra messages to agree.
//
// Adaptive compression: ScheduleCodecChange queues new bits for this rank's sends; each step
// first applies every queued change whose effective_step it has reached (a late one at the next
// step), between steps, when the send queues are flushed: the link codecs and the cocktail
// codecs are reconfigured in place, keeping their state (delta caches, residuals), and a
// cocktail exchange in flight keeps the settings it started with. Frames name their bits, so the
// receivers follow without being told. A change the codec cannot take is logged and skipped.
//
// Checkpoints (checkpoint_store.h) hold the stage's weights, AdamW's state, the data-parallel
// state and the data position. Codec state of the pipeline links is not saved; the rule for
// rebuilding it: a resumed run starts with fresh link codecs on both ends (empty delta caches,
// whose first visits resend full activations; zero PowerSGD error and a fresh Q), which both ends
// do alike, so they never disagree.
//
// Device (model.device, runtime/README.md "Devices"): the stage's parameters, gradients and
// AdamW state live on the CPU or one CUDA device; batches, labels and masks are moved there,
// received activations and gradients arrive there (tensor_link.h stages them through pinned
// buffers), and what crosses a link or a collective goes through host memory, except the
// gradient all-reduce of replicas in one region, which NCCL runs on the device (dp_backend.h).
// With model.autocast bf16, each micro-batch's forward and loss run under CUDA autocast
// (autocast_scope.h) while the parameters stay float32.
//
// Not thread-safe: one thread drives a StageRuntime (the links' send threads are internal); on
// a CUDA device it must be the thread that made it (autocast and the current stream are
// per thread).
#pragma once

#include <ATen/ATen.h>

#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <vector>

#include "common/status.h"
#include "models/transformer/stage.h"
#include "runtime/adamw.h"
#include "runtime/checkpoint_store.h"
#include "runtime/classification_metrics.h"
#include "runtime/config_change.h"
#include "runtime/data_parallel_sync.h"
#include "runtime/embedding_sync.h"
#include "runtime/pipeline_schedule.h"
#include "runtime/stage_assignment.h"
#include "runtime/stage_links.h"
#include "runtime/step_traffic.h"
#include "runtime/tensor_link.h"
#include "runtime/trace_writer.h"
#include "runtime/training_data.h"

namespace geotrain::runtime {

// Bytes of one step, from this rank's sends.
struct StepBytes {
  uint64_t forward = 0;   // activations sent downstream
  uint64_t backward = 0;  // gradients sent upstream
  uint64_t dp = 0;        // data-parallel sync
  uint64_t embedding = 0;  // tied-embedding sync between the first and last stages
};

// Seconds of one step by phase (and of the evaluation and checkpoint Run() did after it). Each
// is measured on its own, so they sum to about step_seconds plus eval and checkpoint.
struct StepPhases {
  double forward = 0;    // stage compute of the forwards and the loss
  double backward = 0;   // autograd of the backwards
  double encode = 0;     // pipeline links' codecs, sending side
  double decode = 0;     // pipeline links' codecs, receiving side
  double send = 0;       // blocked flushing queued pipeline sends
  double recv = 0;       // blocked waiting for a pipeline tensor
  double sync = 0;       // embedding sync, data-parallel hooks, gradient-norm all-reduce
  double optimizer = 0;  // AdamW moments and update, zeroing the gradients
  double data = 0;       // reading batches (first stage) and labels (last stage)
  double eval = 0;       // the evaluation Run() did after the step
  double checkpoint = 0;  // the checkpoint Run() wrote after the step
};

struct StepResult {
  int64_t step = 0;  // 1-based: the number of steps done after this one
  double loss = std::numeric_limits<double>::quiet_NaN();  // mean micro-batch loss; last stage
  double lr = 0;
  double grad_norm = 0;  // before clipping, over the whole replica
  bool compressed = false;  // false during the uncompressed warm-up
  double step_seconds = 0;
  double compute_seconds = 0;  // forward, backward, optimizer
  double codec_seconds = 0;    // encoding and decoding pipeline tensors
  double comm_seconds = 0;     // blocked on a link or a collective
  StepBytes raw_bytes;
  StepBytes wire_bytes;
  double forward_relative_error = 0;  // mean over this step's activation frames sent
  std::optional<double> eval_loss;    // when the step ended with an evaluation (last stage)
  // A classifier's evaluation scores, with eval_loss (data.task sequence_classification).
  std::optional<ClassificationMetrics> eval_metrics;
  bool checkpointed = false;          // this rank wrote its part of the checkpoint of `step`
  // Why this rank's part of the checkpoint of `step` could not be written (disk full, storage
  // gone); empty when it was written or none was due. Training went on: see Run().
  std::string checkpoint_error;
  int64_t total_steps = 0;            // training.total_steps (known once the data is open)
  StepPhases phases;
  int64_t tokens = 0;  // micro_batches x micro_batch_size x seq_length
  double backward_relative_error = 0;  // mean over this step's gradient frames sent upstream
  // Per peer, kind and direction since the previous report (Step() or Run()'s on_step), so an
  // evaluation's activations and a checkpoint's data-parallel flush count in their step.
  std::vector<LinkTraffic> traffic;
};

class StageRuntime {
 public:
  // Loads the stage, opens the data, builds codecs and the data-parallel sync. `links` must hold
  // the transports stage_links.h describes for `assignment`.
  static StatusOr<std::unique_ptr<StageRuntime>> Create(const StageAssignment& assignment,
                                                        StageLinks links);
  ~StageRuntime();

  // Restores the newest complete checkpoint when training.resume is set and one exists; returns
  // its step, or 0 when starting fresh.
  StatusOr<int64_t> Resume();

  // Runs steps until training.total_steps, evaluating and checkpointing at their cadence (and a
  // final checkpoint when checkpoints are on). A periodic checkpoint the storage refuses (full
  // disk: ResourceExhausted; an I/O error: Unavailable) does not end the run: the step reports
  // it in checkpoint_error, the older complete checkpoints stay, and the next one is tried at
  // its cadence. Losing hours of training to a full disk is worse than a longer replay after a
  // later crash. The final checkpoint is the job's result, so its failure ends the run. `on_step` sees every step's result;
  // `before_step`, when set, runs before each step starts (where changes get scheduled).
  Status Run(const std::function<void(const StepResult&)>& on_step,
             const std::function<void()>& before_step = nullptr);

  // Queues `change` for the first step numbered >= change.effective_step (StepResult::step
  // numbering), or the next step when that one has passed. Changes of one step apply in
  // effective_step order, then in the order they were scheduled.
  void ScheduleCodecChange(const CodecChange& change);

  // One training step (the four parts above), its traffic measured up to its end.
  StatusOr<StepResult> Step();
  // The mean loss over training.eval_batches validation micro-batches of every replica (last
  // stage; NaN on others). Every rank of the job must call it at the same point. A classifier's
  // last stage also scores the predictions of every replica: last_eval_metrics().
  StatusOr<double> Evaluate();
  const std::optional<ClassificationMetrics>& last_eval_metrics() const {
    return last_eval_metrics_;
  }
  // Writes this rank's part of the checkpoint of the current step.
  Status Checkpoint();

  int64_t step() const { return step_; }
  const models::Stage& stage() const { return *stage_; }
  at::Device device() const { return device_; }
  // Every trainable tensor of the rank: the stage's, then any autoencoder halves.
  const std::vector<models::NamedParameter>& parameters() const { return parameters_; }

  // The parts of Step(), for tests that look at gradients between them.
  Status RunSchedule(StepResult* result);
  Status SynchronizeGradients(StepResult* result);
  Status ApplyOptimizer(StepResult* result);

 private:
  // Checkpoint() after the data-parallel flush: the store's write and prune.
  Status WriteCheckpoint();
  struct MicroBatch;
  StageRuntime() = default;

  // Step() without the traffic, which Run() measures after the evaluation and checkpoint.
  StatusOr<StepResult> TrainStep();
  // Fills result->traffic with what the links moved since the previous measurement.
  void MeasureTraffic(StepResult* result);
  bool CompressionActive(int64_t step) const;
  Status Forward(int micro_batch, std::vector<MicroBatch>& batches, bool compress,
                 StepPhases* phases);
  Status Backward(int micro_batch, bool epilogue, std::vector<MicroBatch>& batches, bool compress,
                  StepPhases* phases);
  Status FlushSends();
  // Applies the scheduled changes due at the step about to run (step_ + 1).
  void ApplyDueCodecChanges();
  void AdjustPipelineLink(TensorSender* sender, const char* direction, uint32_t bits,
                          const std::string& when, const std::string& why);
  void AdjustDataParallel(const CodecChange& change, const std::string& when,
                          const std::string& why);
  net::Timeout timeout() const;
  std::string DataParallelErrorContext() const;
  // The tied embedding copy of this stage, when it takes part in embedding sync.
  const at::Tensor* TiedEmbedding() const;
  double LocalSquaredNorm() const;
  // Adds the gradients of pipeline_shared_ over the stages (models::PipelineSharedTensorNames).
  Status SumSharedGradients();
  // A batch's padding mask and segments (TrainingData, on the host) on the stage's device.
  models::SequenceContext OnDevice(models::SequenceContext context) const;

  StageAssignment assignment_;
  StageLinks links_;
  at::Device device_ = at::kCPU;                 // model.device
  std::optional<at::ScalarType> autocast_;       // model.autocast's type, or none
  std::unique_ptr<models::Stage> stage_;
  std::unique_ptr<TrainingData> data_;
  std::vector<models::NamedParameter> parameters_;
  std::optional<models::NamedParameter> encoder_;  // autoencoder half at our output
  std::optional<models::NamedParameter> decoder_;  // autoencoder half at our input
  std::unique_ptr<AdamW> optimizer_;
  std::unique_ptr<DataParallelSync> data_parallel_;
  std::unique_ptr<TensorSender> to_next_;       // activations
  std::unique_ptr<TensorReceiver> from_prev_;   // activations
  std::unique_ptr<TensorSender> to_prev_;       // gradients
  std::unique_ptr<TensorReceiver> from_next_;   // gradients
  std::optional<CheckpointStore> checkpoints_;
  std::unique_ptr<TraceWriter> trace_;
  std::vector<PipelineOp> schedule_;
  bool tied_embedding_sync_ = false;
  // Tensors every stage keeps a copy of (DeBERTa's relative embeddings), when the pipeline has
  // more than one stage: their gradients are summed over it each step.
  std::vector<models::NamedParameter> pipeline_shared_;
  std::unique_ptr<CompressedEmbeddingSync> compressed_embedding_;  // compress_embedding_sync only
  int64_t warmup_steps_ = 0;  // compression warm-up in steps (steps and epochs combined)
  DataParallelTraffic dp_traffic_reported_;  // traffic() when the last step ended
  // The tied-embedding sync's cumulative bytes sent (raw: float32 equivalent), like the dp sync's.
  DataParallelTraffic embedding_traffic_;
  std::unique_ptr<StepTrafficMeter> traffic_meter_;
  // ScheduleCodecChange's, sorted by effective_step, until applied.
  std::vector<CodecChange> scheduled_changes_;
  // The data-parallel settings as adaptive compression left them (the step reports' bits);
  // assignment_.compression keeps the job's, which the peers' frames arrive in.
  DataParallelSettings data_parallel_settings_;
  int64_t step_ = 0;
  std::optional<ClassificationMetrics> last_eval_metrics_;
};

}  // namespace geotrain::runtime
