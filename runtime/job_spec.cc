// The job YAML <-> JobSpec. One description of the layout (BindJob, BindCodec) drives both the
// reader and the writer, so a key cannot be parsed but not written, or written under another name.
// Reading logs every problem and goes on (JobFileLog), then the values read are checked
// (StageAssignment::Problems plus the job-level checks), skipping the checks of values that
// failed to read, so one submission shows every mistake once.
#include "runtime/job_spec.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <optional>
#include <set>

#include "models/file_contents.h"
#include "models/tokenizer/utf8.h"

namespace geotrain::runtime {
namespace {

namespace cz = compression;
using models::data::WeightedSource;
using LayerRanges = std::vector<std::pair<int64_t, int64_t>>;

constexpr size_t kMaxJobFileBytes = 1 << 20;
// Limits on what a job may ask for. Specs arrive over the network (SubmitJob), and the
// coordinator sizes per-rank tables by stages x replicas, so absurd values are refused here
// rather than allocated. Far beyond any real job: the largest pipelines have ~100 stages.
constexpr int kMaxStages = 1024;
constexpr int kMaxReplicas = 4096;
constexpr int64_t kMaxRanks = 65536;
// The name appears in logs, events and metric labels.
constexpr size_t kMaxJobNameBytes = 256;

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
  b.Field("bits", &c->bits);
  b.Enum("scale_mode", &c->scale_mode, cz::ParseScaleMode, cz::ScaleModeName);
  b.Field("tile_size", &c->tile_size);
  b.Enum("rounding", &c->rounding, cz::ParseRounding, cz::RoundingName);
  b.Field("seed", &c->seed);
  b.Field("cache_bits", &c->cache_bits);
  b.Field("max_cache_samples", &c->max_cache_samples);
  b.Field("cache_dir", &c->cache_dir);
  b.Enum("cache_full_policy", &c->cache_full_policy, ParseCachePolicy, CachePolicyName);
  b.Field("high_bits", &c->high_bits);
  b.Field("low_bits", &c->low_bits);
  b.Field("high_ratio", &c->high_ratio);
  b.Enum("entropy_unit", &c->entropy_unit, ParseEntropyUnit, EntropyUnitName);
  b.Field("outlier_threshold", &c->outlier_threshold);
  b.Field("density", &c->density);
  b.Enum("value_dtype", &c->value_dtype, cz::ParseDType, cz::DTypeName);
  b.Field("rank", &c->rank);
  b.Field("error_feedback", &c->error_feedback);
  b.Field("random_ratio", &c->random_ratio);
  b.Field("topk_ratio", &c->topk_ratio);
  b.Field("quant_bits", &c->quant_bits);
  b.Field("quant_group", &c->quant_group);
  b.Enum("mask_mode", &c->mask_mode, ParseMaskMode, MaskModeName);
  b.Field("zstd_level", &c->zstd_level);
  b.Field("threads", &c->threads);
}

// compression.adaptive's mapping form (its boolean form is `enabled` alone).
template <typename Binder>
void BindAdaptive(Binder& b, AdaptiveCompressionSettings* a) {
  b.Field("enabled", &a->enabled);
  b.Field("min_bits", &a->min_bits);
  b.Field("max_bits", &a->max_bits);
  b.Field("max_relative_error", &a->max_relative_error);
  b.Field("hide_fraction", &a->hide_fraction);
  b.Field("raise_fraction", &a->raise_fraction);
  b.Field("interval_steps", &a->interval_steps);
  b.Field("announce_steps", &a->announce_steps);
  b.Field("min_topk_ratio", &a->min_topk_ratio);
}

// The whole file, in the order of docs/job-spec.md.
template <typename Binder>
void BindJob(Binder& b, JobSpec* spec) {
  StageAssignment& a = spec->base;
  b.Field("name", &spec->name);
  b.Section("model", [&](auto& s) {
    s.Field("dir", &a.model_dir);
    s.Field("init_seed", &a.model_init_seed);
    s.Field("dtype", &a.dtype);
    s.Field("device", &a.device);
    s.Enum("autocast", &a.autocast, ParseAutocast, AutocastName);
    s.Field("layers", &spec->stage_layers);
  });
  b.Section("data", [&](auto& s) {
    s.Enum("task", &a.data.task, ParseTask, TaskName);
    s.Field("train", &a.data.train);
    s.Field("valid", &a.data.valid);
    s.Field("tokenizer", &a.data.tokenizer_dir);
    s.Field("cache_dir", &a.data.cache_dir);
    s.Field("seq_length", &a.data.seq_length);
    s.Field("samples_per_epoch", &a.data.samples_per_epoch);
    s.Field("stable_shards", &a.data.stable_shards);
    s.Field("text_field", &a.data.text_field);
    s.Field("pair_field", &a.data.pair_field);
    s.Field("label_field", &a.data.label_field);
    s.Field("labels", &a.data.labels);
  });
  b.Section("pipeline", [&](auto& s) {
    s.Field("stages", &spec->num_stages);
    s.Enum("schedule", &a.training.schedule, ParseScheduleKind, ScheduleKindName);
    s.Field("micro_batch_size", &a.training.micro_batch_size);
    s.Field("micro_batches", &a.training.micro_batches);
  });
  DataParallelSettings& dp = a.compression.data_parallel;
  b.Section("data_parallel", [&](auto& s) {
    s.Field("replicas", &spec->dp_size);
    s.Enum("mode", &dp.mode, ParseDataParallelMode, DataParallelModeName);
    s.Field("powersgd_rank", &dp.powersgd_rank);
    s.Field("compressed_stages", &dp.compressed_stages);
    s.Field("overlap", &dp.overlap);
    s.Section("codec", [&](auto& c) { BindCodec(c, &dp.codec); });
  });
  CompressionSettings& cs = a.compression;
  b.Section("compression", [&](auto& s) {
    s.Section("forward", [&](auto& c) { BindCodec(c, &cs.forward); });
    s.Section("backward", [&](auto& c) { BindCodec(c, &cs.backward); });
    s.Field("backward_epilogue_only", &cs.backward_epilogue_only);
    s.Field("autoencoder_dim", &cs.autoencoder_dim);
    s.Field("warmup_steps", &cs.warmup_steps);
    s.Field("warmup_epochs", &cs.warmup_epochs);
    s.Field("fused_embedding_sync", &cs.fused_embedding_sync);
    s.Field("compress_embedding_sync", &cs.compress_embedding_sync);
    s.SwitchSection("adaptive", &cs.adaptive.enabled,
                    [&](auto& m) { BindAdaptive(m, &cs.adaptive); });
  });
  OptimizerSettings& o = a.optimizer;
  b.Section("optimizer", [&](auto& s) {
    s.Field("lr", &o.lr);
    s.Field("min_lr", &o.min_lr);
    s.Field("warmup_steps", &o.lr_warmup_steps);
    s.Enum("decay", &o.lr_decay, ParseLrDecay, LrDecayName);
    s.Field("weight_decay", &o.weight_decay);
    s.Field("beta1", &o.beta1);
    s.Field("beta2", &o.beta2);
    s.Field("eps", &o.eps);
    s.Field("max_grad_norm", &o.max_grad_norm);
  });
  TrainingSettings& t = a.training;
  b.Section("training", [&](auto& s) {
    s.Field("steps", &t.total_steps);
    s.Field("epochs", &t.epochs);
    s.Field("seed", &t.seed);
    s.Field("eval_every", &t.eval_every);
    s.Field("eval_batches", &t.eval_batches);
    s.Field("checkpoint_every", &t.checkpoint_every);
    s.Field("keep_checkpoints", &t.keep_checkpoints);
    s.Field("checkpoint_dir", &t.checkpoint_dir);
    s.Field("resume", &t.resume);
    s.Field("profile", &t.profile_path);
    s.Field("timeout_seconds", &t.timeout_seconds);
    s.Field("max_restarts", &spec->max_restarts);
  });
}

// Whole-string number parsing: no leading space, no trailing text, no overflow.
bool ParseWholeInt(const std::string& text, int64_t* value) {
  if (text.empty() || std::isspace(static_cast<unsigned char>(text[0]))) return false;
  char* end = nullptr;
  errno = 0;
  *value = std::strtoll(text.c_str(), &end, 10);
  return errno == 0 && end == text.c_str() + text.size();
}
bool ParseWholeUnsigned(const std::string& text, uint64_t* value) {
  if (text.empty() || text[0] < '0' || text[0] > '9') return false;
  char* end = nullptr;
  errno = 0;
  *value = std::strtoull(text.c_str(), &end, 10);
  return errno == 0 && end == text.c_str() + text.size();
}
bool ParseWholeDouble(const std::string& text, double* value) {
  if (text.empty() || std::isspace(static_cast<unsigned char>(text[0]))) return false;
  char* end = nullptr;
  *value = std::strtod(text.c_str(), &end);
  return end == text.c_str() + text.size() && std::isfinite(*value);
}

// The shortest text that reads back as exactly `value`; "120", not "1.2e+02".
std::string FormatDouble(double value) {
  char text[32];
  for (int precision = 1; precision <= 17; ++precision) {
    std::snprintf(text, sizeof(text), "%.*g", precision, value);
    if (std::strtod(text, nullptr) == value) break;
  }
  // An exponent here means fewer significant digits than integer digits: an exact integer.
  if (std::strchr(text, 'e') != nullptr && std::fabs(value) >= 1 && std::fabs(value) < 1e15) {
    std::snprintf(text, sizeof(text), "%.0f", value);
  }
  return text;
}

// Drops a "field: " prefix of an enum parser's message (the path already names the field).
std::string WithoutFieldPrefix(const std::string& message) {
  const size_t colon = message.find(": ");
  if (colon == std::string::npos || message.find(' ') < colon) return message;
  return message.substr(colon + 2);
}

// Whether `path` lies inside `ancestor`: "data.train[0]" and "data.train.x" inside "data.train".
bool IsWithin(const std::string& path, const std::string& ancestor) {
  return path.size() > ancestor.size() && path.compare(0, ancestor.size(), ancestor) == 0 &&
         (path[ancestor.size()] == '.' || path[ancestor.size()] == '[');
}
// Whether one path is the other or inside it: "data.train" and "data.train[0].path" are related.
bool Related(const std::string& a, const std::string& b) {
  return a == b || IsWithin(a, b) || IsWithin(b, a);
}

// What reading a job file found: every problem, with its line, and the line of every key, so
// that a later check of a value can say where the value was written.
class JobFileLog {
 public:
  // A value at `path` that could not be read (it keeps its default).
  void Fail(const std::string& path, int line, std::string message) {
    problems_.push_back({line, std::move(message)});
    failed_.push_back(path);
  }
  void NoteLine(const std::string& path, int line) { lines_.emplace(path, line); }
  size_t problem_count() const { return problems_.size(); }

