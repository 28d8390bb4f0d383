// The seed projects' flags -> SeedRunConfig. Each field flag is one entry in DefineFieldFlags: its
// names, its help, and what it sets. Sizes, rank and --config are read first (they decide the
// starting assignment); field flags are then applied in definition order, so --batch-size sees
// the final --micro-batch-size.
#include "runtime/seed_flags.h"

#include <CLI/CLI.hpp>
#include <charconv>
#include <functional>
#include <memory>
#include <utility>
#include <vector>

#include "common/io/host_port.h"
#include "runtime/job_spec.h"

namespace geotrain::runtime {
namespace {

namespace cz = compression;
using Apply = std::function<Status(SeedRunConfig*)>;

// Sets a field from an enum name; errors name the flag.
template <typename E>
Status SetEnum(const std::string& flag, const std::string& name,
               StatusOr<E> (*parse)(const std::string&), E* field) {
  StatusOr<E> parsed = parse(name);
  if (!parsed.ok()) return InvalidArgument(flag + ": " + parsed.status().message());
  *field = *parsed;
  return OkStatus();
}

// CLI11 reads "-1" into a uint64_t as 2^64 - 1; a seed is read here, digits only.
StatusOr<uint64_t> ParseSeed(const std::string& flag, const std::string& text) {
  uint64_t value = 0;
  const char* end = text.data() + text.size();
  const auto [stop, error] = std::from_chars(text.data(), end, value);
  if (text.empty() || error != std::errc() || stop != end) {
    return InvalidArgument(flag + ": \"" + text + "\" is not a non-negative integer below 2^64");
  }
  return value;
}

Status CheckDistUrl(const std::string& url) {
  if (url.rfind("tcp://", 0) == 0 &&
      io::SplitHostPort(url.substr(6), 1, nullptr) == io::HostPortProblem::kNone) {
    return OkStatus();
  }
  if (url.rfind("file://", 0) == 0 && url.size() > 7) return OkStatus();
  return InvalidArgument("--dist-url: \"" + url + "\" is neither tcp://host:port nor file:///path");
}

// StageAssignment names struct fields; the user wrote flags. A field inside a mapped block
// keeps the rest of its path ("--forward-compress-method: zstd_level: 30 is outside 0..19").
std::string WithFlagName(const FieldProblem& problem) {
  static const std::pair<const char*, const char*> kFlags[] = {
      {"model_dir", "--model-name"},
      {"device", "--cuda-id"},
      {"data.train", "--task-name"},
      {"data.seq_length", "--seq-length"},
      {"optimizer.lr", "--lr"},
      {"optimizer.weight_decay", "--weight-decay"},
      {"optimizer.lr_warmup_steps", "--lr-warmup-steps"},
      {"training.micro_batch_size", "--micro-batch-size"},
      {"training.total_steps", "--total-steps"},
      {"training.eval_every", "--eval-every"},
      {"training.checkpoint_every", "--checkpoint-steps"},
      {"training.checkpoint_dir", "--checkpoint-path"},
      {"training.timeout_seconds", "--timeout"},
      {"compression.warmup_steps", "--warmup-steps"},
      {"compression.warmup_epochs", "--warmup-epochs"},
      {"compression.autoencoder_dim", "--autoencoder-dim"},
      {"compression.data_parallel.powersgd_rank", "--powersgd-rank"},
      {"compression.forward.bits", "--forward-bits"},
      {"compression.forward.cache_bits", "--forward-bits-act"},
      {"compression.forward.max_cache_samples", "--max-activation-cache-size"},
      {"compression.forward.tile_size", "--tile-size"},
      {"compression.forward.high_bits", "--high-precision-bits"},
      {"compression.forward.low_bits", "--low-precision-bits"},
      {"compression.forward.high_ratio", "--high-precision-allocation-ratio"},
      {"compression.forward", "--forward-compress-method"},
      {"compression.backward.bits", "--backward-bits"},
      {"compression.backward.tile_size", "--backward-tile-size"},
      {"compression.backward.rank", "--backward-rank"},
      {"compression.backward", "--backward-compress-method"},
      {"compression.data_parallel.codec.bits", "--dp-bits"},
      {"compression.data_parallel.codec.quant_bits", "--dp-bits"},
      {"compression.data_parallel.codec", "--dp-mode"},
  };
  const std::string& field = problem.field;
  for (const auto& [name, flag] : kFlags) {
    const std::string block = name;
    if (field == block) return std::string(flag) + ": " + problem.reason;
    if (field.compare(0, block.size() + 1, block + ".") == 0) {
      return std::string(flag) + ": " + field.substr(block.size() + 1) + ": " + problem.reason;
    }
  }
  return problem.ToString();
}

class SeedFlags {
 public:
  SeedFlags() : app_("geotrain-run: train one rank of a job (the seed projects' flags)") {
    app_.set_help_flag();  // geotrain-run prints SeedFlagsHelp() itself
    // A flag given twice keeps its last value, so "$ARGS --lr 1e-5" overrides ARGS.
    app_.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
    DefineRankFlags();
    DefineFieldFlags();
  }

