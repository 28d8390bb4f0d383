// StageRuntime end to end over fake transports: with codecs off, pipelines and replicas reproduce
// the single-process gradients and losses of the same samples, and a resumed run continues bit for
// bit; with codecs on, every combination trains.
#include "runtime/stage_runtime.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <fstream>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "net/fake_transport.h"
#include "tests/runtime/runtime_test_job.h"

namespace geotrain::runtime {
namespace {

using testing::RunRanks;
using testing::TinyJob;

struct RankOutcome {
  std::map<std::string, at::Tensor> grads;
  std::vector<double> losses;
  double grad_norm = 0;
  bool last_stage = false;
};

// Runs `steps` steps of `job` on every rank; with `stop_before_update` the last one stops after
// the gradient sync, so its gradients can be compared.
std::vector<RankOutcome> Train(const StageAssignment& job, int steps, bool stop_before_update,
                               bool tied_embeddings = true) {
  std::vector<RankOutcome> outcomes(static_cast<size_t>(job.world_size()));
  RunRanks(job, tied_embeddings,
           [&](int rank, const StageAssignment& assignment, StageLinks links) {
             auto runtime = StageRuntime::Create(assignment, std::move(links));
             ASSERT_TRUE(runtime.ok()) << runtime.status().ToString();
             auto resumed = (*runtime)->Resume();
             ASSERT_TRUE(resumed.ok()) << resumed.status().ToString();
             RankOutcome& out = outcomes[rank];
             out.last_stage = assignment.is_last_stage();
             for (int i = 0; i < steps; ++i) {
               StepResult result;
               Status status = (*runtime)->RunSchedule(&result);
               if (status.ok()) status = (*runtime)->SynchronizeGradients(&result);
               ASSERT_TRUE(status.ok()) << "rank " << rank << ": " << status.ToString();
               out.losses.push_back(result.loss);
               out.grad_norm = result.grad_norm;
               if (stop_before_update && i + 1 == steps) {
                 for (const auto& p : (*runtime)->parameters())
                   out.grads[p.name] = p.tensor.grad().clone();
                 break;
               }
               status = (*runtime)->ApplyOptimizer(&result);
               ASSERT_TRUE(status.ok()) << "rank " << rank << ": " << status.ToString();
             }
           });
  return outcomes;
}

// The replicas' mean loss of each step (the last stages report them).
std::vector<double> MeanLosses(const std::vector<RankOutcome>& outcomes) {
  std::vector<double> mean;
  int replicas = 0;
  for (const RankOutcome& o : outcomes) {
    if (!o.last_stage) continue;
    ++replicas;
    mean.resize(o.losses.size());
    for (size_t i = 0; i < o.losses.size(); ++i) mean[i] += o.losses[i];
  }
  for (double& m : mean) m /= replicas;
  return mean;
}

// The single-process reference for `job`: one stage, one replica, D x M micro-batches.
StageAssignment ReferenceOf(StageAssignment job) {
  job.training.micro_batches *= job.dp_size;
  job.num_stages = 1;
  job.dp_size = 1;
  return job;
}

struct Layout {
  int stages;
  int replicas;
  ScheduleKind schedule;
};

void PrintTo(const Layout& layout, std::ostream* out) {
  *out << layout.stages << " stages x " << layout.replicas << " replicas, "
       << ScheduleKindName(layout.schedule);
}

class StageRuntimeEquivalence : public ::testing::TestWithParam<Layout> {};

TEST_P(StageRuntimeEquivalence, GradientsMatchTheSingleProcessRun) {
  geotrain::testing::TempDir dir;
  StageAssignment job = TinyJob(dir, GetParam().stages, GetParam().replicas);
  job.training.schedule = GetParam().schedule;
  const std::vector<RankOutcome> reference = Train(ReferenceOf(job), 1, true);
  const std::vector<RankOutcome> split = Train(job, 1, true);

  ASSERT_EQ(MeanLosses(split).size(), 1u);
  EXPECT_NEAR(MeanLosses(split)[0], reference[0].losses[0], 1e-5 * reference[0].losses[0]);
  for (size_t rank = 0; rank < split.size(); ++rank) {
    EXPECT_NEAR(split[rank].grad_norm, reference[0].grad_norm, 1e-4 * reference[0].grad_norm);
    for (const auto& [name, grad] : split[rank].grads) {
      // Relative to the tensor's own gradient: the relative embeddings' is about 1e-6 in all.
      const at::Tensor& want = reference[0].grads.at(name);
      EXPECT_LE((grad - want).norm().item<double>(), 1e-4 * want.norm().item<double>() + 1e-12)
          << "rank " << rank << " " << name;
    }
  }
}

TEST_P(StageRuntimeEquivalence, LossesMatchTheSingleProcessRunOverSteps) {
  geotrain::testing::TempDir dir;
  StageAssignment job = TinyJob(dir, GetParam().stages, GetParam().replicas);
  job.training.schedule = GetParam().schedule;
  const std::vector<double> reference = MeanLosses(Train(ReferenceOf(job), 4, false));
  const std::vector<double> split = MeanLosses(Train(job, 4, false));
  ASSERT_EQ(split.size(), reference.size());
  for (size_t i = 0; i < split.size(); ++i) {
    EXPECT_NEAR(split[i], reference[i], 1e-4 * reference[i]) << "step " << i + 1;
  }
  EXPECT_LT(split.back(), split.front());
}

INSTANTIATE_TEST_SUITE_P(Layouts, StageRuntimeEquivalence,
                         ::testing::Values(Layout{2, 1, ScheduleKind::kGPipe},
                                           Layout{4, 1, ScheduleKind::kGPipe},
                                           Layout{4, 1, ScheduleKind::kOneFOneB},
                                           Layout{1, 2, ScheduleKind::kGPipe},
                                           Layout{2, 2, ScheduleKind::kOneFOneB}),
                         [](const auto& info) {
                           return std::to_string(info.param.stages) + "stages" +
                                  std::to_string(info.param.replicas) + "replicas" +
                                  ScheduleKindName(info.param.schedule);
                         });

TEST(StageRuntimeResume, CheckpointAndResumeContinuesBitForBit) {
  geotrain::testing::TempDir dir;
  StageAssignment job = TinyJob(dir, 2, 2);
  const std::vector<double> straight = MeanLosses(Train(job, 4, false));

  job.training.checkpoint_dir = dir.File("checkpoints");
  job.training.checkpoint_every = 2;
  job.training.total_steps = 2;
  std::vector<double> first_half;
  RunRanks(job, true, [&](int, const StageAssignment& assignment, StageLinks links) {
    auto runtime = StageRuntime::Create(assignment, std::move(links));
    ASSERT_TRUE(runtime.ok()) << runtime.status().ToString();
    const Status status = (*runtime)->Run(nullptr);
    ASSERT_TRUE(status.ok()) << status.ToString();
  });
  job.training.total_steps = 4;
  const std::vector<RankOutcome> resumed = Train(job, 2, false);
  const std::vector<double> second_half = MeanLosses(resumed);
  ASSERT_EQ(second_half.size(), 2u);
  EXPECT_EQ(second_half[0], straight[2]);
  EXPECT_EQ(second_half[1], straight[3]);
}

}  // namespace
}  // namespace geotrain::runtime

