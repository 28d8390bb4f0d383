#include "bench/codecs_bench.h"

#include <cstdio>
#include <cstring>
#include <nlohmann/json.hpp>
#include <vector>

#include "bench/bench_clock.h"
#include "compression/codec.h"
#include "compression/frame.h"
#include "compression/link_decoder.h"
#include "compression/synthetic_tensors.h"
#include "net/frame_sealer.h"

namespace geotrain::bench {

using namespace geotrain::compression;

namespace {

CodecConfig Config(CodecId id) {
  CodecConfig c;
  c.codec = id;
  return c;
}

}  // namespace

std::vector<CodecSetting> CodecSettings() {
  std::vector<CodecSetting> s;
  auto add = [&](std::string name, CodecConfig c) { s.push_back({std::move(name), c}); };
  add("none-f32", Config(CodecId::kNone));
  CodecConfig c = Config(CodecId::kNone);
  c.wire_dtype = DType::kFloat16;
  add("none-f16", c);
  for (int bits : {8, 6, 4, 3, 2}) {
    c = Config(CodecId::kFixpoint);
    c.bits = bits;
    add("fixpoint" + std::to_string(bits), c);
  }
  for (int bits : {8, 4}) {  // multi-threaded variants (2 threads: the CI machine's cores)
    c = Config(CodecId::kFixpoint);
    c.bits = bits;
    c.threads = 2;
    add("fixpoint" + std::to_string(bits) + "-threads2", c);
  }
  c = Config(CodecId::kFixpoint);
  c.bits = 4;
  c.scale_mode = ScaleMode::kPerTile;
  c.tile_size = 64;
  add("fixpoint4-tile64", c);
  c = Config(CodecId::kFixpoint);
  c.bits = 4;
  c.rounding = Rounding::kStochastic;
  add("fixpoint4-stochastic", c);
  c = Config(CodecId::kFixpoint);
  c.bits = 4;
  c.zstd_level = 1;
  add("fixpoint4-zstd1", c);
  for (int bits : {4, 2}) {
    c = Config(CodecId::kDelta);
    c.bits = bits;
    add("delta" + std::to_string(bits), c);
  }
  c = Config(CodecId::kDeltaLowBits);
  c.bits = 4;
  c.cache_bits = 4;
  add("delta-lowbits4-cache4", c);
  c = Config(CodecId::kTah);
  add("tah", c);
  c.entropy_unit = EntropyUnit::kTile;
  add("tah-tile-entropy", c);
  c = Config(CodecId::kTopK);
  c.density = 0.01;
  add("topk0.01", c);
  c = Config(CodecId::kRandK);
  c.density = 0.01;
  add("randk0.01", c);
  for (int rank : {16, 4}) {
    c = Config(CodecId::kPowerSgd);
    c.rank = rank;
    add("powersgd-r" + std::to_string(rank), c);
  }
  c = Config(CodecId::kCocktail);
  add("cocktail-p0.1-k0.2-q4", c);
  c.mask_mode = MaskMode::kSeeded;
  add("cocktail-seeded", c);
  return s;
}

namespace {

// AES-256-GCM frame sealing (net/frame_sealer.h), which every data-plane byte goes through when
// the job has a frame key: seal and open GB/s of one frame of `bytes`, next to memcpy timed in
// the same loop. One line per direction.
int BenchSealer(size_t bytes, const std::string& size_name, int reps, const std::string& filter) {
  const std::string name = "aes-256-gcm-" + size_name;
  if (!filter.empty() && name.find(filter) == std::string::npos) return 0;
  const std::vector<float> values = MakeGaussian(static_cast<int64_t>(bytes / sizeof(float)), 3, 1);
  std::vector<uint8_t> plaintext(bytes);
  std::memcpy(plaintext.data(), values.data(), values.size() * sizeof(float));
  auto key = net::DeriveSealKey(std::string(net::kFrameKeyBytes, '\x2a'), "bench/g1/pp0");
  if (!key.ok()) {
    std::fprintf(stderr, "%s: %s\n", name.c_str(), key.status().ToString().c_str());
    return 1;
  }
  auto sealer = net::FrameSealer::Create(*key, {0, 1, 0});
  auto opener = net::FrameSealer::Create(*key, {0, 1, 0});
  if (!sealer.ok() || !opener.ok()) {
    std::fprintf(stderr, "%s: cannot create the sealers\n", name.c_str());
    return 1;
  }
  std::vector<uint8_t> sealed(bytes + net::kSealOverhead);
  std::vector<uint8_t> opened(bytes);
  std::vector<uint8_t> copy_target(bytes);
  double seal_s = 1e30, open_s = 1e30, memcpy_s = 1e30;
  Status status;
  // Step 0 warms up (page faults of the buffers) and is not timed.
  for (int step = 0; step <= reps && status.ok(); ++step) {
    const double s = BestSeconds(1, [&] { status = (*sealer)->Seal(plaintext, sealed.data()); });
    if (!status.ok()) break;
    const double o = BestSeconds(1, [&] { status = (*opener)->Open(sealed, opened.data()); });
    const double m = BestSeconds(1, [&] {
      std::memcpy(copy_target.data(), plaintext.data(), bytes);
      asm volatile("" : : "r"(copy_target.data()) : "memory");
    });
    if (step > 0) {
      seal_s = std::min(seal_s, s);
      open_s = std::min(open_s, o);
      memcpy_s = std::min(memcpy_s, m);
    }
  }
  if (!status.ok() || opened != plaintext) {
    std::fprintf(stderr, "%s: %s\n", name.c_str(),
                 status.ok() ? "opened bytes differ" : status.ToString().c_str());
    return 1;
  }
  const double memcpy_gbps = bytes / memcpy_s / 1e9;
  for (const auto& [direction, seconds] :
       {std::pair<const char*, double>{"seal", seal_s}, {"open", open_s}}) {
    const double gbps = bytes / seconds / 1e9;
    nlohmann::json line = {
        {"bench", "codecs"},
        {"setting", name},
        {"codec", "aes-256-gcm"},
        {"direction", direction},
        {"bytes", bytes},
        {"gbps", gbps},
        {"memcpy_gbps", memcpy_gbps},
        {"vs_memcpy", gbps / memcpy_gbps},
        {"wire_bytes", bytes + net::kSealOverhead},
    };
    std::printf("%s\n", line.dump().c_str());
  }
  std::fflush(stdout);
  return 0;
}

}  // namespace

int RunCodecsBench(const CodecsBenchOptions& options) {
  const int reps = options.quick ? 2 : options.reps;
  const Shape shape = {4, 1024, 1600};
  const int64_t rows = 4 * 1024, cols = 1600, elements = rows * cols;
  const size_t bytes = elements * sizeof(float);
  // Two inputs that differ slightly, alternated, like a sample's activation on consecutive visits.
  const std::vector<float> base = MakeActivationLike(rows, cols, 2024);
  std::vector<float> drifted = base;
  const std::vector<float> noise = MakeGaussian(elements, 7, 0.05f);
  for (int64_t i = 0; i < elements; ++i) drifted[i] += noise[i];
  const std::vector<uint64_t> sample_ids = {100, 101, 102, 103};
  // The memcpy baseline is timed inside every setting's loop, interleaved with its encodes and
  // decodes: on a shared machine bandwidth drifts, and a ratio is only fair under equal conditions.
  std::vector<float> copy_target(elements, 0.0f);

  int failures = 0;
  for (const CodecSetting& setting : CodecSettings()) {
    if (!options.filter.empty() && setting.name.find(options.filter) == std::string::npos) continue;
    auto sender = MakeCodec(setting.config);
    if (!sender.ok()) {
      std::fprintf(stderr, "%s: %s\n", setting.name.c_str(), sender.status().ToString().c_str());
      ++failures;
      continue;
    }
    LinkDecoder receiver(setting.config);
    std::vector<uint8_t> frame;
    DecodedTensor decoded;
    EncodeStats stats;
    double encode_s = 1e30, decode_s = 1e30, memcpy_s = 1e30;
    Status status;
    // Step 0 warms up (first visit for delta, initial factors for powersgd) and is not timed.
    for (int step = 0; step <= reps && status.ok(); ++step) {
      const std::vector<float>& x = step % 2 ? drifted : base;
      const TensorView view{x.data(), DType::kFloat32, shape, sample_ids, uint64_t(step)};
      const double e =
          BestSeconds(1, [&] { status = EncodeFrame(**sender, view, &frame, &stats); });
      if (!status.ok()) break;
      const double d = BestSeconds(1, [&] { status = receiver.Decode(frame, &decoded); });
      const double m = BestSeconds(1, [&] {
        std::memcpy(copy_target.data(), x.data(), bytes);
        asm volatile("" : : "r"(copy_target.data()) : "memory");
      });
      if (step > 0) {
        encode_s = std::min(encode_s, e);
        decode_s = std::min(decode_s, d);
        memcpy_s = std::min(memcpy_s, m);
      }
    }
    if (!status.ok()) {
      std::fprintf(stderr, "%s: %s\n", setting.name.c_str(), status.ToString().c_str());
      ++failures;
      continue;
    }
    const double encode_gbps = bytes / encode_s / 1e9, decode_gbps = bytes / decode_s / 1e9;
    const double memcpy_gbps = bytes / memcpy_s / 1e9;
    nlohmann::json line = {
        {"bench", "codecs"},
        {"setting", setting.name},
        {"codec", CodecName(setting.config.codec)},
        {"params", setting.config.Describe()},
        {"shape", shape},
        {"elements", elements},
        {"threads", setting.config.threads},
        {"encode_gbps", encode_gbps},
        {"decode_gbps", decode_gbps},
        {"memcpy_gbps", memcpy_gbps},
        {"encode_vs_memcpy", encode_gbps / memcpy_gbps},
        {"decode_vs_memcpy", decode_gbps / memcpy_gbps},
        {"wire_bytes", stats.wire_bytes},
        {"ratio", static_cast<double>(bytes) / stats.wire_bytes},
        {"rel_error", stats.rel_error},
    };
    std::printf("%s\n", line.dump().c_str());
    std::fflush(stdout);
  }
  // The codecs' activation tensor, and a small and a large frame around it.
  failures += BenchSealer(size_t{1} << 20, "1MiB", reps, options.filter);
  failures += BenchSealer(bytes, "activation", reps, options.filter);
  failures += BenchSealer(size_t{64} << 20, "64MiB", reps, options.filter);
  return failures == 0 ? 0 : 1;
}

}  // namespace geotrain::bench
