#include "models/data/classification_set.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <map>
#include <string_view>

#include "common/io/file_contents.h"
#include "common/io/strict_json.h"
#include "models/data/sample_id.h"

namespace geotrain::models::data {
namespace {

using json = nlohmann::json;

constexpr size_t kMaxFileBytes = size_t{1} << 34;

// One example as read: its texts and label, where it came from (for errors).
struct RawExample {
  std::string text;
  std::string pair;
  int32_t label = 0;
};

struct SpecialTokens {
  uint32_t cls = 0, sep = 0, pad = 0;
};

StatusOr<SpecialTokens> FindSpecialTokens(const Tokenizer& tokenizer) {
  const auto id = [&](std::initializer_list<const char*> names) -> std::optional<uint32_t> {
    for (const char* name : names) {
      if (std::optional<int32_t> found = tokenizer.TokenId(name)) return *found;
    }
    return std::nullopt;
  };
  const std::optional<uint32_t> cls = id({"[CLS]", "<s>", "<|endoftext|>"});
  const std::optional<uint32_t> sep = id({"[SEP]", "</s>", "<|endoftext|>"});
  if (!cls || !sep) {
    return InvalidArgument(
        "tokenizer: has none of [CLS]/<s>/<|endoftext|> and [SEP]/</s>/<|endoftext|> to frame "
        "a classification example");
  }
  const std::optional<uint32_t> pad = id({"[PAD]", "<pad>"});
  return SpecialTokens{*cls, *sep, pad ? *pad : *sep};
}

bool ParseIndex(const std::string& text, int64_t* value) {
  if (text.empty() || text[0] < '0' || text[0] > '9') return false;
  char* end = nullptr;
  errno = 0;
  *value = std::strtoll(text.c_str(), &end, 10);
  return errno == 0 && end == text.c_str() + text.size();
}

class ExampleReader {
 public:
  ExampleReader(const ClassificationOptions& options, std::string path)
      : options_(options), path_(std::move(path)) {}

  Status Error(size_t line, const std::string& field, const std::string& reason) const {
    return InvalidArgument(path_ + ":" + std::to_string(line) + ": " + field + ": " + reason);
  }

  // An integer in range, a string naming a label, or a string holding an integer.
  StatusOr<int32_t> Label(size_t line, const std::string& text, bool was_string) const {
    const std::string& field = options_.label_field;
    const auto named = std::find(options_.label_names.begin(), options_.label_names.end(), text);
    if (was_string && named != options_.label_names.end()) {
      return static_cast<int32_t>(named - options_.label_names.begin());
    }
    int64_t value = 0;
    if (!ParseIndex(text, &value)) {
      return Error(line, field,
                   "\"" + text + "\" is " +
                       (options_.label_names.empty()
                            ? "not an integer label (give data.labels to name string labels)"
                            : "not one of data.labels"));
    }
    if (value >= options_.num_labels) {
      return Error(line, field,
                   std::to_string(value) + " is outside [0, " +
                       std::to_string(options_.num_labels) + ") (the model's num_labels)");
    }
    return static_cast<int32_t>(value);
  }

  StatusOr<RawExample> FromJson(size_t line, std::string_view text) const {
    const std::string where = path_ + ":" + std::to_string(line);
    GEOTRAIN_ASSIGN_OR_RETURN(json object, io::ParseStrictJson(std::string(text), where));
    if (!object.is_object()) return Error(line, "(line)", "expected a JSON object");
    RawExample example;
    const auto string_field = [&](const std::string& field, std::string* out) -> Status {
      if (!object.contains(field)) return Error(line, field, "missing");
      if (!object[field].is_string()) return Error(line, field, "expected a string");
      *out = object[field].get<std::string>();
      return OkStatus();
    };
    GEOTRAIN_RETURN_IF_ERROR(string_field(options_.text_field, &example.text));
    if (!options_.pair_field.empty()) {
      GEOTRAIN_RETURN_IF_ERROR(string_field(options_.pair_field, &example.pair));
    }
    if (!object.contains(options_.label_field)) return Error(line, options_.label_field, "missing");
    const json& label = object[options_.label_field];
    if (label.is_number_integer()) {
      GEOTRAIN_ASSIGN_OR_RETURN(example.label, Label(line, label.dump(), false));
    } else if (label.is_string()) {
      GEOTRAIN_ASSIGN_OR_RETURN(example.label, Label(line, label.get<std::string>(), true));
    } else {
      return Error(line, options_.label_field, "expected an integer or a string");
    }
    return example;
  }

