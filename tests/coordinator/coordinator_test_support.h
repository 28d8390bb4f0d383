// Shared pieces of the coordinator tests: a temporary directory, a SessionSink that records what
// the core sends, and small job YAMLs.
#pragma once

#include <stdlib.h>

#include <filesystem>
#include <mutex>
#include <string>
#include <vector>

#include "coordinator/session_sink.h"
#include "geotrain/v1/coordinator.pb.h"

namespace geotrain::coordinator::testing {

// A fresh directory under the system temp dir, removed with everything in it on destruction.
class TempDir {
 public:
  TempDir() {
    std::string pattern =
        (std::filesystem::temp_directory_path() / "geotrain-coordinator-test-XXXXXX").string();
    if (mkdtemp(pattern.data()) == nullptr) std::abort();
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// The down direction of a worker's session as a list, for asserting on what the core sent.
class RecordingSession final : public SessionSink {
 public:
  void Send(const v1::CoordinatorMessage& message) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (!closed_) messages_.push_back(message);
  }
  void Close() override {
    std::lock_guard<std::mutex> lock(mu_);
    closed_ = true;
  }
  bool closed() const {
    std::lock_guard<std::mutex> lock(mu_);
    return closed_;
  }
  // Everything received since the last Take().
  std::vector<v1::CoordinatorMessage> Take() {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<v1::CoordinatorMessage> taken;
    taken.swap(messages_);
    return taken;
  }

 private:
  mutable std::mutex mu_;
  std::vector<v1::CoordinatorMessage> messages_;
  bool closed_ = false;
};

// A valid job of `stages` x `replicas` ranks (docs/job-spec.md). The coordinator only parses it,
// so the paths need not exist.
inline std::string TinyJobYaml(int stages, int replicas, int max_restarts = 3, int steps = 20) {
  return "name: tiny\n"
         "model:\n"
         "  dir: /nonexistent/gpt2-tiny\n"
         "data:\n"
         "  train: [\"examples/data/shakespeare/train.txt\"]\n"
         "  seq_length: 16\n"
         "pipeline:\n"
         "  stages: " +
         std::to_string(stages) +
         "\n"
         "  micro_batch_size: 2\n"
         "  micro_batches: 4\n"
         "data_parallel:\n"
         "  replicas: " +
         std::to_string(replicas) +
         "\n"
         "training:\n"
         "  steps: " +
         std::to_string(steps) +
         "\n"
         "  max_restarts: " +
         std::to_string(max_restarts) + "\n";
}

}  // namespace geotrain::coordinator::testing