namespace geotrain::runtime {
namespace {

using testing::RunRanks;
using testing::TinyJob;

compression::CodecConfig Codec(compression::CodecId id, int bits) {
  compression::CodecConfig config;
  config.codec = id;
  config.bits = bits;
  return config;
}

struct CompressionCase {
  std::string name;
  std::function<void(StageAssignment*)> configure;
};

void PrintTo(const CompressionCase& c, std::ostream* out) { *out << c.name; }

class StageRuntimeCompression : public ::testing::TestWithParam<CompressionCase> {};

// Every method family trains: losses stay finite and fall, and after the warm-up the pipeline
// sends fewer bytes than it would raw.
TEST_P(StageRuntimeCompression, TrainsAndSendsLess) {
  geotrain::testing::TempDir dir;
  StageAssignment job = TinyJob(dir, 2, 2);
  job.training.total_steps = 6;
  job.training.eval_every = 3;
  job.training.eval_batches = 1;
  job.compression.warmup_steps = 2;
  GetParam().configure(&job);
  std::mutex mu;
  std::vector<StepResult> last_stage_steps;
  std::vector<StepResult> first_stage_steps;
  RunRanks(job, true, [&](int, const StageAssignment& assignment, StageLinks links) {
    auto runtime = StageRuntime::Create(assignment, std::move(links));
    ASSERT_TRUE(runtime.ok()) << runtime.status().ToString();
    const Status status = (*runtime)->Run([&](const StepResult& result) {
      std::lock_guard<std::mutex> lock(mu);
      if (assignment.dp_rank != 0) return;
      (assignment.is_last_stage() ? last_stage_steps : first_stage_steps).push_back(result);
    });
    ASSERT_TRUE(status.ok()) << status.ToString();
  });
  ASSERT_EQ(last_stage_steps.size(), 6u);
  ASSERT_TRUE(last_stage_steps.back().eval_loss.has_value());
  EXPECT_TRUE(std::isfinite(*last_stage_steps.back().eval_loss));
  for (const StepResult& r : last_stage_steps) EXPECT_TRUE(std::isfinite(r.loss)) << r.step;
  EXPECT_LT(last_stage_steps.back().loss, last_stage_steps.front().loss);
  for (size_t i = 0; i < 6; ++i) {
    EXPECT_EQ(first_stage_steps[i].compressed, i >= 2);
    const StepBytes& raw = first_stage_steps[i].raw_bytes;
    const StepBytes& wire = first_stage_steps[i].wire_bytes;
    const StepBytes& raw_back = last_stage_steps[i].raw_bytes;
    const StepBytes& wire_back = last_stage_steps[i].wire_bytes;
    if (i >= 2) {
      EXPECT_LT(wire.forward + wire_back.backward, raw.forward + raw_back.backward) << "step " << i;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Methods, StageRuntimeCompression,
    ::testing::Values(
        CompressionCase{"acsgd_delta4_fix8_cocktail",
                        [](StageAssignment* job) {
                          job->compression.forward = Codec(compression::CodecId::kDelta, 4);
                          job->compression.backward = Codec(compression::CodecId::kFixpoint, 8);
                          job->compression.data_parallel.mode = DataParallelMode::kCocktail;
                          job->compression.data_parallel.codec.codec =
                              compression::CodecId::kCocktail;
                          job->compression.compress_embedding_sync = true;
                        }},
        CompressionCase{"tah_fix6",
                        [](StageAssignment* job) {
                          job->compression.forward = Codec(compression::CodecId::kTah, 4);
                          job->compression.forward.tile_size = 16;
                          job->compression.backward = Codec(compression::CodecId::kFixpoint, 6);
                        }},
        CompressionCase{"optimus_cb_epilogue_powersgd_stage0",
                        [](StageAssignment* job) {
                          job->training.schedule = ScheduleKind::kOneFOneB;
                          job->compression.backward = Codec(compression::CodecId::kPowerSgd, 8);
                          job->compression.backward.rank = 2;
                          job->compression.backward_epilogue_only = true;
                          job->compression.data_parallel.mode = DataParallelMode::kPowerSgd;
                          job->compression.data_parallel.powersgd_rank = 4;
                          job->compression.data_parallel.compressed_stages = 1;
                        }},
        CompressionCase{"mcbench_autoencoder_quantized_momentum",
                        [](StageAssignment* job) {
                          job->compression.autoencoder_dim = 8;
                          job->compression.forward = Codec(compression::CodecId::kFixpoint, 8);
                          job->compression.data_parallel.mode =
                              DataParallelMode::kQuantizedMomentum;
                          job->compression.data_parallel.codec =
                              Codec(compression::CodecId::kFixpoint, 8);
                        }},
        CompressionCase{"delta_lowbits_topk_backward",
                        [](StageAssignment* job) {
                          job->compression.forward = Codec(compression::CodecId::kDeltaLowBits, 4);
                          job->compression.backward = Codec(compression::CodecId::kTopK, 8);
                          job->compression.backward.density = 0.1;
                          job->compression.fused_embedding_sync = false;
                        }}),
    [](const auto& info) { return info.param.name; });

TEST(StageRuntimeProfile, WritesAChromeTraceOfEveryKindOfSpan) {
  geotrain::testing::TempDir dir;
  StageAssignment job = TinyJob(dir, 2, 1);
  job.training.total_steps = 2;
  RunRanks(job, true, [&](int rank, StageAssignment assignment, StageLinks links) {
    assignment.training.profile_path = dir.File("trace." + std::to_string(rank) + ".json");
    auto runtime = StageRuntime::Create(assignment, std::move(links));
    ASSERT_TRUE(runtime.ok()) << runtime.status().ToString();
    ASSERT_TRUE((*runtime)->Run(nullptr).ok());
  });
  std::ifstream file(dir.File("trace.1.json"));
  const nlohmann::json trace = nlohmann::json::parse(file);
  std::set<std::string> names;
  for (const auto& event : trace["traceEvents"]) {
    if (event["ph"] == "X") names.insert(event["name"].get<std::string>());
  }
  for (const char* name :
       {"recv", "decode", "forward", "backward", "encode", "send", "sync gradients", "optimizer"}) {
    EXPECT_TRUE(names.count(name)) << name;
  }
}

TEST(StageRuntimePeerDeath, SurvivorsFailWithAClearErrorWithinTheTimeout) {
  geotrain::testing::TempDir dir;
  StageAssignment job = TinyJob(dir, 2, 2);
  job.training.total_steps = 1000;
  job.training.timeout_seconds = 3;
  std::vector<StageLinks> links = CreateFakeJobLinks(2, 2, true, UsesFusedEmbeddingGroup(job));
  net::Transport* victim_link = links[3].upstream.get();  // stage 1 of replica 1
  std::mutex mu;
  std::vector<Status> statuses(4);
  std::vector<std::thread> threads;
  const auto start = std::chrono::steady_clock::now();
  for (int rank = 0; rank < 4; ++rank) {
    threads.emplace_back([&, rank] {
      auto runtime =
          StageRuntime::Create(testing::RankOf(job, rank % 2, rank / 2), std::move(links[rank]));
      ASSERT_TRUE(runtime.ok()) << runtime.status().ToString();
      int steps = 0;
      const Status status = (*runtime)->Run([&](const StepResult&) {
        if (rank == 3 && ++steps == 2) {
          ASSERT_TRUE(net::KillFakeRank(*victim_link, 1).ok());
        }
      });
      std::lock_guard<std::mutex> lock(mu);
      statuses[rank] = status;
    });
  }
  for (std::thread& t : threads) t.join();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(seconds, 60);
  for (int rank = 0; rank < 4; ++rank) {
    EXPECT_FALSE(statuses[rank].ok()) << "rank " << rank;
    EXPECT_FALSE(statuses[rank].message().empty());
  }
}

// Every model family runs in the pipeline as GPT-2 does: 2 stages x 2 replicas match the
// single-process losses with codecs off, and train with AC-SGD's delta codec forward, 8-bit
// gradients backward and CocktailSGD between replicas.
struct FamilyCase {
  std::string name;
  std::string config_json;  // 32 wide, 4 layers, the GPT-2 vocabulary (the bundled tokenizer)
};

void PrintTo(const FamilyCase& family, std::ostream* out) { *out << family.name; }

class StageRuntimeFamilies : public ::testing::TestWithParam<FamilyCase> {};

TEST_P(StageRuntimeFamilies, TwoByTwoMatchesTheSingleProcessRunAndTrainsCompressed) {
  geotrain::testing::TempDir dir;
  StageAssignment job = TinyJob(dir, 2, 2, GetParam().config_json);
  const std::vector<double> reference = MeanLosses(Train(ReferenceOf(job), 3, false));
  const std::vector<double> split = MeanLosses(Train(job, 3, false));
  ASSERT_EQ(split.size(), reference.size());
  for (size_t i = 0; i < split.size(); ++i) {
    EXPECT_NEAR(split[i], reference[i], 1e-4 * reference[i]) << "step " << i + 1;
  }

  job.compression.forward = Codec(compression::CodecId::kDelta, 4);
  job.compression.backward = Codec(compression::CodecId::kFixpoint, 8);
  job.compression.data_parallel.mode = DataParallelMode::kCocktail;
  job.compression.data_parallel.codec.codec = compression::CodecId::kCocktail;
  job.compression.warmup_steps = 1;
  const std::vector<double> compressed = MeanLosses(Train(job, 5, false));
  ASSERT_EQ(compressed.size(), 5u);
  for (double loss : compressed) EXPECT_TRUE(std::isfinite(loss));
  EXPECT_LT(compressed.back(), compressed.front());
}

INSTANTIATE_TEST_SUITE_P(
    ModelFamilies, StageRuntimeFamilies,
    ::testing::Values(FamilyCase{"opt", R"({"model_type": "opt", "hidden_size": 32, "ffn_dim": 64,
            "num_hidden_layers": 4, "num_attention_heads": 2, "word_embed_proj_dim": 16,
            "max_position_embeddings": 64, "vocab_size": 50257})"},
                      FamilyCase{"gpt_neox", R"({"model_type": "gpt_neox", "hidden_size": 32,
            "intermediate_size": 64, "num_hidden_layers": 4, "num_attention_heads": 2,
            "rotary_pct": 0.25, "vocab_size": 50257, "tie_word_embeddings": true})"},
                      FamilyCase{"gptj",
                                 R"({"model_type": "gptj", "n_embd": 32, "n_layer": 4, "n_head": 2,
            "rotary_dim": 8, "n_positions": 64, "vocab_size": 50257,
            "tie_word_embeddings": true})"}),
    [](const auto& info) { return info.param.name; });

// Sequence classification (a BERT encoder on the bundled sentiment set, examples/data/
// classification): the pipeline and replicas reproduce the single-process losses, the padding
// mask and labels reaching the stages by sample id, and a short fine-tune scores well above
// chance (50%) on the validation set, with accuracy, F1 and MCC in the step line.
constexpr char kTinyBert[] = R"({"model_type": "bert", "hidden_size": 32,
    "num_hidden_layers": 2, "num_attention_heads": 2, "intermediate_size": 64,
    "max_position_embeddings": 64, "vocab_size": 50257, "num_labels": 2})";

