// The step line <-> StepLine. One description of the keys (BindStepLine) drives both the writer
// (JsonWriter) and the reader (JsonReader), as BindJob drives the job YAML's (job_spec.cc).
// The Python scripts read the lines through scripts/step_lines.py, which mirrors this format
// (what a step line is, the parts of raw_bytes / wire_bytes): change it with the keys here.
//
// A member's type says what its key holds:
//   int                     an index (rank, stage, replica, a peer's): a non-negative integer
//                           within 32 bits
//   int64_t                 an integer
//   uint32_t, uint64_t      a non-negative integer within the type
//   double                  a number (JSON has no NaN or infinity: a non-finite one is written
//                           as null, which reads as absent)
//   bool, std::string       true or false, a string
//   std::optional<T>        a T, written only when set
// and a Rule what more it must be, and when it is written.
#include "runtime/step_line.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <optional>
#include <utility>
#include <vector>

namespace geotrain::runtime {
namespace {

using nlohmann::json;

// What a key must be beyond its member's type, and when it is written.
struct Rule {
  bool required = false;      // a line (or traffic entry) without it names nothing: refused
  bool when_set = false;      // written only when set (a finite double, a non-empty string)
  bool non_negative = false;  // a number below zero is refused
  bool score = false;         // within [min, max]; a rounding error past an end is clamped
  double min = 0;
  double max = 0;
};
constexpr Rule kAny{};
constexpr Rule kRequired{true};
constexpr Rule kWhenSet{false, true};
constexpr Rule kNonNegative{false, false, true};
constexpr Rule Score(double min, double max) { return {false, false, false, true, min, max}; }

constexpr std::pair<const char*, bool> kDirections[] = {{"sent", true}, {"received", false}};

// raw_bytes / wire_bytes.
template <typename Binder>
void BindBytes(Binder& b, StepBytes* bytes) {
  b.Field("forward", &bytes->forward);
  b.Field("backward", &bytes->backward);
  b.Field("dp", &bytes->dp);
  b.Field("embedding", &bytes->embedding);
}

template <typename Binder>
void BindPhases(Binder& b, StepPhases* p) {
  b.Field("forward", &p->forward, kNonNegative);
  b.Field("backward", &p->backward, kNonNegative);
  b.Field("encode", &p->encode, kNonNegative);
  b.Field("decode", &p->decode, kNonNegative);
  b.Field("send", &p->send, kNonNegative);
  b.Field("recv", &p->recv, kNonNegative);
  b.Field("sync", &p->sync, kNonNegative);
  b.Field("optimizer", &p->optimizer, kNonNegative);
  b.Field("data", &p->data, kNonNegative);
  b.Field("eval", &p->eval, kNonNegative);
  b.Field("checkpoint", &p->checkpoint, kNonNegative);
}

// One entry of "traffic": without its peer, kind and direction it names no link.
template <typename Binder>
void BindTraffic(Binder& b, LinkTraffic* t) {
  b.Field("peer_stage", &t->peer_stage, kRequired);
  b.Field("peer_replica", &t->peer_replica, kRequired);
  b.Enum("kind", &t->kind, kTrafficKindNames, kRequired);
  b.Enum("direction", &t->sent, kDirections, kRequired);
  b.Field("raw_bytes", &t->raw_bytes);
  b.Field("wire_bytes", &t->wire_bytes);
  b.Field("seconds", &t->seconds, kNonNegative);
  b.Field("bits", &t->bits);
  b.Field("relative_error", &t->relative_error, kNonNegative);
  b.Field("latency_seconds", &t->latency_seconds, kNonNegative);
}

// A classifier's evaluation scores, as GLUE reports them.
template <typename Binder>
void BindEvalScores(Binder& b, ClassificationMetrics* m) {
  b.Field("eval_accuracy", &m->accuracy, Score(0, 1));
  b.Field("eval_f1", &m->f1, Score(0, 1));
  b.Field("eval_mcc", &m->mcc, Score(-1, 1));
}

// The whole line (docs/operations.md lists its keys).
template <typename Binder>
void BindStepLine(Binder& b, StepLine* line) {
  StepResult& r = line->result;
  b.Field("rank", &line->rank);
  b.Field("stage", &line->stage);
  b.Field("replica", &line->replica);
  b.Field("step", &r.step, kRequired);
  b.Field("total_steps", &r.total_steps);
  b.Field("loss", &r.loss, kWhenSet);  // the last stage's
  b.Field("lr", &r.lr);
  b.Field("grad_norm", &r.grad_norm);
  b.Field("compressed", &r.compressed);
  b.Field("checkpointed", &r.checkpointed);
  b.Field("checkpoint_error", &r.checkpoint_error, kWhenSet);
  b.Field("forward_relative_error", &r.forward_relative_error);
  b.Field("backward_relative_error", &r.backward_relative_error);
  b.Field("tokens", &r.tokens, kNonNegative);
  b.Field("step_seconds", &r.step_seconds);
  b.Field("compute_seconds", &r.compute_seconds);
  b.Field("codec_seconds", &r.codec_seconds);
  b.Field("comm_seconds", &r.comm_seconds);
  b.Field("peak_host_memory_bytes", &r.peak_host_memory_bytes);
  b.Section("raw_bytes", [&](auto& s) { BindBytes(s, &r.raw_bytes); });
  b.Section("wire_bytes", [&](auto& s) { BindBytes(s, &r.wire_bytes); });
  b.OptionalSection("phases", &line->has_phases, [&](auto& s) { BindPhases(s, &r.phases); });
  b.List("traffic", &r.traffic, [](auto& e, LinkTraffic* t) { BindTraffic(e, t); });
  b.Field("eval_loss", &r.eval_loss);  // the last stage's, on evaluation steps
  b.Together(&r.eval_metrics, [](auto& s, ClassificationMetrics* m) { BindEvalScores(s, m); });
}

// "-1" and "1" in "is outside [-1, 1]".
std::string Bound(double value) {
  char text[32];
  std::snprintf(text, sizeof(text), "%g", value);
  return text;
}

// "a, b and c".
std::string Conjunction(const std::vector<std::string>& names) {
  std::string text;
  for (size_t i = 0; i < names.size(); ++i) {
    if (i > 0) text += i + 1 == names.size() ? " and " : ", ";
    text += names[i];
  }
  return text;
}

// Reads the keys of one JSON object into members. The first problem goes to *status and every
// later call does nothing, so the error is the line's first bad key.
class JsonReader {
 public:
  JsonReader(const json& object, std::string path, Status* status)
      : object_(object), path_(std::move(path)), status_(status) {}

