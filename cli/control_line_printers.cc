#include "cli/control_line_printers.h"

#include "cli/control_json.h"

namespace geotrain::cli {
namespace {

// Prints `message` as a JSON line on `out`, or the error on `err`; keeps the first error.
void WriteJsonLine(const google::protobuf::Message& message, std::ostream& out, std::ostream& err,
                   Status& first_error) {
  const StatusOr<std::string> json = ToJsonLine(message);
  if (json.ok()) {
    out << *json << std::endl;
    return;
  }
  err << "geotrain: " << json.status().ToString() << std::endl;
  if (first_error.ok()) first_error = json.status();
}

}  // namespace

LogPrinter::LogPrinter(std::ostream& out, std::ostream& err, OutputFormat format, TimeZone zone,
                       Clock& clock)
    : out_(out), err_(err), format_(format), zone_(zone), clock_(clock) {}

void LogPrinter::OnEvent(const v1::JobEvent& event) {
  if (format_ == OutputFormat::kTable) {
    out_ << FormatEventLine(event, zone_) << std::endl;
    return;
  }
  v1::JobUpdate update;
  *update.mutable_event() = event;
  WriteJsonLine(update, out_, err_, status_);
}

void LogPrinter::OnLog(const v1::SequencedLogLine& line) {
  if (format_ == OutputFormat::kTable) {
    out_ << FormatLogLine(line.line(), zone_) << std::endl;
    return;
  }
  v1::JobUpdate update;
  *update.mutable_log() = line;
  WriteJsonLine(update, out_, err_, status_);
}

void LogPrinter::OnStreamBroken(const Status& why, int64_t give_up_after_ms) {
  err_ << FormatStreamBrokenNotice(why, give_up_after_ms, clock_.NowUnixMs(), zone_) << std::endl;
}

JobJsonPrinter::JobJsonPrinter(std::ostream& out, std::ostream& err, TimeZone zone, Clock& clock)
    : out_(out), err_(err), zone_(zone), clock_(clock) {}

void JobJsonPrinter::OnJob(const v1::Job& job) { WriteJsonLine(job, out_, err_, status_); }

void JobJsonPrinter::OnStreamBroken(const Status& why, int64_t give_up_after_ms) {
  err_ << FormatStreamBrokenNotice(why, give_up_after_ms, clock_.NowUnixMs(), zone_) << std::endl;
}

}  // namespace geotrain::cli
