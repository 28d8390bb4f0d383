#include "runtime/stage_builder.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <string>
#include <utility>

#include "models/model_config.h"
#include "models/model_layout.h"
#include "runtime/autocast_scope.h"
#include "runtime/autoencoder.h"
#include "runtime/dp_backend.h"
#include "runtime/stage_device.h"

namespace geotrain::runtime {
namespace {

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

Status CheckLinks(const StageAssignment& assignment, const StageLinks& links) {
  const int s = assignment.stage;
  const int num_stages = assignment.num_stages;
  if ((s > 0) != (links.upstream != nullptr) ||
      (s + 1 < num_stages) != (links.downstream != nullptr) ||
      (assignment.dp_size > 1) != (links.data_parallel != nullptr)) {
    return InvalidArgument("links: the transports given do not match stage " + std::to_string(s) +
                           " of " + std::to_string(num_stages) + " with " +
                           std::to_string(assignment.dp_size) + " replicas");
  }
  return OkStatus();
}

Status CheckTask(const StageAssignment& assignment, const models::ModelConfig& config) {
  if (config.IsClassifier() == (assignment.data.task == Task::kSequenceClassification)) {
    return OkStatus();
  }
  return InvalidArgument(
      "data.task: " + std::string(TaskName(assignment.data.task)) + " does not fit the " +
      models::ModelTypeName(config.family) + " model in " + assignment.model_dir + " (" +
      (config.IsClassifier() ? "a sequence classifier: use sequence_classification"
                             : "a language model: use causal_lm") +
      ")");
}

// Step 3: the autoencoder halves join the trainable parameters.
void AddAutoencoder(const models::ModelConfig& config, at::ScalarType dtype, StageParts* parts) {
  const StageAssignment& assignment = parts->assignment;
  const int dim = assignment.compression.autoencoder_dim;
  if (dim <= 0) return;
  const int s = assignment.stage;
  if (s + 1 < assignment.num_stages) {
    parts->encoder = MakeAutoencoderEncoder(config.hidden_size, dim, assignment.training.seed, s,
                                            dtype, parts->device);
    parts->parameters.push_back(*parts->encoder);
  }
  if (s > 0) {
    parts->decoder = MakeAutoencoderDecoder(config.hidden_size, dim, assignment.training.seed,
                                            s - 1, dtype, parts->device);
    parts->parameters.push_back(*parts->decoder);
  }
}

// Step 4.
Status FindPipelineShared(const models::ModelConfig& config, StageParts* parts) {
  const int s = parts->assignment.stage;
  if (parts->assignment.num_stages <= 1) return OkStatus();
  for (const std::string& name : models::PipelineSharedTensorNames(config)) {
    const auto& held = parts->stage->Parameters();
    const auto it = std::find_if(held.begin(), held.end(),
                                 [&](const models::NamedParameter& p) { return p.name == name; });
    if (it == held.end()) {
      return InvalidArgument("model.layers: stage " + std::to_string(s) +
                             " holds no layer, but every stage of a pipelined " +
                             models::ModelTypeName(config.family) + " model needs one (" + name +
                             " is shared by every layer and summed over the stages)");
    }
    parts->pipeline_shared.push_back(*it);
  }
  return OkStatus();
}

// Step 5. Tied embeddings split over stages are synced through the embedding group; with the
// fused sync the data-parallel sync leaves that tensor alone, otherwise it goes in a bucket of
// its own.
Status BuildSyncAndOptimizer(const models::ModelConfig& config, const models::StagePlan& plan,
                             StageParts* parts) {
  const StageAssignment& assignment = parts->assignment;
  const int s = assignment.stage;
  parts->tied_embedding_sync = NeedsEmbeddingGroup(assignment, config.tie_word_embeddings) &&
                               (plan.is_first || plan.is_last);
  if (parts->tied_embedding_sync && !parts->links.embedding) {
    return InvalidArgument("links.embedding: tied embeddings need the embedding group");
  }
  if (parts->tied_embedding_sync && assignment.compression.compress_embedding_sync &&
      assignment.compression.data_parallel.mode == DataParallelMode::kCocktail) {
    GEOTRAIN_ASSIGN_OR_RETURN(
        parts->compressed_embedding,
        CompressedEmbeddingSync::Create(assignment.compression.data_parallel.codec));
  }
  const std::string embedding_name = models::TokenEmbeddingName(config);
  DataParallelContext dp;
  dp.stage = s;
  dp.group = parts->links.data_parallel.get();
  dp.device_group = parts->links.data_parallel_device.get();
  if (assignment.dp_size > 1) {
    std::string why;
    const DataParallelBackend rule = ChooseDataParallelBackend(assignment, &why);
    const bool nccl = dp.device_group != nullptr;
    spdlog::info("stage {} replica {} on {}: data-parallel gradients over {} ({})", s,
                 assignment.dp_rank, parts->device.str(), nccl ? "NCCL" : "Gloo",
                 nccl == (rule == DataParallelBackend::kNccl) ? why : "the links' choice");
  }
  dp.groups.emplace_back();
  std::vector<models::NamedParameter> fused_embedding;  // synced by embedding_sync.h alone
  for (const models::NamedParameter& p : parts->parameters) {
    if (parts->tied_embedding_sync && p.name == embedding_name) {
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
  parts->optimizer = std::make_unique<AdamW>(std::move(in_bucket_order), adam);
  dp.optimizer = parts->optimizer.get();
  dp.timeout = parts->timeout();
  dp.seed = assignment.training.seed;
  GEOTRAIN_ASSIGN_OR_RETURN(
      parts->data_parallel,
      CreateDataParallelSync(assignment.compression.data_parallel, std::move(dp)));
  return OkStatus();
}

// Step 6.
Status OpenPipelineLinks(StageParts* parts) {
  const StageAssignment& assignment = parts->assignment;
  const int s = assignment.stage;
  const CompressionSettings& compression = assignment.compression;
  auto stage_name = [&](int stage) {
    return "stage " + std::to_string(stage) + " (global rank " +
           std::to_string(assignment.dp_rank * assignment.num_stages + stage) + ")";
  };
  PipelineLinkEnds& ends = parts->ends;
  if (parts->links.downstream) {
    GEOTRAIN_ASSIGN_OR_RETURN(
        ends.to_next, TensorSender::Create(parts->links.downstream.get(), 1, stage_name(s + 1),
                                           compression.forward, parts->timeout()));
    ends.from_next =
        std::make_unique<TensorReceiver>(parts->links.downstream.get(), 1, stage_name(s + 1),
                                         compression.backward, parts->timeout());
  }
  if (parts->links.upstream) {
    GEOTRAIN_ASSIGN_OR_RETURN(
        ends.to_prev, TensorSender::Create(parts->links.upstream.get(), 0, stage_name(s - 1),
                                           compression.backward, parts->timeout()));
    ends.from_prev = std::make_unique<TensorReceiver>(
        parts->links.upstream.get(), 0, stage_name(s - 1), compression.forward, parts->timeout());
  }
  for (TensorSender* sender : {ends.to_next.get(), ends.to_prev.get()}) {
    if (sender) GEOTRAIN_RETURN_IF_ERROR(sender->set_device(parts->device));
  }
  for (TensorReceiver* receiver : {ends.from_next.get(), ends.from_prev.get()}) {
    if (receiver) GEOTRAIN_RETURN_IF_ERROR(receiver->set_device(parts->device));
  }
  return OkStatus();
}

// Step 7: the epoch length in steps fixes training.epochs' step count and the warm-up's.
void PlanSteps(StageParts* parts) {
  StageAssignment& assignment = parts->assignment;
  const TrainingSettings& training = assignment.training;
  const int64_t steps_per_epoch =
      static_cast<int64_t>(parts->data->batches_per_epoch()) / training.micro_batches;
  if (training.epochs > 0) {
    assignment.training.total_steps = std::max<int64_t>(1, training.epochs * steps_per_epoch);
  }
  parts->schedule =
      BuildPipelineSchedule(training.schedule, assignment.stage, assignment.num_stages,
                            static_cast<int>(training.micro_batches));
  parts->warmup_steps = std::max<int64_t>(assignment.compression.warmup_steps,
                                          assignment.compression.warmup_epochs * steps_per_epoch);
}

// Step 8.
Status OpenCheckpointsAndTrace(StageParts* parts) {
  const StageAssignment& assignment = parts->assignment;
  if (!assignment.training.checkpoint_dir.empty()) {
    GEOTRAIN_ASSIGN_OR_RETURN(
        CheckpointStore store,
        CheckpointStore::Open(assignment.training.checkpoint_dir, assignment.stage,
                              assignment.num_stages, assignment.dp_rank, assignment.dp_size));
    parts->checkpoints.emplace(std::move(store));
  }
  parts->trace =
      std::make_unique<TraceWriter>(assignment.training.profile_path, assignment.global_rank(),
                                    "stage " + std::to_string(assignment.stage) + " replica " +
                                        std::to_string(assignment.dp_rank));
  if (parts->trace->enabled()) {
    for (TensorSender* sender : {parts->ends.to_next.get(), parts->ends.to_prev.get()}) {
      if (sender) sender->set_trace(parts->trace.get());
    }
    for (TensorReceiver* receiver : {parts->ends.from_next.get(), parts->ends.from_prev.get()}) {
      if (receiver) receiver->set_trace(parts->trace.get());
    }
  }
  return OkStatus();
}

}  // namespace

StatusOr<std::unique_ptr<StageParts>> BuildStageParts(const StageAssignment& assignment,
                                                      StageLinks links) {
  // Step 1.
  GEOTRAIN_RETURN_IF_ERROR(assignment.Validate());
  GEOTRAIN_ASSIGN_OR_RETURN(const at::Device device, StageDevice(assignment));
  auto parts = std::make_unique<StageParts>();
  parts->assignment = assignment;
  parts->device = device;
  parts->autocast = AutocastDtype(assignment);
  parts->links = std::move(links);
  GEOTRAIN_RETURN_IF_ERROR(CheckLinks(assignment, parts->links));

  // Step 2.
  GEOTRAIN_ASSIGN_OR_RETURN(models::ModelConfig config,
                            models::LoadModelConfig(assignment.model_dir));
  GEOTRAIN_RETURN_IF_ERROR(CheckTask(assignment, config));
  GEOTRAIN_ASSIGN_OR_RETURN(models::StagePlan plan, PlanOf(assignment, config));
  GEOTRAIN_ASSIGN_OR_RETURN(at::ScalarType dtype, ScalarTypeOf(assignment.dtype));
  GEOTRAIN_ASSIGN_OR_RETURN(parts->stage,
                            models::LoadStage(assignment.model_dir, plan, device, dtype));
  GEOTRAIN_ASSIGN_OR_RETURN(parts->data, TrainingData::Open(assignment));
  parts->parameters = parts->stage->Parameters();

  AddAutoencoder(config, dtype, parts.get());
  GEOTRAIN_RETURN_IF_ERROR(FindPipelineShared(config, parts.get()));
  GEOTRAIN_RETURN_IF_ERROR(BuildSyncAndOptimizer(config, plan, parts.get()));
  GEOTRAIN_RETURN_IF_ERROR(OpenPipelineLinks(parts.get()));
  PlanSteps(parts.get());
  GEOTRAIN_RETURN_IF_ERROR(OpenCheckpointsAndTrace(parts.get()));
  return parts;
}

}  // namespace geotrain::runtime
