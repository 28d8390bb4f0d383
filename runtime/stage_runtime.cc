#include "runtime/stage_runtime.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <set>
#include <sstream>

#include "compression/delta_codec.h"
#include "models/model_config.h"
#include "models/model_layout.h"
#include "runtime/autocast_scope.h"
#include "runtime/autoencoder.h"
#include "runtime/dp_backend.h"
#include "runtime/dp_buckets.h"
#include "runtime/embedding_sync.h"
#include "runtime/grad_clip.h"
#include "runtime/lr_schedule.h"
#include "runtime/pipeline_reduce.h"
#include "runtime/stage_device.h"

namespace geotrain::runtime {
namespace {

// The trace's clock, so that timed spans and trace events agree.
using Clock = TraceWriter::Clock;
double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

StatusOr<at::ScalarType> ScalarTypeOf(const std::string& dtype) {
  if (dtype == "f32") return at::kFloat;
  if (dtype == "bf16") return at::kBFloat16;
  if (dtype == "f16") return at::kHalf;
  return InvalidArgument("dtype: \"" + dtype + "\" is not one of f32, bf16, f16");
}

StatusOr<models::StagePlan> PlanOf(const StageAssignment& assignment,
                                   const models::ModelConfig& config) {
  if (assignment.first_layer < 0) {
    GEOTRAIN_ASSIGN_OR_RETURN(std::vector<models::StagePlan> plans,
                              models::SplitLayersEvenly(config, assignment.num_stages));
    return plans[assignment.stage];
  }
  models::StagePlan plan;
  plan.first_layer = assignment.first_layer;
  plan.last_layer = assignment.last_layer;
  plan.is_first = assignment.is_first_stage();
  plan.is_last = assignment.is_last_stage();
  GEOTRAIN_RETURN_IF_ERROR(models::ValidateStagePlan(plan, config));
  return plan;
}

// The width adaptive compression changes: tah's high_bits, every other codec's bits.
int WidthOf(const compression::CodecConfig& config) {
  return config.codec == compression::CodecId::kTah ? config.high_bits : config.bits;
}

std::string Number(double value) {
  std::ostringstream s;
  s << value;
  return s.str();
}

// A link end's cumulative totals (zeros where the stage has no such link).
template <typename LinkEnd>
LinkTotals TotalsOf(const std::unique_ptr<LinkEnd>& end) {
  return end ? end->totals() : LinkTotals{};
}

}  // namespace

// What a micro-batch keeps between its forward and its backward.
struct StageRuntime::MicroBatch {
  std::vector<uint64_t> sample_ids;
  at::Tensor tokens;  // first stage: the input ids
  at::Tensor input;   // other stages: the received activation (a leaf that requires grad)
  at::Tensor output;  // what the backward starts from: the scaled loss, or the sent activation
  // The received activation's type: its gradient goes back in it (under autocast a bfloat16
  // activation's sender would round a float32 gradient to bfloat16 anyway, so this halves the
  // bytes and changes nothing).
  at::ScalarType received_dtype = at::kFloat;
};

StageRuntime::~StageRuntime() = default;

StatusOr<std::unique_ptr<StageRuntime>> StageRuntime::Create(const StageAssignment& assignment,
                                                             StageLinks links) {
  GEOTRAIN_RETURN_IF_ERROR(assignment.Validate());
  // First: a job placed on a machine without its GPU fails before loading anything.
  GEOTRAIN_ASSIGN_OR_RETURN(const at::Device device, StageDevice(assignment));
  std::unique_ptr<StageRuntime> runtime(new StageRuntime());
  runtime->assignment_ = assignment;
  runtime->device_ = device;
  runtime->autocast_ = AutocastDtype(assignment);
  runtime->links_ = std::move(links);
  const int s = assignment.stage;
  const int num_stages = assignment.num_stages;
  if ((s > 0) != (runtime->links_.upstream != nullptr) ||
      (s + 1 < num_stages) != (runtime->links_.downstream != nullptr) ||
      (assignment.dp_size > 1) != (runtime->links_.data_parallel != nullptr)) {
    return InvalidArgument("links: the transports given do not match stage " + std::to_string(s) +
                           " of " + std::to_string(num_stages) + " with " +
                           std::to_string(assignment.dp_size) + " replicas");
  }

  GEOTRAIN_ASSIGN_OR_RETURN(models::ModelConfig config, models::LoadModelConfig(assignment.model_dir));
  if (config.IsClassifier() != (assignment.data.task == Task::kSequenceClassification)) {
    return InvalidArgument(
        "data.task: " + std::string(TaskName(assignment.data.task)) + " does not fit the " +
        models::ModelTypeName(config.family) + " model in " + assignment.model_dir + " (" +
        (config.IsClassifier() ? "a sequence classifier: use sequence_classification"
                               : "a language model: use causal_lm") +
        ")");
  }
  GEOTRAIN_ASSIGN_OR_RETURN(models::StagePlan plan, PlanOf(assignment, config));
  GEOTRAIN_ASSIGN_OR_RETURN(at::ScalarType dtype, ScalarTypeOf(assignment.dtype));
  GEOTRAIN_ASSIGN_OR_RETURN(runtime->stage_,
                            models::LoadStage(assignment.model_dir, plan, device, dtype));
  GEOTRAIN_ASSIGN_OR_RETURN(runtime->data_, TrainingData::Open(assignment));

  runtime->parameters_ = runtime->stage_->Parameters();
  const int dim = assignment.compression.autoencoder_dim;
  if (dim > 0) {
    if (s + 1 < num_stages) {
      runtime->encoder_ = MakeAutoencoderEncoder(config.hidden_size, dim, assignment.training.seed,
                                                 s, dtype, device);
      runtime->parameters_.push_back(*runtime->encoder_);
    }
    if (s > 0) {
      runtime->decoder_ = MakeAutoencoderDecoder(config.hidden_size, dim,
                                                 assignment.training.seed, s - 1, dtype, device);
      runtime->parameters_.push_back(*runtime->decoder_);
    }
  }

  if (num_stages > 1) {
    for (const std::string& name : models::PipelineSharedTensorNames(config)) {
      const auto& held = runtime->stage_->Parameters();
      const auto it = std::find_if(held.begin(), held.end(),
                                   [&](const models::NamedParameter& p) { return p.name == name; });
      if (it == held.end()) {
        return InvalidArgument("model.layers: stage " + std::to_string(s) +
                               " holds no layer, but every stage of a pipelined " +
                               models::ModelTypeName(config.family) + " model needs one (" +
                               name + " is shared by every layer and summed over the stages)");
      }
      runtime->pipeline_shared_.push_back(*it);
    }
  }

  // Tied embeddings split over stages: synced through the embedding group; with the fused sync
  // the data-parallel sync leaves that tensor alone, otherwise it goes in a bucket of its own.
  runtime->tied_embedding_sync_ = NeedsEmbeddingGroup(assignment, config.tie_word_embeddings) &&
                                  (plan.is_first || plan.is_last);
  if (runtime->tied_embedding_sync_ && !runtime->links_.embedding) {
    return InvalidArgument("links.embedding: tied embeddings need the embedding group");
  }
  if (runtime->tied_embedding_sync_ && assignment.compression.compress_embedding_sync &&
      assignment.compression.data_parallel.mode == DataParallelMode::kCocktail) {
    GEOTRAIN_ASSIGN_OR_RETURN(
        runtime->compressed_embedding_,
        CompressedEmbeddingSync::Create(assignment.compression.data_parallel.codec));
  }
  const std::string embedding_name = models::TokenEmbeddingName(config);
  DataParallelContext dp;
  dp.stage = s;
  dp.group = runtime->links_.data_parallel.get();
  dp.device_group = runtime->links_.data_parallel_device.get();
  if (assignment.dp_size > 1) {
    std::string why;
    const DataParallelBackend rule = ChooseDataParallelBackend(assignment, &why);
    const bool nccl = dp.device_group != nullptr;
    spdlog::info("stage {} replica {} on {}: data-parallel gradients over {} ({})", s,
                 assignment.dp_rank, device.str(), nccl ? "NCCL" : "Gloo",
                 nccl == (rule == DataParallelBackend::kNccl) ? why : "the links' choice");
  }
  dp.groups.emplace_back();
  std::vector<models::NamedParameter> fused_embedding;  // synced by embedding_sync.h alone
  for (const models::NamedParameter& p : runtime->parameters_) {
    if (runtime->tied_embedding_sync_ && p.name == embedding_name) {
      (UsesFusedEmbeddingGroup(assignment) ? fused_embedding : dp.groups.emplace_back())
          .push_back(p);
      continue;
    }
    dp.groups.front().push_back(p);
  }
  // AdamW's moments in the sync's bucket order (quantized momentum averages them bucket-wise).
  std::vector<models::NamedParameter> in_bucket_order;
  for (const auto& group : dp.groups) {
    in_bucket_order.insert(in_bucket_order.end(), group.begin(), group.end());
  }
  in_bucket_order.insert(in_bucket_order.end(), fused_embedding.begin(), fused_embedding.end());
  AdamWOptions adam;
  adam.beta1 = assignment.optimizer.beta1;
  adam.beta2 = assignment.optimizer.beta2;
  adam.eps = assignment.optimizer.eps;
  adam.weight_decay = assignment.optimizer.weight_decay;
  runtime->optimizer_ = std::make_unique<AdamW>(std::move(in_bucket_order), adam);
  dp.optimizer = runtime->optimizer_.get();
  dp.timeout = runtime->timeout();
  dp.seed = assignment.training.seed;
  GEOTRAIN_ASSIGN_OR_RETURN(runtime->data_parallel_,
                            CreateDataParallelSync(assignment.compression.data_parallel, std::move(dp)));
  runtime->data_parallel_settings_ = assignment.compression.data_parallel;

  const CompressionSettings& compression = assignment.compression;
  auto stage_name = [&](int stage) {
    return "stage " + std::to_string(stage) + " (global rank " +
           std::to_string(assignment.dp_rank * num_stages + stage) + ")";
  };
  if (runtime->links_.downstream) {
    GEOTRAIN_ASSIGN_OR_RETURN(
        runtime->to_next_, TensorSender::Create(runtime->links_.downstream.get(), 1,
                                                stage_name(s + 1), compression.forward,
                                                runtime->timeout()));
    runtime->from_next_ = std::make_unique<TensorReceiver>(
        runtime->links_.downstream.get(), 1, stage_name(s + 1), compression.backward,
        runtime->timeout());
  }
  if (runtime->links_.upstream) {
    GEOTRAIN_ASSIGN_OR_RETURN(
        runtime->to_prev_, TensorSender::Create(runtime->links_.upstream.get(), 0,
                                                stage_name(s - 1), compression.backward,
                                                runtime->timeout()));
    runtime->from_prev_ = std::make_unique<TensorReceiver>(
        runtime->links_.upstream.get(), 0, stage_name(s - 1), compression.forward,
        runtime->timeout());
  }
  for (TensorSender* sender : {runtime->to_next_.get(), runtime->to_prev_.get()}) {
    if (sender) GEOTRAIN_RETURN_IF_ERROR(sender->set_device(device));
  }
  for (TensorReceiver* receiver : {runtime->from_next_.get(), runtime->from_prev_.get()}) {
    if (receiver) GEOTRAIN_RETURN_IF_ERROR(receiver->set_device(device));
  }

  const int64_t steps_per_epoch = static_cast<int64_t>(runtime->data_->batches_per_epoch()) /
                                  assignment.training.micro_batches;
  if (assignment.training.epochs > 0) {
    runtime->assignment_.training.total_steps =
        std::max<int64_t>(1, assignment.training.epochs * steps_per_epoch);
  }
  runtime->schedule_ = BuildPipelineSchedule(assignment.training.schedule, s, num_stages,
                                             static_cast<int>(assignment.training.micro_batches));
  runtime->warmup_steps_ =
      std::max<int64_t>(compression.warmup_steps, compression.warmup_epochs * steps_per_epoch);
  if (!assignment.training.checkpoint_dir.empty()) {
    GEOTRAIN_ASSIGN_OR_RETURN(
        CheckpointStore store,
        CheckpointStore::Open(assignment.training.checkpoint_dir, s, num_stages,
                              assignment.dp_rank, assignment.dp_size));
    runtime->checkpoints_.emplace(std::move(store));
  }
  runtime->trace_ = std::make_unique<TraceWriter>(
      assignment.training.profile_path, assignment.global_rank(),
      "stage " + std::to_string(s) + " replica " + std::to_string(assignment.dp_rank));
  runtime->traffic_meter_ =
      std::make_unique<StepTrafficMeter>(runtime->assignment_, runtime->links_);
  if (runtime->trace_->enabled()) {
    for (TensorSender* sender : {runtime->to_next_.get(), runtime->to_prev_.get()}) {
      if (sender) sender->set_trace(runtime->trace_.get());
    }
    for (TensorReceiver* receiver : {runtime->from_next_.get(), runtime->from_prev_.get()}) {
      if (receiver) receiver->set_trace(runtime->trace_.get());
    }
  }
  return runtime;
}

std::string StageRuntime::DataParallelErrorContext() const {
  // The sync's messages number peers within the group: say what the numbers are.
  return "data-parallel group of stage " + std::to_string(assignment_.stage) + " (its rank r is " +
         "replica r, global rank r x " + std::to_string(assignment_.num_stages) + " + " +
         std::to_string(assignment_.stage) + ")";
}

net::Timeout StageRuntime::timeout() const {
  return net::Timeout(static_cast<int64_t>(assignment_.training.timeout_seconds * 1000));
}

bool StageRuntime::CompressionActive(int64_t step) const { return step >= warmup_steps_; }

const at::Tensor* StageRuntime::TiedEmbedding() const {
  if (!tied_embedding_sync_) return nullptr;
  const std::string name = models::TokenEmbeddingName(stage_->config());
  for (const models::NamedParameter& p : parameters_) {
    if (p.name == name) return &p.tensor;
  }
  return nullptr;
}

StatusOr<StepResult> StageRuntime::Step() {
  GEOTRAIN_ASSIGN_OR_RETURN(StepResult result, TrainStep());
  MeasureTraffic(&result);
  return result;
}

StatusOr<StepResult> StageRuntime::TrainStep() {
  ApplyDueCodecChanges();
  const Clock::time_point start = Clock::now();
  StepResult result;
  GEOTRAIN_RETURN_IF_ERROR(RunSchedule(&result));
  GEOTRAIN_RETURN_IF_ERROR(SynchronizeGradients(&result));
  GEOTRAIN_RETURN_IF_ERROR(ApplyOptimizer(&result));
  result.step_seconds = SecondsSince(start);
  return result;
}

void StageRuntime::MeasureTraffic(StepResult* result) {
  const CompressionSettings& compression = assignment_.compression;
  // The step's codecs; an evaluation in the same period sends float32 whatever they are.
  const bool compressed = result->compressed;
  TrafficPeriod period;
  // Sent: the codecs as adaptive compression left them. Received: the job's settings, since a
  // peer's own changes are not told to this rank (its frames carry them; its report shows them).
  period.activation_bits =
      compressed ? CodecBits(to_next_ ? to_next_->codec_config() : compression.forward) : 32;
  period.gradient_bits =
      compressed ? CodecBits(to_prev_ ? to_prev_->codec_config() : compression.backward) : 32;
  period.received_activation_bits = compressed ? CodecBits(compression.forward) : 32;
  period.received_gradient_bits = compressed ? CodecBits(compression.backward) : 32;
  period.data_parallel_bits =
      compressed ? DataParallelBits(data_parallel_settings_, assignment_.stage) : 32;
  period.embedding_bits =
      compressed && compressed_embedding_ ? CodecBits(compression.data_parallel.codec) : 32;
  period.activation_relative_error = result->forward_relative_error;
  period.gradient_relative_error = result->backward_relative_error;
  period.data_parallel = data_parallel_->traffic();
  period.embedding = embedding_traffic_;
  traffic_meter_->Measure(period, &result->traffic);
}

Status StageRuntime::RunSchedule(StepResult* result) {
  const bool compress = CompressionActive(step_);
  result->step = step_ + 1;
  result->compressed = compress;
  result->tokens = assignment_.training.micro_batches * assignment_.training.micro_batch_size *
                   assignment_.data.seq_length;
  const LinkTotals sent_next = TotalsOf(to_next_);
  const LinkTotals sent_prev = TotalsOf(to_prev_);
  const LinkTotals got_prev = TotalsOf(from_prev_);
  const LinkTotals got_next = TotalsOf(from_next_);
  const Clock::time_point start = Clock::now();

  std::vector<MicroBatch> batches(static_cast<size_t>(assignment_.training.micro_batches));
  StepPhases& phases = result->phases;
  if (assignment_.is_first_stage()) {
    const Clock::time_point reading = Clock::now();
    for (MicroBatch& mb : batches) {
      GEOTRAIN_ASSIGN_OR_RETURN(models::data::Batch batch, data_->NextTrain());
      mb.tokens = TrainingData::BatchTokens(batch, assignment_.data.seq_length).to(device_);
      mb.sample_ids = std::move(batch.sample_ids);
    }
    phases.data += SecondsSince(reading);
  }
  // The last stage's scaled micro-batch losses, read once the schedule has run: reading each
  // at its forward would make the host wait for the GPU there.
  std::vector<at::Tensor> losses;
  for (const PipelineOp& op : schedule_) {
    if (op.kind == PipelineOp::Kind::kForward) {
      GEOTRAIN_RETURN_IF_ERROR(Forward(op.micro_batch, batches, compress, &phases));
      if (assignment_.is_last_stage()) losses.push_back(batches[op.micro_batch].output.detach());
    } else {
      GEOTRAIN_RETURN_IF_ERROR(Backward(op.micro_batch, op.epilogue, batches, compress, &phases));
    }
  }
  GEOTRAIN_RETURN_IF_ERROR(FlushSends());
  if (assignment_.is_last_stage()) {
    double loss_sum = 0;
    for (const at::Tensor& loss : losses) loss_sum += loss.item<double>();
    result->loss = loss_sum;
  }

  const LinkTotals fwd = TotalsOf(to_next_) - sent_next;
  const LinkTotals bwd = TotalsOf(to_prev_) - sent_prev;
  const LinkTotals in_prev = TotalsOf(from_prev_) - got_prev;
  const LinkTotals in_next = TotalsOf(from_next_) - got_next;
  result->raw_bytes.forward = fwd.raw_bytes;
  result->wire_bytes.forward = fwd.wire_bytes;
  result->raw_bytes.backward = bwd.raw_bytes;
  result->wire_bytes.backward = bwd.wire_bytes;
  result->forward_relative_error = fwd.frames ? fwd.relative_error_sum / fwd.frames : 0;
  result->backward_relative_error = bwd.frames ? bwd.relative_error_sum / bwd.frames : 0;
  phases.encode = fwd.codec_seconds + bwd.codec_seconds;
  phases.decode = in_prev.codec_seconds + in_next.codec_seconds;
  phases.send = fwd.wait_seconds + bwd.wait_seconds;
  phases.recv = in_prev.wait_seconds + in_next.wait_seconds;
  result->codec_seconds =
      fwd.codec_seconds + bwd.codec_seconds + in_prev.codec_seconds + in_next.codec_seconds;
  result->comm_seconds =
      fwd.wait_seconds + bwd.wait_seconds + in_prev.wait_seconds + in_next.wait_seconds;
  result->compute_seconds = SecondsSince(start) - result->codec_seconds - result->comm_seconds;
  return OkStatus();
}

Status StageRuntime::Forward(int micro_batch, std::vector<MicroBatch>& batches, bool compress,
                             StepPhases* phases) {
  MicroBatch& mb = batches[micro_batch];
  const uint64_t step = static_cast<uint64_t>(step_);
  at::Tensor received;  // receiving and decoding count in the link's totals, not here
  if (!assignment_.is_first_stage()) {
    MicroBatchHeader header;
    GEOTRAIN_ASSIGN_OR_RETURN(
        received, from_prev_->Recv(MessageKind::kActivation, step, micro_batch, &header));
    mb.sample_ids = std::move(header.sample_ids);
  }
  const Clock::time_point start = Clock::now();
  const Clock::time_point reading_context = Clock::now();
  GEOTRAIN_ASSIGN_OR_RETURN(models::SequenceContext context,
                            data_->Context(mb.sample_ids, /*validation=*/false));
  context = OnDevice(std::move(context));
  at::Tensor labels;
  if (assignment_.is_last_stage()) {
    GEOTRAIN_ASSIGN_OR_RETURN(labels, data_->Labels(mb.sample_ids, /*validation=*/false));
    labels = labels.to(device_);
  }
  const double data_seconds = SecondsSince(reading_context);
  {
    // The forward's ops (and the loss) under autocast; the backward runs outside it.
    const CudaAutocastScope autocast(autocast_);
    at::Tensor input;
    if (assignment_.is_first_stage()) {
      input = mb.tokens;
    } else {
      mb.received_dtype = received.scalar_type();
      mb.input = received.to(stage_->dtype()).requires_grad_(true);
      // Under autocast the decoder's matmul gives bfloat16; the stage takes its own dtype.
      input = decoder_ ? ApplyLinear(mb.input, decoder_->tensor).to(stage_->dtype()) : mb.input;
    }
    GEOTRAIN_ASSIGN_OR_RETURN(at::Tensor output, stage_->Forward(input, context));
    if (assignment_.is_last_stage()) {
      GEOTRAIN_ASSIGN_OR_RETURN(at::Tensor loss, stage_->Loss(output, labels));
      mb.output = loss / static_cast<double>(assignment_.training.micro_batches);
    } else {
      mb.output = encoder_ ? ApplyLinear(output, encoder_->tensor) : output;
    }
  }
  const Clock::time_point end = Clock::now();
  phases->data += data_seconds;
  phases->forward += std::chrono::duration<double>(end - start).count() - data_seconds;
  trace_->Complete("forward", "compute", start, end, {{"micro_batch", micro_batch}});
  if (assignment_.is_last_stage()) return OkStatus();
  MicroBatchHeader header{MessageKind::kActivation, step, static_cast<uint32_t>(micro_batch),
                          mb.sample_ids};
  return to_next_->Send(header, mb.output.detach(), compress)
      .WithContext("sending the activation of micro-batch " + std::to_string(micro_batch));
}

Status StageRuntime::Backward(int micro_batch, bool epilogue, std::vector<MicroBatch>& batches,
                              bool compress, StepPhases* phases) {
  MicroBatch& mb = batches[micro_batch];
  const uint64_t step = static_cast<uint64_t>(step_);
  at::Tensor received;  // receiving and decoding count in the link's totals, not here
  if (!assignment_.is_last_stage()) {
    MicroBatchHeader header;
    GEOTRAIN_ASSIGN_OR_RETURN(received,
                              from_next_->Recv(MessageKind::kGradient, step, micro_batch, &header));
  }
  const Clock::time_point start = Clock::now();
  const at::Tensor gradient =
      received.defined() ? received.to(mb.output.scalar_type()) : at::Tensor();
  try {
    if (gradient.defined()) {
      mb.output.backward(gradient);
    } else {
      mb.output.backward();
    }
  } catch (const c10::Error& e) {
    return Internal("backward of micro-batch " + std::to_string(micro_batch) + ": " +
                    e.what_without_backtrace());
  }
  const Clock::time_point end = Clock::now();
  phases->backward += std::chrono::duration<double>(end - start).count();
  trace_->Complete("backward", "compute", start, end, {{"micro_batch", micro_batch}});
  if (!assignment_.is_first_stage()) {
    const bool compress_this =
        compress && (!assignment_.compression.backward_epilogue_only || epilogue);
    MicroBatchHeader header{MessageKind::kGradient, step, static_cast<uint32_t>(micro_batch),
                            mb.sample_ids};
    at::Tensor gradient_out = mb.input.grad();
    if (gradient_out.scalar_type() != mb.received_dtype) {
      gradient_out = gradient_out.to(mb.received_dtype);
    }
    GEOTRAIN_RETURN_IF_ERROR(to_prev_->Send(header, gradient_out, compress_this)
                                 .WithContext("sending the gradient of micro-batch " +
                                              std::to_string(micro_batch)));
  }
  mb = MicroBatch{};  // frees the activations of this micro-batch
  return OkStatus();
}

void StageRuntime::ScheduleCodecChange(const CodecChange& change) {
  const auto at = std::upper_bound(
      scheduled_changes_.begin(), scheduled_changes_.end(), change.effective_step,
      [](int64_t step, const CodecChange& queued) { return step < queued.effective_step; });
  scheduled_changes_.insert(at, change);
}

void StageRuntime::ApplyDueCodecChanges() {
  const int64_t step = step_ + 1;  // numbered as its StepResult will be
  auto due = scheduled_changes_.begin();
  for (; due != scheduled_changes_.end() && due->effective_step <= step; ++due) {
    const CodecChange& change = *due;
    const std::string when =
        change.effective_step < step
            ? "step " + std::to_string(step) + " (late: announced for step " +
                  std::to_string(change.effective_step) + ")"
            : "step " + std::to_string(step);
    const std::string why = change.reason.empty() ? "" : " (" + change.reason + ")";
    if (change.forward_bits != 0) {
      AdjustPipelineLink(to_next_.get(), "forward", change.forward_bits, when, why);
    }
    if (change.backward_bits != 0) {
      AdjustPipelineLink(to_prev_.get(), "backward", change.backward_bits, when, why);
    }
    if (change.dp_bits != 0 || change.dp_topk_ratio != 0) AdjustDataParallel(change, when, why);
  }
  scheduled_changes_.erase(scheduled_changes_.begin(), due);
}

void StageRuntime::AdjustPipelineLink(TensorSender* sender, const char* direction, uint32_t bits,
                                      const std::string& when, const std::string& why) {
  if (sender == nullptr) {
    spdlog::warn("{}: {} bits {} not applied: stage {} has no {} link{}", when, direction, bits,
                 assignment_.stage, direction, why);
    return;
  }
  const compression::CodecConfig before = sender->codec_config();
  StatusOr<compression::CodecConfig> after = WithPipelineBits(before, bits);
  const Status applied = after.ok() ? sender->Reconfigure(*after) : after.status();
  if (!applied.ok()) {
    spdlog::warn("{}: {} bits {} not applied, the link keeps {}: {}{}", when, direction, bits,
                 before.Describe(), applied.message(), why);
    return;
  }
  std::string low;
  if (before.codec == compression::CodecId::kTah && before.low_bits != after->low_bits) {
    low = ", tah low_bits " + std::to_string(before.low_bits) + " -> " +
          std::to_string(after->low_bits);
  }
  spdlog::info("{}: {} bits {} -> {}{}{}", when, direction, WidthOf(before), WidthOf(*after), low,
               why);
}

void StageRuntime::AdjustDataParallel(const CodecChange& change, const std::string& when,
                                      const std::string& why) {
  const DataParallelSettings& before = data_parallel_settings_;
  StatusOr<DataParallelSettings> after =
      WithDataParallelChange(before, change.dp_bits, change.dp_topk_ratio);
  // One replica has no exchange whose codecs could change; its settings still follow.
  Status applied = after.status();
  if (after.ok() && assignment_.dp_size > 1) {
    applied = data_parallel_->AdjustCodec(change.dp_bits, change.dp_topk_ratio);
  }
  if (!applied.ok()) {
    spdlog::warn("{}: data-parallel change (bits {}, topk_ratio {}) not applied: {}{}", when,
                 change.dp_bits, Number(change.dp_topk_ratio), applied.message(), why);
    return;
  }
  std::string what;
  if (change.dp_bits != 0) {
    what = " bits " + std::to_string(before.codec.quant_bits) + " -> " +
           std::to_string(after->codec.quant_bits);
  }
  if (change.dp_topk_ratio != 0) {
    what += std::string(what.empty() ? "" : ",") + " topk_ratio " +
            Number(before.codec.topk_ratio) + " -> " + Number(after->codec.topk_ratio);
  }
  spdlog::info("{}: data-parallel{}{}", when, what, why);
  data_parallel_settings_ = std::move(after).value();
}

Status StageRuntime::FlushSends() {
  if (to_next_) GEOTRAIN_RETURN_IF_ERROR(to_next_->Flush());
  if (to_prev_) GEOTRAIN_RETURN_IF_ERROR(to_prev_->Flush());
  return OkStatus();
}

double StageRuntime::LocalSquaredNorm() const {
  // Copies that hold the same gradient after their sync count once: a tied embedding on the
  // first stage, the pipeline-shared tensors on stage 0.
  std::set<std::string> copies;
  if (tied_embedding_sync_ && assignment_.is_last_stage() && !assignment_.is_first_stage()) {
    copies.insert(models::TokenEmbeddingName(stage_->config()));
  }
  if (!assignment_.is_first_stage()) {
    for (const models::NamedParameter& p : pipeline_shared_) copies.insert(p.name);
  }
  if (copies.empty()) return SquaredGradNorm(parameters_);
  std::vector<models::NamedParameter> counted;
  for (const models::NamedParameter& p : parameters_) {
    if (copies.count(p.name) == 0) counted.push_back(p);
  }
  return SquaredGradNorm(counted);
}

models::SequenceContext StageRuntime::OnDevice(models::SequenceContext context) const {
  if (context.attention_mask.defined()) context.attention_mask = context.attention_mask.to(device_);
  if (context.token_type_ids.defined()) context.token_type_ids = context.token_type_ids.to(device_);
  return context;
}

Status StageRuntime::SumSharedGradients() {
  std::vector<at::Tensor> grads;
  for (const models::NamedParameter& p : pipeline_shared_) {
    grads.push_back(p.tensor.grad().defined() ? p.tensor.grad().to(at::kFloat).flatten()
                                              : at::zeros({p.tensor.numel()}, at::kFloat));
  }
  // The sum crosses the pipeline links from host memory (one copy if the stage is on a GPU).
  at::Tensor flat = FlattenToCpu(grads);
  GEOTRAIN_RETURN_IF_ERROR(SumOverPipeline(
      Span<float>(flat.data_ptr<float>(), static_cast<size_t>(flat.numel())),
      links_.upstream.get(), links_.downstream.get(), timeout()));
  int64_t offset = 0;
  for (const models::NamedParameter& p : pipeline_shared_) {
    const at::Tensor total = flat.narrow(0, offset, p.tensor.numel()).view(p.tensor.sizes());
    // In place: the data-parallel sync may hold views of the gradients.
    if (p.tensor.grad().defined()) {
      p.tensor.mutable_grad().copy_(total);
    } else {
      p.tensor.mutable_grad() = total.to(p.tensor.device(), p.tensor.scalar_type()).clone();
    }
    offset += p.tensor.numel();
  }
  return OkStatus();
}

Status StageRuntime::SynchronizeGradients(StepResult* result) {
  const Clock::time_point start = Clock::now();
  const bool compress = CompressionActive(step_);
  if (const at::Tensor* embedding = TiedEmbedding()) {
    const uint64_t raw = 4 * static_cast<uint64_t>(embedding->numel());
    if (compress && compressed_embedding_) {
      uint64_t wire = 0;
      GEOTRAIN_RETURN_IF_ERROR(compressed_embedding_->Sync(*links_.embedding, *embedding, step_,
                                                           timeout(), &wire));
      result->raw_bytes.embedding += raw;
      result->wire_bytes.embedding += wire;
      embedding_traffic_.raw_bytes += raw;
      embedding_traffic_.wire_bytes += wire;
    } else {
      const bool fused = UsesFusedEmbeddingGroup(assignment_);
      GEOTRAIN_RETURN_IF_ERROR(SyncTiedEmbeddingGradient(
          *links_.embedding, *embedding, fused ? assignment_.dp_size : 1, timeout()));
      // What a ring all-reduce sends from each rank.
      const int n = links_.embedding->size();
      const uint64_t sent = 2 * (n - 1) * raw / n;
      result->raw_bytes.embedding += sent;
      result->wire_bytes.embedding += sent;
      embedding_traffic_.raw_bytes += sent;
      embedding_traffic_.wire_bytes += sent;
    }
  }
  if (!pipeline_shared_.empty()) {
    GEOTRAIN_RETURN_IF_ERROR(SumSharedGradients().WithContext(
        "summing the gradients of the tensors every stage holds over the pipeline"));
  }
  GEOTRAIN_RETURN_IF_ERROR(data_parallel_->BeforeClip(step_, compress).WithContext(DataParallelErrorContext()));
  auto total = SumOverPipeline(LocalSquaredNorm(), links_.upstream.get(), links_.downstream.get(),
                               timeout());
  if (!total.ok()) return total.status().WithContext("summing the gradient norm over the pipeline");
  result->grad_norm = std::sqrt(*total);
  const double coefficient = ClipCoefficient(result->grad_norm, assignment_.optimizer.max_grad_norm);
  if (coefficient < 1) ScaleGrads(parameters_, coefficient);
  const Clock::time_point end = Clock::now();
  const double seconds = std::chrono::duration<double>(end - start).count();
  result->comm_seconds += seconds;
  result->phases.sync += seconds;
  trace_->Complete("sync gradients", "sync", start, end);
  return OkStatus();
}

Status StageRuntime::ApplyOptimizer(StepResult* result) {
  const bool compress = CompressionActive(step_);
  result->lr = LearningRate(assignment_.optimizer, step_, assignment_.training.total_steps);

  StepPhases& phases = result->phases;
  Clock::time_point start = Clock::now();
  optimizer_->UpdateMoments();
  double seconds = SecondsSince(start);
  result->compute_seconds += seconds;
  phases.optimizer += seconds;
  start = Clock::now();
  GEOTRAIN_RETURN_IF_ERROR(data_parallel_->AfterMoments(step_, compress).WithContext(DataParallelErrorContext()));
  seconds = SecondsSince(start);
  result->comm_seconds += seconds;
  phases.sync += seconds;
  start = Clock::now();
  optimizer_->ApplyUpdate(result->lr);
  Clock::time_point end = Clock::now();
  seconds = std::chrono::duration<double>(end - start).count();
  result->compute_seconds += seconds;
  phases.optimizer += seconds;
  trace_->Complete("optimizer", "compute", start, end);
  start = Clock::now();
  GEOTRAIN_RETURN_IF_ERROR(data_parallel_->AfterUpdate(step_, compress).WithContext(DataParallelErrorContext()));
  end = Clock::now();
  seconds = std::chrono::duration<double>(end - start).count();
  result->comm_seconds += seconds;
  phases.sync += seconds;
  trace_->Complete("sync parameters", "sync", start, end);

  start = Clock::now();
  for (const models::NamedParameter& p : parameters_) {
    if (p.tensor.grad().defined()) p.tensor.mutable_grad().zero_();
  }
  phases.optimizer += SecondsSince(start);
  // Everything the sync sent since the last step ended, the overlapped exchange included.
  const DataParallelTraffic traffic = data_parallel_->traffic();
  result->raw_bytes.dp = traffic.raw_bytes - dp_traffic_reported_.raw_bytes;
  result->wire_bytes.dp = traffic.wire_bytes - dp_traffic_reported_.wire_bytes;
  dp_traffic_reported_ = traffic;
  ++step_;
  return OkStatus();
}

StatusOr<double> StageRuntime::Evaluate() {
  if (!data_->has_validation()) return FailedPrecondition("evaluate: data.valid has no sources");
  GEOTRAIN_RETURN_IF_ERROR(data_parallel_->Flush().WithContext(DataParallelErrorContext()));
  at::NoGradGuard no_grad;
  const Clock::time_point start = Clock::now();
  std::unique_ptr<models::data::BatchIterator> batches;
  if (assignment_.is_first_stage()) {
    GEOTRAIN_ASSIGN_OR_RETURN(batches, data_->ValidationBatches());
  }
  const uint64_t step = static_cast<uint64_t>(step_);
  double loss_sum = 0;
  std::optional<ConfusionCounts> confusion;
  if (data_->classification()) confusion.emplace(stage_->config().num_labels);
  for (int64_t i = 0; i < assignment_.training.eval_batches; ++i) {
    const uint32_t index = static_cast<uint32_t>(i);
    std::vector<uint64_t> ids;
    at::Tensor input;
    if (assignment_.is_first_stage()) {
      GEOTRAIN_ASSIGN_OR_RETURN(models::data::Batch batch, batches->Next());
      input = TrainingData::BatchTokens(batch, assignment_.data.seq_length);
      ids = std::move(batch.sample_ids);
    } else {
      MicroBatchHeader header;
      GEOTRAIN_ASSIGN_OR_RETURN(at::Tensor received,
                                from_prev_->Recv(MessageKind::kEvalActivation, step, index, &header));
      ids = std::move(header.sample_ids);
      input = received;
    }
    GEOTRAIN_ASSIGN_OR_RETURN(models::SequenceContext context,
                              data_->Context(ids, /*validation=*/true));
    context = OnDevice(std::move(context));
    at::Tensor labels;  // on the host: the confusion counts read them
    if (assignment_.is_last_stage()) {
      GEOTRAIN_ASSIGN_OR_RETURN(labels, data_->Labels(ids, /*validation=*/true));
    }
    at::Tensor output;
    at::Tensor loss;
    {
      const CudaAutocastScope autocast(autocast_);
      if (assignment_.is_first_stage()) {
        input = input.to(device_);
      } else {
        input = input.to(stage_->dtype());
        if (decoder_) input = ApplyLinear(input, decoder_->tensor).to(stage_->dtype());
      }
      GEOTRAIN_ASSIGN_OR_RETURN(output, stage_->Forward(input, context));
      if (assignment_.is_last_stage()) {
        GEOTRAIN_ASSIGN_OR_RETURN(loss, stage_->Loss(output, labels.to(device_)));
      } else if (encoder_) {
        output = ApplyLinear(output, encoder_->tensor);
      }
    }
    if (assignment_.is_last_stage()) {
      loss_sum += loss.item<double>();
      if (confusion) {
        const at::Tensor predicted = output.argmax(-1).to(at::kCPU);
        for (int64_t row = 0; row < labels.size(0); ++row) {
          confusion->Add(labels[row].item<int64_t>(), predicted[row].item<int64_t>());
        }
      }
    } else {
      MicroBatchHeader header{MessageKind::kEvalActivation, step, index, ids};
      GEOTRAIN_RETURN_IF_ERROR(to_next_->Send(header, output, /*compress=*/false));
    }
  }
  if (to_next_) GEOTRAIN_RETURN_IF_ERROR(to_next_->Flush());
  trace_->Complete("evaluate", "compute", start, Clock::now());
  if (!assignment_.is_last_stage()) return std::numeric_limits<double>::quiet_NaN();
  // The replicas evaluated disjoint shares: their last stages agree on the mean (the exchange
  // the data-parallel sync may run in the background was flushed above).
  float mean = static_cast<float>(loss_sum / static_cast<double>(assignment_.training.eval_batches));
  if (links_.data_parallel) {
    GEOTRAIN_RETURN_IF_ERROR(links_.data_parallel->AllReduceSum(Span<float>(&mean, 1), timeout())
                                 .WithContext("averaging the evaluation loss over the replicas"));
    mean /= static_cast<float>(assignment_.dp_size);
    if (confusion) {
      std::vector<float>& counts = confusion->counts();
      GEOTRAIN_RETURN_IF_ERROR(
          links_.data_parallel->AllReduceSum(Span<float>(counts.data(), counts.size()), timeout())
              .WithContext("summing the evaluation's predictions over the replicas"));
    }
  }
  if (confusion) last_eval_metrics_ = confusion->Metrics();
  return static_cast<double>(mean);
}

Status StageRuntime::Checkpoint() {
  if (!checkpoints_) return FailedPrecondition("checkpoint: training.checkpoint_dir is empty");
  GEOTRAIN_RETURN_IF_ERROR(data_parallel_->Flush().WithContext(DataParallelErrorContext()));
  return WriteCheckpoint();
}

Status StageRuntime::WriteCheckpoint() {
  const Clock::time_point start = Clock::now();
  RankCheckpoint checkpoint;
  checkpoint.step = step_;
  for (const models::NamedParameter& p : stage_->Parameters()) {
    checkpoint.model[p.name] = p.tensor.detach();
  }
  checkpoint.optimizer = optimizer_->StateTensors();
  checkpoint.extra = data_parallel_->StateTensors();
  for (const auto* half : {&encoder_, &decoder_}) {
    if (*half) checkpoint.extra[(*half)->name] = (*half)->tensor.detach();
  }
  checkpoint.state = {{"step", step_},
                      {"data_position", models::data::DataPositionToJson(data_->position())}};
  GEOTRAIN_RETURN_IF_ERROR(checkpoints_->Write(checkpoint));
  GEOTRAIN_RETURN_IF_ERROR(checkpoints_->Prune(assignment_.training.keep_checkpoints));
  trace_->Complete("checkpoint", "io", start, Clock::now(), {{"step", step_}});
  return OkStatus();
}

StatusOr<int64_t> StageRuntime::Resume() {
  if (!checkpoints_ || !assignment_.training.resume) return int64_t{0};
  GEOTRAIN_ASSIGN_OR_RETURN(std::optional<int64_t> newest, checkpoints_->NewestComplete());
  if (!newest) return int64_t{0};
  GEOTRAIN_ASSIGN_OR_RETURN(RankCheckpoint checkpoint, checkpoints_->Read(*newest));
  auto restore = [](const std::map<std::string, at::Tensor>& from,
                    const models::NamedParameter& p, const char* file) -> Status {
    auto it = from.find(p.name);
    if (it == from.end()) {
      return InvalidArgument(std::string("checkpoint ") + file + ": " + p.name + ": missing");
    }
    if (it->second.sizes() != p.tensor.sizes()) {
      return InvalidArgument(std::string("checkpoint ") + file + ": " + p.name + ": shape " +
                             c10::str(it->second.sizes()) + " differs from the model's " +
                             c10::str(p.tensor.sizes()));
    }
    return OkStatus();
  };
  // Validate everything before changing anything.
  for (const models::NamedParameter& p : stage_->Parameters()) {
    GEOTRAIN_RETURN_IF_ERROR(restore(checkpoint.model, p, "model"));
  }
  for (const auto* half : {&encoder_, &decoder_}) {
    if (*half) GEOTRAIN_RETURN_IF_ERROR(restore(checkpoint.extra, **half, "extra"));
  }
  if (!checkpoint.state.is_object() || !checkpoint.state.contains("data_position")) {
    return InvalidArgument("checkpoint state: data_position: missing");
  }
  GEOTRAIN_ASSIGN_OR_RETURN(models::data::DataPosition position,
                            models::data::DataPositionFromJson(checkpoint.state["data_position"]));
  GEOTRAIN_RETURN_IF_ERROR(optimizer_->LoadStateTensors(checkpoint.optimizer));
  GEOTRAIN_RETURN_IF_ERROR(data_parallel_->LoadStateTensors(checkpoint.extra));
  GEOTRAIN_RETURN_IF_ERROR(data_->Seek(position));
  at::NoGradGuard no_grad;
  for (const models::NamedParameter& p : stage_->Parameters()) {
    p.tensor.copy_(checkpoint.model.at(p.name));
  }
  for (const auto* half : {&encoder_, &decoder_}) {
    if (*half) (*half)->tensor.copy_(checkpoint.extra.at((*half)->name));
  }
  step_ = checkpoint.step;
  return step_;
}

Status StageRuntime::Run(const std::function<void(const StepResult&)>& on_step,
                         const std::function<void()>& before_step) {
  const TrainingSettings& training = assignment_.training;
  while (step_ < training.total_steps) {
    if (before_step) before_step();
    GEOTRAIN_ASSIGN_OR_RETURN(StepResult result, TrainStep());
    if (training.eval_every > 0 && step_ % training.eval_every == 0 && data_->has_validation()) {
      const Clock::time_point start = Clock::now();
      GEOTRAIN_ASSIGN_OR_RETURN(double eval_loss, Evaluate());
      result.phases.eval = SecondsSince(start);
      if (assignment_.is_last_stage()) {
        result.eval_loss = eval_loss;
        result.eval_metrics = last_eval_metrics_;
      }
    }
    const bool last = step_ == training.total_steps;
    if (checkpoints_ && ((training.checkpoint_every > 0 && step_ % training.checkpoint_every == 0) ||
                         (last && training.checkpoint_every > 0))) {
      const Clock::time_point start = Clock::now();
      // A transport error of the flush is the job's failure, not the storage's.
      GEOTRAIN_RETURN_IF_ERROR(data_parallel_->Flush().WithContext(DataParallelErrorContext()));
      const Status written = WriteCheckpoint();
      result.phases.checkpoint = SecondsSince(start);
      const bool storage_failed = written.code() == StatusCode::kResourceExhausted ||
                                  written.code() == StatusCode::kUnavailable;
      if (written.ok()) {
        result.checkpointed = true;
      } else if (last || !storage_failed) {
        return written;
      } else {
        result.checkpoint_error = written.message();
        spdlog::warn("checkpoint of step {} not written: {}; training goes on, a restart resumes "
                     "from the newest complete checkpoint, the next one is due at step {}",
                     step_, written.message(), step_ + training.checkpoint_every);
      }
    }
    result.total_steps = training.total_steps;
    MeasureTraffic(&result);
    if (on_step) on_step(result);
  }
  GEOTRAIN_RETURN_IF_ERROR(data_parallel_->Flush().WithContext(DataParallelErrorContext()));
  return trace_->Flush();
}

}  // namespace geotrain::runtime
