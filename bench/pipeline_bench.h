// geotrain-bench pipeline: training convergence and traffic of compression settings.
//
// Every setting trains the same job (gpt2-tiny, random init from a fixed seed, the bundled corpus,
// 2 stages x 2 replicas, in-process links) and prints one JSON line: step time split into compute,
// codec and communication, raw and wire bytes per step for each kind of traffic, and the final
// validation loss. The uncompressed setting "none" runs first and is the baseline that the others'
// loss ratio and byte reductions are computed against.
#pragma once

#include <string>

namespace geotrain::bench {

struct PipelineBenchOptions {
  bool quick = false;  // a short run (CI smoke): fewer steps, shorter sequences
  int steps = 0;       // training steps per setting; 0: 150, or 24 with --quick
  std::string filter;  // only settings whose name contains this (plus the baseline "none")
};

int RunPipelineBench(const PipelineBenchOptions& options);

}  // namespace geotrain::bench
