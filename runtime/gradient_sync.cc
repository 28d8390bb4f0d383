#include "runtime/gradient_sync.h"

#include <cmath>
#include <set>
#include <string>
#include <vector>

#include "models/model_layout.h"
#include "runtime/dp_buckets.h"
#include "runtime/embedding_sync.h"
#include "runtime/grad_clip.h"
#include "runtime/pipeline_reduce.h"

namespace geotrain::runtime {

GradientSync::GradientSync(const StageParts& parts, StepLedger* ledger)
    : parts_(parts), ledger_(ledger) {
  if (!parts.tied_embedding_sync) return;
  const std::string name = models::TokenEmbeddingName(parts.stage->config());
  for (const models::NamedParameter& p : parts.parameters) {
    if (p.name != name) continue;
    tied_embedding_ = &p.tensor;
    break;
  }
}

StatusOr<double> GradientSync::Synchronize(int64_t step, bool compress) {
  GEOTRAIN_RETURN_IF_ERROR(SyncTiedEmbedding(step, compress));
  if (!parts_.pipeline_shared.empty()) {
    GEOTRAIN_RETURN_IF_ERROR(SumSharedGradients().WithContext(
        "summing the gradients of the tensors every stage holds over the pipeline"));
  }
  GEOTRAIN_RETURN_IF_ERROR(parts_.data_parallel->BeforeClip(step, compress)
                               .WithContext(parts_.DataParallelErrorContext()));
  auto total = SumOverPipeline(LocalSquaredNorm(), parts_.links.upstream.get(),
                               parts_.links.downstream.get(), parts_.timeout());
  if (!total.ok()) return total.status().WithContext("summing the gradient norm over the pipeline");
  return std::sqrt(*total);
}

void GradientSync::Clip(double global_norm) const {
  const double coefficient =
      ClipCoefficient(global_norm, parts_.assignment.optimizer.max_grad_norm);
  if (coefficient < 1) ScaleGrads(parts_.parameters, coefficient);
}

Status GradientSync::SyncTiedEmbedding(int64_t step, bool compress) {
  if (tied_embedding_ == nullptr) return OkStatus();
  net::Transport& group = *parts_.links.embedding;
  const uint64_t raw = 4 * static_cast<uint64_t>(tied_embedding_->numel());
  if (compress && parts_.compressed_embedding) {
    uint64_t wire = 0;
    GEOTRAIN_RETURN_IF_ERROR(
        parts_.compressed_embedding->Sync(group, *tied_embedding_, step, parts_.timeout(), &wire));
    ledger_->AddEmbedding(raw, wire);
    return OkStatus();
  }
  const bool fused = UsesFusedEmbeddingGroup(parts_.assignment);
  GEOTRAIN_RETURN_IF_ERROR(SyncTiedEmbeddingGradient(
      group, *tied_embedding_, fused ? parts_.assignment.dp_size : 1, parts_.timeout()));
  // What a ring all-reduce sends from each rank.
  const int n = group.size();
  const uint64_t sent = 2 * (n - 1) * raw / n;
  ledger_->AddEmbedding(sent, sent);
  return OkStatus();
}

Status GradientSync::SumSharedGradients() {
  std::vector<at::Tensor> grads;
  for (const models::NamedParameter& p : parts_.pipeline_shared) {
    grads.push_back(p.tensor.grad().defined() ? p.tensor.grad().to(at::kFloat).flatten()
                                              : at::zeros({p.tensor.numel()}, at::kFloat));
  }
  // The sum crosses the pipeline links from host memory (one copy if the stage is on a GPU).
  at::Tensor flat = FlattenToCpu(grads);
  GEOTRAIN_RETURN_IF_ERROR(SumOverPipeline(
      Span<float>(flat.data_ptr<float>(), static_cast<size_t>(flat.numel())),
      parts_.links.upstream.get(), parts_.links.downstream.get(), parts_.timeout()));
  int64_t offset = 0;
  for (const models::NamedParameter& p : parts_.pipeline_shared) {
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

double GradientSync::LocalSquaredNorm() const {
  // Copies that hold the same gradient after their sync count once: a tied embedding on the
  // first stage, the pipeline-shared tensors on stage 0.
  const StageAssignment& assignment = parts_.assignment;
  std::set<std::string> copies;
  if (parts_.tied_embedding_sync && assignment.is_last_stage() && !assignment.is_first_stage()) {
    copies.insert(models::TokenEmbeddingName(parts_.stage->config()));
  }
  if (!assignment.is_first_stage()) {
    for (const models::NamedParameter& p : parts_.pipeline_shared) copies.insert(p.name);
  }
  if (copies.empty()) return SquaredGradNorm(parts_.parameters);
  std::vector<models::NamedParameter> counted;
  for (const models::NamedParameter& p : parts_.parameters) {
    if (copies.count(p.name) == 0) counted.push_back(p);
  }
  return SquaredGradNorm(counted);
}

}  // namespace geotrain::runtime
