#include "runtime/yaml_binder.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>

namespace geotrain::runtime {
namespace {

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

}  // namespace

bool Range::Contains(double value) const {
  const bool above_min = min_open ? value > min : value >= min;
  const bool below_max = max_open ? value < max : value <= max;
  return above_min && below_max;  // false for NaN
}

std::string Range::ToString() const {
  return std::string(min_open ? "(" : "[") + FormatDouble(min) + ", " + FormatDouble(max) +
         (max_open ? ")" : "]");
}

YamlReader::YamlReader(const YAML::Node& map, std::string path, JobFileLog* log)
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

void YamlReader::Field(const char* key, std::string* value) {
  if (const YAML::Node* node = Take(key)) {
    if (!node->IsScalar()) return Mismatch(PathOf(key), "a string", *node);
    *value = node->Scalar();
  }
}

void YamlReader::Field(const char* key, bool* value) {
  if (const YAML::Node* node = Take(key)) {
    if (!ReadBool(*node, value)) Mismatch(PathOf(key), "true or false", *node);
  }
}

void YamlReader::Field(const char* key, int* value, const Range& range) {
  int64_t wide = 0;
  const YAML::Node* node = Take(key);
  if (node == nullptr || !ReadInt(key, *node, &wide)) return;
  if (wide < std::numeric_limits<int>::min() || wide > std::numeric_limits<int>::max()) {
    return Fail(PathOf(key), node->Mark(), std::to_string(wide) + " does not fit in 32 bits");
  }
  if (InRange(key, *node, static_cast<double>(wide), std::to_string(wide), range)) {
    *value = static_cast<int>(wide);
  }
}

void YamlReader::Field(const char* key, int64_t* value, const Range& range) {
  int64_t parsed = 0;
  const YAML::Node* node = Take(key);
  if (node != nullptr && ReadInt(key, *node, &parsed) &&
      InRange(key, *node, static_cast<double>(parsed), std::to_string(parsed), range)) {
    *value = parsed;
  }
}

void YamlReader::Field(const char* key, uint64_t* value, const Range& range) {
  uint64_t parsed = 0;
  const YAML::Node* node = Take(key);
  if (node != nullptr && ReadUnsigned(key, *node, &parsed) &&
      InRange(key, *node, static_cast<double>(parsed), std::to_string(parsed), range)) {
    *value = parsed;
  }
}

void YamlReader::Field(const char* key, std::optional<uint64_t>* value, const Range& range) {
  uint64_t parsed = 0;
  const YAML::Node* node = Take(key);
  if (node != nullptr && ReadUnsigned(key, *node, &parsed) &&
      InRange(key, *node, static_cast<double>(parsed), std::to_string(parsed), range)) {
    *value = parsed;
  }
}

void YamlReader::Field(const char* key, double* value, const Range& range) {
  double parsed = 0;
  if (const YAML::Node* node = Take(key)) {
    if (!node->IsScalar() || !ParseWholeDouble(node->Scalar(), &parsed)) {
      return Mismatch(PathOf(key), "a number", *node);
    }
    if (InRange(key, *node, parsed, node->Scalar(), range)) *value = parsed;
  }
}

void YamlReader::Field(const char* key, std::vector<WeightedSource>* value) {
  const YAML::Node* node = Take(key);
  if (node == nullptr) return;
  const std::string path = PathOf(key);
  if (node->IsScalar()) {
    auto sources = ParseWeightedSourceList(node->Scalar());
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
  if (Status s = NormaliseSourceWeights(&sources); !s.ok()) {
    return FailWith(path, *node, s);
  }
  *value = std::move(sources);
}

void YamlReader::Field(const char* key, std::vector<std::string>* value) {
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

void YamlReader::Field(const char* key, LayerRanges* value, const Range& layer_range) {
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
    if (!range.IsSequence() || range.size() != 2 || !range[0].IsScalar() || !range[1].IsScalar() ||
        !ParseWholeInt(range[0].Scalar(), &first) || !ParseWholeInt(range[1].Scalar(), &last)) {
      Mismatch(path, "[first, last] (two integers)", range);
      all_read = false;
      continue;
    }
    if (!layer_range.Contains(static_cast<double>(first)) ||
        !layer_range.Contains(static_cast<double>(last))) {
      Fail(path, range.Mark(),
           "[" + std::to_string(first) + ", " + std::to_string(last) +
               "]: a layer index is outside " + layer_range.ToString());
      all_read = false;
      continue;
    }
    ranges.emplace_back(first, last);
  }
  if (all_read) *value = std::move(ranges);
}

void YamlReader::Finish() {
  for (const auto& [key, mark] : marks_) {
    if (!taken_.count(key)) Fail(PathOf(key), mark, "unknown key");
  }
}

std::string YamlReader::PathOf(const std::string& key) const {
  return path_.empty() ? key : path_ + "." + key;
}

const YAML::Node* YamlReader::Take(const char* key) {
  taken_.insert(key);
  if (duplicates_.count(key)) return nullptr;
  const auto it = entries_.find(key);
  if (it == entries_.end() || it->second.IsNull()) return nullptr;
  return &it->second;
}

void YamlReader::Fail(const std::string& path, const YAML::Mark& mark, const std::string& reason) {
  const std::string at =
      mark.is_null() ? path : path + " (line " + std::to_string(mark.line + 1) + ")";
  log_->Fail(path, mark.is_null() ? -1 : mark.line + 1, at + ": " + reason);
}

void YamlReader::FailWith(const std::string& path, const YAML::Node& node, const Status& status) {
  Fail(path, node.Mark(), status.message());
}

void YamlReader::FailEnum(const char* key, const YAML::Node& node, const Status& status) {
  Fail(PathOf(key), node.Mark(), WithoutFieldPrefix(status.message()));
}

void YamlReader::Mismatch(const std::string& path, const std::string& expected,
                          const YAML::Node& node) {
  std::string got = "null";
  if (node.IsScalar()) got = "\"" + node.Scalar() + "\"";
  if (node.IsSequence()) got = "a list";
  if (node.IsMap()) got = "a mapping";
  Fail(path, node.Mark(), "expected " + expected + ", got " + got);
}

bool YamlReader::ReadBool(const YAML::Node& node, bool* value) {
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

bool YamlReader::ReadInt(const char* key, const YAML::Node& node, int64_t* value) {
  if (node.IsScalar() && ParseWholeInt(node.Scalar(), value)) return true;
  Mismatch(PathOf(key), "an integer", node);
  return false;
}

bool YamlReader::InRange(const char* key, const YAML::Node& node, double value,
                         const std::string& text, const Range& range) {
  if (range.Contains(value)) return true;
  Fail(PathOf(key), node.Mark(), text + " is outside " + range.ToString());
  return false;
}

bool YamlReader::ReadUnsigned(const char* key, const YAML::Node& node, uint64_t* value) {
  if (node.IsScalar() && ParseWholeUnsigned(node.Scalar(), value)) return true;
  Mismatch(PathOf(key), "a non-negative integer", node);
  return false;
}

WeightedSource YamlReader::ReadSource(const YAML::Node& node, const std::string& path) {
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
  entry.Field("weight", &source.weight, Range{0, 1e9, /*min_open=*/true});
  entry.Finish();
  return source;
}

void YamlWriter::Field(const char* key, std::string* value) {
  out_ << YAML::Key << key << YAML::Value << YAML::DoubleQuoted << *value;
}
void YamlWriter::Field(const char* key, bool* value) {
  out_ << YAML::Key << key << YAML::Value << *value;
}
void YamlWriter::Field(const char* key, int* value, const Range&) {
  out_ << YAML::Key << key << YAML::Value << *value;
}
void YamlWriter::Field(const char* key, int64_t* value, const Range&) {
  out_ << YAML::Key << key << YAML::Value << *value;
}
void YamlWriter::Field(const char* key, uint64_t* value, const Range&) {
  out_ << YAML::Key << key << YAML::Value << *value;
}

void YamlWriter::Field(const char* key, std::optional<uint64_t>* value, const Range&) {
  out_ << YAML::Key << key << YAML::Value;
  if (value->has_value()) {
    out_ << **value;
  } else {
    out_ << YAML::Null;
  }
}

void YamlWriter::Field(const char* key, double* value, const Range&) {
  out_ << YAML::Key << key << YAML::Value << FormatDouble(*value);
}

void YamlWriter::Field(const char* key, std::vector<WeightedSource>* value) {
  out_ << YAML::Key << key << YAML::Value << YAML::BeginSeq;
  for (const WeightedSource& source : *value) {
    out_ << YAML::Flow << YAML::BeginMap << YAML::Key << "path" << YAML::Value << YAML::DoubleQuoted
         << source.path << YAML::Key << "weight" << YAML::Value << FormatDouble(source.weight)
         << YAML::EndMap;
  }
  out_ << YAML::EndSeq;
}

void YamlWriter::Field(const char* key, std::vector<std::string>* value) {
  out_ << YAML::Key << key << YAML::Value << YAML::Flow << YAML::BeginSeq;
  for (const std::string& item : *value) out_ << YAML::DoubleQuoted << item;
  out_ << YAML::EndSeq;
}

void YamlWriter::Field(const char* key, LayerRanges* value, const Range&) {
  out_ << YAML::Key << key << YAML::Value << YAML::Flow << YAML::BeginSeq;
  for (const auto& [first, last] : *value) {
    out_ << YAML::Flow << YAML::BeginSeq << first << last << YAML::EndSeq;
  }
  out_ << YAML::EndSeq;
}

}  // namespace geotrain::runtime