  // Whether `path` failed to read, or lies inside or around something that did.
  bool Failed(const std::string& path) const {
    for (const std::string& failed : failed_) {
      if (Related(path, failed)) return true;
    }
    return false;
  }
  // " (line 12)" when `path` was written in the file, else "".
  std::string LineSuffix(const std::string& path) const {
    const auto it = lines_.find(path);
    return it == lines_.end() ? "" : " (line " + std::to_string(it->second) + ")";
  }
  // In the order of the file.
  std::vector<std::string> Problems() const {
    std::vector<std::pair<int, std::string>> sorted = problems_;
    std::stable_sort(sorted.begin(), sorted.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    std::vector<std::string> messages;
    for (auto& [line, message] : sorted) messages.push_back(std::move(message));
    return messages;
  }

 private:
  std::vector<std::pair<int, std::string>> problems_;  // (line, "path (line N): reason")
  std::vector<std::string> failed_;
  std::map<std::string, int> lines_;  // key path -> 1-based line
};

// Reads the keys of one YAML mapping into fields. A value that cannot be read is logged and
// leaves its field at the default; reading goes on with the other keys, so one pass finds every
// problem. Finish logs the keys no call asked for.
class YamlReader {
 public:
  YamlReader(const YAML::Node& map, std::string path, JobFileLog* log)
      : path_(std::move(path)), log_(log) {
    if (map.IsNull()) return;
    if (!map.IsMap()) {
      Mismatch(path_.empty() ? "job spec" : path_, "a mapping", map);
      return;
    }
    for (auto it = map.begin(); it != map.end(); ++it) {
      const std::string key = it->first.IsScalar() ? it->first.Scalar() : std::string();
      if (key.empty()) {
        Fail(PathOf("?"), it->first.Mark(), "not a key");
        continue;
      }
      // The value of a key given twice is ambiguous: neither is read.
      if (!entries_.emplace(key, it->second).second) {
        duplicates_.insert(key);
        Fail(PathOf(key), it->first.Mark(), "duplicate key");
        continue;
      }
      marks_.emplace(key, it->first.Mark());
      log_->NoteLine(PathOf(key), it->first.Mark().line + 1);
    }
  }

