#include "common/weighted_source_list.h"

#include <cmath>
#include <cstdlib>
#include <unordered_set>

namespace geotrain {
namespace {

std::string DescribeEntry(size_t index, std::string_view entry) {
  return "data source entry " + std::to_string(index) + " \"" + std::string(entry) + "\"";
}

bool IsValidWeight(double weight) { return std::isfinite(weight) && weight > 0; }

// Parses the whole of `text` as a number; false for "", "1x", " 1".
bool ParseWholeDouble(const std::string& text, double* value) {
  if (text.empty() || std::isspace(static_cast<unsigned char>(text[0]))) return false;
  char* end = nullptr;
  *value = std::strtod(text.c_str(), &end);
  return end == text.c_str() + text.size();
}

}  // namespace

Status NormaliseSourceWeights(std::vector<WeightedSource>* sources) {
  if (sources->empty()) return InvalidArgument("data sources: none given");
  double total = 0;
  std::unordered_set<std::string> seen;
  for (size_t i = 0; i < sources->size(); ++i) {
    const WeightedSource& source = (*sources)[i];
    if (source.path.empty()) return InvalidArgument(DescribeEntry(i, source.path) + ": empty path");
    if (!IsValidWeight(source.weight)) {
      return InvalidArgument(DescribeEntry(i, source.path) + ": weight " +
                             std::to_string(source.weight) + " is not a finite number > 0");
    }
    if (!seen.insert(source.path).second) {
      return InvalidArgument(DescribeEntry(i, source.path) + ": path listed twice");
    }
    total += source.weight;
  }
  if (!std::isfinite(total)) return InvalidArgument("data sources: the weights overflow");
  for (WeightedSource& source : *sources) source.weight /= total;
  return OkStatus();
}

StatusOr<std::vector<WeightedSource>> ParseWeightedSourceList(std::string_view spec) {
  std::vector<WeightedSource> sources;
  size_t start = 0;
  for (size_t index = 0;; ++index) {
    const size_t comma = spec.find(',', start);
    const std::string_view entry = spec.substr(
        start, comma == std::string_view::npos ? std::string_view::npos : comma - start);
    if (entry.empty()) return InvalidArgument(DescribeEntry(index, entry) + ": empty entry");
    WeightedSource source;
    const size_t colon = entry.rfind(':');
    if (colon == std::string_view::npos) {
      source.path = std::string(entry);
    } else {
      source.path = std::string(entry.substr(0, colon));
      const std::string weight_text(entry.substr(colon + 1));
      if (!ParseWholeDouble(weight_text, &source.weight) || !IsValidWeight(source.weight)) {
        return InvalidArgument(DescribeEntry(index, entry) + ": weight \"" + weight_text +
                               "\" is not a finite number > 0");
      }
    }
    if (source.path.empty()) return InvalidArgument(DescribeEntry(index, entry) + ": empty path");
    sources.push_back(std::move(source));
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  GEOTRAIN_RETURN_IF_ERROR(NormaliseSourceWeights(&sources));
  return sources;
}

}  // namespace geotrain