StageAssignment TinyClassifierJob(const geotrain::testing::TempDir& dir, int stages, int replicas,
                                  const std::string& config_json = kTinyBert) {
  StageAssignment job = TinyJob(dir, stages, replicas, config_json);
  job.data.task = Task::kSequenceClassification;
  job.data.train = {{testing::SourcePath("examples/data/classification/sentiment/train.jsonl"), 1}};
  job.data.valid = {{testing::SourcePath("examples/data/classification/sentiment/valid.jsonl"), 1}};
  job.data.seq_length = 24;
  job.training.micro_batch_size = 8;
  job.training.micro_batches = 2;
  job.optimizer.lr = 2e-3;
  return job;
}

TEST(StageRuntimeClassification, TwoByTwoMatchesTheSingleProcessRun) {
  geotrain::testing::TempDir dir;
  const StageAssignment job = TinyClassifierJob(dir, 2, 2);
  const std::vector<double> reference = MeanLosses(Train(ReferenceOf(job), 3, false, false));
  const std::vector<double> split = MeanLosses(Train(job, 3, false, false));
  ASSERT_EQ(split.size(), 3u);
  for (size_t i = 0; i < split.size(); ++i) {
    EXPECT_NEAR(split[i], reference[i], 1e-4 * reference[i]) << "step " << i + 1;
  }
}

