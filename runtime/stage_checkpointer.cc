#include "runtime/stage_checkpointer.h"

#include <map>
#include <string>

#include "runtime/scoped_phase.h"

namespace geotrain::runtime {
namespace {

// `p` is in `from` (the part's file `file`) with the model's shape.
Status CheckRestorable(const std::map<std::string, at::Tensor>& from,
                       const models::NamedParameter& p, const char* file) {
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
}

}  // namespace

Status StageCheckpointer::Write(int64_t step) {
  const ScopedPhase span(TraceSpan{parts_.trace.get(), "checkpoint", "io", {{"step", step}}},
                         nullptr);
  RankCheckpoint checkpoint;
  checkpoint.step = step;
  for (const models::NamedParameter& p : parts_.stage->Parameters()) {
    checkpoint.model[p.name] = p.tensor.detach();
  }
  checkpoint.optimizer = parts_.optimizer->StateTensors();
  checkpoint.extra = parts_.data_parallel->StateTensors();
  for (const auto* half : {&parts_.encoder, &parts_.decoder}) {
    if (*half) checkpoint.extra[(*half)->name] = (*half)->tensor.detach();
  }
  checkpoint.state = {{"step", step},
                      {"data_position", models::data::DataPositionToJson(parts_.data->position())}};
  GEOTRAIN_RETURN_IF_ERROR(parts_.checkpoints->Write(checkpoint));
  return parts_.checkpoints->Prune(parts_.assignment.training.keep_checkpoints);
}

StatusOr<std::optional<int64_t>> StageCheckpointer::RestoreNewest() {
  GEOTRAIN_ASSIGN_OR_RETURN(std::optional<int64_t> newest, parts_.checkpoints->NewestComplete());
  if (!newest) return std::optional<int64_t>();
  GEOTRAIN_ASSIGN_OR_RETURN(RankCheckpoint checkpoint, parts_.checkpoints->Read(*newest));
  // Validate everything before changing anything.
  for (const models::NamedParameter& p : parts_.stage->Parameters()) {
    GEOTRAIN_RETURN_IF_ERROR(CheckRestorable(checkpoint.model, p, "model"));
  }
  for (const auto* half : {&parts_.encoder, &parts_.decoder}) {
    if (*half) GEOTRAIN_RETURN_IF_ERROR(CheckRestorable(checkpoint.extra, **half, "extra"));
  }
  if (!checkpoint.state.is_object() || !checkpoint.state.contains("data_position")) {
    return InvalidArgument("checkpoint state: data_position: missing");
  }
  GEOTRAIN_ASSIGN_OR_RETURN(models::data::DataPosition position,
                            models::data::DataPositionFromJson(checkpoint.state["data_position"]));
  GEOTRAIN_RETURN_IF_ERROR(parts_.optimizer->LoadStateTensors(checkpoint.optimizer));
  GEOTRAIN_RETURN_IF_ERROR(parts_.data_parallel->LoadStateTensors(checkpoint.extra));
  GEOTRAIN_RETURN_IF_ERROR(parts_.data->Seek(position));
  at::NoGradGuard no_grad;
  for (const models::NamedParameter& p : parts_.stage->Parameters()) {
    p.tensor.copy_(checkpoint.model.at(p.name));
  }
  for (const auto* half : {&parts_.encoder, &parts_.decoder}) {
    if (*half) (*half)->tensor.copy_(checkpoint.extra.at((*half)->name));
  }
  return std::optional<int64_t>(checkpoint.step);
}

}  // namespace geotrain::runtime