  void Field(const char* key, int* value, Rule rule = kAny) {
    uint64_t wide = 0;
    const json* v = Take(key, rule, "a non-negative integer");
    if (v == nullptr || !ReadUnsigned(key, *v, &wide)) return;
    if (wide > static_cast<uint64_t>(std::numeric_limits<int32_t>::max())) {
      return Fail(PathOf(key), std::to_string(wide) + " is too large");
    }
    *value = static_cast<int>(wide);
  }
  void Field(const char* key, int64_t* value, Rule rule = kAny) {
    const json* v = Take(key, rule, "an integer");
    if (v == nullptr) return;
    int64_t parsed = 0;
    if (v->is_number_unsigned()) {
      const uint64_t wide = v->get<uint64_t>();
      if (wide > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
        return Fail(PathOf(key), std::to_string(wide) + " is too large");
      }
      parsed = static_cast<int64_t>(wide);
    } else if (v->is_number_integer()) {
      parsed = v->get<int64_t>();
    } else {
      return Mismatch(PathOf(key), "an integer", *v);
    }
    if (rule.non_negative && parsed < 0) {
      return Fail(PathOf(key), std::to_string(parsed) + " is negative");
    }
    *value = parsed;
  }
  void Field(const char* key, uint32_t* value, Rule rule = kAny) {
    uint64_t wide = 0;
    const json* v = Take(key, rule, "a non-negative integer");
    if (v == nullptr || !ReadUnsigned(key, *v, &wide)) return;
    if (wide > std::numeric_limits<uint32_t>::max()) {
      return Fail(PathOf(key), std::to_string(wide) + " is too large");
    }
    *value = static_cast<uint32_t>(wide);
  }
  void Field(const char* key, uint64_t* value, Rule rule = kAny) {
    const json* v = Take(key, rule, "a non-negative integer");
    if (v != nullptr) ReadUnsigned(key, *v, value);
  }
  void Field(const char* key, double* value, Rule rule = kAny) {
    const json* v = Take(key, rule, "a number");
    if (v == nullptr) return;
    if (!v->is_number()) return Mismatch(PathOf(key), "a number", *v);
    double parsed = v->get<double>();
    if (rule.non_negative && parsed < 0) return Fail(PathOf(key), v->dump() + " is negative");
    if (rule.score) {
      constexpr double kRounding = 1e-9;
      if (!(parsed >= rule.min - kRounding && parsed <= rule.max + kRounding)) {
        return Fail(PathOf(key), std::to_string(parsed) + " is outside [" + Bound(rule.min) + ", " +
                                     Bound(rule.max) + "]");
      }
      parsed = std::clamp(parsed, rule.min, rule.max);
    }
    *value = parsed;
  }
  void Field(const char* key, bool* value, Rule rule = kAny) {
    const json* v = Take(key, rule, "true or false");
    if (v == nullptr) return;
    if (!v->is_boolean()) return Mismatch(PathOf(key), "true or false", *v);
    *value = v->get<bool>();
  }
  void Field(const char* key, std::string* value, Rule rule = kAny) {
    const json* v = Take(key, rule, "a string");
    if (v == nullptr) return;
    if (!v->is_string()) return Mismatch(PathOf(key), "a string", *v);
    *value = v->get<std::string>();
  }
  // Absent or null: unset.
  template <typename T>
  void Field(const char* key, std::optional<T>* value, Rule rule = kAny) {
    if (!Has(key)) {
      Take(key, rule, "");  // counted by Together
      return;
    }
    T parsed{};
    Field(key, &parsed, rule);
    if (status_->ok()) *value = parsed;
  }

