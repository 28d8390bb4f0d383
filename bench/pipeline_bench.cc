#include "bench/pipeline_bench.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <fstream>
#include <iostream>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <thread>
#include <vector>

#include "bench/scratch_dir.h"
#include "common/io/file_contents.h"
#include "models/init_random_model.h"
#include "models/model_config.h"
#include "runtime/stage_runtime.h"

namespace geotrain::bench {
namespace {

using runtime::DataParallelMode;
using runtime::StageAssignment;
using runtime::StepResult;

constexpr int kStages = 2;
constexpr int kReplicas = 2;

std::string Source(const std::string& relative) {
  return std::string(GEOTRAIN_SOURCE_DIR) + "/" + relative;
}

struct Setting {
  std::string name;
  StageAssignment job;
  // Seals every frame (net/frame_sealer.h) with this key; empty: in the clear.
  std::string frame_key;
  // The setting this one repeats in the clear, to compare step times with.
  std::string clear_twin;
};

compression::CodecConfig Codec(compression::CodecId id, int bits) {
  compression::CodecConfig config;
  config.codec = id;
  config.bits = bits;
  return config;
}

// The settings the issue names, plus one per remaining method family.
std::vector<Setting> Settings(const StageAssignment& base) {
  using compression::CodecId;
  std::vector<Setting> settings;
  settings.push_back({"none", base});
  // The cost of frame encryption: the baseline again with every frame sealed (AES-256-GCM). The
  // uncompressed job moves the most bytes, so this is sealing's largest share of a step.
  settings.push_back({"none-sealed", base, std::string(32, '\x2a'), "none"});

  StageAssignment compressed = base;
  compressed.compression.warmup_epochs = 1;  // AC-SGD's default: the first epoch uncompressed
  compressed.compression.data_parallel.mode = DataParallelMode::kCocktail;
  compressed.compression.data_parallel.codec.codec = CodecId::kCocktail;
  compressed.compression.data_parallel.codec.seed = base.training.seed;

  Setting delta{"delta4-fix8-cocktail", compressed};
  delta.job.compression.forward = Codec(CodecId::kDelta, 4);
  delta.job.compression.backward = Codec(CodecId::kFixpoint, 8);
  delta.job.compression.backward.zstd_level = 1;
  settings.push_back(delta);

  Setting tah{"tah-fix6", compressed};
  tah.job.compression.forward = Codec(CodecId::kTah, 4);
  tah.job.compression.backward = Codec(CodecId::kFixpoint, 6);
  tah.job.compression.backward.zstd_level = 1;
  settings.push_back(tah);

  // Optimus-CC: compressed backpropagation with lazy error propagation, PowerSGD on the first
  // stage's data-parallel gradients (selective stage compression).
  Setting optimus{"fix8-powersgd-cb-psgd1", base};
  optimus.job.compression.warmup_steps = base.training.total_steps / 10;
  optimus.job.compression.forward = Codec(CodecId::kFixpoint, 8);
  optimus.job.compression.backward = Codec(CodecId::kPowerSgd, 8);
  optimus.job.compression.backward.rank = 16;
  optimus.job.compression.data_parallel.mode = DataParallelMode::kPowerSgd;
  optimus.job.compression.data_parallel.powersgd_rank = 16;
  optimus.job.compression.data_parallel.compressed_stages = 1;
  settings.push_back(optimus);

  // MCBench: a learned autoencoder on the pipeline link, its code quantized to 8 bits.
  Setting autoencoder{"ae32-fix8-qmomentum", base};
  autoencoder.job.compression.warmup_steps = base.training.total_steps / 10;
  autoencoder.job.compression.autoencoder_dim = 32;
  autoencoder.job.compression.forward = Codec(CodecId::kFixpoint, 8);
  autoencoder.job.compression.backward = Codec(CodecId::kFixpoint, 8);
  autoencoder.job.compression.data_parallel.mode = DataParallelMode::kQuantizedMomentum;
  autoencoder.job.compression.data_parallel.codec = Codec(CodecId::kFixpoint, 8);
  autoencoder.job.compression.data_parallel.codec.scale_mode = compression::ScaleMode::kPerTile;
  autoencoder.job.compression.data_parallel.codec.tile_size = 512;
  settings.push_back(autoencoder);
  return settings;
}

struct RankRun {
  std::vector<StepResult> steps;
  double eval_loss = 0;
  bool last_stage = false;
  Status status;
};

// Trains `job` on every rank in its own thread; fails with the first rank's error.
StatusOr<std::vector<RankRun>> Train(const StageAssignment& job, const std::string& frame_key) {
  std::vector<runtime::StageLinks> links = runtime::CreateFakeJobLinks(
      kStages, kReplicas, true, runtime::UsesFusedEmbeddingGroup(job), frame_key);
  std::vector<RankRun> runs(static_cast<size_t>(kStages * kReplicas));
  std::vector<std::thread> threads;
  for (int r = 0; r < kReplicas; ++r) {
    for (int s = 0; s < kStages; ++s) {
      const int rank = r * kStages + s;
      threads.emplace_back([&, rank, r, s] {
        StageAssignment assignment = job;
        assignment.stage = s;
        assignment.dp_rank = r;
        RankRun& run = runs[rank];
        run.last_stage = assignment.is_last_stage();
        auto created = runtime::StageRuntime::Create(assignment, std::move(links[rank]));
        if (!created.ok()) {
          run.status = created.status();
          return;
        }
        runtime::StageRuntime& stage = **created;
        for (int64_t i = 0; i < job.training.total_steps; ++i) {
          auto step = stage.Step();
          if (!step.ok()) {
            run.status = step.status();
            return;
          }
          run.steps.push_back(*step);
        }
        auto eval = stage.Evaluate();
        if (!eval.ok()) {
          run.status = eval.status();
          return;
        }
        run.eval_loss = *eval;
      });
    }
  }
  for (std::thread& t : threads) t.join();
  for (size_t rank = 0; rank < runs.size(); ++rank) {
    if (!runs[rank].status.ok()) {
      return runs[rank].status.WithContext("rank " + std::to_string(rank));
    }
  }
  return runs;
}

struct Summary {
  nlohmann::json line;
  double final_loss = 0;
  double forward_wire = 0, backward_wire = 0, dp_wire = 0, embedding_wire = 0;
  double forward_raw = 0, backward_raw = 0, dp_raw = 0, embedding_raw = 0;
};

// Per-step figures: bytes summed over ranks (the job's traffic), times averaged over ranks, the
// step time of the slowest rank. Bytes are averaged over the steady state (steady_from onwards).
// "dp" is the data-parallel sync of every parameter, "embedding" the tied embedding's first <->
// last stage gradient sum (every setting runs them separately, without the fused sync, so that
// the two stay comparable across settings).
Summary Summarise(const Setting& setting, const std::vector<RankRun>& runs, int64_t steady_from) {
  const size_t steps = runs.front().steps.size();
  Summary s;
  double step_seconds = 0, compute = 0, codec = 0, comm = 0, all_wire = 0;
  size_t steady = 0;
  for (size_t i = 0; i < steps; ++i) {
    double slowest = 0;
    for (const RankRun& run : runs) {
      const StepResult& r = run.steps[i];
      slowest = std::max(slowest, r.step_seconds);
      compute += r.compute_seconds / runs.size();
      codec += r.codec_seconds / runs.size();
      comm += r.comm_seconds / runs.size();
      all_wire +=
          r.wire_bytes.forward + r.wire_bytes.backward + r.wire_bytes.dp + r.wire_bytes.embedding;
      if (static_cast<int64_t>(i) >= steady_from) {
        s.forward_raw += r.raw_bytes.forward;
        s.backward_raw += r.raw_bytes.backward;
        s.dp_raw += r.raw_bytes.dp;
        s.forward_wire += r.wire_bytes.forward;
        s.backward_wire += r.wire_bytes.backward;
        s.dp_wire += r.wire_bytes.dp;
        s.embedding_raw += r.raw_bytes.embedding;
        s.embedding_wire += r.wire_bytes.embedding;
      }
    }
    if (static_cast<int64_t>(i) >= steady_from) ++steady;
    step_seconds += slowest;
  }
  for (double* v : {&s.forward_raw, &s.backward_raw, &s.dp_raw, &s.embedding_raw, &s.forward_wire,
                    &s.backward_wire, &s.dp_wire, &s.embedding_wire}) {
    *v /= std::max<size_t>(steady, 1);
  }
  double eval = 0, train_tail = 0;
  int replicas = 0;
  for (const RankRun& run : runs) {
    if (!run.last_stage) continue;
    ++replicas;
    eval += run.eval_loss;
    const size_t tail = std::min<size_t>(10, run.steps.size());
    for (size_t i = run.steps.size() - tail; i < run.steps.size(); ++i) {
      train_tail += run.steps[i].loss / tail;
    }
  }
  s.final_loss = eval / replicas;
  const auto& compression = setting.job.compression;
  s.line = {
      {"bench", "pipeline"},
      {"setting", setting.name},
      {"sealed", !setting.frame_key.empty()},
      {"forward", compression.forward.Describe()},
      {"backward", compression.backward.Describe()},
      {"dp_mode", runtime::DataParallelModeName(compression.data_parallel.mode)},
      {"stages", kStages},
      {"replicas", kReplicas},
      {"steps", steps},
      {"steady_state_from_step", steady_from},
      {"step_seconds", step_seconds / steps},
      {"compute_seconds", compute / steps},
      {"codec_seconds", codec / steps},
      {"comm_seconds", comm / steps},
      {"raw_bytes",
       {{"forward", s.forward_raw},
        {"backward", s.backward_raw},
        {"dp", s.dp_raw},
        {"embedding", s.embedding_raw}}},
      {"wire_bytes",
       {{"forward", s.forward_wire},
        {"backward", s.backward_wire},
        {"dp", s.dp_wire},
        {"embedding", s.embedding_wire}}},
      {"wire_bytes_all_steps", all_wire / steps},
      {"final_loss", s.final_loss},
      {"final_train_loss", train_tail / replicas},
  };
  return s;
}

double Ratio(double a, double b) { return b > 0 ? a / b : 0; }

}  // namespace

int RunPipelineBench(const PipelineBenchOptions& options) {
  at::set_num_threads(1);  // one thread per rank; the ranks share the machine's cores
  ScratchDir scratch;
  auto config = models::LoadModelConfig(Source("examples/models/gpt2-tiny"));
  Status status = config.ok() ? models::InitRandomModel(*config, scratch.path() + "/model", 1234)
                              : config.status();
  if (!status.ok()) {
    std::cerr << "geotrain-bench pipeline: " << status.ToString() << "\n";
    return 1;
  }

  // A fine-tuning-sized corpus (the head of the bundled one) that the run visits for several
  // epochs, so that the delta codec sees each sample again.
  const size_t corpus_bytes = options.quick ? 16 << 10 : 128 << 10;
  auto corpus = io::ReadFileContents(Source("examples/data/shakespeare/train.txt"), 64 << 20);
  if (!corpus.ok()) {
    std::cerr << "geotrain-bench pipeline: " << corpus.status().ToString() << "\n";
    return 1;
  }
  const std::string train_path = scratch.path() + "/train.txt";
  std::ofstream(train_path) << corpus->substr(0, corpus_bytes);

  StageAssignment base;
  base.model_dir = scratch.path() + "/model";
  base.num_stages = kStages;
  base.dp_size = kReplicas;
  base.data.train = {{train_path, 1.0}};
  base.data.valid = {{Source("examples/data/shakespeare/valid.txt"), 1.0}};
  base.data.tokenizer_dir = Source("examples/tokenizers/gpt2");
  base.data.cache_dir = scratch.path() + "/token-cache";
  base.data.seq_length = options.quick ? 64 : 128;
  base.training.micro_batch_size = 2;
  base.training.micro_batches = 2;
  base.training.total_steps = options.steps > 0 ? options.steps : options.quick ? 24 : 150;
  base.training.eval_batches = options.quick ? 2 : 16;
  base.training.seed = 1234;
  base.optimizer.lr = 1e-3;
  base.optimizer.lr_warmup_steps = base.training.total_steps / 10;
  base.optimizer.lr_decay = runtime::LrDecay::kCosine;
  base.optimizer.min_lr = 1e-4;
  // Optimus-CC's fused sync merges the embedding's data-parallel all-reduce into the
  // first <-> last one; kept apart here so that "dp" and "embedding" mean the same in every
  // setting (the fused sync saves round trips, not bytes).
  base.compression.fused_embedding_sync = false;

  // Tokenize once, so that the ranks of every setting read the token cache.
  auto data = runtime::TrainingData::Open(base);
  if (!data.ok()) {
    std::cerr << "geotrain-bench pipeline: " << data.status().ToString() << "\n";
    return 1;
  }
  const int64_t steps_per_epoch =
      static_cast<int64_t>((*data)->batches_per_epoch()) / base.training.micro_batches;

  std::optional<Summary> baseline;
  std::map<std::string, double> step_seconds;  // by setting, for the sealed twins' ratio
  for (const Setting& setting : Settings(base)) {
    if (!options.filter.empty() && setting.name != "none" &&
        setting.name.find(options.filter) == std::string::npos) {
      continue;
    }
    auto runs = Train(setting.job, setting.frame_key);
    if (!runs.ok()) {
      std::cerr << "geotrain-bench pipeline: " << setting.name << ": " << runs.status().ToString()
                << "\n";
      return 1;
    }
    const auto& compression = setting.job.compression;
    const int64_t warmup =
        std::max(compression.warmup_steps, compression.warmup_epochs * steps_per_epoch);
    // A delta link sends a sample in full on its first visit, so its steady state starts one
    // epoch after the warm-up (stable shards bring every sample back to the same replica).
    const bool delta = compression.forward.codec == compression::CodecId::kDelta;
    const int64_t steady_from = std::min<int64_t>(warmup + (delta ? steps_per_epoch : 0),
                                                  setting.job.training.total_steps - 1);
    Summary summary = Summarise(setting, *runs, steady_from);
    if (!baseline) baseline = summary;
    step_seconds[setting.name] = summary.line["step_seconds"].get<double>();
    if (auto twin = step_seconds.find(setting.clear_twin); twin != step_seconds.end()) {
      summary.line["clear_step_seconds"] = twin->second;
      summary.line["step_seconds_vs_clear"] = Ratio(step_seconds[setting.name], twin->second);
    }
    summary.line["loss_ratio_vs_none"] = Ratio(summary.final_loss, baseline->final_loss);
    summary.line["wire_reduction_vs_none"] = {
        {"forward", Ratio(baseline->forward_wire, summary.forward_wire)},
        {"backward", Ratio(baseline->backward_wire, summary.backward_wire)},
        {"dp", Ratio(baseline->dp_wire, summary.dp_wire)},
        {"embedding", Ratio(baseline->embedding_wire, summary.embedding_wire)},
        {"pipeline", Ratio(baseline->forward_wire + baseline->backward_wire,
                           summary.forward_wire + summary.backward_wire)}};
    std::cout << summary.line.dump() << std::endl;
  }
  return 0;
}

}  // namespace geotrain::bench