  void Field(const char* key, std::string* value) {
    if (const YAML::Node* node = Take(key)) {
      if (!node->IsScalar()) return Mismatch(PathOf(key), "a string", *node);
      *value = node->Scalar();
    }
  }
  void Field(const char* key, bool* value) {
    if (const YAML::Node* node = Take(key)) {
      if (!ReadBool(*node, value)) Mismatch(PathOf(key), "true or false", *node);
    }
  }
  void Field(const char* key, int* value) {
    int64_t wide = 0;
    const YAML::Node* node = Take(key);
    if (node == nullptr || !ReadInt(key, *node, &wide)) return;
    if (wide < std::numeric_limits<int>::min() || wide > std::numeric_limits<int>::max()) {
      return Fail(PathOf(key), node->Mark(), std::to_string(wide) + " does not fit in 32 bits");
    }
    *value = static_cast<int>(wide);
  }
  void Field(const char* key, int64_t* value) {
    int64_t parsed = 0;
    const YAML::Node* node = Take(key);
    if (node != nullptr && ReadInt(key, *node, &parsed)) *value = parsed;
  }
  void Field(const char* key, uint64_t* value) {
    uint64_t parsed = 0;
    const YAML::Node* node = Take(key);
    if (node != nullptr && ReadUnsigned(key, *node, &parsed)) *value = parsed;
  }
  // Absent or null: no value.
  void Field(const char* key, std::optional<uint64_t>* value) {
    uint64_t parsed = 0;
    const YAML::Node* node = Take(key);
    if (node != nullptr && ReadUnsigned(key, *node, &parsed)) *value = parsed;
  }
  void Field(const char* key, double* value) {
    double parsed = 0;
    if (const YAML::Node* node = Take(key)) {
      if (!node->IsScalar() || !ParseWholeDouble(node->Scalar(), &parsed)) {
        return Mismatch(PathOf(key), "a number", *node);
      }
      *value = parsed;
    }
  }
  // A sequence of "path[:weight]" strings and {path, weight} mappings, or one "a:1,b:2" string.
  void Field(const char* key, std::vector<WeightedSource>* value) {
    const YAML::Node* node = Take(key);
    if (node == nullptr) return;
    const std::string path = PathOf(key);
    if (node->IsScalar()) {
      auto sources = models::data::ParseWeightedSourceList(node->Scalar());
      if (!sources.ok()) return FailWith(path, *node, sources.status());
      *value = std::move(sources).value();
      return;
    }
    if (!node->IsSequence()) return Mismatch(path, "a list of sources", *node);
    const size_t problems_before = log_->problem_count();
    std::vector<WeightedSource> sources;
    for (size_t i = 0; i < node->size(); ++i) {
      sources.push_back(ReadSource((*node)[i], path + "[" + std::to_string(i) + "]"));
    }
    if (log_->problem_count() != problems_before) return;
    if (sources.empty()) {  // data.valid: [] means no evaluation; data.train: [] fails validation
      value->clear();
      return;
    }
    if (Status s = models::data::NormaliseSourceWeights(&sources); !s.ok()) {
      return FailWith(path, *node, s);
    }
    *value = std::move(sources);
  }
  // A list of strings (data.labels).
  void Field(const char* key, std::vector<std::string>* value) {
    const YAML::Node* node = Take(key);
    if (node == nullptr) return;
    if (!node->IsSequence()) return Mismatch(PathOf(key), "a list of strings", *node);
    std::vector<std::string> items;
    for (size_t i = 0; i < node->size(); ++i) {
      const YAML::Node item = (*node)[i];
      if (!item.IsScalar()) {
        return Mismatch(PathOf(key) + "[" + std::to_string(i) + "]", "a string", item);
      }
      items.push_back(item.Scalar());
    }
    *value = std::move(items);
  }
  // model.layers: [[first, last], ...].
  void Field(const char* key, LayerRanges* value) {
    const YAML::Node* node = Take(key);
    if (node == nullptr) return;
    if (!node->IsSequence()) return Mismatch(PathOf(key), "a list of [first, last]", *node);
    LayerRanges ranges;
    bool all_read = true;
    for (size_t i = 0; i < node->size(); ++i) {
      const YAML::Node range = (*node)[i];
      const std::string path = PathOf(key) + "[" + std::to_string(i) + "]";
      log_->NoteLine(path, range.Mark().line + 1);
      int64_t first = 0, last = 0;
      if (!range.IsSequence() || range.size() != 2 || !range[0].IsScalar() ||
          !range[1].IsScalar() || !ParseWholeInt(range[0].Scalar(), &first) ||
          !ParseWholeInt(range[1].Scalar(), &last)) {
        Mismatch(path, "[first, last] (two integers)", range);
        all_read = false;
        continue;
      }
      ranges.emplace_back(first, last);
    }
    if (all_read) *value = std::move(ranges);
  }

