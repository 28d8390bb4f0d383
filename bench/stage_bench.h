// `geotrain-bench stage`: forward+backward throughput (tokens/s) of one pipeline stage on CPU,
// with the same stage's forward-only throughput as the baseline.
//
// The model is a fresh InitRandomModel of --config (default gpt2-tiny) in a temporary directory;
// the stage is stage --stage of --stages even stages. Prints two JSON lines: setting "forward"
// and setting "forward+backward", each with tokens_per_second, threads (LibTorch intra-op threads),
// seq_length, batch and stage; the second adds ratio = its tokens/s / forward's tokens/s.
#pragma once

#include <string>

namespace geotrain::bench {

struct StageBenchOptions {
  std::string config_path;  // a Hugging Face config.json; empty: examples/models/gpt2-tiny
  int stages = 1;           // split the layers into this many stages
  int stage = 0;            // and time this one
  int seq_length = 128;
  int batch = 8;
  int threads = 0;     // LibTorch intra-op threads; 0: LibTorch's default
  int reps = 5;        // timed repetitions (best is kept), after one warm-up
  bool quick = false;  // 2 repetitions, seq_length 32 (CI smoke run)
};

int RunStageBench(const StageBenchOptions& options);

}  // namespace geotrain::bench