TEST(StageRuntimeClassification, FineTuneScoresAboveChanceWithCompression) {
  geotrain::testing::TempDir dir;
  StageAssignment job = TinyClassifierJob(dir, 2, 2);
  job.training.total_steps = 40;
  job.training.eval_every = 40;
  job.training.eval_batches = 4;  // 4 x 8 examples per replica: all 64 of each half
  job.compression.warmup_steps = 2;
  job.compression.forward = Codec(compression::CodecId::kDelta, 4);
  job.compression.backward = Codec(compression::CodecId::kFixpoint, 8);
  job.compression.data_parallel.mode = DataParallelMode::kCocktail;
  job.compression.data_parallel.codec.codec = compression::CodecId::kCocktail;
  std::mutex mu;
  std::optional<StepResult> last;
  RunRanks(job, /*tied_embeddings=*/false,
           [&](int, const StageAssignment& assignment, StageLinks links) {
             auto runtime = StageRuntime::Create(assignment, std::move(links));
             ASSERT_TRUE(runtime.ok()) << runtime.status().ToString();
             const Status status = (*runtime)->Run([&](const StepResult& result) {
               std::lock_guard<std::mutex> lock(mu);
               if (assignment.is_last_stage() && assignment.dp_rank == 0) last = result;
             });
             ASSERT_TRUE(status.ok()) << status.ToString();
           });
  ASSERT_TRUE(last && last->eval_metrics);
  const ClassificationMetrics& metrics = *last->eval_metrics;
  std::printf("  after 40 steps: eval loss %.4f, accuracy %.3f, F1 %.3f, MCC %.3f\n",
              *last->eval_loss, metrics.accuracy, metrics.f1, metrics.mcc);
  EXPECT_GT(metrics.accuracy, 0.75);
  EXPECT_GT(metrics.mcc, 0.5);
}

