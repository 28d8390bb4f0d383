#include "worker/task_log.h"

#include <cerrno>
#include <cstring>

namespace geotrain::worker {

StatusOr<std::unique_ptr<TaskLog>> TaskLog::Open(const std::string& path, uint64_t cap_bytes) {
  std::FILE* file = std::fopen(path.c_str(), "ae");  // "e": O_CLOEXEC, no leak into children
  if (file == nullptr) {
    return Unavailable(path + ": cannot open the task log: " + std::strerror(errno));
  }
  std::fseek(file, 0, SEEK_END);
  const long size = std::ftell(file);
  return std::unique_ptr<TaskLog>(
      new TaskLog(file, size > 0 ? static_cast<uint64_t>(size) : 0, cap_bytes));
}

TaskLog::~TaskLog() { std::fclose(file_); }

void TaskLog::Append(const std::string& line) {
  if (full_) return;
  if (size_ + line.size() + 1 > cap_) {
    full_ = true;
    const std::string note = "[geotrain-worker] task.log reached its cap of " +
                             std::to_string(cap_) +
                             " bytes; later lines are not kept here (the coordinator has them)\n";
    std::fwrite(note.data(), 1, note.size(), file_);
    std::fflush(file_);
    return;
  }
  std::fwrite(line.data(), 1, line.size(), file_);
  std::fputc('\n', file_);
  // Flushed per line: someone tailing the file wants to see the step that just finished.
  std::fflush(file_);
  size_ += line.size() + 1;
}

}  // namespace geotrain::worker
