// JobUpdateHandlers that print one line per update, for `geotrain logs` and for
// `geotrain status --watch -o json`. Reconnect notices go to the error stream so that the output
// stream stays parseable. Called from FollowJob's thread only.
#pragma once

#include <ostream>

#include "cli/control_follow.h"
#include "cli/control_format.h"
#include "cli/output_format.h"
#include "common/clock.h"

namespace geotrain::cli {

// `geotrain logs`: log lines and events as "[time] w-2 s1r0: text" / FormatEventLine lines, or
// (json) each as its JobUpdate message on one line ({"log": {...}} / {"event": {...}}).
// Job snapshots are not printed.
class LogPrinter final : public JobUpdateHandler {
 public:
  LogPrinter(std::ostream& out, std::ostream& err, OutputFormat format, TimeZone zone,
             Clock& clock);

  void OnJob(const v1::Job& job) override {}
  void OnEvent(const v1::JobEvent& event) override;
  void OnLog(const v1::SequencedLogLine& line) override;
  void OnStreamBroken(const Status& why, int64_t give_up_after_ms) override;

  // The first error writing JSON (printed on the error stream when it happened), or OK.
  const Status& status() const { return status_; }

 private:
  void PrintJson(const v1::JobUpdate& update);

  std::ostream& out_;
  std::ostream& err_;
  OutputFormat format_;
  TimeZone zone_;
  Clock& clock_;
  Status status_;
};

// `geotrain status --watch -o json`: every Job snapshot as one line, like `status -o json`.
class JobJsonPrinter final : public JobUpdateHandler {
 public:
  JobJsonPrinter(std::ostream& out, std::ostream& err, TimeZone zone, Clock& clock);

  void OnJob(const v1::Job& job) override;
  void OnEvent(const v1::JobEvent& event) override {}
  void OnLog(const v1::SequencedLogLine& line) override {}
  void OnStreamBroken(const Status& why, int64_t give_up_after_ms) override;

  const Status& status() const { return status_; }

 private:
  std::ostream& out_;
  std::ostream& err_;
  TimeZone zone_;
  Clock& clock_;
  Status status_;
};

}  // namespace geotrain::cli
