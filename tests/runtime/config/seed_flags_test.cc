// ParseSeedFlags: every seed-project flag lands on its field, the rank layout, --config with
// overrides, and errors that name the flag.
#include "runtime/seed_flags.h"

#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "tests/testing/temp_dir.h"

namespace geotrain::runtime {
namespace {

namespace cz = compression;

// geotrain-run --model-name m --task-name a.txt <args>
StatusOr<SeedRunConfig> ParseWith(const std::vector<std::string>& args, bool base = true) {
  std::vector<std::string> all = {"geotrain-run"};
  if (base) all.insert(all.end(), {"--model-name", "m", "--task-name", "a.txt"});
  all.insert(all.end(), args.begin(), args.end());
  std::vector<const char*> argv;
  for (const std::string& arg : all) argv.push_back(arg.c_str());
  return ParseSeedFlags(static_cast<int>(argv.size()), argv.data());
}

std::string Joined(const std::vector<std::string>& args) {
  std::string text;
  for (const std::string& arg : args) text += arg + " ";
  return text;
}

struct FlagCase {
  std::vector<std::string> args;
  std::function<bool(const SeedRunConfig&)> check;
};

TEST(SeedFlagsTest, EveryFlagSetsItsField) {
  using C = const SeedRunConfig&;
  const FlagCase cases[] = {
      {{"--dist-url", "tcp://10.0.0.1:9000"},
       [](C c) { return c.dist_url == "tcp://10.0.0.1:9000"; }},
      {{"--dist-url", "file:///shared/rdzv"},
       [](C c) { return c.dist_url == "file:///shared/rdzv"; }},
      {{"--bind-address", "10.0.0.2"}, [](C c) { return c.bind_address == "10.0.0.2"; }},
      {{"--model-name", "/models/gpt2"},
       [](C c) { return c.assignment.model_dir == "/models/gpt2"; }},
      {{"--model-init-seed", "7"}, [](C c) { return c.assignment.model_init_seed == 7u; }},
      {{"--tokenizer-name", "/tok"}, [](C c) { return c.assignment.data.tokenizer_dir == "/tok"; }},
      {{"--task-name", "x.jsonl:1,y.jsonl:3"},
       [](C c) {
         const auto& t = c.assignment.data.train;
         return t.size() == 2 && t[0].path == "x.jsonl" && t[1].weight == 0.75;
       }},
      {{"--seq-length", "1024"}, [](C c) { return c.assignment.data.seq_length == 1024; }},
      {{"--cuda-id", "1"}, [](C c) { return c.assignment.device == "cuda:1"; }},
      {{"--forward-compress-method", "delta"},
       [](C c) { return c.assignment.compression.forward.codec == cz::CodecId::kDelta; }},
      {{"--forward-compress-method", "tha"},
       [](C c) { return c.assignment.compression.forward.codec == cz::CodecId::kTah; }},
      {{"--forward-bits", "3"}, [](C c) { return c.assignment.compression.forward.bits == 3; }},
      {{"--forward-bits-act", "8"},
       [](C c) { return c.assignment.compression.forward.cache_bits == 8; }},
      {{"--max-activation-cache-size", "5000"},
       [](C c) { return c.assignment.compression.forward.max_cache_samples == 5000; }},
      {{"--tile-size", "32"}, [](C c) { return c.assignment.compression.forward.tile_size == 32; }},
      {{"--high-precision-bits", "6"},
       [](C c) { return c.assignment.compression.forward.high_bits == 6; }},
      {{"--low-precision-bits", "2"},
       [](C c) { return c.assignment.compression.forward.low_bits == 2; }},
      {{"--high-precision-allocation-ratio", "0.6"},
       [](C c) { return c.assignment.compression.forward.high_ratio == 0.6; }},
      {{"--backward-compress-method", "fixpoint"},
       [](C c) { return c.assignment.compression.backward.codec == cz::CodecId::kFixpoint; }},
      {{"--backward-bits", "6"}, [](C c) { return c.assignment.compression.backward.bits == 6; }},
      {{"--backward-tile-size", "32"},
       [](C c) {
         const cz::CodecConfig& b = c.assignment.compression.backward;
         return b.tile_size == 32 && b.scale_mode == cz::ScaleMode::kPerTile;
       }},
      {{"--epilogue-only"}, [](C c) { return c.assignment.compression.backward_epilogue_only; }},
      {{"--autoencoder-dim", "32"},
       [](C c) { return c.assignment.compression.autoencoder_dim == 32; }},
      {{"--warmup-steps", "100"}, [](C c) { return c.assignment.compression.warmup_steps == 100; }},
      {{"--warmup-epochs", "1"}, [](C c) { return c.assignment.compression.warmup_epochs == 1; }},
      {{"--dp-mode", "cocktail_sgd", "--dp-bits", "4"},
       [](C c) {
         const DataParallelSettings& dp = c.assignment.compression.data_parallel;
         return dp.mode == DataParallelMode::kCocktail &&
                dp.codec.codec == cz::CodecId::kCocktail && dp.codec.quant_bits == 4;
       }},
      {{"--dp-mode", "quantized-momentum", "--dp-bits", "6"},
       [](C c) {
         const DataParallelSettings& dp = c.assignment.compression.data_parallel;
         return dp.mode == DataParallelMode::kQuantizedMomentum &&
                dp.codec.codec == cz::CodecId::kFixpoint && dp.codec.bits == 6;
       }},
      {{"--dp-mode", "allreduce"},
       [](C c) {
         return c.assignment.compression.data_parallel.mode == DataParallelMode::kAllReduce;
       }},
      {{"--powersgd-rank", "8"},
       [](C c) { return c.assignment.compression.data_parallel.powersgd_rank == 8; }},
      {{"--compressed-stages", "-1"},
       [](C c) { return c.assignment.compression.data_parallel.compressed_stages == -1; }},
      {{"--compressed-stages", "2"},
       [](C c) { return c.assignment.compression.data_parallel.compressed_stages == 2; }},
      {{"--micro-batch-size", "2"},
       [](C c) { return c.assignment.training.micro_batch_size == 2; }},
      {{"--batch-size", "32", "--micro-batch-size", "4"},
       [](C c) {
         return c.assignment.training.micro_batch_size == 4 &&
                c.assignment.training.micro_batches == 8;
       }},
      {{"--lr", "5e-5"}, [](C c) { return c.assignment.optimizer.lr == 5e-5; }},
      {{"--weight-decay", "0.1"}, [](C c) { return c.assignment.optimizer.weight_decay == 0.1; }},
      {{"--lr-warmup-steps", "50"},
       [](C c) { return c.assignment.optimizer.lr_warmup_steps == 50; }},
      {{"--n-epochs", "10"}, [](C c) { return c.n_epochs == 10; }},
      {{"--total-steps", "2000"}, [](C c) { return c.assignment.training.total_steps == 2000; }},
      {{"--schedule", "1f1b"},
       [](C c) { return c.assignment.training.schedule == ScheduleKind::kOneFOneB; }},
      {{"--pp-mode", "gpipe"},
       [](C c) { return c.assignment.training.schedule == ScheduleKind::kGPipe; }},
      {{"--seed", "123"}, [](C c) { return c.assignment.training.seed == 123u; }},
      {{"--seed", "18446744073709551615"},
       [](C c) { return c.assignment.training.seed == 18446744073709551615u; }},
      {{"--eval-every", "25"}, [](C c) { return c.assignment.training.eval_every == 25; }},
      {{"--checkpoint-path", "/ckpt"},
       [](C c) { return c.assignment.training.checkpoint_dir == "/ckpt"; }},
      {{"--checkpoint-steps", "100", "--checkpoint-path", "/ckpt"},
       [](C c) { return c.assignment.training.checkpoint_every == 100; }},
      {{"--profiling", "--rank", "0"},
       [](C c) { return c.assignment.training.profile_path == "trace_json/rank-0.json"; }},
      {{"--profiling", "tidy_profiling"},
       [](C c) { return c.assignment.training.profile_path == "trace_json/rank-0.json"; }},
      {{"--profiling", "no-profiling"},
       [](C c) { return c.assignment.training.profile_path.empty(); }},
      {{"--profile-file", "/t.json"},
       [](C c) { return c.assignment.training.profile_path == "/t.json"; }},
      {{"--world-size", "4", "--pipeline-group-size", "4", "--rank", "3", "--dist-url",
        "tcp://h:1"},
       [](C c) {
         return c.world_size == 4 && c.rank == 3 && c.assignment.num_stages == 4 &&
                c.assignment.dp_size == 1 && c.assignment.stage == 3 && c.assignment.dp_rank == 0;
       }},
  };
  for (const FlagCase& flag : cases) {
    StatusOr<SeedRunConfig> config = ParseWith(flag.args);
    ASSERT_TRUE(config.ok()) << Joined(flag.args) << "-> " << config.status().ToString();
    EXPECT_TRUE(flag.check(*config)) << Joined(flag.args);
  }
}

TEST(SeedFlagsTest, RankLayoutIsDataMajor) {
  // CocktailSGD's run_example.sh: 8 ranks, pipeline 2, data parallel 4 (derived).
  for (int rank = 0; rank < 8; ++rank) {
    StatusOr<SeedRunConfig> config =
        ParseWith({"--world-size", "8", "--pipeline-group-size", "2", "--rank",
                   std::to_string(rank), "--dist-url", "tcp://127.0.0.1:7033"});
    ASSERT_TRUE(config.ok()) << config.status().ToString();
    EXPECT_EQ(config->assignment.stage, rank % 2);
    EXPECT_EQ(config->assignment.dp_rank, rank / 2);
    EXPECT_EQ(config->assignment.dp_size, 4);
    EXPECT_EQ(config->assignment.global_rank(), rank);
  }
}

TEST(SeedFlagsTest, ErrorsNameTheFlag) {
  const std::pair<std::vector<std::string>, std::string> cases[] = {
      {{"--cuda-id", "-1"}, "--cuda-id: -1 is negative"},
      {{"--cuda-id", "first"}, "--cuda-id"},
      {{"--lr", "fast"}, "--lr"},
      {{"--forward-bits", "4.5"}, "--forward-bits"},
      {{"--world-size", "8", "--pipeline-group-size", "3", "--data-group-size", "2"},
       "--world-size: 8 is not --pipeline-group-size 3 x --data-group-size 2"},
      {{"--world-size", "5", "--pipeline-group-size", "2", "--dist-url", "tcp://h:1"},
       "--world-size: 5"},
      {{"--world-size", "4", "--pipeline-group-size", "4", "--rank", "4", "--dist-url",
        "tcp://h:1"},
       "--rank: 4 is outside [0, 4)"},
      {{"--rank", "-1"}, "--rank: -1 is outside [0, 1)"},
      {{"--pipeline-group-size", "0"}, "--pipeline-group-size: 0 is not positive"},
      {{"--world-size", "2", "--pipeline-group-size", "2"}, "--dist-url: required"},
      {{"--dist-url", "http://h:1"}, "--dist-url: \"http://h:1\" is neither"},
      {{"--dist-url", "tcp://h"}, "--dist-url"},
      {{"--batch-size", "10", "--micro-batch-size", "3"},
       "--batch-size: 10 is not a positive multiple of --micro-batch-size 3"},
      {{"--forward-compress-method", "zip"},
       "--forward-compress-method: codec: unknown method 'zip'"},
      {{"--dp-mode", "gossip"}, "--dp-mode: dp_mode: unknown value \"gossip\""},
      {{"--schedule", "zigzag"}, "--schedule: schedule: unknown value"},
      {{"--profiling", "maybe"}, "--profiling: \"maybe\" is neither"},
      {{"--task-name", "a:0"}, "--task-name: data source entry 0"},
      {{"--n-epochs", "-2"}, "--n-epochs: -2 is negative"},
      {{"--lr", "-1"}, "--lr: -1"},
      {{"--seq-length", "0"}, "--seq-length: "},
      {{"--checkpoint-steps", "10"}, "--checkpoint-path: needed"},
      {{"--forward-compress-method", "fixpoint", "--forward-bits", "9"},
       "--forward-bits: 9 is outside 2..8"},
      {{"--config", "/nonexistent/job.yaml"}, "/nonexistent/job.yaml"},
      {{"--model-init-seed", "-1"}, "--model-init-seed: \"-1\" is not a non-negative integer"},
      {{"--seed", "-1"}, "--seed: \"-1\" is not a non-negative integer"},
      {{"--seed", "18446744073709551616"}, "--seed: \"18446744073709551616\" is not"},
      {{"--dp-mode", "cocktail", "--dp-bits", "1"}, "--dp-bits: 1 is outside 2..8"},
  };
  for (const auto& [args, expected] : cases) {
    StatusOr<SeedRunConfig> config = ParseWith(args);
    ASSERT_FALSE(config.ok()) << Joined(args);
    EXPECT_NE(config.status().message().find(expected), std::string::npos)
        << Joined(args) << "-> " << config.status().message();
  }
  StatusOr<SeedRunConfig> bare = ParseWith({}, /*base=*/false);
  ASSERT_FALSE(bare.ok());
  EXPECT_EQ(bare.status().message(),
            "2 problems:\n  --model-name: empty\n  --task-name: no sources");
}

TEST(SeedFlagsTest, ReportsEveryProblemOfTheAssignment) {
  StatusOr<SeedRunConfig> config =
      ParseWith({"--seq-length", "0", "--lr", "-1", "--forward-compress-method", "delta",
                 "--forward-bits", "1", "--eval-every", "-5"});
  ASSERT_FALSE(config.ok());
  EXPECT_EQ(config.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(config.status().message(),
            "4 problems:\n"
            "  --lr: -1 is negative\n"
            "  --seq-length: 0 is not positive\n"
            "  --forward-bits: 1 is outside 2..8\n"
            "  --eval-every: -5 is negative");
}

TEST(SeedFlagsTest, ConfigFileGivesTheStartAndFlagsOverride) {
  testing::TempDir tmp;
  const std::string job = tmp.Write("job.yaml",
                                    "name: t\n"
                                    "model: {dir: m, layers: [[0, 3], [3, 4]]}\n"
                                    "data: {train: [a.txt]}\n"
                                    "pipeline: {stages: 2, micro_batch_size: 2}\n"
                                    "data_parallel: {replicas: 2}\n"
                                    "optimizer: {lr: 0.01}\n"
                                    "training: {steps: 10}\n");
  StatusOr<SeedRunConfig> config =
      ParseWith({"--config", job, "--rank", "3", "--dist-url", "tcp://h:29500", "--lr", "0.002",
                 "--batch-size", "8"},
                /*base=*/false);
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  EXPECT_EQ(config->job_yaml, job);
  EXPECT_EQ(config->world_size, 4);
  const StageAssignment& a = config->assignment;
  EXPECT_EQ(a.stage, 1);
  EXPECT_EQ(a.dp_rank, 1);
  EXPECT_EQ(a.first_layer, 3);
  EXPECT_EQ(a.last_layer, 4);
  EXPECT_EQ(a.model_dir, "m");
  EXPECT_EQ(a.training.total_steps, 10);
  EXPECT_EQ(a.optimizer.lr, 0.002);
  EXPECT_EQ(a.training.micro_batches, 4);

  for (const auto& [args, expected] : std::vector<std::pair<std::vector<std::string>, std::string>>{
           {{"--pipeline-group-size", "4"},
            "--pipeline-group-size: 4 differs from pipeline.stages 2"},
           {{"--data-group-size", "1"},
            "--data-group-size: 1 differs from data_parallel.replicas 2"},
           {{"--world-size", "8"}, "--world-size: 8 is not --pipeline-group-size 2"}}) {
    std::vector<std::string> all = {"--config", job, "--dist-url", "tcp://h:1"};
    all.insert(all.end(), args.begin(), args.end());
    StatusOr<SeedRunConfig> bad = ParseWith(all, /*base=*/false);
    ASSERT_FALSE(bad.ok()) << Joined(all);
    EXPECT_NE(bad.status().message().find(expected), std::string::npos) << bad.status().message();
  }
}

TEST(SeedFlagsTest, HelpListsTheFlags) {
  const std::string help = SeedFlagsHelp();
  for (const char* flag : {"--forward-compress-method", "--dp-mode", "--config", "--rank"}) {
    EXPECT_NE(help.find(flag), std::string::npos) << flag;
  }
}

}  // namespace
}  // namespace geotrain::runtime
