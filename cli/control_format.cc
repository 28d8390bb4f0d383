#include "cli/control_format.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>

#include "cli/control_job_state.h"

namespace geotrain::cli {
std::string FormatNumber(const char* format, double value) {
  char buffer[64];
  std::snprintf(buffer, sizeof(buffer), format, value);
  return buffer;
}

namespace {

// `value` scaled by powers of 1000 to the largest of the 5 suffixes it reaches, with one decimal
// below 100 of it.
std::string Scaled(double value, const char* const (&suffixes)[5], const char* separator) {
  if (!std::isfinite(value)) return "-";
  const bool negative = value < 0;
  double magnitude = std::fabs(value);
  int unit = 0;
  while (magnitude >= 999.5 && unit < 4) {
    magnitude /= 1000.0;
    ++unit;
  }
  std::string number;
  if (unit == 0) {
    number = FormatNumber("%.0f", magnitude);
  } else {
    number = FormatNumber(magnitude < 99.95 ? "%.1f" : "%.0f", magnitude);
  }
  return (negative ? "-" : "") + number + separator + suffixes[unit];
}

std::string Loss(double loss) { return FormatNumber("%.3f", loss); }
std::string EvalLoss(double loss) { return FormatNumber("%.2f", loss); }

std::string Plural(int64_t n, const std::string& word) {
  return std::to_string(n) + " " + word + (n == 1 ? "" : "s");
}

// Seconds the job ran (or has run until it finished), 0 when the timestamps do not say.
double RunSeconds(const v1::Job& job) {
  const int64_t start = job.started_unix_ms() > 0 ? job.started_unix_ms() : job.submitted_unix_ms();
  if (start <= 0 || job.finished_unix_ms() < start) return 0;
  return (job.finished_unix_ms() - start) / 1000.0;
}

}  // namespace

std::string FormatBytes(double bytes) {
  static const char* const kUnits[5] = {"B", "kB", "MB", "GB", "TB"};
  return Scaled(bytes, kUnits, " ");
}

std::string FormatByteRate(double bytes_per_second) { return FormatBytes(bytes_per_second) + "/s"; }

std::string FormatCount(double value) {
  static const char* const kSuffixes[5] = {"", "k", "M", "G", "T"};
  return Scaled(value, kSuffixes, "");
}

std::string FormatDuration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "-";
  const int64_t total = static_cast<int64_t>(std::llround(seconds));
  const int64_t hours = total / 3600;
  const int64_t minutes = total / 60 % 60;
  const int64_t secs = total % 60;
  char buffer[64];
  if (hours > 0) {
    std::snprintf(buffer, sizeof(buffer), "%lld:%02lld:%02lld", static_cast<long long>(hours),
                  static_cast<long long>(minutes), static_cast<long long>(secs));
  } else {
    std::snprintf(buffer, sizeof(buffer), "%lld:%02lld", static_cast<long long>(minutes),
                  static_cast<long long>(secs));
  }
  return buffer;
}

std::string FormatAge(int64_t then_unix_ms, int64_t now_unix_ms) {
  if (then_unix_ms <= 0) return "-";
  // A clock a little ahead of ours is not a negative age.
  const int64_t seconds = std::max<int64_t>(0, (now_unix_ms - then_unix_ms) / 1000);
  if (seconds < 60) return std::to_string(seconds) + "s";
  if (seconds < 3600) return std::to_string(seconds / 60) + "m";
  if (seconds < 86400) return std::to_string(seconds / 3600) + "h";
  return std::to_string(seconds / 86400) + "d";
}

std::string FormatClockTime(int64_t unix_ms, TimeZone zone) {
  const std::time_t seconds = static_cast<std::time_t>(unix_ms / 1000);
  std::tm parts{};
  if (zone == TimeZone::kUtc) {
    gmtime_r(&seconds, &parts);
  } else {
    localtime_r(&seconds, &parts);
  }
  char buffer[16];
  std::strftime(buffer, sizeof(buffer), "%H:%M:%S", &parts);
  return buffer;
}

