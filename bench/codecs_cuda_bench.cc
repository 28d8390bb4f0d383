// `geotrain-bench codecs --device cuda`: the CUDA codecs on activations in device memory.
//
// Each line times, best of `reps`, interleaved so that every ratio compares equal conditions:
//   d2d_copy_gbps       cudaMemcpy device to device of the input (bytes copied per second);
//   encode_gbps         EncodeDeviceFrame: kernels, the payload's copy to the host, the frame;
//   decode_gbps         DecodeDeviceFrame: the frame's checks on the host, upload, kernels;
//   kernel_encode_gbps  fixpoint only: EncodeFixpointBlockOnDevice, the block left on the device
//   kernel_decode_gbps  fixpoint only: DecodeFixpointBlockOnDevice of that block.
// All as input float32 bytes per second. frames_match_cpu says whether the CUDA frame of the last
// repetition equals the CPU codec's frame of the same input, byte for byte.
#include <cstdio>
#include <nlohmann/json.hpp>

#include "bench/bench_clock.h"
#include "bench/codecs_bench.h"
#include "compression/codec.h"
#include "compression/cuda/cuda_codec.h"
#include "compression/cuda/fixpoint_device.h"
#include "compression/frame.h"
#include "compression/synthetic_tensors.h"

namespace geotrain::bench {
namespace {

using namespace geotrain::compression;
using namespace geotrain::compression::cuda;

struct Input {
  Shape shape;
  std::vector<float> base, drifted;  // alternated, as a sample's activation on two visits
  DeviceArray<float> device_base, device_drifted, copy_target;
};

StatusOr<std::unique_ptr<Input>> MakeInput(Shape shape) {
  auto in = std::make_unique<Input>();
  in->shape = shape;
  const int64_t cols = shape.back(), rows = NumElements(shape) / cols;
  in->base = MakeActivationLike(rows, cols, 2024);
  in->drifted = in->base;
  const std::vector<float> noise = MakeGaussian(rows * cols, 7, 0.05f);
  for (size_t i = 0; i < noise.size(); ++i) in->drifted[i] += noise[i];
  const size_t bytes = in->base.size() * sizeof(float);
  for (auto* d : {&in->device_base, &in->device_drifted, &in->copy_target}) {
    GEOTRAIN_RETURN_IF_ERROR(d->Reserve(in->base.size()));
  }
  GEOTRAIN_RETURN_IF_ERROR(CopyToDevice(in->device_base.data(), in->base.data(), bytes, nullptr));
  GEOTRAIN_RETURN_IF_ERROR(
      CopyToDevice(in->device_drifted.data(), in->drifted.data(), bytes, nullptr));
  GEOTRAIN_RETURN_IF_ERROR(Synchronize(nullptr, "uploading the benchmark input"));
  return in;
}

// Seconds of the fixpoint block kernels alone, encode and decode.
Status TimeFixpointKernels(const CodecConfig& config, const float* x, const Shape& shape,
                           double* encode_s, double* decode_s) {
  QuantLayout layout;
  layout.cols = shape.back();
  layout.rows = NumElements(shape) / layout.cols;
  layout.mode = config.scale_mode;
  layout.tile = config.tile_size;
  QuantizeOptions options;
  options.bits = config.bits;
  options.rounding = config.rounding;
  options.seed = config.seed;
  FixpointWorkspace workspace;
  DeviceBytes block;
  DeviceArray<float> out;
  GEOTRAIN_RETURN_IF_ERROR(out.Reserve(NumElements(shape)));
  Status status;
  *encode_s = BestSeconds(1, [&] {
    status = EncodeFixpointBlockOnDevice(x, layout, options, &workspace, &block, nullptr, nullptr,
                                         nullptr)
                 .status();
    if (status.ok()) status = Synchronize(nullptr, "fixpoint encode");
  });
  GEOTRAIN_RETURN_IF_ERROR(status);
  *decode_s = BestSeconds(1, [&] {
    status = DecodeFixpointBlockOnDevice(static_cast<const uint8_t*>(block.data()), layout,
                                         config.bits, &workspace, out.data(), nullptr);
    if (status.ok()) status = Synchronize(nullptr, "fixpoint decode");
  });
  return status;
}

Status BenchSetting(const CodecSetting& setting, Input& in, int reps, const std::string& device) {
  GEOTRAIN_ASSIGN_OR_RETURN(std::unique_ptr<CudaCodec> sender, MakeCudaCodec(setting.config));
  GEOTRAIN_ASSIGN_OR_RETURN(std::unique_ptr<CudaCodec> receiver, MakeCudaCodec(setting.config));
  GEOTRAIN_ASSIGN_OR_RETURN(std::unique_ptr<Codec> cpu, MakeCodec(setting.config));
  const bool fixpoint = setting.config.codec == CodecId::kFixpoint;
  const size_t bytes = in.base.size() * sizeof(float);
  std::vector<uint64_t> sample_ids(in.shape[0]);
  for (size_t i = 0; i < sample_ids.size(); ++i) sample_ids[i] = 100 + i;
  std::vector<uint8_t> frame, cpu_frame;
  DeviceDecodedTensor decoded;
  EncodeStats stats;
  double encode_s = 1e30, decode_s = 1e30, copy_s = 1e30;
  double kernel_encode_s = 1e30, kernel_decode_s = 1e30;
  bool frames_match = true;
  Status status;
  // Step 0 warms up (first visit for delta, allocations) and is not timed.
  for (int step = 0; step <= reps; ++step) {
    const bool odd = step % 2;
    const float* x = odd ? in.device_drifted.data() : in.device_base.data();
    const TensorView view{x, DType::kFloat32, in.shape, sample_ids, uint64_t(step)};
    const double e =
        BestSeconds(1, [&] { status = EncodeDeviceFrame(*sender, view, &frame, &stats); });
    GEOTRAIN_RETURN_IF_ERROR(status);
    const double d = BestSeconds(
        1, [&] { status = DecodeDeviceFrame(*receiver, frame, FrameLimits(), &decoded); });
    GEOTRAIN_RETURN_IF_ERROR(status);
    const double c = BestSeconds(1, [&] {
      status = CopyOnDevice(in.copy_target.data(), x, bytes, nullptr);
      if (status.ok()) status = Synchronize(nullptr, "device copy");
    });
    GEOTRAIN_RETURN_IF_ERROR(status);
    // The CPU codec sees the same inputs in the same order, so a delta cache stays in step.
    const std::vector<float>& host = odd ? in.drifted : in.base;
    GEOTRAIN_RETURN_IF_ERROR(EncodeFrame(
        *cpu, TensorView{host.data(), DType::kFloat32, in.shape, sample_ids, uint64_t(step)},
        &cpu_frame));
    frames_match = frames_match && cpu_frame == frame;
    if (fixpoint) {
      double ke, kd;
      GEOTRAIN_RETURN_IF_ERROR(TimeFixpointKernels(setting.config, x, in.shape, &ke, &kd));
      if (step > 0)
        kernel_encode_s = std::min(kernel_encode_s, ke),
        kernel_decode_s = std::min(kernel_decode_s, kd);
    }
    if (step > 0) {
      encode_s = std::min(encode_s, e);
      decode_s = std::min(decode_s, d);
      copy_s = std::min(copy_s, c);
    }
  }
  const double copy_gbps = bytes / copy_s / 1e9;
  nlohmann::json line = {
      {"bench", "codecs"},
      {"device", "cuda"},
      {"device_name", device},
      {"setting", setting.name},
      {"codec", CodecName(setting.config.codec)},
      {"params", setting.config.Describe()},
      {"shape", in.shape},
      {"elements", in.base.size()},
      {"encode_gbps", bytes / encode_s / 1e9},
      {"decode_gbps", bytes / decode_s / 1e9},
      {"d2d_copy_gbps", copy_gbps},
      {"encode_vs_copy", copy_s / encode_s},
      {"decode_vs_copy", copy_s / decode_s},
      {"wire_bytes", stats.wire_bytes},
      {"ratio", static_cast<double>(bytes) / stats.wire_bytes},
      {"rel_error", stats.rel_error},
      {"frames_match_cpu", frames_match},
  };
  if (fixpoint) {
    line["kernel_encode_gbps"] = bytes / kernel_encode_s / 1e9;
    line["kernel_decode_gbps"] = bytes / kernel_decode_s / 1e9;
    line["kernel_encode_vs_copy"] = copy_s / kernel_encode_s;
    line["kernel_decode_vs_copy"] = copy_s / kernel_decode_s;
  }
  std::printf("%s\n", line.dump().c_str());
  std::fflush(stdout);
  return frames_match ? OkStatus() : Internal("the CUDA frame differs from the CPU codec's");
}

}  // namespace

int RunCodecsCudaBench(const CodecsBenchOptions& options) {
  auto device = DeviceName();
  if (!device.ok()) {
    std::fprintf(stderr, "codecs --device cuda: %s\n", device.status().ToString().c_str());
    return 1;
  }
  const int reps = options.quick ? 2 : options.reps;
  int failures = 0;
  // The CPU benchmark's activation, and one 10x larger where a GPU's launch and synchronisation
  // latencies weigh less (a 26 MB copy takes about 20 µs on an H100).
  for (const Shape& shape : {Shape{4, 1024, 1600}, Shape{8, 2048, 4096}}) {
    auto input = MakeInput(shape);
    if (!input.ok()) {
      std::fprintf(stderr, "codecs --device cuda: %s\n", input.status().ToString().c_str());
      return 1;
    }
    for (const CodecSetting& setting : CodecSettings()) {
      if (!HasCudaKernels(setting.config.codec) || setting.config.threads != 1) continue;
      if (!options.filter.empty() && setting.name.find(options.filter) == std::string::npos) {
        continue;
      }
      const Status s = BenchSetting(setting, **input, reps, *device);
      if (!s.ok()) {
        std::fprintf(stderr, "%s %s: %s\n", setting.name.c_str(), ShapeString(shape).c_str(),
                     s.ToString().c_str());
        ++failures;
      }
    }
  }
  return failures == 0 ? 0 : 1;
}

}  // namespace geotrain::bench
