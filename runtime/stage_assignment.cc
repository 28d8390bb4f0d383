#include "runtime/stage_assignment.h"

#include <algorithm>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

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
  return InvalidArgument(what + ": unknown value \"" + name + "\" (expected one of " + known + ")");
}

constexpr std::pair<const char*, ScheduleKind> kScheduleNames[] = {
    {"gpipe", ScheduleKind::kGPipe}, {"1f1b", ScheduleKind::kOneFOneB}};
constexpr std::pair<const char*, Task> kTaskNames[] = {
    {"causal_lm", Task::kCausalLm}, {"sequence_classification", Task::kSequenceClassification}};
constexpr std::pair<const char*, LrDecay> kDecayNames[] = {
    {"constant", LrDecay::kConstant}, {"linear", LrDecay::kLinear}, {"cosine", LrDecay::kCosine}};
constexpr std::pair<const char*, Autocast> kAutocastNames[] = {{"off", Autocast::kOff},
                                                               {"bf16", Autocast::kBf16}};
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

// Collects problems; each check adds one when its condition fails. Written as `!(value > 0)`
// rather than `value <= 0` so that a NaN fails too.
class ProblemList {
 public:
  void Add(std::string field, std::string reason, std::vector<std::string> also_reads = {}) {
    problems_.push_back({std::move(field), std::move(reason), std::move(also_reads)});
  }
  template <typename Number>
  void Positive(const char* field, Number value) {
    if (!(value > 0)) Add(field, Show(value) + " is not positive");
  }
  template <typename Number>
  void NotNegative(const char* field, Number value) {
    if (!(value >= 0)) Add(field, Show(value) + " is negative");
  }
  void InUnitInterval(const char* field, double value) {
    if (!(value >= 0 && value < 1)) Add(field, Show(value) + " is outside [0, 1)");
  }
  // CodecConfig::Validate's "bits: 9 is outside 2..8" becomes field `block`.bits.
  void Codec(const std::string& block, const compression::CodecConfig& codec) {
    const Status status = codec.Validate();
    if (status.ok()) return;
    const std::string& message = status.message();
    const size_t colon = message.find(": ");
    const bool named = colon != std::string::npos && colon > 0 &&
                       message.find_first_not_of("abcdefghijklmnopqrstuvwxyz_") >= colon;
    if (named) {
      Add(block + "." + message.substr(0, colon), message.substr(colon + 2));
    } else {
      Add(block, message);
    }
  }
  std::vector<FieldProblem> Take() { return std::move(problems_); }

 private:
  std::vector<FieldProblem> problems_;
};

// Codecs whose bits adaptive compression can change mid-run (ConfigChange's CodecOverride).
bool HasAdjustableBits(const compression::CodecConfig& codec) {
  using compression::CodecId;
  return codec.codec == CodecId::kFixpoint || codec.codec == CodecId::kDelta ||
         codec.codec == CodecId::kDeltaLowBits || codec.codec == CodecId::kTah;
}

// compression.adaptive: its ranges always (a disabled block is still read and written back);
// whether the job has anything to adapt only when it is on.
void AddAdaptiveProblems(const StageAssignment& a, ProblemList& p) {
  const AdaptiveCompressionSettings& ad = a.compression.adaptive;
  const auto in_bits_range = [](int bits) { return bits >= 2 && bits <= 8; };
  if (!in_bits_range(ad.min_bits)) {
    p.Add("compression.adaptive.min_bits", Show(ad.min_bits) + " is outside 2..8");
  }
  if (!in_bits_range(ad.max_bits)) {
    p.Add("compression.adaptive.max_bits", Show(ad.max_bits) + " is outside 2..8");
  } else if (in_bits_range(ad.min_bits) && ad.max_bits < ad.min_bits) {
    p.Add("compression.adaptive.max_bits",
          Show(ad.max_bits) + " is below min_bits " + Show(ad.min_bits),
          {"compression.adaptive.min_bits"});
  }
  p.Positive("compression.adaptive.max_relative_error", ad.max_relative_error);
  const bool hide_ok = ad.hide_fraction > 0 && ad.hide_fraction <= 1;
  if (!hide_ok) {
    p.Add("compression.adaptive.hide_fraction", Show(ad.hide_fraction) + " is outside (0, 1]");
  }
  if (!(ad.raise_fraction > 0)) {
    p.Add("compression.adaptive.raise_fraction", Show(ad.raise_fraction) + " is not positive");
  } else if (hide_ok && !(ad.raise_fraction < ad.hide_fraction)) {
    // Equal fractions would let a link that just hides be raised and lowered in turn.
    p.Add("compression.adaptive.raise_fraction",
          Show(ad.raise_fraction) + " is not below hide_fraction " + Show(ad.hide_fraction) +
              " (the hysteresis band between them must not be empty)",
          {"compression.adaptive.hide_fraction"});
  }
  p.Positive("compression.adaptive.interval_steps", ad.interval_steps);
  p.Positive("compression.adaptive.announce_steps", ad.announce_steps);
  if (!(ad.min_topk_ratio > 0 && ad.min_topk_ratio <= 1)) {
    p.Add("compression.adaptive.min_topk_ratio", Show(ad.min_topk_ratio) + " is outside (0, 1]");
  }
  if (!ad.enabled) return;
  const CompressionSettings& c = a.compression;
  for (const auto& [block, codec] : {std::pair{"compression.forward", &c.forward},
                                     std::pair{"compression.backward", &c.backward}}) {
    if (codec->codec == compression::CodecId::kTah && ad.max_bits == 2) {
      // Its low units would take bits - 1 = 1, which tah does not have.
      p.Add("compression.adaptive.max_bits",
            std::string("2 leaves the tah codec of ") + block + " no bits to choose (it needs 3)",
            {block});
      break;
    }
  }
  const bool pipeline =
      a.num_stages > 1 && (HasAdjustableBits(c.forward) || HasAdjustableBits(c.backward));
  const bool cocktail = a.dp_size > 1 && c.data_parallel.mode == DataParallelMode::kCocktail;
  if (!pipeline && !cocktail) {
    p.Add("compression.adaptive",
          "nothing to adapt: it needs pipeline.stages > 1 with a compression.forward or "
          "compression.backward codec of fixpoint, delta, delta-lowbits or tah, or "
          "data_parallel.replicas > 1 with data_parallel.mode cocktail",
          {"compression.forward", "compression.backward", "compression.data_parallel.mode",
           "num_stages", "dp_size"});
  }
}

