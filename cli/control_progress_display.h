// ProgressDisplay: what `submit --wait` and `status --watch` show while a job runs: one live
// progress line (rewritten in place on a terminal, throttled lines otherwise), event lines as
// they come, and a summary at the end. Called from FollowJob's thread only.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>

#include "cli/control_follow.h"
#include "cli/control_format.h"
#include "common/clock.h"

namespace geotrain::cli {

struct ProgressDisplayOptions {
  // The stream is a terminal: keep one progress line and rewrite it with '\r'.
  bool terminal = false;
  // The terminal's width; the live line is cut to fit so that '\r' can rewrite it (0: unknown).
  int columns = 0;
  // Without a terminal: at most one progress line per interval (0: one per snapshot).
  int64_t min_line_interval_ms = 10'000;
  bool show_events = true;
  TimeZone zone = TimeZone::kLocal;
};

class ProgressDisplay final : public JobUpdateHandler {
 public:
  // Writes to `out`, which must outlive the display; `clock` times the throttling.
  ProgressDisplay(std::ostream& out, ProgressDisplayOptions options, Clock& clock);

  void OnJob(const v1::Job& job) override;
  void OnEvent(const v1::JobEvent& event) override;
  void OnLog(const v1::SequencedLogLine& line) override {}
  void OnStreamBroken(const Status& why, int64_t give_up_after_ms) override;

  // Clears the live line (so that an error can be printed after it).
  void ClearLiveLine();
  // Clears the live line and prints FormatJobSummary(job).
  void Finish(const v1::Job& job);

 private:
  // Prints a whole line, keeping the live line below it on a terminal.
  void PrintLine(const std::string& line);

  std::ostream& out_;
  ProgressDisplayOptions options_;
  Clock& clock_;
  // On a terminal: the progress line now shown (empty: none).
  std::string live_line_;
  // Without a terminal: when the last progress line was printed (-1: never).
  int64_t last_line_ms_ = -1;
};

}  // namespace geotrain::cli