  // Which column holds each field: from the header row, or the fields are column numbers.
  Status TsvColumns(const std::vector<std::string>* header) {
    const std::vector<std::string> fields = {options_.text_field, options_.pair_field,
                                             options_.label_field};
    for (size_t i = 0; i < fields.size(); ++i) {
      int64_t column = -1;
      if (fields[i].empty()) {
      } else if (header == nullptr) {
        ParseIndex(fields[i], &column);
      } else {
        const auto it = std::find(header->begin(), header->end(), fields[i]);
        if (it == header->end()) return Error(1, fields[i], "no such column in the header");
        column = it - header->begin();
      }
      columns_[i] = column;
    }
    return OkStatus();
  }

  StatusOr<RawExample> FromTsv(size_t line, const std::vector<std::string>& cells) const {
    const char* names[] = {"text", "pair", "label"};
    const std::vector<std::string> fields = {options_.text_field, options_.pair_field,
                                             options_.label_field};
    std::string values[3];
    for (size_t i = 0; i < 3; ++i) {
      if (columns_[i] < 0) continue;
      if (static_cast<size_t>(columns_[i]) >= cells.size()) {
        return Error(line, fields[i],
                     std::string("the row has ") + std::to_string(cells.size()) + " columns, the " +
                         names[i] + " is in column " + std::to_string(columns_[i]));
      }
      values[i] = cells[static_cast<size_t>(columns_[i])];
    }
    RawExample example{values[0], values[1], 0};
    GEOTRAIN_ASSIGN_OR_RETURN(example.label, Label(line, values[2], true));
    return example;
  }