  std::string Help() const { return app_.help(); }

  StatusOr<SeedRunConfig> Parse(int argc, const char* const* argv) {
    try {
      app_.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
      return InvalidArgument(e.what());
    }
    SeedRunConfig config;
    GEOTRAIN_RETURN_IF_ERROR(ResolveRanks(&config));
    for (const auto& [option, apply] : field_flags_) {
      if (option->count() > 0) GEOTRAIN_RETURN_IF_ERROR(apply(&config));
    }
    if (config.n_epochs > 0 && app_.count("--total-steps") == 0) {
      config.assignment.training.epochs = config.n_epochs;
    }
    if (config.world_size > 1 && config.dist_url.empty()) {
      return InvalidArgument("--dist-url: required when --world-size is " +
                             std::to_string(config.world_size));
    }
    std::vector<std::string> problems;
    for (const FieldProblem& problem : config.assignment.Problems()) {
      problems.push_back(WithFlagName(problem));
    }
    GEOTRAIN_RETURN_IF_ERROR(ProblemListStatus(problems));
    return config;
  }

 private:
  void DefineRankFlags() {
    world_option_ = app_.add_option("--world-size", world_size_,
                                    "ranks in the job: pipeline x data group sizes");
    app_.add_option("--rank", rank_, "this rank: dp_rank * pipeline-group-size + stage");
    pipeline_option_ = app_.add_option("--pipeline-group-size", pipeline_size_,
                                       "pipeline stages (pipeline.stages)");
    data_option_ = app_.add_option("--data-group-size", data_size_,
                                   "replicas (data_parallel.replicas); default world / pipeline");
    config_option_ = app_.add_option("--config", config_path_,
                                     "job spec YAML; the other flags override its fields");
  }

  // One flag bound to a value of type T; `apply` runs after parsing when the flag was given.
  template <typename T>
  void Flag(const std::string& names, const std::string& help,
            std::function<Status(const T&, SeedRunConfig*)> apply) {
    auto value = std::make_shared<T>();
    CLI::Option* option = app_.add_option(names, *value, help);
    field_flags_.emplace_back(option,
                              [value, apply](SeedRunConfig* c) { return apply(*value, c); });
  }
  // A flag without a value.
  void Switch(const std::string& names, const std::string& help, Apply apply) {
    field_flags_.emplace_back(app_.add_flag(names, help), std::move(apply));
  }

  // A flag that only stores its value into the field `field` returns.
  template <typename T>
  void Set(const std::string& names, const std::string& help,
           std::function<T&(StageAssignment*)> field) {
    Flag<T>(names, help, [field](const T& v, SeedRunConfig* c) {
      field(&c->assignment) = v;
      return OkStatus();
    });
  }