std::string FormatCompressionRatio(uint64_t raw_bytes, uint64_t wire_bytes) {
  if (wire_bytes == 0) return "-";
  return FormatNumber("%.1fx", static_cast<double>(raw_bytes) / static_cast<double>(wire_bytes));
}

std::string FormatStepOfTotal(const v1::JobProgress& progress) {
  return std::to_string(progress.step()) + "/" +
         (progress.total_steps() > 0 ? std::to_string(progress.total_steps()) : "?");
}

std::string FormatProgressLine(const v1::Job& job) {
  const v1::JobProgress& progress = job.progress();
  std::string line = job.id() + " " + JobStateName(job.state());
  if (progress.step() > 0 || progress.total_steps() > 0) {
    line += " step " + FormatStepOfTotal(progress);
  }
  if (progress.step() > 0) line += " loss " + Loss(progress.loss());
  if (progress.eval_step() > 0) line += " eval " + EvalLoss(progress.eval_loss());
  if (progress.has_eval_scores()) {
    line += FormatNumber(" acc %.3f", progress.eval_scores().accuracy());
  }
  if (progress.tokens_per_second() > 0) {
    line += " | " + FormatCount(progress.tokens_per_second()) + " tok/s";
  }
  if (progress.wire_bytes_per_second() > 0) {
    line += " | wire " + FormatByteRate(progress.wire_bytes_per_second());
  }
  if (progress.eta_seconds() > 0 && !IsFinishedJobState(job.state())) {
    line += " | ETA " + FormatDuration(progress.eta_seconds());
  }
  if (!job.waiting_for().empty()) line += " | waiting for " + job.waiting_for();
  return line;
}

std::string FormatEventLine(const v1::JobEvent& event, TimeZone zone) {
  std::string line = "[" + FormatClockTime(event.unix_ms(), zone) + "] " + event.job_id();
  if (event.state() != v1::JOB_STATE_UNSPECIFIED) line += " " + JobStateName(event.state());
  if (!event.text().empty()) line += ": " + event.text();
  return line;
}

std::string FormatLogLine(const v1::LogLine& line, TimeZone zone) {
  return "[" + FormatClockTime(line.unix_ms(), zone) + "] " + line.worker_id() + " s" +
         std::to_string(line.stage()) + "r" + std::to_string(line.replica()) + ": " + line.text();
}

std::string FormatJobSummary(const v1::Job& job) {
  const v1::JobProgress& progress = job.progress();
  std::string line = job.id() + " " + JobStateName(job.state());
  const double seconds = RunSeconds(job);
  if (seconds > 0) line += " after " + FormatDuration(seconds);
  line += ": step " + FormatStepOfTotal(progress);
  if (progress.step() > 0) {
    line += ", loss " + Loss(progress.first_loss()) + " -> " + Loss(progress.loss());
  }
  if (progress.eval_step() > 0) line += ", eval " + EvalLoss(progress.eval_loss());
  if (progress.has_eval_scores()) {
    const v1::EvalScores& scores = progress.eval_scores();
    line += FormatNumber(" (accuracy %.3f", scores.accuracy()) +
            FormatNumber(", F1 %.3f", scores.f1()) + FormatNumber(", MCC %.3f)", scores.mcc());
  }
  if (progress.wire_bytes() > 0) {
    line += ", wire " + FormatBytes(static_cast<double>(progress.wire_bytes())) + " of " +
            FormatBytes(static_cast<double>(progress.raw_bytes())) + " raw (" +
            FormatCompressionRatio(progress.raw_bytes(), progress.wire_bytes()) + ")";
  }
  if (job.restarts() > 0) line += ", " + Plural(job.restarts(), "restart");
  if (job.steps_lost() > 0) line += ", " + Plural(job.steps_lost(), "step") + " lost";
  return line;
}

std::string FormatStreamBrokenNotice(const Status& why, int64_t give_up_after_ms,
                                     int64_t now_unix_ms, TimeZone zone) {
  return "[" + FormatClockTime(now_unix_ms, zone) + "] lost the stream (" + why.ToString() +
         "); reconnecting for up to " + FormatDuration(give_up_after_ms / 1000.0);
}

}  // namespace geotrain::cli
