// Writes valid frame streams of every codec into a directory: the frame fuzzer's seed corpus.
//   make_frame_corpus DIR
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "compression/codec.h"
#include "compression/frame.h"
#include "compression/synthetic_tensors.h"
#include "tests/fuzz/fuzz_frames.h"

using namespace geotrain;
using namespace geotrain::compression;

namespace {

std::vector<CodecConfig> CorpusConfigs() {
  std::vector<CodecConfig> configs;
  auto add = [&](CodecId id, auto&& tweak) {
    CodecConfig c;
    c.codec = id;
    c.max_cache_samples = 8;
    c.tile_size = 16;
    tweak(c);
    configs.push_back(c);
  };
  add(CodecId::kNone, [](CodecConfig&) {});
  add(CodecId::kNone, [](CodecConfig& c) { c.wire_dtype = DType::kFloat16; });
  add(CodecId::kNone, [](CodecConfig& c) { c.wire_dtype = DType::kBFloat16; });
  for (int bits : {2, 3, 4, 8}) add(CodecId::kFixpoint, [&](CodecConfig& c) { c.bits = bits; });
  add(CodecId::kFixpoint, [](CodecConfig& c) {
    c.scale_mode = ScaleMode::kPerRow;
    c.zstd_level = 3;
  });
  add(CodecId::kFixpoint, [](CodecConfig& c) { c.scale_mode = ScaleMode::kPerTile; });
  add(CodecId::kDelta, [](CodecConfig& c) { c.bits = 4; });
  add(CodecId::kDeltaLowBits, [](CodecConfig& c) {
    c.bits = 2;
    c.cache_bits = 4;
  });
  add(CodecId::kTah, [](CodecConfig&) {});
  add(CodecId::kTah, [](CodecConfig& c) {
    c.entropy_unit = EntropyUnit::kTile;
    c.tile_size = 8;
  });
  add(CodecId::kTopK, [](CodecConfig& c) { c.density = 0.1; });
  add(CodecId::kRandK, [](CodecConfig& c) {
    c.density = 0.1;
    c.value_dtype = DType::kFloat32;
  });
  add(CodecId::kPowerSgd, [](CodecConfig& c) { c.rank = 2; });
  add(CodecId::kCocktail, [](CodecConfig&) {});
  add(CodecId::kCocktail, [](CodecConfig& c) {
    c.mask_mode = MaskMode::kSeeded;
    c.quant_bits = 2;
  });
  return configs;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: make_frame_corpus DIR\n");
    return 2;
  }
  const std::string dir = argv[1];
  const std::vector<uint64_t> ids = {11, 12};
  const std::vector<float> first = MakeActivationLike(2 * 8, 64, 1, 1);
  const std::vector<float> second = MakeActivationLike(2 * 8, 64, 2, 1);
  int written = 0;
  for (const CodecConfig& config : CorpusConfigs()) {
    auto codec = MakeCodec(config);
    if (!codec.ok()) {
      std::fprintf(stderr, "%s: %s\n", config.Describe().c_str(),
                   codec.status().ToString().c_str());
      return 1;
    }
    // Two frames on one link: for delta, the first visit then a real delta.
    std::vector<uint8_t> stream = {fuzz::kControlReseal};
    for (int step = 0; step < 2; ++step) {
      const std::vector<float>& x = step == 0 ? first : second;
      TensorView view{
          x.data(), DType::kFloat32, {2, 8, 64}, Span<const uint64_t>(ids), uint64_t(step)};
      std::vector<uint8_t> frame;
      const Status s = EncodeFrame(**codec, view, &frame);
      if (!s.ok()) {
        std::fprintf(stderr, "%s: %s\n", config.Describe().c_str(), s.ToString().c_str());
        return 1;
      }
      stream.insert(stream.end(), frame.begin(), frame.end());
    }
    const std::string path = dir + "/" + std::to_string(written++) + "-" + CodecName(config.codec);
    std::ofstream(path, std::ios::binary)
        .write(reinterpret_cast<const char*>(stream.data()), stream.size());
  }
  std::printf("wrote %d seed inputs to %s\n", written, dir.c_str());
  return 0;
}
