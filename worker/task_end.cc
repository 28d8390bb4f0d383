#include "worker/task_end.h"

#include <string.h>

namespace geotrain::worker {
namespace {

// Messages go to the coordinator's database and the CLI; one line of reasonable size is enough.
constexpr size_t kMaxMessageBytes = 2000;

// The task's log pattern (kTaskLogPattern): "[error] text".
bool ErrorText(const std::string& line, std::string* text) {
  for (const char* level : {"[error] ", "[critical] "}) {
    if (line.rfind(level, 0) == 0) {
      *text = line.substr(strlen(level));
      return true;
    }
  }
  return false;
}

std::string Truncated(std::string text) {
  if (text.size() > kMaxMessageBytes) text = text.substr(0, kMaxMessageBytes) + "...";
  return text;
}

}  // namespace

void StderrErrors::Add(const std::string& line) {
  if (line.find_first_not_of(" \t") == std::string::npos) return;
  last_line_ = line;
  std::string text;
  if (ErrorText(line, &text)) last_error_ = text;
}

geotrain::v1::TaskStatus EndStatus(const TaskKey& key, const ProcessExit& exit,
                                   const std::string& last_error, int64_t last_step) {
  geotrain::v1::TaskStatus status = key.Status(geotrain::v1::TASK_STATE_FAILED);
  status.set_exit_code(exit.code());
  status.set_last_step(last_step);
  if (exit.stop_requested) {
    status.set_state(geotrain::v1::TASK_STATE_STOPPED);
    return status;
  }
  if (exit.signal == 0 && exit.exit_code == 0) {
    status.set_state(geotrain::v1::TASK_STATE_SUCCEEDED);
    return status;
  }
  std::string message;
  if (exit.signal != 0) {
    const char* name = sigabbrev_np(exit.signal);
    message = "killed by signal " + std::to_string(exit.signal) +
              (name != nullptr ? std::string(" (SIG") + name + ")" : std::string());
    if (!last_error.empty()) message += "; last error: " + last_error;
  } else if (exit.exit_code < 0) {
    message = "ended with an unknown status (it was reaped by someone else)";
  } else {
    message =
        last_error.empty() ? "exited with code " + std::to_string(exit.exit_code) : last_error;
    status.set_permanent(exit.exit_code == 2);
  }
  status.set_message(Truncated(message));
  return status;
}

}  // namespace geotrain::worker