  template <typename E>
  void Enum(const char* key, E* value, StatusOr<E> (*parse)(const std::string&),
            const char* (*)(E)) {
    if (const YAML::Node* node = Take(key)) {
      if (!node->IsScalar()) return Mismatch(PathOf(key), "a name", *node);
      StatusOr<E> parsed = parse(node->Scalar());
      if (!parsed.ok()) {
        return Fail(PathOf(key), node->Mark(), WithoutFieldPrefix(parsed.status().message()));
      }
      *value = *parsed;
    }
  }

  // A section that is not a mapping is one problem; its keys are then not read, its siblings are.
  template <typename Body>
  void Section(const char* key, Body body) {
    const YAML::Node* node = Take(key);
    if (node == nullptr) return;
    YamlReader section(*node, PathOf(key), log_);
    body(section);
    section.Finish();
  }

  // A switch with settings: a boolean sets `*enabled` alone; a mapping is read as a section
  // whose keys include the switch's own, which defaults to true there, since writing the
  // settings of something means wanting it (`adaptive: {min_bits: 3}` turns it on).
  template <typename Body>
  void SwitchSection(const char* key, bool* enabled, Body body) {
    const YAML::Node* node = Take(key);
    if (node == nullptr) return;
    if (!node->IsMap()) {
      if (!ReadBool(*node, enabled)) Mismatch(PathOf(key), "true, false or a mapping", *node);
      return;
    }
    *enabled = true;
    YamlReader section(*node, PathOf(key), log_);
    body(section);
    section.Finish();
  }

