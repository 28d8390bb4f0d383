// JobSpec: the full example parses onto the right fields, errors name the key path and line,
// JobSpecToYaml round-trips every field, and AssignmentFor gives each stage its layers.
#include "runtime/job_spec.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "tests/testing/temp_dir.h"

namespace geotrain::runtime {
namespace {

namespace cz = compression;

// The smallest valid job; tests append sections to it (line 4 is the first appended line).
constexpr char kMinimal[] = "name: t\nmodel: {dir: m}\ndata: {train: [a.txt]}\n";

JobSpec Parse(const std::string& yaml) {
  StatusOr<JobSpec> spec = ParseJobSpec(yaml);
  EXPECT_TRUE(spec.ok()) << spec.status().ToString();
  return spec.ok() ? *spec : JobSpec();
}

TEST(JobSpecTest, FullExampleMapsEveryField) {
  const JobSpec spec = Parse(R"(
name: demo
model: {dir: /models/gpt2, init_seed: 5, dtype: bf16, layers: [[0, 1], [1, 4]]}
data:
  train: ["a.txt:3", {path: b.txt, weight: 1}]
  valid: [v.txt]
  tokenizer: /tok
  cache_dir: /cache
  seq_length: 256
  samples_per_epoch: 1000
pipeline: {stages: 2, schedule: 1f1b, micro_batch_size: 2, micro_batches: 8}
data_parallel:
  replicas: 3
  mode: cocktail_sgd
  powersgd_rank: 4
  compressed_stages: 1
  overlap: false
  codec: {codec: cocktail, random_ratio: 0.05, mask_mode: seeded}
compression:
  forward: {codec: tha, tile_size: 32, high_bits: 6, low_bits: 2, high_ratio: 0.5,
            entropy_unit: tile}
  backward: {codec: fixpoint, bits: 6, scale_mode: tile, tile_size: 32, rounding: stochastic}
  backward_epilogue_only: true
  autoencoder_dim: 16
  warmup_steps: 5
  warmup_epochs: 1
  fused_embedding_sync: false
optimizer: {lr: 5e-5, min_lr: 1e-6, warmup_steps: 10, decay: constant, weight_decay: 0.1,
            beta1: 0.8, beta2: 0.99, eps: 1e-6, max_grad_norm: 0}
training: {steps: 300, seed: 7, eval_every: 20, eval_batches: 2, checkpoint_every: 50,
           keep_checkpoints: 5, checkpoint_dir: /ckpt, resume: false, profile: /trace.json,
           timeout_seconds: 30.5, max_restarts: 0}
)");
  const StageAssignment& a = spec.base;
  EXPECT_EQ(spec.name, "demo");
  EXPECT_EQ(spec.num_stages, 2);
  EXPECT_EQ(spec.dp_size, 3);
  EXPECT_EQ(a.num_stages, 2);
  EXPECT_EQ(a.dp_size, 3);
  EXPECT_EQ(a.model_dir, "/models/gpt2");
  EXPECT_EQ(a.model_init_seed, 5u);
  EXPECT_EQ(a.dtype, "bf16");
  EXPECT_EQ(a.first_layer, 0);
  EXPECT_EQ(a.last_layer, 1);
  ASSERT_EQ(a.data.train.size(), 2u);
  EXPECT_EQ(a.data.train[0].path, "a.txt");
  EXPECT_EQ(a.data.train[0].weight, 0.75);
  EXPECT_EQ(a.data.train[1].path, "b.txt");
  EXPECT_EQ(a.data.train[1].weight, 0.25);
  ASSERT_EQ(a.data.valid.size(), 1u);
  EXPECT_EQ(a.data.valid[0].path, "v.txt");
  EXPECT_EQ(a.data.tokenizer_dir, "/tok");
  EXPECT_EQ(a.data.cache_dir, "/cache");
  EXPECT_EQ(a.data.seq_length, 256);
  EXPECT_EQ(a.data.samples_per_epoch, 1000u);
  EXPECT_EQ(a.training.schedule, ScheduleKind::kOneFOneB);
  EXPECT_EQ(a.training.micro_batch_size, 2);
  EXPECT_EQ(a.training.micro_batches, 8);
  const DataParallelSettings& dp = a.compression.data_parallel;
  EXPECT_EQ(dp.mode, DataParallelMode::kCocktail);
  EXPECT_EQ(dp.powersgd_rank, 4);
  EXPECT_EQ(dp.compressed_stages, 1);
  EXPECT_FALSE(dp.overlap);
  EXPECT_EQ(dp.codec.codec, cz::CodecId::kCocktail);
  EXPECT_EQ(dp.codec.random_ratio, 0.05);
  EXPECT_EQ(dp.codec.mask_mode, cz::MaskMode::kSeeded);
  const cz::CodecConfig& fwd = a.compression.forward;
  EXPECT_EQ(fwd.codec, cz::CodecId::kTah);
  EXPECT_EQ(fwd.tile_size, 32);
  EXPECT_EQ(fwd.high_bits, 6);
  EXPECT_EQ(fwd.low_bits, 2);
  EXPECT_EQ(fwd.high_ratio, 0.5);
  EXPECT_EQ(fwd.entropy_unit, cz::EntropyUnit::kTile);
  const cz::CodecConfig& bwd = a.compression.backward;
  EXPECT_EQ(bwd.codec, cz::CodecId::kFixpoint);
  EXPECT_EQ(bwd.bits, 6);
  EXPECT_EQ(bwd.scale_mode, cz::ScaleMode::kPerTile);
  EXPECT_EQ(bwd.rounding, cz::Rounding::kStochastic);
  EXPECT_TRUE(a.compression.backward_epilogue_only);
  EXPECT_EQ(a.compression.autoencoder_dim, 16);
  EXPECT_EQ(a.compression.warmup_steps, 5);
  EXPECT_EQ(a.compression.warmup_epochs, 1);
  EXPECT_FALSE(a.compression.fused_embedding_sync);
  EXPECT_EQ(a.optimizer.lr, 5e-5);
  EXPECT_EQ(a.optimizer.min_lr, 1e-6);
  EXPECT_EQ(a.optimizer.lr_warmup_steps, 10);
  EXPECT_EQ(a.optimizer.lr_decay, LrDecay::kConstant);
  EXPECT_EQ(a.optimizer.weight_decay, 0.1);
  EXPECT_EQ(a.optimizer.beta1, 0.8);
  EXPECT_EQ(a.optimizer.beta2, 0.99);
  EXPECT_EQ(a.optimizer.eps, 1e-6);
  EXPECT_EQ(a.optimizer.max_grad_norm, 0);
  EXPECT_EQ(a.training.total_steps, 300);
  EXPECT_EQ(a.training.seed, 7u);
  EXPECT_EQ(a.training.eval_every, 20);
  EXPECT_EQ(a.training.eval_batches, 2);
  EXPECT_EQ(a.training.checkpoint_every, 50);
  EXPECT_EQ(a.training.keep_checkpoints, 5);
  EXPECT_EQ(a.training.checkpoint_dir, "/ckpt");
  EXPECT_FALSE(a.training.resume);
  EXPECT_EQ(a.training.profile_path, "/trace.json");
  EXPECT_EQ(a.training.timeout_seconds, 30.5);
  EXPECT_EQ(spec.max_restarts, 0);
}

TEST(JobSpecTest, BundledExampleParses) {
  StatusOr<JobSpec> spec =
      LoadJobSpecFile(GEOTRAIN_SOURCE_DIR "/examples/jobs/gpt2-tiny-shakespeare.yaml");
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_EQ(spec->name, "gpt2-tiny-shakespeare");
  EXPECT_EQ(spec->num_stages * spec->dp_size, 4);
  EXPECT_EQ(LoadJobSpecFile("/nonexistent/job.yaml").status().code(), StatusCode::kNotFound);
}

// Every job file under examples/ (any depth) parses and validates.
TEST(JobSpecTest, EveryExampleJobParses) {
  int files = 0;
  for (const auto& entry :
       std::filesystem::recursive_directory_iterator(GEOTRAIN_SOURCE_DIR "/examples")) {
    if (!entry.is_regular_file() || entry.path().extension() != ".yaml") continue;
    ++files;
    StatusOr<JobSpec> spec = LoadJobSpecFile(entry.path().string());
    EXPECT_TRUE(spec.ok()) << spec.status().ToString();
  }
  EXPECT_GE(files, 2);
}

// The control-plane tests and the demo run this job from the repository root (a worker's
// --data-root), so its relative paths must name the bundled files.
TEST(JobSpecTest, TwoByTwoExampleUsesTheBundledFiles) {
  StatusOr<JobSpec> spec = LoadJobSpecFile(GEOTRAIN_SOURCE_DIR "/examples/gpt2-tiny-2x2.yaml");
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  const StageAssignment& a = spec->base;
  EXPECT_EQ(spec->name, "gpt2-tiny-2x2");
  EXPECT_EQ(spec->num_stages, 2);
  EXPECT_EQ(spec->dp_size, 2);
  EXPECT_EQ(spec->max_restarts, 3);
  EXPECT_EQ(a.model_init_seed, 1u);
  EXPECT_EQ(a.training.schedule, ScheduleKind::kOneFOneB);
  EXPECT_EQ(a.compression.forward.codec, cz::CodecId::kDelta);
  EXPECT_EQ(a.compression.backward.codec, cz::CodecId::kFixpoint);
  EXPECT_EQ(a.compression.data_parallel.mode, DataParallelMode::kCocktail);
  EXPECT_EQ(a.data.seq_length, 64);
  EXPECT_EQ(a.training.total_steps, 60);
  const auto exists = [](const std::string& relative) {
    return std::filesystem::exists(std::filesystem::path(GEOTRAIN_SOURCE_DIR) / relative);
  };
  EXPECT_TRUE(exists(a.model_dir + "/config.json")) << a.model_dir;
  EXPECT_TRUE(exists(a.data.tokenizer_dir + "/vocab.json")) << a.data.tokenizer_dir;
  ASSERT_EQ(a.data.train.size(), 1u);
  EXPECT_TRUE(exists(a.data.train[0].path)) << a.data.train[0].path;
  ASSERT_EQ(a.data.valid.size(), 1u);
  EXPECT_TRUE(exists(a.data.valid[0].path)) << a.data.valid[0].path;
  for (const std::string& path : {a.model_dir, a.data.tokenizer_dir, a.data.train[0].path}) {
    EXPECT_NE(path.front(), '/') << path << " should be relative to the repository root";
  }
}

TEST(JobSpecTest, ErrorsNameTheKeyAndLine) {
  const std::pair<std::string, std::string> cases[] = {
      {"compression:\n  forward:\n    bitz: 4\n", "compression.forward.bitz (line 6): unknown key"},
      {"optimizer:\n  lr: fast\n", "optimizer.lr (line 5): expected a number, got \"fast\""},
      {"training: {steps: 1.5}\n", "training.steps (line 4): expected an integer, got \"1.5\""},
      {"training: {seed: -1}\n", "training.seed (line 4): expected a non-negative integer"},
      {"training: {resume: maybe}\n", "training.resume (line 4): expected true or false"},
      {"pipeline: {stages: 99999999999}\n", "pipeline.stages (line 4): 99999999999 does not fit"},
      {"pipeline: {schedule: zigzag}\n", "pipeline.schedule (line 4): unknown value \"zigzag\""},
      {"compression: {forward: {codec: zip}}\n",
       "compression.forward.codec (line 4): unknown method 'zip'"},
      {"compression: {forward: 4}\n",
       "compression.forward (line 4): expected a mapping, got \"4\""},
      {"optimizer: [1, 2]\n", "optimizer (line 4): expected a mapping, got a list"},
      {"trainig: {}\n", "trainig (line 4): unknown key"},
      {"optimizer: {lr: 1, lr: 2}\n", "optimizer.lr (line 4): duplicate key"},
      {"model: {dir: x}\n", "model (line 4): duplicate key"},
      {"data_parallel: {codec: {quant_bits: 4, bits: [8]}}\n",
       "data_parallel.codec.bits (line 4): expected an integer, got a list"},
      {"pipeline: {stages: 2}\nmodel2: {layers: [[0, 1]]}\n", "model2 (line 5): unknown key"},
      {"pipeline: {micro_batches: 0}\n", "pipeline.micro_batches (line 4): 0 is outside [1, "},
      {"optimizer: {warmup_steps: -3}\n", "optimizer.warmup_steps (line 4): -3 is outside [0, "},
      {"compression: {forward: {codec: fixpoint, bits: 9}}\n",
       "compression.forward.bits (line 4): 9 is outside [2, 8]"},
      {"data_parallel: {mode: cocktail, codec: {codec: cocktail, quant_bits: 1}}\n",
       "data_parallel.codec.quant_bits (line 4): 1 is outside [2, 8]"},
      {"training: {max_restarts: -1}\n", "training.max_restarts (line 4): -1 is outside [0, 1000]"},
      {"training: {max_restarts: many}\n",
       "training.max_restarts (line 4): expected an integer, got \"many\""},
      {"optimizer: {lr: 1\n", "job spec: yaml-cpp: error at line"},
  };
  for (const auto& [yaml, expected] : cases) {
    StatusOr<JobSpec> spec = ParseJobSpec(kMinimal + yaml);
    ASSERT_FALSE(spec.ok()) << yaml;
    EXPECT_EQ(spec.status().code(), StatusCode::kInvalidArgument) << yaml;
    EXPECT_NE(spec.status().message().find(expected), std::string::npos)
        << yaml << " -> " << spec.status().message();
    // One mistake is one problem, without a "N problems:" header or consequences of it.
    EXPECT_EQ(spec.status().message().find("problems:"), std::string::npos)
        << yaml << " -> " << spec.status().message();
  }
}

// data.task sequence_classification and the example fields (docs/job-spec.md).
TEST(JobSpecTest, SequenceClassificationKeys) {
  const JobSpec spec = Parse(
      "name: t\nmodel: {dir: m}\n"
      "data: {task: sequence_classification, train: [q.tsv], text_field: question,\n"
      "       pair_field: sentence, label_field: label, labels: [entailment, not_entailment]}\n");
  EXPECT_EQ(spec.base.data.task, Task::kSequenceClassification);
  EXPECT_EQ(spec.base.data.text_field, "question");
  EXPECT_EQ(spec.base.data.pair_field, "sentence");
  EXPECT_EQ(spec.base.data.label_field, "label");
  EXPECT_EQ(spec.base.data.labels, (std::vector<std::string>{"entailment", "not_entailment"}));
  EXPECT_EQ(Parse(kMinimal).base.data.task, Task::kCausalLm);

  const std::pair<std::string, std::string> cases[] = {
      {"data: {task: regression, train: [a]}\n", "data.task (line 3): unknown value"},
      {"data: {task: sequence_classification, train: [a], labels: yes}\n",
       "data.labels (line 3): expected a list of strings"},
      {"data: {task: sequence_classification, train: [a], labels: [[a]]}\n",
       "data.labels[0] (line 3): expected a string"},
      {"data: {train: [a], labels: [x, y]}\n",
       "data.labels: only for data.task sequence_classification"},
      {"data: {task: sequence_classification, train: [a], seq_length: 2}\n",
       "data.seq_length: 2 cannot hold [CLS] text [SEP]"},
  };
  for (const auto& [yaml, expected] : cases) {
    StatusOr<JobSpec> parsed = ParseJobSpec("name: t\nmodel: {dir: m}\n" + yaml);
    ASSERT_FALSE(parsed.ok()) << yaml;
    EXPECT_NE(parsed.status().message().find(expected), std::string::npos)
        << yaml << " -> " << parsed.status().message();
  }
}

TEST(JobSpecTest, RejectsBadStructure) {
  const std::pair<std::string, std::string> cases[] = {
      {"", "job spec: expected a mapping"},
      {"model: {dir: m}\ndata: {train: [a]}\n", "name: missing"},
      {"name: t\ndata: {train: [a]}\n", "model.dir: empty"},
      {"name: t\nmodel: {dir: m}\n", "data.train: no sources"},
      {std::string(kMinimal) + "pipeline: {stages: 2}\n", ""},
      {"name: t\nmodel: {dir: m, layers: [[0, 2], [3, 4]]}\ndata: {train: [a]}\npipeline: {stages: "
       "2}\n",
       "model.layers[1]: [3, 4) is not a non-empty range starting at layer 2"},
      {"name: t\nmodel: {dir: m, layers: [[0, 2]]}\ndata: {train: [a]}\npipeline: {stages: 2}\n",
       "model.layers: 1 ranges for 2 stages"},
      {"name: t\nmodel: {dir: m, layers: [[0, 2, 4]]}\ndata: {train: [a]}\n",
       "model.layers[0] (line 2): expected [first, last]"},
      {"name: t\nmodel: {dir: m}\ndata: {train: [a.txt, a.txt]}\n", "path listed twice"},
      {"name: t\nmodel: {dir: m, init_seed: -1}\ndata: {train: [a]}\n",
       "model.init_seed (line 2): expected a non-negative integer, got \"-1\""},
      {"name: t\nmodel: {dir: m}\ndata: {train: [\"a.txt:heavy\"]}\n",
       "data.train[0] (line 3): weight \"heavy\" is not a number"},
      {"name: t\nmodel: {dir: m}\ndata: {train: [{path: a, wait: 1}]}\n",
       "data.train[0].wait (line 3): unknown key"},
      {"name: t\nmodel: {dir: m}\ndata: {train: \"a:1,b:0\"}\n", "weight \"0\""},
  };
  for (const auto& [yaml, expected] : cases) {
    StatusOr<JobSpec> spec = ParseJobSpec(yaml);
    if (expected.empty()) {
      EXPECT_TRUE(spec.ok()) << yaml << " -> " << spec.status().ToString();
      continue;
    }
    ASSERT_FALSE(spec.ok()) << yaml;
    EXPECT_NE(spec.status().message().find(expected), std::string::npos)
        << yaml << " -> " << spec.status().message();
    EXPECT_EQ(spec.status().message().find('\n'), std::string::npos)
        << yaml << " -> " << spec.status().message();
  }
}

TEST(JobSpecTest, ReportsEveryProblemOnceWithItsLine) {
  StatusOr<JobSpec> spec = ParseJobSpec(std::string(kMinimal) +
                                        "pipeline:\n"
                                        "  stages: two\n"
                                        "  micro_batches: 0\n"
                                        "optimizer: [1, 2]\n"
                                        "compression:\n"
                                        "  forward: {codec: fixpoint, bits: 9}\n"
                                        "  warmup_stepz: 3\n"
                                        "training: {steps: 0, max_restarts: -2}\n");
  ASSERT_FALSE(spec.ok());
  EXPECT_EQ(spec.status().code(), StatusCode::kInvalidArgument);
  // Parse problems (ranges included) in the order of the file, then the checks of the values.
  EXPECT_EQ(spec.status().message(),
            "7 problems:\n"
            "  pipeline.stages (line 5): expected an integer, got \"two\"\n"
            "  pipeline.micro_batches (line 6): 0 is outside [1, 65536]\n"
            "  optimizer (line 7): expected a mapping, got a list\n"
            "  compression.forward.bits (line 9): 9 is outside [2, 8]\n"
            "  compression.warmup_stepz (line 10): unknown key\n"
            "  training.steps (line 11): 0 is outside [1, 1000000000000]\n"
            "  training.max_restarts (line 11): -2 is outside [0, 1000]");
}

TEST(JobSpecTest, ReportsNoConsequencesOfAValueThatFailed) {
  // Each file has one mistake; the default its key kept must not fail a later check.
  const std::pair<std::string, std::string> cases[] = {
      // min_lr 0.01 is larger than the default lr, but lr is what is wrong.
      {std::string(kMinimal) + "optimizer: {lr: fast, min_lr: 0.01}\n",
       "optimizer.lr (line 4): expected a number"},
      // Two layer ranges for the default single stage.
      {"name: t\nmodel: {dir: m, layers: [[0, 2], [2, 4]]}\ndata: {train: [a]}\n"
       "pipeline: {stages: x}\n",
       "pipeline.stages (line 4): expected an integer"},
      {"name: t\nmodel: {dir: [m]}\ndata: {train: [a]}\n",
       "model.dir (line 2): expected a string, got a list"},
      {"name: t\nmodel: {dir: m}\ndata: {train: [{path: a, weight: x}]}\n",
       "data.train[0].weight (line 3): expected a number"},
      {std::string(kMinimal) + "training: {checkpoint_every: 5, checkpoint_dir: [x]}\n",
       "training.checkpoint_dir (line 4): expected a string"},
      {std::string(kMinimal) + "data_parallel: {replicas: 0}\n",
       "data_parallel.replicas (line 4): 0 is outside [1, 4096]"},
      {std::string(kMinimal) + "pipeline: {stages: 0}\n",
       "pipeline.stages (line 4): 0 is outside [1, 1024]"},
      {"name: [t]\nmodel: {dir: m}\ndata: {train: [a]}\n", "name (line 1): expected a string"},
  };
  for (const auto& [yaml, expected] : cases) {
    StatusOr<JobSpec> spec = ParseJobSpec(yaml);
    ASSERT_FALSE(spec.ok()) << yaml;
    EXPECT_EQ(spec.status().message().rfind(expected, 0), 0u)
        << yaml << " -> " << spec.status().message();
    EXPECT_EQ(spec.status().message().find('\n'), std::string::npos)
        << yaml << " -> " << spec.status().message();
  }
}

TEST(JobSpecTest, ReadsOnAfterABadKeyOrSection) {
  // A section that is not a mapping is skipped; the sections around it are still read.
  StatusOr<JobSpec> spec =
      ParseJobSpec(std::string(kMinimal) + "optimizer: 5\ntraining: {steps: 0}\n");
  ASSERT_FALSE(spec.ok());
  EXPECT_EQ(spec.status().message(),
            "2 problems:\n"
            "  optimizer (line 4): expected a mapping, got \"5\"\n"
            "  training.steps (line 5): 0 is outside [1, 1000000000000]");

  // Inside a section, the keys after an unknown one and around a duplicate are read.
  spec = ParseJobSpec(std::string(kMinimal) +
                      "compression:\n"
                      "  forward: {bitz: 4, codec: fixpoint, bits: 1}\n"
                      "  warmup_steps: 1\n"
                      "  warmup_steps: 2\n"
                      "  autoencoder_dim: -1\n");
  ASSERT_FALSE(spec.ok());
  EXPECT_EQ(spec.status().message(),
            "4 problems:\n"
            "  compression.forward.bits (line 5): 1 is outside [2, 8]\n"
            "  compression.forward.bitz (line 5): unknown key\n"
            "  compression.warmup_steps (line 7): duplicate key\n"
            "  compression.autoencoder_dim (line 8): -1 is outside [0, 65536]");

  // A value the file does not give has no line to point at.
  spec = ParseJobSpec("name: t\nmodel: {dir: m}\n");
  ASSERT_FALSE(spec.ok());
  EXPECT_EQ(spec.status().message(), "data.train: no sources");

  // Through a file, the path comes first.
  testing::TempDir tmp;
  const std::string path = tmp.Write("job.yaml", "name: t\nmodel: {dir: m, dtype: f8}\n");
  EXPECT_EQ(LoadJobSpecFile(path).status().message(),
            path +
                ": 2 problems:\n"
                "  model.dtype: \"f8\" is not one of f32, bf16, f16 (line 2)\n"
                "  data.train: no sources");
}

// A spec in which every field differs from its default, with awkward strings and numbers.
JobSpec EveryFieldSet() {
  JobSpec s;
  s.name = "round: \"trip\"";
  s.num_stages = 3;
  s.dp_size = 2;
  s.stage_layers = {{0, 2}, {2, 5}, {5, 6}};
  StageAssignment& a = s.base;
  a.model_dir = "true";
  a.model_init_seed = 18446744073709551615u;
  s.max_restarts = 7;
  a.dtype = "f16";
  a.data.train = {{"c:/x.txt", 0.25}, {"#y.txt", 0.75}};
  a.data.valid = {{"123", 1.0}};
  a.data.tokenizer_dir = "tok dir";
  a.data.cache_dir = "";
  a.data.seq_length = 77;
  a.data.samples_per_epoch = 999999999999u;  // the top of its range
  a.data.task = Task::kSequenceClassification;
  a.data.text_field = "3";
  a.data.pair_field = "second text";
  a.data.label_field = "gold label";
  a.data.labels = {"yes", "no", "true", ""};
  a.training.schedule = ScheduleKind::kOneFOneB;
  a.training.micro_batch_size = 3;
  a.training.micro_batches = 5;
  a.training.total_steps = 9;
  a.training.seed = 18446744073709551614u;
  a.training.eval_every = 4;
  a.training.eval_batches = 6;
  a.training.checkpoint_every = 7;
  a.training.keep_checkpoints = 8;
  a.training.checkpoint_dir = "/c";
  a.training.resume = false;
  a.training.profile_path = "p.json";
  a.training.timeout_seconds = 0.1;
  a.optimizer = {3e-5, 1.0000000000000002e-7, 11, LrDecay::kCosine, 0.3, 0.7, 0.95, 1e-12, 2.5};
  CompressionSettings& c = a.compression;
  c.backward_epilogue_only = true;
  c.autoencoder_dim = 12;
  c.warmup_steps = 13;
  c.warmup_epochs = 2;
  c.fused_embedding_sync = false;
  c.adaptive = {true, 3, 7, 0.125, 0.75, 0.25, 4, 5, 0.0625};
  c.data_parallel.mode = DataParallelMode::kQuantizedMomentum;
  c.data_parallel.powersgd_rank = 3;
  c.data_parallel.compressed_stages = 2;
  c.data_parallel.overlap = false;
  int salt = 0;
  for (cz::CodecConfig* codec : {&c.forward, &c.backward, &c.data_parallel.codec}) {
    ++salt;
    codec->codec = cz::CodecId::kFixpoint;
    codec->wire_dtype = cz::DType::kBFloat16;
    codec->bits = 2 + salt;
    codec->scale_mode = cz::ScaleMode::kPerRow;
    codec->tile_size = 128 * salt;
    codec->rounding = cz::Rounding::kStochastic;
    codec->seed = 1000 + salt;
    codec->cache_bits = 2;
    codec->max_cache_samples = 5 + salt;
    codec->cache_dir = "/cache/" + std::to_string(salt);
    codec->cache_full_policy = cz::CacheFullPolicy::kError;
    codec->high_bits = 7;
    codec->low_bits = 5;
    codec->high_ratio = 1.0 / 3;
    codec->entropy_unit = cz::EntropyUnit::kTile;
    codec->outlier_threshold = 3.25;
    codec->density = 0.125;
    codec->value_dtype = cz::DType::kFloat32;
    codec->rank = 9;
    codec->error_feedback = false;
    codec->random_ratio = 0.3;
    codec->topk_ratio = 0.4;
    codec->quant_bits = 6;
    codec->quant_group = 64;
    codec->mask_mode = cz::MaskMode::kSeeded;
    codec->zstd_level = 3;
    codec->threads = 4;
  }
  a = AssignmentFor(s, 0, 0);
  return s;
}

void ExpectSameCodec(const cz::CodecConfig& x, const cz::CodecConfig& y, const char* which) {
  SCOPED_TRACE(which);
  EXPECT_EQ(x.codec, y.codec);
  EXPECT_EQ(x.wire_dtype, y.wire_dtype);
  EXPECT_EQ(x.bits, y.bits);
  EXPECT_EQ(x.scale_mode, y.scale_mode);
  EXPECT_EQ(x.tile_size, y.tile_size);
  EXPECT_EQ(x.rounding, y.rounding);
  EXPECT_EQ(x.seed, y.seed);
  EXPECT_EQ(x.cache_bits, y.cache_bits);
  EXPECT_EQ(x.max_cache_samples, y.max_cache_samples);
  EXPECT_EQ(x.cache_dir, y.cache_dir);
  EXPECT_EQ(x.cache_full_policy, y.cache_full_policy);
  EXPECT_EQ(x.high_bits, y.high_bits);
  EXPECT_EQ(x.low_bits, y.low_bits);
  EXPECT_EQ(x.high_ratio, y.high_ratio);
  EXPECT_EQ(x.entropy_unit, y.entropy_unit);
  EXPECT_EQ(x.outlier_threshold, y.outlier_threshold);
  EXPECT_EQ(x.density, y.density);
  EXPECT_EQ(x.value_dtype, y.value_dtype);
  EXPECT_EQ(x.rank, y.rank);
  EXPECT_EQ(x.error_feedback, y.error_feedback);
  EXPECT_EQ(x.random_ratio, y.random_ratio);
  EXPECT_EQ(x.topk_ratio, y.topk_ratio);
  EXPECT_EQ(x.quant_bits, y.quant_bits);
  EXPECT_EQ(x.quant_group, y.quant_group);
  EXPECT_EQ(x.mask_mode, y.mask_mode);
  EXPECT_EQ(x.zstd_level, y.zstd_level);
  EXPECT_EQ(x.threads, y.threads);
}

void ExpectSameSources(const std::vector<WeightedSource>& x, const std::vector<WeightedSource>& y) {
  ASSERT_EQ(x.size(), y.size());
  for (size_t i = 0; i < x.size(); ++i) {
    EXPECT_EQ(x[i].path, y[i].path);
    EXPECT_EQ(x[i].weight, y[i].weight);
  }
}

void ExpectSameSpec(const JobSpec& x, const JobSpec& y) {
  EXPECT_EQ(x.name, y.name);
  EXPECT_EQ(x.num_stages, y.num_stages);
  EXPECT_EQ(x.dp_size, y.dp_size);
  EXPECT_EQ(x.stage_layers, y.stage_layers);
  EXPECT_EQ(x.max_restarts, y.max_restarts);
  const StageAssignment& a = x.base;
  const StageAssignment& b = y.base;
  EXPECT_EQ(a.model_dir, b.model_dir);
  EXPECT_EQ(a.model_init_seed, b.model_init_seed);
  EXPECT_EQ(a.stage, b.stage);
  EXPECT_EQ(a.num_stages, b.num_stages);
  EXPECT_EQ(a.first_layer, b.first_layer);
  EXPECT_EQ(a.last_layer, b.last_layer);
  EXPECT_EQ(a.dp_rank, b.dp_rank);
  EXPECT_EQ(a.dp_size, b.dp_size);
  EXPECT_EQ(a.dtype, b.dtype);
  EXPECT_EQ(a.optimizer.lr, b.optimizer.lr);
  EXPECT_EQ(a.optimizer.min_lr, b.optimizer.min_lr);
  EXPECT_EQ(a.optimizer.lr_warmup_steps, b.optimizer.lr_warmup_steps);
  EXPECT_EQ(a.optimizer.lr_decay, b.optimizer.lr_decay);
  EXPECT_EQ(a.optimizer.weight_decay, b.optimizer.weight_decay);
  EXPECT_EQ(a.optimizer.beta1, b.optimizer.beta1);
  EXPECT_EQ(a.optimizer.beta2, b.optimizer.beta2);
  EXPECT_EQ(a.optimizer.eps, b.optimizer.eps);
  EXPECT_EQ(a.optimizer.max_grad_norm, b.optimizer.max_grad_norm);
  ExpectSameSources(a.data.train, b.data.train);
  ExpectSameSources(a.data.valid, b.data.valid);
  EXPECT_EQ(a.data.tokenizer_dir, b.data.tokenizer_dir);
  EXPECT_EQ(a.data.cache_dir, b.data.cache_dir);
  EXPECT_EQ(a.data.seq_length, b.data.seq_length);
  EXPECT_EQ(a.data.samples_per_epoch, b.data.samples_per_epoch);
  EXPECT_EQ(a.data.task, b.data.task);
  EXPECT_EQ(a.data.text_field, b.data.text_field);
  EXPECT_EQ(a.data.pair_field, b.data.pair_field);
  EXPECT_EQ(a.data.label_field, b.data.label_field);
  EXPECT_EQ(a.data.labels, b.data.labels);
  const CompressionSettings& c = a.compression;
  const CompressionSettings& d = b.compression;
  ExpectSameCodec(c.forward, d.forward, "forward");
  ExpectSameCodec(c.backward, d.backward, "backward");
  ExpectSameCodec(c.data_parallel.codec, d.data_parallel.codec, "data_parallel");
  EXPECT_EQ(c.backward_epilogue_only, d.backward_epilogue_only);
  EXPECT_EQ(c.autoencoder_dim, d.autoencoder_dim);
  EXPECT_EQ(c.warmup_steps, d.warmup_steps);
  EXPECT_EQ(c.warmup_epochs, d.warmup_epochs);
  EXPECT_EQ(c.fused_embedding_sync, d.fused_embedding_sync);
  EXPECT_EQ(c.adaptive.enabled, d.adaptive.enabled);
  EXPECT_EQ(c.adaptive.min_bits, d.adaptive.min_bits);
  EXPECT_EQ(c.adaptive.max_bits, d.adaptive.max_bits);
  EXPECT_EQ(c.adaptive.max_relative_error, d.adaptive.max_relative_error);
  EXPECT_EQ(c.adaptive.hide_fraction, d.adaptive.hide_fraction);
  EXPECT_EQ(c.adaptive.raise_fraction, d.adaptive.raise_fraction);
  EXPECT_EQ(c.adaptive.interval_steps, d.adaptive.interval_steps);
  EXPECT_EQ(c.adaptive.announce_steps, d.adaptive.announce_steps);
  EXPECT_EQ(c.adaptive.min_topk_ratio, d.adaptive.min_topk_ratio);
  EXPECT_EQ(c.data_parallel.mode, d.data_parallel.mode);
  EXPECT_EQ(c.data_parallel.powersgd_rank, d.data_parallel.powersgd_rank);
  EXPECT_EQ(c.data_parallel.compressed_stages, d.data_parallel.compressed_stages);
  EXPECT_EQ(c.data_parallel.overlap, d.data_parallel.overlap);
  const TrainingSettings& t = a.training;
  const TrainingSettings& u = b.training;
  EXPECT_EQ(t.micro_batch_size, u.micro_batch_size);
  EXPECT_EQ(t.micro_batches, u.micro_batches);
  EXPECT_EQ(t.total_steps, u.total_steps);
  EXPECT_EQ(t.schedule, u.schedule);
  EXPECT_EQ(t.seed, u.seed);
  EXPECT_EQ(t.eval_every, u.eval_every);
  EXPECT_EQ(t.eval_batches, u.eval_batches);
  EXPECT_EQ(t.checkpoint_every, u.checkpoint_every);
  EXPECT_EQ(t.keep_checkpoints, u.keep_checkpoints);
  EXPECT_EQ(t.checkpoint_dir, u.checkpoint_dir);
  EXPECT_EQ(t.resume, u.resume);
  EXPECT_EQ(t.profile_path, u.profile_path);
  EXPECT_EQ(t.timeout_seconds, u.timeout_seconds);
}

TEST(JobSpecTest, YamlRoundTripsEveryField) {
  const JobSpec original = EveryFieldSet();
  const std::string yaml = JobSpecToYaml(original);
  StatusOr<JobSpec> parsed = ParseJobSpec(yaml);
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString() << "\n" << yaml;
  ExpectSameSpec(original, *parsed);
  EXPECT_EQ(JobSpecToYaml(*parsed), yaml);

  // Defaults round-trip too, and the text is readable.
  const JobSpec minimal = Parse(kMinimal);
  const std::string minimal_yaml = JobSpecToYaml(minimal);
  EXPECT_NE(minimal_yaml.find("lr: 0.0001\n"), std::string::npos) << minimal_yaml;
  EXPECT_NE(minimal_yaml.find("layers: []\n"), std::string::npos) << minimal_yaml;
  EXPECT_NE(minimal_yaml.find("init_seed: ~\n"), std::string::npos) << minimal_yaml;
  EXPECT_NE(minimal_yaml.find("max_restarts: 3\n"), std::string::npos) << minimal_yaml;
  ExpectSameSpec(minimal, Parse(minimal_yaml));
  EXPECT_FALSE(Parse(minimal_yaml).base.model_init_seed.has_value());
}

TEST(JobSpecTest, AssignmentForGivesEachStageItsLayers) {
  const JobSpec spec =
      Parse(std::string(kMinimal) + "pipeline: {stages: 3}\ndata_parallel: {replicas: 2}\n" +
            "optimizer: {lr: 0.5}\n");
  const JobSpec layered = Parse(
      "name: t\nmodel: {dir: m, layers: [[0, 1], [1, 3], [3, 4]]}\ndata: {train: [a]}\n"
      "pipeline: {stages: 3}\ndata_parallel: {replicas: 2}\n");
  const std::pair<int64_t, int64_t> expected[] = {{0, 1}, {1, 3}, {3, 4}};
  for (int stage = 0; stage < 3; ++stage) {
    for (int replica = 0; replica < 2; ++replica) {
      const StageAssignment even = AssignmentFor(spec, stage, replica);
      EXPECT_EQ(even.stage, stage);
      EXPECT_EQ(even.dp_rank, replica);
      EXPECT_EQ(even.num_stages, 3);
      EXPECT_EQ(even.dp_size, 2);
      EXPECT_EQ(even.global_rank(), replica * 3 + stage);
      EXPECT_EQ(even.first_layer, -1);
      EXPECT_EQ(even.last_layer, -1);
      EXPECT_EQ(even.optimizer.lr, 0.5);
      EXPECT_TRUE(even.Validate().ok());

      const StageAssignment split = AssignmentFor(layered, stage, replica);
      EXPECT_EQ(split.first_layer, expected[stage].first);
      EXPECT_EQ(split.last_layer, expected[stage].second);
      EXPECT_TRUE(split.Validate().ok());
    }
  }
}

}  // namespace
}  // namespace geotrain::runtime
