// The binder pattern: one description of a YAML document drives both its reader and its writer,
// so a key cannot be read but not written, or written under another name.
//
// A description is a function template over the binder,
//
//   template <typename Binder> void BindThing(Binder& b, Thing* thing) {
//     b.Field("name", &thing->name);                        // a string, a bool or a list below
//     b.Field("size", &thing->size, Range{1, 4096});        // a number, within its range
//     b.Enum("mode", &thing->mode, ParseMode, ModeName);    // a name, through the two functions
//     b.Section("limits", [&](auto& s) { s.Field("max", &thing->max); });  // a nested mapping
//     b.SwitchSection("cache", &thing->cache.enabled, [&](auto& s) { ... });  // bool or mapping
//   }
//
// called with a YamlReader to read and with a YamlWriter to write (BindJob in job_spec.cc is the
// job spec's). Both take the same calls, in the same order: that is the whole interface.
//
// YamlReader is strict and never stops early: an unknown or duplicated key, a value of the wrong
// type, a number out of range or an unknown enum name is logged in a JobFileLog as a problem
// naming the full key path and the line ("compression.forward.bitz (line 14): unknown key"), the
// field keeps its default, and reading goes on, so one pass finds every problem. YamlWriter writes
// every key, strings double-quoted (so "true" or "123" stay strings) and doubles as the shortest
// text that reads back exactly, so reading what it wrote gives the same values back.
//
// LibTorch-free (library geotrain_runtime_config). Each binder is used by one thread; the nodes
// and the log outlive it.
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "common/status.h"
#include "common/weighted_source_list.h"
#include "runtime/job_file_log.h"

namespace geotrain::runtime {

// [first, last) layer ranges, one per pipeline stage (model.layers).
using LayerRanges = std::vector<std::pair<int64_t, int64_t>>;

// The values a numeric key accepts: [min, max], either end open when said. Every numeric key of
// a description has one, so no number reaches a job unbounded (a seq_length of 1e9 or a timeout
// of 1e300 is refused where the key is read, naming it and the range, not after every restart).
// Bounds are compared as doubles: exact for integers up to 2^53, far beyond any bound used.
struct Range {
  double min;
  double max;
  bool min_open = false;
  bool max_open = false;

  bool Contains(double value) const;
  std::string ToString() const;  // "[1, 1048576]", "(0, 86400]"
};
// Every 64-bit unsigned value (seeds).
inline constexpr Range kAnyUint64{0, 18446744073709551616.0};

// Reads the keys of one YAML mapping into fields; Finish logs the keys no call asked for.
class YamlReader {
 public:
  // `path` is the mapping's key path ("compression.forward"; empty at the top). A null `map` is
  // an empty one; anything else but a mapping is one problem, and no key is read.
  YamlReader(const YAML::Node& map, std::string path, JobFileLog* log);

  void Field(const char* key, std::string* value);
  void Field(const char* key, bool* value);  // true/yes/on, false/no/off
  // Numbers outside `range` are a problem ("data.seq_length (line 5): 1000000000 is outside
  // [1, 1048576]") and leave the field as it was.
  void Field(const char* key, int* value, const Range& range);
  void Field(const char* key, int64_t* value, const Range& range);
  void Field(const char* key, uint64_t* value, const Range& range);
  void Field(const char* key, std::optional<uint64_t>* value,  // absent or null: no value
             const Range& range);
  void Field(const char* key, double* value, const Range& range);  // finite
  // A sequence of "path[:weight]" strings and {path, weight} mappings, or one "a:1,b:2" string;
  // the weights normalised. An empty sequence gives an empty list.
  void Field(const char* key, std::vector<WeightedSource>* value);
  void Field(const char* key, std::vector<std::string>* value);
  // [[first, last], ...], each layer index within `range`; every range's line is noted under
  // "key[i]".
  void Field(const char* key, LayerRanges* value, const Range& range);

  // A name, through `parse`; its error (without a leading "field: ") is the problem.
  template <typename E>
  void Enum(const char* key, E* value, StatusOr<E> (*parse)(const std::string&),
            const char* (*)(E)) {
    if (const YAML::Node* node = Take(key)) {
      if (!node->IsScalar()) return Mismatch(PathOf(key), "a name", *node);
      StatusOr<E> parsed = parse(node->Scalar());
      if (!parsed.ok()) return FailEnum(key, *node, parsed.status());
      *value = *parsed;
    }
  }

  // A section that is not a mapping is one problem; its keys are then not read, its siblings are.
  template <typename Body>
  void Section(const char* key, Body body) {
    if (const YAML::Node* node = Take(key)) ReadSection(key, *node, body);
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
    ReadSection(key, *node, body);
  }

  // Logs every key no Field/Enum/Section call took.
  void Finish();

 private:
  template <typename Body>
  void ReadSection(const char* key, const YAML::Node& node, Body& body) {
    YamlReader section(node, PathOf(key), log_);
    body(section);
    section.Finish();
  }

  std::string PathOf(const std::string& key) const;
  // The value of `key`, marked as known; nullptr when absent, null or given twice.
  const YAML::Node* Take(const char* key);
  // "optimizer.lr (line 12): 5 is not ..."
  void Fail(const std::string& path, const YAML::Mark& mark, const std::string& reason);
  // A parser's status, after the path: "data.train (line 3): data source entry 1: ...".
  void FailWith(const std::string& path, const YAML::Node& node, const Status& status);
  void FailEnum(const char* key, const YAML::Node& node, const Status& status);
  // "optimizer.lr (line 12): expected a number, got "fast""
  void Mismatch(const std::string& path, const std::string& expected, const YAML::Node& node);
  static bool ReadBool(const YAML::Node& node, bool* value);
  bool ReadInt(const char* key, const YAML::Node& node, int64_t* value);
  bool ReadUnsigned(const char* key, const YAML::Node& node, uint64_t* value);
  // False (and a problem logged) when `value` is outside `range`.
  bool InRange(const char* key, const YAML::Node& node, double value, const std::string& text,
               const Range& range);
  WeightedSource ReadSource(const YAML::Node& node, const std::string& path);

  std::string path_;  // "compression.forward"; empty at the top
  JobFileLog* log_;
  std::map<std::string, YAML::Node> entries_;
  std::map<std::string, YAML::Mark> marks_;
  std::set<std::string> duplicates_;
  std::set<std::string> taken_;
};

// Emits every field into a mapping the caller has begun.
class YamlWriter {
 public:
  explicit YamlWriter(YAML::Emitter* out) : out_(*out) {}

  void Field(const char* key, std::string* value);
  void Field(const char* key, bool* value);
  void Field(const char* key, int* value, const Range&);
  void Field(const char* key, int64_t* value, const Range&);
  void Field(const char* key, uint64_t* value, const Range&);
  void Field(const char* key, std::optional<uint64_t>* value, const Range&);
  void Field(const char* key, double* value, const Range&);
  void Field(const char* key, std::vector<WeightedSource>* value);
  void Field(const char* key, std::vector<std::string>* value);
  void Field(const char* key, LayerRanges* value, const Range&);

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

}  // namespace geotrain::runtime
