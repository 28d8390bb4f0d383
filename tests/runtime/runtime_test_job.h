// A tiny training job for runtime tests: a random GPT-2 (4 layers, 32 wide, the real GPT-2
// vocabulary so the bundled tokenizer applies), a slice of the bundled corpus, and helpers that
// run every rank of a job in its own thread over fake transports.
#pragma once

#include <ATen/Parallel.h>
#include <gtest/gtest.h>

#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "models/init_random_model.h"
#include "models/model_config.h"
#include "runtime/stage_assignment.h"
#include "runtime/stage_links.h"
#include "tests/testing/temp_dir.h"

namespace geotrain::runtime::testing {

inline std::string SourcePath(const std::string& relative) {
  return std::string(GEOTRAIN_SOURCE_DIR) + "/" + relative;
}

constexpr char kTinyGpt2Config[] = R"({"model_type": "gpt2", "n_embd": 32, "n_head": 2,
    "n_layer": 4, "n_positions": 64, "vocab_size": 50257, "tie_word_embeddings": true,
    "activation_function": "gelu_new", "layer_norm_epsilon": 1e-5})";

// Writes the model (a random one of `config_json`) and the data into `dir` and returns an
// assignment for stage 0 of replica 0 of a job with `num_stages` x `dp_size` ranks.
inline StageAssignment TinyJob(const geotrain::testing::TempDir& dir, int num_stages, int dp_size,
                               const std::string& config_json = kTinyGpt2Config) {
  const std::string model_dir = dir.File("model");
  if (!std::ifstream(model_dir + "/config.json")) {
    auto config = models::ParseModelConfig(config_json, "tiny");
    EXPECT_TRUE(config.ok()) << config.status().ToString();
    const Status status = models::InitRandomModel(*config, model_dir, 7);
    EXPECT_TRUE(status.ok()) << status.ToString();
    std::ifstream corpus(SourcePath("examples/data/shakespeare/train.txt"));
    std::string text(40000, '\0');
    corpus.read(text.data(), static_cast<std::streamsize>(text.size()));
    dir.Write("train.txt", text.substr(0, static_cast<size_t>(corpus.gcount())));
    std::ifstream valid(SourcePath("examples/data/shakespeare/valid.txt"));
    std::string valid_text(8000, '\0');
    valid.read(valid_text.data(), static_cast<std::streamsize>(valid_text.size()));
    dir.Write("valid.txt", valid_text.substr(0, static_cast<size_t>(valid.gcount())));
  }
  StageAssignment job;
  job.model_dir = model_dir;
  job.num_stages = num_stages;
  job.dp_size = dp_size;
  job.data.train = {{dir.File("train.txt"), 1.0}};
  job.data.valid = {{dir.File("valid.txt"), 1.0}};
  job.data.tokenizer_dir = SourcePath("examples/tokenizers/gpt2");
  job.data.seq_length = 16;
  job.training.micro_batch_size = 2;
  job.training.micro_batches = 2;
  job.training.total_steps = 4;
  job.training.timeout_seconds = 60;
  job.optimizer.lr = 1e-3;
  job.optimizer.lr_decay = LrDecay::kConstant;
  return job;
}

inline StageAssignment RankOf(StageAssignment job, int stage, int dp_rank) {
  job.stage = stage;
  job.dp_rank = dp_rank;
  return job;
}

// Runs body(global rank, assignment, links) for every rank of `job` in its own thread.
inline void RunRanks(const StageAssignment& job, bool tied_embeddings,
                     const std::function<void(int, const StageAssignment&, StageLinks)>& body) {
  at::set_num_threads(1);
  std::vector<StageLinks> links = CreateFakeJobLinks(job.num_stages, job.dp_size, tied_embeddings,
                                                     UsesFusedEmbeddingGroup(job));
  std::vector<std::thread> threads;
  for (int r = 0; r < job.dp_size; ++r) {
    for (int s = 0; s < job.num_stages; ++s) {
      const int rank = r * job.num_stages + s;
      threads.emplace_back(
          [&, rank, r, s] { body(rank, RankOf(job, s, r), std::move(links[rank])); });
    }
  }
  for (std::thread& t : threads) t.join();
}

}  // namespace geotrain::runtime::testing