// DeBERTa-v3's relative embeddings are in every stage: with their gradients summed over the
// pipeline, 2 stages x 2 replicas still reproduce the single-process losses (the copies stay
// equal), and a fine-tune scores above chance.
constexpr char kTinyDebertaV3[] = R"({"model_type": "deberta-v2", "hidden_size": 32,
    "num_hidden_layers": 2, "num_attention_heads": 2, "intermediate_size": 64,
    "max_position_embeddings": 64, "vocab_size": 50257, "num_labels": 2, "type_vocab_size": 0,
    "relative_attention": true, "position_buckets": 8, "max_relative_positions": 16,
    "pos_att_type": ["p2c", "c2p"], "share_att_key": true, "norm_rel_ebd": "layer_norm",
    "position_biased_input": false})";

TEST(StageRuntimeClassification, DebertaPipelineSumsItsSharedRelativeEmbeddings) {
  geotrain::testing::TempDir dir;
  const StageAssignment job = TinyClassifierJob(dir, 2, 2, kTinyDebertaV3);
  // Every rank's gradients after the sync (a second step: the copies were updated once).
  const std::vector<RankOutcome> reference = Train(ReferenceOf(job), 2, true, false);
  const std::vector<RankOutcome> split = Train(job, 2, true, false);
  for (size_t rank = 0; rank < split.size(); ++rank) {
    EXPECT_NEAR(split[rank].grad_norm, reference[0].grad_norm, 1e-4 * reference[0].grad_norm);
    ASSERT_TRUE(split[rank].grads.count("deberta.encoder.rel_embeddings.weight")) << rank;
    for (const auto& [name, grad] : split[rank].grads) {
      // Relative to the tensor's own gradient: the relative embeddings' is about 1e-6 in all.
      const at::Tensor& want = reference[0].grads.at(name);
      EXPECT_LE((grad - want).norm().item<double>(), 1e-4 * want.norm().item<double>() + 1e-12)
          << "rank " << rank << " " << name;
    }
  }
}