  // Logs every key no Field/Enum/Section call took.
  void Finish() {
    for (const auto& [key, mark] : marks_) {
      if (!taken_.count(key)) Fail(PathOf(key), mark, "unknown key");
    }
  }

 private:
  std::string PathOf(const std::string& key) const {
    return path_.empty() ? key : path_ + "." + key;
  }
  static std::string At(const std::string& path, const YAML::Mark& mark) {
    if (mark.is_null()) return path;
    return path + " (line " + std::to_string(mark.line + 1) + ")";
  }
  // "optimizer.lr (line 12): 5 is not ..."
  void Fail(const std::string& path, const YAML::Mark& mark, const std::string& reason) {
    log_->Fail(path, mark.is_null() ? -1 : mark.line + 1, At(path, mark) + ": " + reason);
  }
  // A parser's status, after the path: "data.train (line 3): data source entry 1: ...".
  void FailWith(const std::string& path, const YAML::Node& node, const Status& status) {
    Fail(path, node.Mark(), status.message());
  }
  // "optimizer.lr (line 12): expected a number, got "fast""
  void Mismatch(const std::string& path, const std::string& expected, const YAML::Node& node) {
    std::string got = "null";
    if (node.IsScalar()) got = "\"" + node.Scalar() + "\"";
    if (node.IsSequence()) got = "a list";
    if (node.IsMap()) got = "a mapping";
    Fail(path, node.Mark(), "expected " + expected + ", got " + got);
  }
  static bool ReadBool(const YAML::Node& node, bool* value) {
    const std::string text = node.IsScalar() ? node.Scalar() : std::string();
    if (text == "true" || text == "yes" || text == "on") {
      *value = true;
    } else if (text == "false" || text == "no" || text == "off") {
      *value = false;
    } else {
      return false;
    }
    return true;
  }
  bool ReadInt(const char* key, const YAML::Node& node, int64_t* value) {
    if (node.IsScalar() && ParseWholeInt(node.Scalar(), value)) return true;
    Mismatch(PathOf(key), "an integer", node);
    return false;
  }
  bool ReadUnsigned(const char* key, const YAML::Node& node, uint64_t* value) {
    if (node.IsScalar() && ParseWholeUnsigned(node.Scalar(), value)) return true;
    Mismatch(PathOf(key), "a non-negative integer", node);
    return false;
  }
  // The value of `key`, marked as known; nullptr when absent, null or given twice.
  const YAML::Node* Take(const char* key) {
    taken_.insert(key);
    if (duplicates_.count(key)) return nullptr;
    const auto it = entries_.find(key);
    if (it == entries_.end() || it->second.IsNull()) return nullptr;
    return &it->second;
  }
  WeightedSource ReadSource(const YAML::Node& node, const std::string& path) {
    WeightedSource source;
    if (node.IsScalar()) {
      const std::string& text = node.Scalar();
      const size_t colon = text.rfind(':');
      source.path = text.substr(0, colon);
      if (colon != std::string::npos && !ParseWholeDouble(text.substr(colon + 1), &source.weight)) {
        Fail(path, node.Mark(),
             "weight \"" + text.substr(colon + 1) +
                 "\" is not a number (a path with ':' needs \":weight\")");
      }
      return source;
    }
    YamlReader entry(node, path, log_);
    entry.Field("path", &source.path);
    entry.Field("weight", &source.weight);
    entry.Finish();
    return source;
  }