  // A string that must be one of `names`' spellings.
  template <typename E, size_t N>
  void Enum(const char* key, E* value, const std::pair<const char*, E> (&names)[N],
            Rule rule = kAny) {
    const json* v = Take(key, rule, "a string");
    if (v == nullptr) return;
    if (!v->is_string()) return Mismatch(PathOf(key), "a string", *v);
    const std::string& name = v->get_ref<const std::string&>();
    std::string known;
    for (const auto& [spelling, candidate] : names) {
      if (name == spelling) {
        *value = candidate;
        return;
      }
      known += (known.empty() ? "" : ", ") + std::string(spelling);
    }
    // replace: a child's garbage must not make dump() throw.
    Fail(PathOf(key),
         v->dump(-1, ' ', false, json::error_handler_t::replace) + " is not one of " + known);
  }

  // An object whose keys `body` reads.
  template <typename Body>
  void Section(const char* key, Body body) {
    const json* v = Take(key, kAny, "an object");
    if (v == nullptr) return;
    if (!v->is_object()) return Mismatch(PathOf(key), "an object", *v);
    JsonReader section(*v, PathOf(key), status_);
    body(section);
  }
  // A section that older builds did not write: *present says whether the line had it.
  template <typename Body>
  void OptionalSection(const char* key, bool* present, Body body) {
    *present = Has(key);
    Section(key, body);
  }
  // An array of objects, each read by `body` into a new item.
  template <typename T, typename Body>
  void List(const char* key, std::vector<T>* items, Body body) {
    const json* v = Take(key, kAny, "an array");
    if (v == nullptr) return;
    if (!v->is_array()) return Mismatch(PathOf(key), "an array", *v);
    std::vector<T> read;
    for (size_t i = 0; i < v->size() && status_->ok(); ++i) {
      const std::string path = PathOf(key) + "[" + std::to_string(i) + "]";
      const json& entry = (*v)[i];
      if (!entry.is_object()) return Mismatch(path, "an object", entry);
      JsonReader reader(entry, path, status_);
      body(reader, &read.emplace_back());
    }
    if (status_->ok()) *items = std::move(read);
  }
  // Keys of this object that come all together or not at all: none leaves *value unset.
  template <typename T, typename Body>
  void Together(std::optional<T>* value, Body body) {
    std::vector<std::string> asked, found;
    JsonReader group(object_, path_, status_);
    group.asked_ = &asked;
    group.found_ = &found;
    T read{};
    body(group, &read);
    if (!status_->ok() || found.empty()) return;
    if (found.size() < asked.size()) {
      return Fail(Conjunction(asked), "some given without the others");
    }
    *value = read;
  }