  void DefineFieldFlags() {
    using A = StageAssignment*;
    using S = const std::string&;
    Flag<std::string>("--dist-url", "rendezvous: tcp://host:port (rank 0 listens) or file:///path",
                      [](S v, SeedRunConfig* c) {
                        c->dist_url = v;
                        return CheckDistUrl(v);
                      });
    Flag<std::string>("--bind-address", "interface address this rank listens on",
                      [](S v, SeedRunConfig* c) {
                        c->bind_address = v;
                        return OkStatus();
                      });
    Flag<std::string>("--config-changes",
                      "file of codec changes (one JSON line each: effective_step, forward_bits, "
                      "backward_bits, dp_bits, dp_topk_ratio, reason), polled before every step; "
                      "it need not exist yet",
                      [](S v, SeedRunConfig* c) {
                        if (v.empty()) return InvalidArgument("--config-changes: empty path");
                        c->config_changes_path = v;
                        return OkStatus();
                      });

    // Model and data.
    Set<std::string>("--model-name", "model directory (model.dir)",
                     [](A a) -> std::string& { return a->model_dir; });
    Flag<std::string>("--model-init-seed",
                      "initialise the weights from config.json with this seed when the model "
                      "directory holds none (model.init_seed)",
                      [](S v, SeedRunConfig* c) {
                        GEOTRAIN_ASSIGN_OR_RETURN(c->assignment.model_init_seed,
                                                  ParseSeed("--model-init-seed", v));
                        return OkStatus();
                      });
    Set<std::string>("--tokenizer-name", "tokenizer directory (data.tokenizer)",
                     [](A a) -> std::string& { return a->data.tokenizer_dir; });
    Flag<std::string>("--task-name", "training data: path[:weight],... (data.train)",
                      [](S v, SeedRunConfig* c) {
                        auto sources = ParseWeightedSourceList(v);
                        if (!sources.ok()) return sources.status().WithContext("--task-name");
                        c->assignment.data.train = std::move(sources).value();
                        return OkStatus();
                      });
    Set<int64_t>("--seq-length", "tokens per sample (data.seq_length)",
                 [](A a) -> int64_t& { return a->data.seq_length; });
    // The seed projects always ran on a GPU and picked it with --cuda-id; here it selects a CUDA
    // device for the stage (model.device cuda:N), which StageRuntime refuses where there is none.
    Flag<int>("--cuda-id", "compute on CUDA device N (model.device cuda:N)",
              [](int v, SeedRunConfig* c) {
                if (v < 0) {
                  return InvalidArgument("--cuda-id: " + std::to_string(v) + " is negative");
                }
                c->assignment.device = "cuda:" + std::to_string(v);
                return OkStatus();
              });

    // Compression of activations (forward) and of their gradients (backward).
    Flag<std::string>("--forward-compress-method", "none, fixpoint, delta, delta-lowbits, tah, ...",
                      [](S v, SeedRunConfig* c) {
                        return SetEnum("--forward-compress-method", v, cz::ParseCodecName,
                                       &c->assignment.compression.forward.codec);
                      });
    Set<int>("--forward-bits", "code bits of forward fixpoint/delta",
             [](A a) -> int& { return a->compression.forward.bits; });
    Set<int>("--forward-bits-act", "delta-lowbits: bits of the cached activations",
             [](A a) -> int& { return a->compression.forward.cache_bits; });
    Set<int64_t>("--max-activation-cache-size", "delta: most samples cached",
                 [](A a) -> int64_t& { return a->compression.forward.max_cache_samples; });
    Set<int>("--tile-size", "tah: tile size G",
             [](A a) -> int& { return a->compression.forward.tile_size; });
    Set<int>("--high-precision-bits", "tah: bits of high-precision units",
             [](A a) -> int& { return a->compression.forward.high_bits; });
    Set<int>("--low-precision-bits", "tah: bits of low-precision units",
             [](A a) -> int& { return a->compression.forward.low_bits; });
    Set<double>("--high-precision-allocation-ratio", "tah: share of high-precision units",
                [](A a) -> double& { return a->compression.forward.high_ratio; });
    Flag<std::string>("--backward-compress-method", "none, fixpoint, ...",
                      [](S v, SeedRunConfig* c) {
                        return SetEnum("--backward-compress-method", v, cz::ParseCodecName,
                                       &c->assignment.compression.backward.codec);
                      });
    Set<int>("--backward-bits", "code bits of backward fixpoint",
             [](A a) -> int& { return a->compression.backward.bits; });
    Flag<int>("--backward-tile-size", "backward: one scale per this many values (scale_mode tile)",
              [](int v, SeedRunConfig* c) {
                c->assignment.compression.backward.tile_size = v;
                c->assignment.compression.backward.scale_mode = cz::ScaleMode::kPerTile;
                return OkStatus();
              });
    Set<int>("--backward-rank", "backward powersgd: rank of the compressed gradient",
             [](A a) -> int& { return a->compression.backward.rank; });
    Switch("--compress-embedding-sync",
           "CocktailSGD: compress the tied embedding's first/last stage gradient sum too",
           [](SeedRunConfig* c) {
             c->assignment.compression.compress_embedding_sync = true;
             return OkStatus();
           });
    Switch("--epilogue-only", "Optimus-CC: compress only the backward sends of the drain phase",
           [](SeedRunConfig* c) {
             c->assignment.compression.backward_epilogue_only = true;
             return OkStatus();
           });
    Set<int>("--autoencoder-dim", "MCBench autoencoder width on every link (0: off)",
             [](A a) -> int& { return a->compression.autoencoder_dim; });
    Set<int64_t>("--warmup-steps", "uncompressed steps at the start (compression.warmup_steps)",
                 [](A a) -> int64_t& { return a->compression.warmup_steps; });
    Set<int64_t>("--warmup-epochs", "uncompressed epochs at the start",
                 [](A a) -> int64_t& { return a->compression.warmup_epochs; });

    // Data parallelism. --dp-mode comes before --dp-bits, and sets the codec the mode uses.
    Flag<std::string>(
        "--dp-mode", "allreduce, powersgd, cocktail_sgd, quantized-momentum",
        [](S v, SeedRunConfig* c) {
          DataParallelSettings& dp = c->assignment.compression.data_parallel;
          GEOTRAIN_RETURN_IF_ERROR(SetEnum("--dp-mode", v, ParseDataParallelMode, &dp.mode));
          if (dp.mode == DataParallelMode::kCocktail) {
            dp.codec.codec = cz::CodecId::kCocktail;
          } else if (dp.mode == DataParallelMode::kQuantizedMomentum) {
            dp.codec.codec = cz::CodecId::kFixpoint;
          }
          return OkStatus();
        });
    Flag<int>("--dp-bits", "cocktail value bits / quantized-momentum code bits",
              [](int v, SeedRunConfig* c) {
                c->assignment.compression.data_parallel.codec.quant_bits = v;
                c->assignment.compression.data_parallel.codec.bits = v;
                return OkStatus();
              });
    Set<int>("--powersgd-rank", "Optimus-CC PowerSGD rank",
             [](A a) -> int& { return a->compression.data_parallel.powersgd_rank; });
    Set<int>("--compressed-stages", "PowerSGD on stages < this (-1: all)",
             [](A a) -> int& { return a->compression.data_parallel.compressed_stages; });

    // Training. --micro-batch-size comes before --batch-size, which divides by it.
    Set<int64_t>("--micro-batch-size", "samples per micro-batch",
                 [](A a) -> int64_t& { return a->training.micro_batch_size; });
    Flag<int64_t>("--batch-size", "samples per replica per step (micro-batch-size x micro-batches)",
                  [](int64_t v, SeedRunConfig* c) {
                    TrainingSettings& t = c->assignment.training;
                    if (v <= 0 || t.micro_batch_size <= 0 || v % t.micro_batch_size != 0) {
                      return InvalidArgument("--batch-size: " + std::to_string(v) +
                                             " is not a positive multiple of --micro-batch-size " +
                                             std::to_string(t.micro_batch_size));
                    }
                    t.micro_batches = v / t.micro_batch_size;
                    return OkStatus();
                  });
    Set<double>("--lr", "peak learning rate", [](A a) -> double& { return a->optimizer.lr; });
    Flag<std::string>("--lr-decay", "learning rate after the warm-up: constant, linear, cosine",
                      [](S v, SeedRunConfig* c) {
                        return SetEnum("--lr-decay", v, ParseLrDecay,
                                       &c->assignment.optimizer.lr_decay);
                      });
    Set<double>("--timeout", "seconds any transport operation may take before the run fails",
                [](A a) -> double& { return a->training.timeout_seconds; });
    Set<double>("--weight-decay", "AdamW decoupled weight decay",
                [](A a) -> double& { return a->optimizer.weight_decay; });
    Set<int64_t>("--lr-warmup-steps", "learning-rate warm-up steps",
                 [](A a) -> int64_t& { return a->optimizer.lr_warmup_steps; });
    Flag<int64_t>("--n-epochs", "epochs to train when --total-steps is not given",
                  [](int64_t v, SeedRunConfig* c) {
                    if (v < 0)
                      return InvalidArgument("--n-epochs: " + std::to_string(v) + " is negative");
                    c->n_epochs = v;
                    return OkStatus();
                  });
    Set<int64_t>("--total-steps", "optimizer steps (training.steps)",
                 [](A a) -> int64_t& { return a->training.total_steps; });
    Flag<std::string>(
        "--schedule,--pp-mode", "pipeline schedule: gpipe or 1f1b", [](S v, SeedRunConfig* c) {
          return SetEnum("--schedule", v, ParseScheduleKind, &c->assignment.training.schedule);
        });
    Flag<std::string>("--seed", "data order, codec seeds, new weights", [](S v, SeedRunConfig* c) {
      GEOTRAIN_ASSIGN_OR_RETURN(c->assignment.training.seed, ParseSeed("--seed", v));
      return OkStatus();
    });
    Set<int64_t>("--eval-every", "steps between evaluations (0: never)",
                 [](A a) -> int64_t& { return a->training.eval_every; });
    Set<std::string>("--checkpoint-path", "checkpoint directory shared by all ranks",
                     [](A a) -> std::string& { return a->training.checkpoint_dir; });
    Set<int64_t>("--checkpoint-steps", "steps between checkpoints",
                 [](A a) -> int64_t& { return a->training.checkpoint_every; });
    Flag<std::string>("--profiling", "write a Chrome trace (tidy_profiling) or not (no-profiling)",
                      [](S v, SeedRunConfig* c) {
                        std::string& path = c->assignment.training.profile_path;
                        if (v == "no-profiling") {
                          path.clear();
                        } else if (v != "tidy_profiling") {
                          return InvalidArgument("--profiling: \"" + v +
                                                 "\" is neither tidy_profiling nor no-profiling");
                        } else if (path.empty()) {
                          path = "trace_json/rank-" + std::to_string(c->rank) + ".json";
                        }
                        return OkStatus();
                      });
    field_flags_.back().first->expected(0, 1)->default_str("tidy_profiling");
    Set<std::string>("--profile-file,--profile",
                     "Chrome trace path of this rank (implies --profiling)",
                     [](A a) -> std::string& { return a->training.profile_path; });
  }

