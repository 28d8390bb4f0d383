// How a task's end becomes its final TaskStatus, and which line of its stderr explains a failure.
//
// Exit 0: SUCCEEDED. Exit 2: FAILED, permanent (the child's code for a bad job file or
// assignment, which a retry cannot fix). Any other code, or a signal the daemon did not send:
// FAILED with exit_code = code or 128 + signal. Ended after a stop order (whatever the way):
// STOPPED. A failure's message is the last error line the child wrote on stderr.
#pragma once

#include <cstdint>
#include <string>

#include "geotrain/v1/job.pb.h"
#include "worker/task_key.h"
#include "worker/task_process.h"

namespace geotrain::worker {

// The spdlog pattern of the task process: level and text only, since the daemon stamps every line
// it forwards with the time, the worker and the rank.
constexpr char kTaskLogPattern[] = "[%l] %v";

// Follows a child's stderr and keeps what best explains a failure: the newest line logged at
// error or critical level (kTaskLogPattern's "[error] text" gives "text"), else the newest
// non-empty line. Not thread-safe; fed by one task's monitor thread.
class StderrErrors {
 public:
  void Add(const std::string& line);
  // "" when the child wrote nothing on stderr.
  std::string Last() const { return last_error_.empty() ? last_line_ : last_error_; }

 private:
  std::string last_error_;
  std::string last_line_;
};

geotrain::v1::TaskStatus EndStatus(const TaskKey& key, const ProcessExit& exit,
                                   const std::string& last_error, int64_t last_step);

}  // namespace geotrain::worker
