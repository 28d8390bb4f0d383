#include "models/data/source_documents.h"

#include <nlohmann/json.hpp>

#include "common/io/strict_json.h"

namespace geotrain::models::data {
namespace {

bool EndsWith(const std::string& text, std::string_view suffix) {
  return text.size() >= suffix.size() &&
         std::string_view(text).substr(text.size() - suffix.size()) == suffix;
}

Status ForEachJsonlDocument(std::string_view contents, const std::string& path,
                            const std::string& field,
                            const std::function<void(std::string_view)>& on_document) {
  size_t start = 0;
  for (size_t line_number = 1; start < contents.size(); ++line_number) {
    size_t end = contents.find('\n', start);
    if (end == std::string_view::npos) end = contents.size();
    std::string_view line = contents.substr(start, end - start);
    start = end + 1;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    const std::string where = path + ":" + std::to_string(line_number);
    const std::string field_name = "field \"" + field + "\"";
    if (line.find_first_not_of(" \t") == std::string_view::npos) {
      return InvalidArgument(where + ": empty line, expected a JSON object with a string " +
                             field_name);
    }
    auto parsed = io::ParseStrictJson(line, where);
    if (!parsed.ok()) {
      return InvalidArgument(parsed.status().message() + " (expected a JSON object with a string " +
                             field_name + ")");
    }
    const nlohmann::json& object = *parsed;
    if (!object.is_object()) {
      return InvalidArgument(where + ": expected a JSON object with a string " + field_name +
                             ", got " + io::JsonKindName(object));
    }
    const auto it = object.find(field);
    if (it == object.end()) return InvalidArgument(where + ": " + field_name + " is missing");
    if (!it->is_string()) {
      return InvalidArgument(where + ": " + field_name + " must be a string, got " +
                             io::JsonKindName(*it));
    }
    on_document(it->get_ref<const std::string&>());
  }
  return OkStatus();
}

}  // namespace

SourceFormat SourceFormatForPath(const std::string& path) {
  return EndsWith(path, ".jsonl") || EndsWith(path, ".ndjson") ? SourceFormat::kJsonl
                                                               : SourceFormat::kText;
}

const char* SourceFormatName(SourceFormat format) {
  return format == SourceFormat::kJsonl ? "jsonl" : "text";
}

Status ForEachDocument(std::string_view contents, const std::string& path, SourceFormat format,
                       const std::string& field,
                       const std::function<void(std::string_view)>& on_document) {
  if (format == SourceFormat::kText) {
    if (!contents.empty()) on_document(contents);
    return OkStatus();
  }
  if (field.empty()) return InvalidArgument(path + ": the jsonl field name is empty");
  return ForEachJsonlDocument(contents, path, field, on_document);
}

}  // namespace geotrain::models::data
