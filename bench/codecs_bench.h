// `geotrain-bench codecs`: every codec and setting on activation-like [4, 1024, 1600] float32.
#pragma once

#include <string>

namespace geotrain::bench {

struct CodecsBenchOptions {
  bool quick = false;  // 2 repetitions instead of `reps`
  int reps = 9;
  std::string filter;  // substring of the setting name
};

int RunCodecsBench(const CodecsBenchOptions& options);

}  // namespace geotrain::bench