// device, autocast and rank_regions: what runs where.
void AddDeviceProblems(const StageAssignment& a, ProblemList& p) {
  const StatusOr<DeviceName> device = ParseDeviceName(a.device);
  if (!device.ok()) p.Add("device", device.status().message());
  if (a.autocast == Autocast::kBf16) {
    if (device.ok() && !device->cuda) {
      // CPU autocast exists in LibTorch but is another mechanism (other op lists, slow bf16
      // kernels on most CPUs); a CPU stage that wants bfloat16 sets dtype bf16 instead.
      p.Add("autocast",
            "bf16 runs on a CUDA device only (device is " + a.device +
                "); CPU autocast is not supported",
            {"device"});
    }
    if (a.dtype != "f32") {
      p.Add("autocast",
            "bf16 keeps float32 parameters (master weights): it needs dtype f32, not " + a.dtype,
            {"dtype"});
    }
  }
  if (!a.rank_regions.empty() && a.num_stages > 0 && a.dp_size > 0 &&
      static_cast<int64_t>(a.rank_regions.size()) !=
          static_cast<int64_t>(a.num_stages) * a.dp_size) {
    p.Add("rank_regions",
          std::to_string(a.rank_regions.size()) + " entries for " +
              std::to_string(static_cast<int64_t>(a.num_stages) * a.dp_size) +
              " ranks (one per global rank, or none)",
          {"num_stages", "dp_size"});
  }
}

}  // namespace

const char* AutocastName(Autocast autocast) { return NameOf(autocast, kAutocastNames); }
StatusOr<Autocast> ParseAutocast(const std::string& name) {
  if (name == "f16" || name == "fp16" || name == "float16") {
    // float16's 5 exponent bits flush small gradients to zero unless the loss is scaled up and
    // the gradients down again (torch.cuda.amp.GradScaler); bfloat16 has float32's range.
    return InvalidArgument("autocast: " + name +
                           " is not supported: float16 autocast needs loss scaling, which is not "
                           "built (use bf16)");
  }
  return ParseName("autocast", name, kAutocastNames);
}

StatusOr<DeviceName> ParseDeviceName(const std::string& device) {
  if (device == "cpu") return DeviceName{};
  if (device == "cuda") return DeviceName{true, 0};
  const std::string prefix = "cuda:";
  const std::string digits = device.substr(std::min(device.size(), prefix.size()));
  // Digits only (no sign, no space), at most 4 of them: a device index, never an overflow.
  if (device.compare(0, prefix.size(), prefix) == 0 && !digits.empty() && digits.size() <= 4 &&
      digits.find_first_not_of("0123456789") == std::string::npos) {
    return DeviceName{true, std::stoi(digits)};
  }
  return InvalidArgument("\"" + device + "\" is not cpu, cuda or cuda:N (N a device index)");
}

const char* ScheduleKindName(ScheduleKind kind) { return NameOf(kind, kScheduleNames); }
StatusOr<ScheduleKind> ParseScheduleKind(const std::string& name) {
  return ParseName("schedule", name, kScheduleNames);
}
const char* TaskName(Task task) { return NameOf(task, kTaskNames); }
StatusOr<Task> ParseTask(const std::string& name) { return ParseName("task", name, kTaskNames); }
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

