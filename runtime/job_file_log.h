// JobFileLog: what reading a job file found, by key path ("compression.forward.bits"): every
// problem with its line, and the line of every key, so that a check made after reading can say
// where the value it checks was written, and can be skipped when that value failed to read.
//
// Key paths join mapping keys with '.' and sequence indices with "[i]". IsWithin and Related
// compare them; the job spec's checks use them to report each mistake once.
//
// LibTorch-free (library geotrain_runtime_config). Plain value; not thread-safe (one reader fills
// it, then it is read).
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace geotrain::runtime {

// Whether `path` lies inside `ancestor`: "data.train[0]" and "data.train.x" inside "data.train".
bool IsWithin(const std::string& path, const std::string& ancestor);
// Whether one path is the other or inside it: "data.train" and "data.train[0].path" are related.
bool Related(const std::string& a, const std::string& b);

class JobFileLog {
 public:
  // A value at `path` that could not be read (it keeps its default). `line` is 1-based, -1 when
  // unknown; `message` is the whole problem, path and line included.
  void Fail(const std::string& path, int line, std::string message);
  // `path` was written at `line` (1-based).
  void NoteLine(const std::string& path, int line) { lines_.emplace(path, line); }
  size_t problem_count() const { return problems_.size(); }

  // Whether `path` failed to read, or lies inside or around something that did.
  bool Failed(const std::string& path) const;
  // " (line 12)" when `path` was written in the file, else "".
  std::string LineSuffix(const std::string& path) const;
  // The problems' messages in the order of the file.
  std::vector<std::string> Problems() const;

 private:
  std::vector<std::pair<int, std::string>> problems_;  // (line, "path (line N): reason")
  std::vector<std::string> failed_;
  std::map<std::string, int> lines_;  // key path -> 1-based line
};

}  // namespace geotrain::runtime