 private:
  const ClassificationOptions& options_;
  std::string path_;
  int64_t columns_[3] = {-1, -1, -1};  // text, pair, label
};

std::vector<std::string> SplitTabs(std::string_view row) {
  std::vector<std::string> cells;
  size_t start = 0;
  while (true) {
    const size_t tab = row.find('\t', start);
    cells.emplace_back(row.substr(start, tab == std::string_view::npos ? row.npos : tab - start));
    if (tab == std::string_view::npos) return cells;
    start = tab + 1;
  }
}

bool IsTsv(const std::string& path) {
  return path.size() >= 4 && path.compare(path.size() - 4, 4, ".tsv") == 0;
}

StatusOr<std::vector<RawExample>> ReadExamples(const ClassificationOptions& options,
                                               const std::string& path) {
  GEOTRAIN_ASSIGN_OR_RETURN(std::string contents, io::ReadFileContents(path, kMaxFileBytes));
  ExampleReader reader(options, path);
  const bool tsv = IsTsv(path);
  int64_t unused = 0;
  const bool headerless = tsv && ParseIndex(options.text_field, &unused);
  std::vector<RawExample> examples;
  size_t start = 0, line = 0;
  bool header_read = !tsv || headerless;
  if (headerless) GEOTRAIN_RETURN_IF_ERROR(reader.TsvColumns(nullptr));
  while (start < contents.size()) {
    size_t end = contents.find('\n', start);
    if (end == std::string::npos) end = contents.size();
    std::string_view row(contents.data() + start, end - start);
    if (!row.empty() && row.back() == '\r') row.remove_suffix(1);
    start = end + 1;
    ++line;
    if (row.empty()) return reader.Error(line, "(line)", "empty line");
    if (!header_read) {
      const std::vector<std::string> header = SplitTabs(row);
      GEOTRAIN_RETURN_IF_ERROR(reader.TsvColumns(&header));
      header_read = true;
      continue;
    }
    StatusOr<RawExample> example =
        tsv ? reader.FromTsv(line, SplitTabs(row)) : reader.FromJson(line, row);
    if (!example.ok()) return example.status();
    examples.push_back(std::move(example).value());
  }
  if (examples.empty()) return InvalidArgument(path + ": no examples");
  return examples;
}

}  // namespace

StatusOr<ClassificationExample> ClassificationSet::Example(uint64_t sample_id) const {
  const uint64_t source = SampleIdSource(sample_id), index = SampleIdBlock(sample_id);
  if (source >= examples_.size() || index >= examples_[source].size()) {
    return OutOfRange("sample id " + std::to_string(sample_id) + " names no example");
  }
  return examples_[source][index];
}

StatusOr<std::unique_ptr<ClassificationSet>> OpenClassificationSet(
    const ClassificationOptions& options, const Tokenizer& tokenizer) {
  if (options.seq_length < 3 || options.num_labels < 2 || options.text_field.empty() ||
      options.label_field.empty()) {
    return InvalidArgument("classification data: seq_length " + std::to_string(options.seq_length) +
                           " (>= 3), num_labels " + std::to_string(options.num_labels) +
                           " (>= 2) and the text and label fields are needed");
  }
  if (!options.label_names.empty() &&
      static_cast<int64_t>(options.label_names.size()) != options.num_labels) {
    return InvalidArgument("data.labels: " + std::to_string(options.label_names.size()) +
                           " names for a model of " + std::to_string(options.num_labels) +
                           " labels");
  }
  GEOTRAIN_ASSIGN_OR_RETURN(SpecialTokens special, FindSpecialTokens(tokenizer));
  const size_t seq = static_cast<size_t>(options.seq_length);
  std::unique_ptr<ClassificationSet> set(new ClassificationSet());
  set->num_labels_ = options.num_labels;
  std::vector<std::unique_ptr<TokenizedSource>> rows;
  std::vector<double> weights;
  for (const WeightedSource& source : options.sources) {
    GEOTRAIN_ASSIGN_OR_RETURN(std::vector<RawExample> raw, ReadExamples(options, source.path));
    std::vector<uint32_t> ids;
    ids.reserve(raw.size() * seq);
    std::vector<ClassificationExample> examples;
    for (const RawExample& example : raw) {
      std::vector<int32_t> a = tokenizer.EncodeOrdinary(example.text);
      std::vector<int32_t> b;
      if (!options.pair_field.empty()) b = tokenizer.EncodeOrdinary(example.pair);
      // Longest first, as transformers' default truncation.
      const size_t specials = options.pair_field.empty() ? 2 : 3;
      while (a.size() + b.size() + specials > seq) (a.size() >= b.size() ? a : b).pop_back();
      const size_t row_start = ids.size();
      ids.push_back(special.cls);
      ids.insert(ids.end(), a.begin(), a.end());
      ids.push_back(special.sep);
      const uint32_t first_segment = static_cast<uint32_t>(ids.size() - row_start);
      if (!options.pair_field.empty()) {
        ids.insert(ids.end(), b.begin(), b.end());
        ids.push_back(special.sep);
      }
      const uint32_t length = static_cast<uint32_t>(ids.size() - row_start);
      ids.resize(row_start + seq, special.pad);
      examples.push_back({length, first_segment, example.label});
    }
    rows.push_back(TokenizedSource::FromTokens(source.path, std::move(ids)));
    weights.push_back(source.weight);
    set->examples_.push_back(std::move(examples));
  }
  GEOTRAIN_ASSIGN_OR_RETURN(set->dataset_,
                            DatasetOfRows(std::move(rows), std::move(weights), options.seq_length));
  return set;
}

}  // namespace geotrain::models::data
