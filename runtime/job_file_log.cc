#include "runtime/job_file_log.h"

#include <algorithm>

namespace geotrain::runtime {

bool IsWithin(const std::string& path, const std::string& ancestor) {
  return path.size() > ancestor.size() && path.compare(0, ancestor.size(), ancestor) == 0 &&
         (path[ancestor.size()] == '.' || path[ancestor.size()] == '[');
}

bool Related(const std::string& a, const std::string& b) {
  return a == b || IsWithin(a, b) || IsWithin(b, a);
}

void JobFileLog::Fail(const std::string& path, int line, std::string message) {
  problems_.push_back({line, std::move(message)});
  failed_.push_back(path);
}

bool JobFileLog::Failed(const std::string& path) const {
  for (const std::string& failed : failed_) {
    if (Related(path, failed)) return true;
  }
  return false;
}

std::string JobFileLog::LineSuffix(const std::string& path) const {
  const auto it = lines_.find(path);
  return it == lines_.end() ? "" : " (line " + std::to_string(it->second) + ")";
}

std::vector<std::string> JobFileLog::Problems() const {
  std::vector<std::pair<int, std::string>> sorted = problems_;
  std::stable_sort(sorted.begin(), sorted.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<std::string> messages;
  for (auto& [line, message] : sorted) messages.push_back(std::move(message));
  return messages;
}

}  // namespace geotrain::runtime
