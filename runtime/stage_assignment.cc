#include "runtime/stage_assignment.h"

#include <sstream>
#include <string>

namespace geotrain::runtime {
namespace {

template <typename Enum, size_t N>
StatusOr<Enum> ParseName(const std::string& what, const std::string& name,
                         const std::pair<const char*, Enum> (&names)[N]) {
  std::string known;
  for (const auto& [spelling, value] : names) {
    if (name == spelling) return value;
    known += known.empty() ? spelling : std::string(", ") + spelling;
  }
  return InvalidArgument(what + ": unknown value \"" + name + "\" (expected one of " +
                              known + ")");
}

constexpr std::pair<const char*, ScheduleKind> kScheduleNames[] = {
    {"gpipe", ScheduleKind::kGPipe}, {"1f1b", ScheduleKind::kOneFOneB}};
constexpr std::pair<const char*, LrDecay> kDecayNames[] = {
    {"constant", LrDecay::kConstant}, {"linear", LrDecay::kLinear}, {"cosine", LrDecay::kCosine}};
constexpr std::pair<const char*, DataParallelMode> kModeNames[] = {
    {"allreduce", DataParallelMode::kAllReduce},
    {"powersgd", DataParallelMode::kPowerSgd},
    {"cocktail", DataParallelMode::kCocktail},
    {"quantized-momentum", DataParallelMode::kQuantizedMomentum}};

template <typename Enum, size_t N>
const char* NameOf(Enum value, const std::pair<const char*, Enum> (&names)[N]) {
  for (const auto& [spelling, candidate] : names) {
    if (candidate == value) return spelling;
  }
  return "unknown";
}

// Integers print as integers, doubles with their significant digits.
template <typename Number>
std::string Show(Number value) {
  std::ostringstream out;
  out << value;
  return out.str();
}
template <typename Number>
Status Positive(const std::string& field, Number value) {
  if (value > 0) return OkStatus();
  return InvalidArgument(field + ": " + Show(value) + " is not positive");
}
template <typename Number>
Status NotNegative(const std::string& field, Number value) {
  if (value >= 0) return OkStatus();
  return InvalidArgument(field + ": " + Show(value) + " is negative");
}
Status InUnitInterval(const std::string& field, double value) {
  if (value >= 0 && value < 1) return OkStatus();
  return InvalidArgument(field + ": " + Show(value) + " is outside [0, 1)");
}

}  // namespace

const char* ScheduleKindName(ScheduleKind kind) { return NameOf(kind, kScheduleNames); }
StatusOr<ScheduleKind> ParseScheduleKind(const std::string& name) {
  return ParseName("schedule", name, kScheduleNames);
}
const char* LrDecayName(LrDecay decay) { return NameOf(decay, kDecayNames); }
StatusOr<LrDecay> ParseLrDecay(const std::string& name) {
  return ParseName("lr_decay", name, kDecayNames);
}
const char* DataParallelModeName(DataParallelMode mode) { return NameOf(mode, kModeNames); }
StatusOr<DataParallelMode> ParseDataParallelMode(const std::string& name) {
  if (name == "allreduce_sgd" || name == "all-reduce") return DataParallelMode::kAllReduce;
  if (name == "cocktail_sgd" || name == "cocktailsgd") return DataParallelMode::kCocktail;
  return ParseName("dp_mode", name, kModeNames);
}

Status StageAssignment::Validate() const {
  if (model_dir.empty()) return InvalidArgument("model_dir: empty");
  GEOTRAIN_RETURN_IF_ERROR(Positive("num_stages", num_stages));
  if (stage < 0 || stage >= num_stages) {
    return InvalidArgument("stage: " + std::to_string(stage) + " is outside [0, " +
                                std::to_string(num_stages) + ")");
  }
  GEOTRAIN_RETURN_IF_ERROR(Positive("dp_size", dp_size));
  if (dp_rank < 0 || dp_rank >= dp_size) {
    return InvalidArgument("dp_rank: " + std::to_string(dp_rank) + " is outside [0, " +
                                std::to_string(dp_size) + ")");
  }
  if ((first_layer < 0) != (last_layer < 0)) {
    return InvalidArgument("first_layer, last_layer: give both or neither");
  }
  if (dtype != "f32" && dtype != "bf16" && dtype != "f16") {
    return InvalidArgument("dtype: \"" + dtype + "\" is not one of f32, bf16, f16");
  }

  GEOTRAIN_RETURN_IF_ERROR(NotNegative("optimizer.lr", optimizer.lr));
  GEOTRAIN_RETURN_IF_ERROR(NotNegative("optimizer.min_lr", optimizer.min_lr));
  if (optimizer.min_lr > optimizer.lr) {
    return InvalidArgument("optimizer.min_lr: larger than optimizer.lr");
  }
  GEOTRAIN_RETURN_IF_ERROR(NotNegative("optimizer.lr_warmup_steps", optimizer.lr_warmup_steps));
  GEOTRAIN_RETURN_IF_ERROR(NotNegative("optimizer.weight_decay", optimizer.weight_decay));
  GEOTRAIN_RETURN_IF_ERROR(InUnitInterval("optimizer.beta1", optimizer.beta1));
  GEOTRAIN_RETURN_IF_ERROR(InUnitInterval("optimizer.beta2", optimizer.beta2));
  GEOTRAIN_RETURN_IF_ERROR(Positive("optimizer.eps", optimizer.eps));
  GEOTRAIN_RETURN_IF_ERROR(NotNegative("optimizer.max_grad_norm", optimizer.max_grad_norm));

  if (data.train.empty()) return InvalidArgument("data.train: no sources");
  GEOTRAIN_RETURN_IF_ERROR(Positive("data.seq_length", data.seq_length));

  GEOTRAIN_RETURN_IF_ERROR(compression.forward.Validate().WithContext("compression.forward"));
  GEOTRAIN_RETURN_IF_ERROR(compression.backward.Validate().WithContext("compression.backward"));
  GEOTRAIN_RETURN_IF_ERROR(NotNegative("compression.autoencoder_dim", compression.autoencoder_dim));
  GEOTRAIN_RETURN_IF_ERROR(NotNegative("compression.warmup_steps", compression.warmup_steps));
  GEOTRAIN_RETURN_IF_ERROR(NotNegative("compression.warmup_epochs", compression.warmup_epochs));
  const DataParallelSettings& dp = compression.data_parallel;
  if (dp.mode == DataParallelMode::kPowerSgd) {
    GEOTRAIN_RETURN_IF_ERROR(Positive("compression.data_parallel.powersgd_rank", dp.powersgd_rank));
  }
  if (dp.mode == DataParallelMode::kCocktail || dp.mode == DataParallelMode::kQuantizedMomentum) {
    GEOTRAIN_RETURN_IF_ERROR(dp.codec.Validate().WithContext("compression.data_parallel.codec"));
  }

  GEOTRAIN_RETURN_IF_ERROR(Positive("training.micro_batch_size", training.micro_batch_size));
  GEOTRAIN_RETURN_IF_ERROR(Positive("training.micro_batches", training.micro_batches));
  GEOTRAIN_RETURN_IF_ERROR(Positive("training.total_steps", training.total_steps));
  GEOTRAIN_RETURN_IF_ERROR(NotNegative("training.epochs", training.epochs));
  GEOTRAIN_RETURN_IF_ERROR(NotNegative("training.eval_every", training.eval_every));
  GEOTRAIN_RETURN_IF_ERROR(Positive("training.eval_batches", training.eval_batches));
  GEOTRAIN_RETURN_IF_ERROR(NotNegative("training.checkpoint_every", training.checkpoint_every));
  GEOTRAIN_RETURN_IF_ERROR(Positive("training.keep_checkpoints", training.keep_checkpoints));
  if (training.checkpoint_every > 0 && training.checkpoint_dir.empty()) {
    return InvalidArgument("training.checkpoint_dir: needed when checkpoint_every > 0");
  }
  GEOTRAIN_RETURN_IF_ERROR(Positive("training.timeout_seconds", training.timeout_seconds));
  return OkStatus();
}

}  // namespace geotrain::runtime
