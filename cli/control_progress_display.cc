#include "cli/control_progress_display.h"

namespace geotrain::cli {
namespace {

// Moves to the start of the line and erases it, so a shorter line leaves nothing behind.
constexpr char kClearLine[] = "\r\x1b[K";

}  // namespace

ProgressDisplay::ProgressDisplay(std::ostream& out, ProgressDisplayOptions options, Clock& clock)
    : out_(out), options_(options), clock_(clock) {}

void ProgressDisplay::OnJob(const v1::Job& job) {
  std::string line = FormatProgressLine(job);
  if (options_.terminal) {
    // One column short: a line that fills the terminal exactly wraps on some terminals.
    if (options_.columns > 1 && line.size() >= static_cast<size_t>(options_.columns)) {
      line.resize(options_.columns - 1);
    }
    live_line_ = line;
    out_ << kClearLine << live_line_ << std::flush;
    return;
  }
  const int64_t now_ms = clock_.NowMonotonicMs();
  if (last_line_ms_ >= 0 && now_ms - last_line_ms_ < options_.min_line_interval_ms) return;
  last_line_ms_ = now_ms;
  out_ << line << std::endl;
}

void ProgressDisplay::OnEvent(const v1::JobEvent& event) {
  if (options_.show_events) PrintLine(FormatEventLine(event, options_.zone));
}

void ProgressDisplay::OnStreamBroken(const Status& why, int64_t give_up_after_ms) {
  PrintLine(FormatStreamBrokenNotice(why, give_up_after_ms, clock_.NowUnixMs(), options_.zone));
}

void ProgressDisplay::PrintLine(const std::string& line) {
  if (options_.terminal && !live_line_.empty()) {
    out_ << kClearLine << line << "\n" << live_line_ << std::flush;
    return;
  }
  out_ << line << std::endl;
}

void ProgressDisplay::ClearLiveLine() {
  if (options_.terminal && !live_line_.empty()) out_ << kClearLine << std::flush;
  live_line_.clear();
}

void ProgressDisplay::Finish(const v1::Job& job) {
  ClearLiveLine();
  out_ << FormatJobSummary(job) << std::endl;
}

}  // namespace geotrain::cli
