// `geotrain-bench codecs`: every codec and setting on activation-like [4, 1024, 1600] float32.
#pragma once

#include <string>
#include <vector>

#include "compression/codec_config.h"

namespace geotrain::bench {

struct CodecsBenchOptions {
  bool quick = false;  // 2 repetitions instead of `reps`
  int reps = 9;
  std::string filter;          // substring of the setting name
  std::string device = "cpu";  // "cpu", or "cuda": the CUDA codecs (codecs_cuda_bench.cc)
};

// A named codec configuration: one line of the benchmark.
struct CodecSetting {
  std::string name;
  compression::CodecConfig config;
};
// Every setting `geotrain-bench codecs` measures, in output order.
std::vector<CodecSetting> CodecSettings();

int RunCodecsBench(const CodecsBenchOptions& options);
// --device cuda: the settings whose codec has CUDA kernels, on device memory, next to the
// device-to-device copy bandwidth of the same run. Defined only in CUDA builds.
int RunCodecsCudaBench(const CodecsBenchOptions& options);

}  // namespace geotrain::bench