  std::string path_;  // "compression.forward"; empty at the top
  JobFileLog* log_;
  std::map<std::string, YAML::Node> entries_;
  std::map<std::string, YAML::Mark> marks_;
  std::set<std::string> duplicates_;
  std::set<std::string> taken_;
};

// Emits every field; strings double-quoted so that "true" or "123" stay strings.
class YamlWriter {
 public:
  explicit YamlWriter(YAML::Emitter* out) : out_(*out) {}

  void Field(const char* key, std::string* value) {
    out_ << YAML::Key << key << YAML::Value << YAML::DoubleQuoted << *value;
  }
  void Field(const char* key, bool* value) { out_ << YAML::Key << key << YAML::Value << *value; }
  void Field(const char* key, int* value) { out_ << YAML::Key << key << YAML::Value << *value; }
  void Field(const char* key, int64_t* value) { out_ << YAML::Key << key << YAML::Value << *value; }
  void Field(const char* key, uint64_t* value) {
    out_ << YAML::Key << key << YAML::Value << *value;
  }
  void Field(const char* key, std::optional<uint64_t>* value) {
    out_ << YAML::Key << key << YAML::Value;
    if (value->has_value()) {
      out_ << **value;
    } else {
      out_ << YAML::Null;
    }
  }
  void Field(const char* key, double* value) {
    out_ << YAML::Key << key << YAML::Value << FormatDouble(*value);
  }
  void Field(const char* key, std::vector<WeightedSource>* value) {
    out_ << YAML::Key << key << YAML::Value << YAML::BeginSeq;
    for (const WeightedSource& source : *value) {
      out_ << YAML::Flow << YAML::BeginMap << YAML::Key << "path" << YAML::Value
           << YAML::DoubleQuoted << source.path << YAML::Key << "weight" << YAML::Value
           << FormatDouble(source.weight) << YAML::EndMap;
    }
    out_ << YAML::EndSeq;
  }
  void Field(const char* key, std::vector<std::string>* value) {
    out_ << YAML::Key << key << YAML::Value << YAML::Flow << YAML::BeginSeq;
    for (const std::string& item : *value) out_ << YAML::DoubleQuoted << item;
    out_ << YAML::EndSeq;
  }
  void Field(const char* key, LayerRanges* value) {
    out_ << YAML::Key << key << YAML::Value << YAML::Flow << YAML::BeginSeq;
    for (const auto& [first, last] : *value) {
      out_ << YAML::Flow << YAML::BeginSeq << first << last << YAML::EndSeq;
    }
    out_ << YAML::EndSeq;
  }
  template <typename E>
  void Enum(const char* key, E* value, StatusOr<E> (*)(const std::string&),
            const char* (*name)(E)) {
    out_ << YAML::Key << key << YAML::Value << name(*value);
  }
  template <typename Body>
  void Section(const char* key, Body body) {
    out_ << YAML::Key << key << YAML::Value << YAML::BeginMap;
    body(*this);
    out_ << YAML::EndMap;
  }
  // Always the mapping form, switch included: every key written.
  template <typename Body>
  void SwitchSection(const char* key, bool*, Body body) {
    Section(key, body);
  }

