#include "coordinator/job_shape.h"

#include <algorithm>

#include "coordinator/planner/nominal_job_shape.h"

namespace geotrain::coordinator {
namespace {

// Enough recent steps per stage to make a median robust, few enough to follow a bits change.
constexpr size_t kWindow = 9;

void Push(std::vector<double>& window, double value) {
  window.push_back(value);
  if (window.size() > kWindow) window.erase(window.begin());
}

double Median(std::vector<double> values) {
  if (values.empty()) return 0;
  const auto middle = values.begin() + static_cast<std::ptrdiff_t>(values.size() / 2);
  std::nth_element(values.begin(), middle, values.end());
  return *middle;
}

double DTypeRatio(compression::DType dtype) {
  return dtype == compression::DType::kFloat32 ? 1.0 : 0.5;
}

}  // namespace

StepShapeMeter::StepShapeMeter(int num_stages, int micro_batches)
    : num_stages_(num_stages),
      micro_batches_(std::max(1, micro_batches)),
      stages_(static_cast<size_t>(std::max(0, num_stages))) {}

void StepShapeMeter::Add(const v1::StepReport& report, double worker_speed) {
  if (report.stage() < 0 || report.stage() >= num_stages_ || !report.compressed()) return;
  const v1::StepPhases& phases = report.phases();
  if (phases.eval() > 0 || phases.checkpoint() > 0 || phases.forward() <= 0) return;
  StageFigures& stage = stages_[static_cast<size_t>(report.stage())];
  // Measured on a worker of `worker_speed`; the shape is for speed 1.
  const double per_micro_batch = worker_speed / micro_batches_;
  Push(stage.forward, phases.forward() * per_micro_batch);
  Push(stage.backward, phases.backward() * per_micro_batch);
  Push(stage.activation, static_cast<double>(report.wire_bytes_forward()) / micro_batches_);
  Push(stage.gradient, static_cast<double>(report.wire_bytes_backward()) / micro_batches_);
  Push(stage.sync, static_cast<double>(report.wire_bytes_dp()));
}

bool StepShapeMeter::complete() const {
  if (stages_.empty()) return false;
  return std::all_of(stages_.begin(), stages_.end(),
                     [](const StageFigures& stage) { return !stage.forward.empty(); });
}

void StepShapeMeter::ApplyTo(planner::JobShape& shape) const {
  const int replicas = std::max(1, shape.replicas);
  for (int s = 0; s < num_stages_; ++s) {
    const StageFigures& stage = stages_[static_cast<size_t>(s)];
    shape.forward_seconds[static_cast<size_t>(s)] = Median(stage.forward);
    shape.backward_seconds[static_cast<size_t>(s)] = Median(stage.backward);
    if (s + 1 < num_stages_) {
      shape.activation_bytes[static_cast<size_t>(s)] = Median(stage.activation);
      shape.gradient_bytes[static_cast<size_t>(s)] =
          Median(stages_[static_cast<size_t>(s + 1)].gradient);
    }
    // A replica sends 2(D-1)/D of the buffer the model's ring all-reduces.
    shape.sync_bytes[static_cast<size_t>(s)] =
        replicas > 1 ? Median(stage.sync) * replicas / (2.0 * (replicas - 1)) : 0;
  }
}

double NominalWireRatio(const compression::CodecConfig& codec) {
  using compression::CodecId;
  switch (codec.codec) {
    case CodecId::kNone:
      return DTypeRatio(codec.wire_dtype);
    case CodecId::kFixpoint:
    case CodecId::kDelta:
    case CodecId::kDeltaLowBits:
      return codec.bits / 32.0;
    case CodecId::kTah:
      return (codec.high_ratio * codec.high_bits + (1 - codec.high_ratio) * codec.low_bits) / 32.0;
    case CodecId::kTopK:
    case CodecId::kRandK:
      // A kept value (f16 or f32) and its 32-bit index.
      return codec.density * (32.0 * DTypeRatio(codec.value_dtype) + 32.0) / 32.0;
    case CodecId::kPowerSgd:
      return 0.1;  // rank r of an m x n matrix: r(m+n)/(mn); the matrices are not known here
    case CodecId::kCocktail:
      // The random subset's bitmap of kept values, and the kept values' bits.
      return codec.random_ratio * (1 + codec.topk_ratio * codec.quant_bits) / 32.0;
  }
  return 1.0;
}

planner::JobShape NominalShapeOf(const runtime::JobSpec& spec, const v1::ModelShape& model) {
  const runtime::StageAssignment& base = spec.base;
  const bool known = model.hidden_size() > 0 && model.layers() > 0;
  const int64_t hidden = known ? model.hidden_size() : 768;
  const int64_t layers = known ? model.layers() : 12;
  const int64_t vocab = known ? model.vocab_size() : 50257;
  const runtime::CompressionSettings& compression = base.compression;
  double sync_ratio = 1.0;
  switch (compression.data_parallel.mode) {
    case runtime::DataParallelMode::kAllReduce:
    case runtime::DataParallelMode::kQuantizedMomentum:
      break;
    case runtime::DataParallelMode::kPowerSgd:
      sync_ratio = 0.1;
      break;
    case runtime::DataParallelMode::kCocktail:
      sync_ratio = NominalWireRatio(compression.data_parallel.codec);
      break;
  }
  planner::JobShape shape = planner::NominalJobShape(
      spec.num_stages, spec.dp_size, static_cast<int>(base.training.micro_batches),
      base.training.micro_batch_size, base.data.seq_length, hidden, layers, vocab,
      NominalWireRatio(compression.forward), NominalWireRatio(compression.backward), sync_ratio,
      kReferenceFlopsPerSecond);
  shape.sync_overlapped = compression.data_parallel.mode == runtime::DataParallelMode::kCocktail &&
                          compression.data_parallel.overlap;
  return shape;
}

double WorkerSpeed(const v1::WorkerCapabilities& capabilities, bool on_cuda) {
  if (on_cuda) return kCudaWorkerSpeed;
  return std::max<uint32_t>(1, capabilities.cpu_count());
}

int CudaDevicesNeeded(const runtime::JobSpec& spec) {
  StatusOr<runtime::DeviceName> device = runtime::ParseDeviceName(spec.base.device);
  if (!device.ok() || !device->cuda) return 0;
  return device->index + 1;
}

int CudaDevicesOf(const v1::WorkerCapabilities& capabilities) {
  // Registration bounds the count (worker_sessions.cc), so it fits an int.
  if (capabilities.cuda_device_count() > 0)
    return static_cast<int>(capabilities.cuda_device_count());
  return capabilities.device_kind().rfind("cuda", 0) == 0 ? 1 : 0;
}

}  // namespace geotrain::coordinator
