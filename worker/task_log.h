// TaskLog: WORK_DIR/tasks/<task>/task.log, every line a task's child wrote (stdout and stderr as
// they arrived), kept on the worker for local inspection. The coordinator gets the same lines;
// this copy is for whoever logs into the machine.
//
// Bounded: once the file reaches its cap (100 MB by default) one last line says so and later
// lines are dropped here. Appends to an existing file (a task restarted under the same key).
// Not thread-safe: one task's monitor thread writes it.
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>

#include "common/status.h"

namespace geotrain::worker {

class TaskLog {
 public:
  static constexpr uint64_t kDefaultCapBytes = 100ull * 1000 * 1000;

  static StatusOr<std::unique_ptr<TaskLog>> Open(const std::string& path,
                                                 uint64_t cap_bytes = kDefaultCapBytes);
  ~TaskLog();
  TaskLog(const TaskLog&) = delete;
  TaskLog& operator=(const TaskLog&) = delete;

  void Append(const std::string& line);

 private:
  TaskLog(std::FILE* file, uint64_t size, uint64_t cap) : file_(file), size_(size), cap_(cap) {}

  std::FILE* file_;
  uint64_t size_;
  const uint64_t cap_;
  bool full_ = false;
};

}  // namespace geotrain::worker
