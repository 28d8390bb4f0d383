// The job YAML <-> JobSpec. One description of the layout (BindJob, BindCodec) drives both the
// reader and the writer (yaml_binder.h), so a key cannot be parsed but not written, or written
// under another name. Reading logs every problem and goes on (JobFileLog), then the values read
// are checked (job_spec_problems.h), skipping the checks of values that failed to read, so one
// submission shows every mistake once.
#include "runtime/job_spec.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cstdio>
#include <string_view>
#include <utility>

#include "common/io/file_contents.h"
#include "common/utf8.h"
#include "runtime/job_file_log.h"
#include "runtime/job_spec_problems.h"
#include "runtime/yaml_binder.h"

namespace geotrain::runtime {
namespace {

namespace cz = compression;

constexpr size_t kMaxJobFileBytes = 1 << 20;

// The ranges of the numeric keys (docs/job-spec.md lists each). Wide enough for any real job,
// narrow enough that nothing downstream overflows or allocates absurdly: a job file arrives over
// the network, and a value that only fails on the workers fails every restart of the job.
constexpr Range kBits{2, 8};
constexpr Range kFraction{0, 1};
constexpr Range kPositiveFraction{0, 1, /*min_open=*/true};
constexpr double kMaxCount = 1e12;  // steps, samples
constexpr double kMaxStages = 1024;
constexpr double kMaxReplicas = 4096;

// The CodecConfig enums that compression/ offers no names for.
template <typename Enum, size_t N>
StatusOr<Enum> ParseFromTable(const std::string& name,
                              const std::pair<const char*, Enum> (&table)[N]) {
  std::string known;
  for (const auto& [spelling, value] : table) {
    if (name == spelling) return value;
    known += (known.empty() ? "" : ", ") + std::string(spelling);
  }
  return InvalidArgument("unknown value \"" + name + "\" (expected one of " + known + ")");
}
template <typename Enum, size_t N>
const char* NameFromTable(Enum value, const std::pair<const char*, Enum> (&table)[N]) {
  for (const auto& [spelling, candidate] : table) {
    if (candidate == value) return spelling;
  }
  return "unknown";
}
constexpr std::pair<const char*, cz::EntropyUnit> kEntropyUnits[] = {
    {"token", cz::EntropyUnit::kToken}, {"tile", cz::EntropyUnit::kTile}};
constexpr std::pair<const char*, cz::CacheFullPolicy> kCachePolicies[] = {
    {"evict-least-recent", cz::CacheFullPolicy::kEvictLeastRecent},
    {"error", cz::CacheFullPolicy::kError}};
constexpr std::pair<const char*, cz::MaskMode> kMaskModes[] = {{"rolling", cz::MaskMode::kRolling},
                                                               {"seeded", cz::MaskMode::kSeeded}};
StatusOr<cz::EntropyUnit> ParseEntropyUnit(const std::string& n) {
  return ParseFromTable(n, kEntropyUnits);
}
const char* EntropyUnitName(cz::EntropyUnit v) { return NameFromTable(v, kEntropyUnits); }
StatusOr<cz::CacheFullPolicy> ParseCachePolicy(const std::string& n) {
  return ParseFromTable(n, kCachePolicies);
}
const char* CachePolicyName(cz::CacheFullPolicy v) { return NameFromTable(v, kCachePolicies); }
StatusOr<cz::MaskMode> ParseMaskMode(const std::string& n) { return ParseFromTable(n, kMaskModes); }
const char* MaskModeName(cz::MaskMode v) { return NameFromTable(v, kMaskModes); }

// Every key of one codec block (compression.forward, compression.backward, data_parallel.codec).
template <typename Binder>
void BindCodec(Binder& b, cz::CodecConfig* c) {
  b.Enum("codec", &c->codec, cz::ParseCodecName, cz::CodecName);
  b.Enum("wire_dtype", &c->wire_dtype, cz::ParseDType, cz::DTypeName);
  b.Field("bits", &c->bits, kBits);
  b.Enum("scale_mode", &c->scale_mode, cz::ParseScaleMode, cz::ScaleModeName);
  b.Field("tile_size", &c->tile_size, Range{1, 1 << 20});
  b.Enum("rounding", &c->rounding, cz::ParseRounding, cz::RoundingName);
  b.Field("seed", &c->seed, kAnyUint64);
  b.Field("cache_bits", &c->cache_bits, kBits);
  b.Field("max_cache_samples", &c->max_cache_samples, Range{1, 1e8});
  b.Field("cache_dir", &c->cache_dir);
  b.Enum("cache_full_policy", &c->cache_full_policy, ParseCachePolicy, CachePolicyName);
  b.Field("high_bits", &c->high_bits, kBits);
  b.Field("low_bits", &c->low_bits, kBits);
  b.Field("high_ratio", &c->high_ratio, kFraction);
  b.Enum("entropy_unit", &c->entropy_unit, ParseEntropyUnit, EntropyUnitName);
  b.Field("outlier_threshold", &c->outlier_threshold, Range{1, 1e6});
  b.Field("density", &c->density, kFraction);
  b.Enum("value_dtype", &c->value_dtype, cz::ParseDType, cz::DTypeName);
  b.Field("rank", &c->rank, Range{1, 4096});
  b.Field("error_feedback", &c->error_feedback);
  b.Field("random_ratio", &c->random_ratio, kFraction);
  b.Field("topk_ratio", &c->topk_ratio, kFraction);
  b.Field("quant_bits", &c->quant_bits, kBits);
  b.Field("quant_group", &c->quant_group, Range{1, 1 << 20});
  b.Enum("mask_mode", &c->mask_mode, ParseMaskMode, MaskModeName);
  b.Field("zstd_level", &c->zstd_level, Range{0, 19});
  b.Field("threads", &c->threads, Range{1, 256});
}

// compression.adaptive's mapping form (its boolean form is `enabled` alone).
template <typename Binder>
void BindAdaptive(Binder& b, AdaptiveCompressionSettings* a) {
  b.Field("enabled", &a->enabled);
  b.Field("min_bits", &a->min_bits, kBits);
  b.Field("max_bits", &a->max_bits, kBits);
  b.Field("max_relative_error", &a->max_relative_error, Range{0, 100, true});
  b.Field("hide_fraction", &a->hide_fraction, kPositiveFraction);
  b.Field("raise_fraction", &a->raise_fraction, kPositiveFraction);
  b.Field("interval_steps", &a->interval_steps, Range{1, 1e6});
  b.Field("announce_steps", &a->announce_steps, Range{1, 1e6});
  b.Field("min_topk_ratio", &a->min_topk_ratio, kPositiveFraction);
}

// The whole file, in the order of docs/job-spec.md.
template <typename Binder>
void BindJob(Binder& b, JobSpec* spec) {
  StageAssignment& a = spec->base;
  b.Field("name", &spec->name);
  b.Section("model", [&](auto& s) {
    s.Field("dir", &a.model_dir);
    s.Field("init_seed", &a.model_init_seed, kAnyUint64);
    s.Field("dtype", &a.dtype);
    s.Field("device", &a.device);
    s.Enum("autocast", &a.autocast, ParseAutocast, AutocastName);
    s.Field("layers", &spec->stage_layers, Range{0, 1e6});
  });
  b.Section("data", [&](auto& s) {
    s.Enum("task", &a.data.task, ParseTask, TaskName);
    s.Field("train", &a.data.train);
    s.Field("valid", &a.data.valid);
    s.Field("tokenizer", &a.data.tokenizer_dir);
    s.Field("cache_dir", &a.data.cache_dir);
    s.Field("seq_length", &a.data.seq_length, Range{1, 1 << 20});
    s.Field("samples_per_epoch", &a.data.samples_per_epoch, Range{0, kMaxCount});
    s.Field("stable_shards", &a.data.stable_shards);
    s.Field("text_field", &a.data.text_field);
    s.Field("pair_field", &a.data.pair_field);
    s.Field("label_field", &a.data.label_field);
    s.Field("labels", &a.data.labels);
  });
  b.Section("pipeline", [&](auto& s) {
    s.Field("stages", &spec->num_stages, Range{1, kMaxStages});
    s.Enum("schedule", &a.training.schedule, ParseScheduleKind, ScheduleKindName);
    s.Field("micro_batch_size", &a.training.micro_batch_size, Range{1, 1 << 16});
    s.Field("micro_batches", &a.training.micro_batches, Range{1, 1 << 16});
  });
  DataParallelSettings& dp = a.compression.data_parallel;
  b.Section("data_parallel", [&](auto& s) {
    s.Field("replicas", &spec->dp_size, Range{1, kMaxReplicas});
    s.Enum("mode", &dp.mode, ParseDataParallelMode, DataParallelModeName);
    s.Field("powersgd_rank", &dp.powersgd_rank, Range{1, 4096});
    s.Field("compressed_stages", &dp.compressed_stages, Range{-1, kMaxStages});
    s.Field("overlap", &dp.overlap);
    s.Section("codec", [&](auto& c) { BindCodec(c, &dp.codec); });
  });
  CompressionSettings& cs = a.compression;
  b.Section("compression", [&](auto& s) {
    s.Section("forward", [&](auto& c) { BindCodec(c, &cs.forward); });
    s.Section("backward", [&](auto& c) { BindCodec(c, &cs.backward); });
    s.Field("backward_epilogue_only", &cs.backward_epilogue_only);
    s.Field("autoencoder_dim", &cs.autoencoder_dim, Range{0, 1 << 16});
    s.Field("warmup_steps", &cs.warmup_steps, Range{0, kMaxCount});
    s.Field("warmup_epochs", &cs.warmup_epochs, Range{0, 1e6});
    s.Field("fused_embedding_sync", &cs.fused_embedding_sync);
    s.Field("compress_embedding_sync", &cs.compress_embedding_sync);
    s.SwitchSection("adaptive", &cs.adaptive.enabled,
                    [&](auto& m) { BindAdaptive(m, &cs.adaptive); });
  });
  OptimizerSettings& o = a.optimizer;
  b.Section("optimizer", [&](auto& s) {
    s.Field("lr", &o.lr, Range{0, 100});
    s.Field("min_lr", &o.min_lr, Range{0, 100});
    s.Field("warmup_steps", &o.lr_warmup_steps, Range{0, kMaxCount});
    s.Enum("decay", &o.lr_decay, ParseLrDecay, LrDecayName);
    s.Field("weight_decay", &o.weight_decay, Range{0, 100});
    s.Field("beta1", &o.beta1, Range{0, 1, false, true});
    s.Field("beta2", &o.beta2, Range{0, 1, false, true});
    s.Field("eps", &o.eps, Range{0, 1, true});
    s.Field("max_grad_norm", &o.max_grad_norm, Range{0, 1e12});
  });
  TrainingSettings& t = a.training;
  b.Section("training", [&](auto& s) {
    s.Field("steps", &t.total_steps, Range{1, kMaxCount});
    s.Field("epochs", &t.epochs, Range{0, 1e6});
    s.Field("seed", &t.seed, kAnyUint64);
    s.Field("eval_every", &t.eval_every, Range{0, kMaxCount});
    s.Field("eval_batches", &t.eval_batches, Range{1, 1e6});
    s.Field("checkpoint_every", &t.checkpoint_every, Range{0, kMaxCount});
    s.Field("keep_checkpoints", &t.keep_checkpoints, Range{1, 10000});
    s.Field("checkpoint_dir", &t.checkpoint_dir);
    s.Field("resume", &t.resume);
    s.Field("profile", &t.profile_path);
    s.Field("timeout_seconds", &t.timeout_seconds, Range{0, 86400, true});
    s.Field("max_restarts", &spec->max_restarts, Range{0, 1000});
  });
}

// YAML streams are Unicode. yaml-cpp reads bytes that are not UTF-8 without complaint but writes
// each as U+FFFD, so such a spec would not survive JobSpecToYaml (a name would change, and grow
// past its limit); it is refused here, where the line can still be named.
Status CheckUtf8(std::string_view text) {
  const std::string invalid = DescribeInvalidUtf8(text);
  if (invalid.empty()) return OkStatus();
  return InvalidArgument("job spec: " + invalid + " (a job spec is a UTF-8 text file)");
}

}  // namespace

StatusOr<JobSpec> ParseJobSpec(const std::string& yaml_text) {
  GEOTRAIN_RETURN_IF_ERROR(CheckUtf8(yaml_text));
  YAML::Node root;
  try {
    root = YAML::Load(yaml_text);
  } catch (const YAML::Exception& e) {
    return InvalidArgument(std::string("job spec: ") + e.what());
  }
  if (!root.IsMap()) return InvalidArgument("job spec: expected a mapping of sections");

  JobSpec spec;
  JobFileLog log;
  try {
    YamlReader reader(root, "", &log);
    BindJob(reader, &spec);
    reader.Finish();
  } catch (const YAML::Exception& e) {
    return InvalidArgument(std::string("job spec: ") + e.what());
  }

  // A value that failed to parse kept its default, so checks of it (or of anything compared with
  // it) would report consequences, not mistakes; so would a second check of a field already
  // reported (replicas 0, then the replica index outside [0, 0)).
  std::vector<std::string> problems = log.Problems();
  std::vector<std::string> reported;
  const auto blocked = [&](const std::string& path) {
    if (log.Failed(path)) return true;
    return std::any_of(reported.begin(), reported.end(),
                       [&](const std::string& done) { return Related(path, done); });
  };
  for (const FieldProblem& problem : JobProblems(spec)) {
    if (blocked(problem.field) ||
        std::any_of(problem.also_reads.begin(), problem.also_reads.end(), blocked)) {
      continue;
    }
    problems.push_back(problem.ToString() + log.LineSuffix(problem.field));
    reported.push_back(problem.field);
  }
  GEOTRAIN_RETURN_IF_ERROR(ProblemListStatus(problems));
  spec.base = AssignmentFor(spec, 0, 0);
  return spec;
}

StatusOr<JobSpec> LoadJobSpecFile(const std::string& path) {
  GEOTRAIN_ASSIGN_OR_RETURN(std::string text, io::ReadFileContents(path, kMaxJobFileBytes));
  StatusOr<JobSpec> spec = ParseJobSpec(text);
  if (!spec.ok()) return spec.status().WithContext(path);
  return spec;
}

std::string JobSpecToYaml(const JobSpec& spec) {
  JobSpec copy = spec;
  YAML::Emitter out;
  out << YAML::BeginMap;
  YamlWriter writer(&out);
  BindJob(writer, &copy);
  out << YAML::EndMap;
  return std::string(out.c_str()) + "\n";
}

StageAssignment AssignmentFor(const JobSpec& spec, int stage, int dp_rank) {
  StageAssignment assignment = spec.base;
  assignment.num_stages = spec.num_stages;
  assignment.dp_size = spec.dp_size;
  assignment.stage = stage;
  assignment.dp_rank = dp_rank;
  if (stage >= 0 && stage < static_cast<int>(spec.stage_layers.size())) {
    assignment.first_layer = spec.stage_layers[stage].first;
    assignment.last_layer = spec.stage_layers[stage].second;
  }
  return assignment;
}

}  // namespace geotrain::runtime