 private:
  YAML::Emitter& out_;
};

// StageAssignment names struct fields; the user wrote YAML keys (BindJob's names).
std::string YamlPathOf(const std::string& field) {
  static const std::map<std::string, std::string> kRenames = {
      {"model_dir", "model.dir"},
      {"model_init_seed", "model.init_seed"},
      {"dtype", "model.dtype"},
      {"device", "model.device"},
      {"autocast", "model.autocast"},
      {"first_layer, last_layer", "model.layers"},
      {"num_stages", "pipeline.stages"},
      {"dp_size", "data_parallel.replicas"},
      {"data.tokenizer_dir", "data.tokenizer"},
      {"optimizer.lr_warmup_steps", "optimizer.warmup_steps"},
      {"optimizer.lr_decay", "optimizer.decay"},
      {"training.micro_batch_size", "pipeline.micro_batch_size"},
      {"training.micro_batches", "pipeline.micro_batches"},
      {"training.schedule", "pipeline.schedule"},
      {"training.total_steps", "training.steps"},
      {"training.profile_path", "training.profile"},
  };
  if (const auto it = kRenames.find(field); it != kRenames.end()) return it->second;
  const std::string dp = "compression.data_parallel";
  if (field == dp || IsWithin(field, dp)) return "data_parallel" + field.substr(dp.size());
  return field;
}

// model.layers: one range per stage, contiguous from layer 0.
std::vector<FieldProblem> LayerRangeProblems(const JobSpec& spec) {
  if (spec.stage_layers.empty()) return {};
  if (static_cast<int>(spec.stage_layers.size()) != spec.num_stages) {
    return {{"model.layers",
             std::to_string(spec.stage_layers.size()) + " ranges for " +
                 std::to_string(spec.num_stages) + " stages",
             {"pipeline.stages"}}};
  }
  std::vector<FieldProblem> problems;
  int64_t next = 0;
  for (size_t i = 0; i < spec.stage_layers.size(); ++i) {
    const auto& [first, last] = spec.stage_layers[i];
    if (first != next || last <= first) {
      problems.push_back({"model.layers[" + std::to_string(i) + "]",
                          "[" + std::to_string(first) + ", " + std::to_string(last) +
                              ") is not a non-empty range starting at layer " +
                              std::to_string(next)});
    }
    next = last;
  }
  return problems;
}

// YAML streams are Unicode. yaml-cpp reads bytes that are not UTF-8 without complaint but writes
// each as U+FFFD, so such a spec would not survive JobSpecToYaml (a name would change, and grow
// past its limit); it is refused here, where the line can still be named.
Status CheckUtf8(std::string_view text) {
  int line = 1;
  size_t line_start = 0;
  for (size_t pos = 0; pos < text.size();) {
    const models::DecodedCodePoint decoded = models::DecodeUtf8(text, pos);
    if (decoded.code_point == models::kInvalidCodePoint) {
      char byte[8];
      std::snprintf(byte, sizeof(byte), "0x%02x", static_cast<unsigned char>(text[pos]));
      return InvalidArgument("job spec: line " + std::to_string(line) + ", byte " +
                             std::to_string(pos - line_start + 1) + ": " + byte +
                             " is not valid UTF-8 (a job spec is a UTF-8 text file)");
    }
    if (text[pos] == '\n') {
      ++line;
      line_start = pos + 1;
    }
    pos += decoded.length;
  }
  return OkStatus();
}

// Every problem of a job read without parse errors in the fields involved, as YAML paths: the
// job-level ones and the first rank's assignment's.
std::vector<FieldProblem> JobProblems(const JobSpec& spec) {
  std::vector<FieldProblem> problems;
  if (spec.name.empty()) problems.push_back({"name", "missing", {}});
  if (spec.name.size() > kMaxJobNameBytes) {
    problems.push_back({"name",
                        std::to_string(spec.name.size()) + " bytes exceed the limit of " +
                            std::to_string(kMaxJobNameBytes),
                        {}});
  }
  if (std::any_of(spec.name.begin(), spec.name.end(),
                  [](char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7f; })) {
    problems.push_back({"name", "contains a control character", {}});
  }
  if (spec.num_stages > kMaxStages) {
    problems.push_back({"pipeline.stages",
                        std::to_string(spec.num_stages) + " exceeds the limit of " +
                            std::to_string(kMaxStages),
                        {}});
  }
  if (spec.dp_size > kMaxReplicas) {
    problems.push_back({"data_parallel.replicas",
                        std::to_string(spec.dp_size) + " exceeds the limit of " +
                            std::to_string(kMaxReplicas),
                        {}});
  }
  if (spec.num_stages <= kMaxStages && spec.dp_size <= kMaxReplicas &&
      static_cast<int64_t>(spec.num_stages) * spec.dp_size > kMaxRanks) {
    problems.push_back({"data_parallel.replicas",
                        std::to_string(spec.num_stages) + " stages x " +
                            std::to_string(spec.dp_size) + " replicas exceed the limit of " +
                            std::to_string(kMaxRanks) + " ranks",
                        {"pipeline.stages"}});
  }
  for (FieldProblem problem : AssignmentFor(spec, 0, 0).Problems()) {
    problem.field = YamlPathOf(problem.field);
    for (std::string& other : problem.also_reads) other = YamlPathOf(other);
    problems.push_back(std::move(problem));
  }
  for (FieldProblem& problem : LayerRangeProblems(spec)) problems.push_back(std::move(problem));
  if (spec.max_restarts < 0) {
    problems.push_back(
        {"training.max_restarts", std::to_string(spec.max_restarts) + " is negative", {}});
  }
  return problems;
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
  GEOTRAIN_ASSIGN_OR_RETURN(std::string text, models::ReadFileContents(path, kMaxJobFileBytes));
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