  // Sizes, rank and --config: the starting assignment of this rank.
  Status ResolveRanks(SeedRunConfig* config) {
    JobSpec spec;
    spec.num_stages = pipeline_size_;
    spec.dp_size = data_size_;
    if (config_option_->count() > 0) {
      GEOTRAIN_ASSIGN_OR_RETURN(spec, LoadJobSpecFile(config_path_));
      config->job_yaml = config_path_;
      if (pipeline_option_->count() > 0 && pipeline_size_ != spec.num_stages) {
        return InvalidArgument("--pipeline-group-size: " + std::to_string(pipeline_size_) +
                               " differs from pipeline.stages " + std::to_string(spec.num_stages) +
                               " in " + config_path_);
      }
      if (data_option_->count() > 0 && data_size_ != spec.dp_size) {
        return InvalidArgument("--data-group-size: " + std::to_string(data_size_) +
                               " differs from data_parallel.replicas " +
                               std::to_string(spec.dp_size) + " in " + config_path_);
      }
    } else if (data_option_->count() == 0 && world_option_->count() > 0 && pipeline_size_ > 0) {
      spec.dp_size = world_size_ / pipeline_size_;
    }
    if (spec.num_stages < 1) {
      return InvalidArgument("--pipeline-group-size: " + std::to_string(spec.num_stages) +
                             " is not positive");
    }
    if (spec.dp_size < 1) {
      return InvalidArgument("--data-group-size: " + std::to_string(spec.dp_size) +
                             " is not positive");
    }
    const int world = spec.num_stages * spec.dp_size;
    if (world_option_->count() > 0 && world_size_ != world) {
      return InvalidArgument("--world-size: " + std::to_string(world_size_) +
                             " is not --pipeline-group-size " + std::to_string(spec.num_stages) +
                             " x --data-group-size " + std::to_string(spec.dp_size));
    }
    if (rank_ < 0 || rank_ >= world) {
      return InvalidArgument("--rank: " + std::to_string(rank_) + " is outside [0, " +
                             std::to_string(world) + ")");
    }
    config->world_size = world;
    config->rank = rank_;
    config->assignment = AssignmentFor(spec, rank_ % spec.num_stages, rank_ / spec.num_stages);
    return OkStatus();
  }

  CLI::App app_;
  int world_size_ = 1;
  int rank_ = 0;
  int pipeline_size_ = 1;
  int data_size_ = 1;
  std::string config_path_;
  CLI::Option* world_option_ = nullptr;
  CLI::Option* pipeline_option_ = nullptr;
  CLI::Option* data_option_ = nullptr;
  CLI::Option* config_option_ = nullptr;
  std::vector<std::pair<CLI::Option*, Apply>> field_flags_;
};

}  // namespace

StatusOr<SeedRunConfig> ParseSeedFlags(int argc, const char* const* argv) {
  return SeedFlags().Parse(argc, argv);
}

std::string SeedFlagsHelp() { return SeedFlags().Help(); }

}  // namespace geotrain::runtime