TEST(StageRuntimeClassification, DebertaFineTuneScoresAboveChance) {
  geotrain::testing::TempDir dir;
  StageAssignment job = TinyClassifierJob(dir, 2, 2, kTinyDebertaV3);
  job.training.total_steps = 40;
  job.training.eval_every = 40;
  job.training.eval_batches = 4;
  std::mutex mu;
  std::optional<StepResult> last;
  RunRanks(job, /*tied_embeddings=*/false,
           [&](int, const StageAssignment& assignment, StageLinks links) {
             auto runtime = StageRuntime::Create(assignment, std::move(links));
             ASSERT_TRUE(runtime.ok()) << runtime.status().ToString();
             const Status status = (*runtime)->Run([&](const StepResult& result) {
               std::lock_guard<std::mutex> lock(mu);
               if (assignment.is_last_stage() && assignment.dp_rank == 0) last = result;
             });
             ASSERT_TRUE(status.ok()) << status.ToString();
           });
  ASSERT_TRUE(last && last->eval_metrics);
  std::printf("  deberta after 40 steps: eval loss %.4f, accuracy %.3f, F1 %.3f, MCC %.3f\n",
              *last->eval_loss, last->eval_metrics->accuracy, last->eval_metrics->f1,
              last->eval_metrics->mcc);
  EXPECT_GT(last->eval_metrics->accuracy, 0.75);
}

TEST(StageRuntimeClassification, ATaskThatDoesNotFitTheModelIsRefused) {
  geotrain::testing::TempDir dir;
  StageAssignment job = TinyClassifierJob(dir, 1, 1);
  job.data.task = Task::kCausalLm;
  std::vector<StageLinks> links = CreateFakeJobLinks(1, 1, false, false);
  auto runtime = StageRuntime::Create(job, std::move(links[0]));
  ASSERT_FALSE(runtime.ok());
  EXPECT_NE(runtime.status().message().find("data.task: causal_lm does not fit the bert model"),
            std::string::npos)
      << runtime.status().ToString();
}

}  // namespace
}  // namespace geotrain::runtime