Status ProblemListStatus(const std::vector<std::string>& problems) {
  if (problems.empty()) return OkStatus();
  if (problems.size() == 1) return InvalidArgument(problems.front());
  std::string message = std::to_string(problems.size()) + " problems:";
  for (const std::string& problem : problems) message += "\n  " + problem;
  return InvalidArgument(message);
}

std::vector<FieldProblem> StageAssignment::Problems() const {
  ProblemList p;
  if (model_dir.empty()) p.Add("model_dir", "empty");
  p.Positive("num_stages", num_stages);
  if (num_stages > 0 && (stage < 0 || stage >= num_stages)) {
    p.Add("stage", std::to_string(stage) + " is outside [0, " + std::to_string(num_stages) + ")",
          {"num_stages"});
  }
  p.Positive("dp_size", dp_size);
  if (dp_size > 0 && (dp_rank < 0 || dp_rank >= dp_size)) {
    p.Add("dp_rank", std::to_string(dp_rank) + " is outside [0, " + std::to_string(dp_size) + ")",
          {"dp_size"});
  }
  if ((first_layer < 0) != (last_layer < 0)) {
    p.Add("first_layer, last_layer", "give both or neither");
  }
  if (dtype != "f32" && dtype != "bf16" && dtype != "f16") {
    p.Add("dtype", "\"" + dtype + "\" is not one of f32, bf16, f16");
  }
  AddDeviceProblems(*this, p);

  p.NotNegative("optimizer.lr", optimizer.lr);
  p.NotNegative("optimizer.min_lr", optimizer.min_lr);
  if (optimizer.lr >= 0 && optimizer.min_lr > optimizer.lr) {
    p.Add("optimizer.min_lr", "larger than optimizer.lr", {"optimizer.lr"});
  }
  p.NotNegative("optimizer.lr_warmup_steps", optimizer.lr_warmup_steps);
  p.NotNegative("optimizer.weight_decay", optimizer.weight_decay);
  p.InUnitInterval("optimizer.beta1", optimizer.beta1);
  p.InUnitInterval("optimizer.beta2", optimizer.beta2);
  p.Positive("optimizer.eps", optimizer.eps);
  p.NotNegative("optimizer.max_grad_norm", optimizer.max_grad_norm);

  if (data.train.empty()) p.Add("data.train", "no sources");
  p.Positive("data.seq_length", data.seq_length);
  if (data.text_field.empty()) p.Add("data.text_field", "empty");
  if (data.task == Task::kSequenceClassification) {
    if (data.label_field.empty()) p.Add("data.label_field", "empty");
    if (data.seq_length > 0 && data.seq_length < 3) {
      p.Add("data.seq_length", std::to_string(data.seq_length) +
                                   " cannot hold [CLS] text [SEP] (classification needs >= 3)");
    }
  } else if (!data.pair_field.empty() || !data.labels.empty()) {
    p.Add(data.labels.empty() ? "data.pair_field" : "data.labels",
          "only for data.task sequence_classification", {"data.task"});
  }

  p.Codec("compression.forward", compression.forward);
  p.Codec("compression.backward", compression.backward);
  p.NotNegative("compression.autoencoder_dim", compression.autoencoder_dim);
  p.NotNegative("compression.warmup_steps", compression.warmup_steps);
  p.NotNegative("compression.warmup_epochs", compression.warmup_epochs);
  const DataParallelSettings& dp = compression.data_parallel;
  if (dp.mode == DataParallelMode::kPowerSgd) {
    p.Positive("compression.data_parallel.powersgd_rank", dp.powersgd_rank);
  }
  if (dp.mode == DataParallelMode::kCocktail || dp.mode == DataParallelMode::kQuantizedMomentum) {
    p.Codec("compression.data_parallel.codec", dp.codec);
  }
  AddAdaptiveProblems(*this, p);

  p.Positive("training.micro_batch_size", training.micro_batch_size);
  p.Positive("training.micro_batches", training.micro_batches);
  p.Positive("training.total_steps", training.total_steps);
  p.NotNegative("training.epochs", training.epochs);
  p.NotNegative("training.eval_every", training.eval_every);
  p.Positive("training.eval_batches", training.eval_batches);
  p.NotNegative("training.checkpoint_every", training.checkpoint_every);
  p.Positive("training.keep_checkpoints", training.keep_checkpoints);
  if (training.checkpoint_every > 0 && training.checkpoint_dir.empty()) {
    p.Add("training.checkpoint_dir", "needed when checkpoint_every > 0",
          {"training.checkpoint_every"});
  }
  p.Positive("training.timeout_seconds", training.timeout_seconds);
  return p.Take();
}

Status StageAssignment::Validate() const {
  const std::vector<FieldProblem> problems = Problems();
  if (problems.empty()) return OkStatus();
  return InvalidArgument(problems.front().ToString());
}

}  // namespace geotrain::runtime
