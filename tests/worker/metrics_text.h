// Reading Prometheus metrics back in worker tests: a registry (or a /metrics page) as the text
// format Prometheus scrapes, and the value of one series in that text.
#pragma once

#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

#include <map>
#include <optional>
#include <sstream>
#include <string>

namespace geotrain::worker::testing {

using SeriesLabels = std::map<std::string, std::string>;

// What the exposer would serve for `registry`.
inline std::string ScrapeText(prometheus::Registry& registry) {
  std::ostringstream out;
  prometheus::TextSerializer().Serialize(out, registry.Collect());
  return out.str();
}

// The value of the series `name` with exactly `labels` in `text`; nullopt when there is none.
inline std::optional<double> SeriesValue(const std::string& text, const std::string& name,
                                         const SeriesLabels& labels = {}) {
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.empty() || line[0] == '#') continue;
    size_t i = 0;
    while (i < line.size() && line[i] != '{' && line[i] != ' ') ++i;
    if (line.compare(0, i, name) != 0 || i != name.size()) continue;
    SeriesLabels found;
    if (i < line.size() && line[i] == '{') {
      ++i;
      while (i < line.size() && line[i] != '}') {
        const size_t eq = line.find('=', i);
        if (eq == std::string::npos || eq + 1 >= line.size() || line[eq + 1] != '"') break;
        const std::string key = line.substr(i, eq - i);
        std::string value;
        size_t j = eq + 2;
        for (; j < line.size() && line[j] != '"'; ++j) {
          if (line[j] == '\\' && j + 1 < line.size()) ++j;  // \" \\ and \n keep the next char
          value += line[j];
        }
        found[key] = value;
        i = j + 1;
        if (i < line.size() && line[i] == ',') ++i;
      }
      ++i;  // '}'
    }
    if (found != labels) continue;
    try {
      return std::stod(line.substr(i));
    } catch (const std::exception&) {
      return std::nullopt;
    }
  }
  return std::nullopt;
}

}  // namespace geotrain::worker::testing