 private:
  std::string PathOf(const std::string& key) const {
    return path_.empty() ? key : path_ + "." + key;
  }
  bool Has(const char* key) const {
    const auto it = object_.find(key);
    return it != object_.end() && !it->is_null();
  }
  // "step line: traffic[2].kind: ..."; only the first problem is kept.
  void Fail(const std::string& path, const std::string& reason) {
    if (status_->ok()) *status_ = InvalidArgument("step line: " + path + ": " + reason);
  }
  void Mismatch(const std::string& path, const std::string& expected, const json& value) {
    Fail(path, "expected " + expected + ", got " + value.type_name());
  }
  // The value of `key`; nullptr when absent or null (a required key is then a problem: missing,
  // or not `expected`), or after a problem.
  const json* Take(const char* key, Rule rule, const char* expected) {
    if (!status_->ok()) return nullptr;
    if (asked_ != nullptr) asked_->push_back(PathOf(key));
    const auto it = object_.find(key);
    if (it == object_.end()) {
      if (rule.required) Fail(PathOf(key), "missing");
      return nullptr;
    }
    if (it->is_null()) {
      if (rule.required) Mismatch(PathOf(key), expected, *it);
      return nullptr;
    }
    if (found_ != nullptr) found_->push_back(PathOf(key));
    return &*it;
  }
  // A non-negative integer: a negative one is "-5 is negative", anything else a mismatch.
  bool ReadUnsigned(const char* key, const json& v, uint64_t* value) {
    if (v.is_number_unsigned() || (v.is_number_integer() && v.get<int64_t>() >= 0)) {
      *value = v.get<uint64_t>();
      return true;
    }
    if (v.is_number_integer()) {
      Fail(PathOf(key), v.dump() + " is negative");
    } else {
      Mismatch(PathOf(key), "a non-negative integer", v);
    }
    return false;
  }

  const json& object_;
  std::string path_;  // "traffic[2]"; empty at the top
  Status* status_;
  // Set by Together: the keys its body asked for, and those the line had.
  std::vector<std::string>* asked_ = nullptr;
  std::vector<std::string>* found_ = nullptr;
};

// Writes each key into a JSON object: every one, but the Rule's when_set ones and unset optional
// members only when set.
class JsonWriter {
 public:
  explicit JsonWriter(json* object) : object_(*object) {}

  template <typename T>
  void Field(const char* key, T* value, Rule = kAny) {
    object_[key] = *value;
  }
  void Field(const char* key, double* value, Rule rule = kAny) {
    if (!rule.when_set || std::isfinite(*value)) object_[key] = *value;
  }
  void Field(const char* key, std::string* value, Rule rule = kAny) {
    if (!rule.when_set || !value->empty()) object_[key] = *value;
  }
  template <typename T>
  void Field(const char* key, std::optional<T>* value, Rule rule = kAny) {
    if (value->has_value()) Field(key, &**value, rule);
  }
  template <typename E, size_t N>
  void Enum(const char* key, E* value, const std::pair<const char*, E> (&names)[N], Rule = kAny) {
    for (const auto& [spelling, candidate] : names) {
      if (candidate == *value) object_[key] = spelling;
    }
  }
  template <typename Body>
  void Section(const char* key, Body body) {
    json section = json::object();
    JsonWriter writer(&section);
    body(writer);
    object_[key] = std::move(section);
  }
  template <typename Body>
  void OptionalSection(const char* key, bool* present, Body body) {
    if (*present) Section(key, body);
  }
  template <typename T, typename Body>
  void List(const char* key, std::vector<T>* items, Body body) {
    json list = json::array();
    for (T& item : *items) {
      json entry = json::object();
      JsonWriter writer(&entry);
      body(writer, &item);
      list.push_back(std::move(entry));
    }
    object_[key] = std::move(list);
  }
  template <typename T, typename Body>
  void Together(std::optional<T>* value, Body body) {
    if (value->has_value()) body(*this, &**value);
  }

 private:
  json& object_;
};

}  // namespace

StepLine StepLineOf(const StageAssignment& assignment, const StepResult& result) {
  StepLine line;
  line.rank = assignment.global_rank();
  line.stage = assignment.stage;
  line.replica = assignment.dp_rank;
  line.result = result;
  return line;
}

std::string StepLineText(const StepLine& line) {
  StepLine copy = line;
  json object = json::object();
  JsonWriter writer(&object);
  BindStepLine(writer, &copy);
  // replace: a checkpoint error naming a path that is not UTF-8 must not throw.
  return object.dump(-1, ' ', false, json::error_handler_t::replace);
}

StatusOr<StepLine> ParseStepLine(const std::string& text) {
  // Most log lines are not JSON: skip the parser for them.
  const size_t first = text.find_first_not_of(" \t");
  if (first == std::string::npos || text[first] != '{') return NotFound("not a step line");
  const json object = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (object.is_discarded() || !object.is_object() || !object.contains("step")) {
    return NotFound("not a step line");
  }
  StepLine line;
  Status status;
  JsonReader reader(object, "", &status);
  BindStepLine(reader, &line);
  GEOTRAIN_RETURN_IF_ERROR(status);
  return line;
}

}  // namespace geotrain::runtime
