// Helpers shared by the worker tests: shell children, waiting for an event with a generous bound
// (a bound only against hangs, never a timing assertion), and the output of one TaskProcess.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <fstream>
#include <functional>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "tests/testing/files_and_ports.h"
#include "worker/task_process.h"

namespace geotrain::worker::testing {

// How long a test waits for something that should happen in milliseconds before calling it hung.
constexpr std::chrono::seconds kPatience{60};

inline ProcessSpec Sh(const std::string& script) {
  return ProcessSpec{{"/bin/sh", "-c", script}, {}, {}};
}

// Polls `done` until it holds or kPatience passes; returns whether it held.
inline bool Eventually(const std::function<bool()>& done) {
  const auto deadline = std::chrono::steady_clock::now() + kPatience;
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}

using ::geotrain::testing::ReadFile;

// Everything one TaskProcess reported, safe to read from the test thread.
class ProcessOutput {
 public:
  TaskProcess::LineCallback OnLine() {
    return [this](OutputStream stream, const std::string& line) {
      std::lock_guard<std::mutex> lock(mu_);
      (stream == OutputStream::kStdout ? out_ : err_).push_back(line);
      cv_.notify_all();
    };
  }
  TaskProcess::ExitCallback OnExit() {
    return [this](const ProcessExit& exit) {
      std::lock_guard<std::mutex> lock(mu_);
      ++exits_;
      exit_ = exit;
      cv_.notify_all();
    };
  }

  // Waits until stdout has a line equal to `line`.
  bool WaitForStdout(const std::string& line) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, kPatience, [&] {
      for (const std::string& l : out_) {
        if (l == line) return true;
      }
      return false;
    });
  }

  std::vector<std::string> out() const {
    std::lock_guard<std::mutex> lock(mu_);
    return out_;
  }
  std::vector<std::string> err() const {
    std::lock_guard<std::mutex> lock(mu_);
    return err_;
  }
  int exits() const {
    std::lock_guard<std::mutex> lock(mu_);
    return exits_;
  }
  ProcessExit exit() const {
    std::lock_guard<std::mutex> lock(mu_);
    return exit_;
  }

 private:
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::string> out_, err_;
  int exits_ = 0;
  ProcessExit exit_;
};

}  // namespace geotrain::worker::testing
