// submit, status, jobs, cancel and logs: the commands about jobs.
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "cli/control_command_support.h"
#include "cli/control_commands.h"
#include "cli/control_format.h"
#include "cli/control_job_state.h"
#include "cli/control_json.h"
#include "cli/control_line_printers.h"
#include "cli/control_progress_display.h"
#include "cli/control_tables.h"
#include "cli/exit_codes.h"
#include "cli/submit_model_shape.h"
#include "common/utf8.h"

namespace geotrain::cli {
namespace {

StatusOr<std::string> ReadJobFile(const std::string& path) {
  const auto cannot_read = [&](int error) {
    const std::string why = path + ": cannot read the job file: " + std::strerror(error);
    return error == ENOENT ? NotFound(why) : InvalidArgument(why);
  };
  std::FILE* file = std::fopen(path.c_str(), "rb");
  if (file == nullptr) return cannot_read(errno);
  std::string text;
  char buffer[1 << 16];
  size_t n;
  while ((n = std::fread(buffer, 1, sizeof(buffer), file)) > 0) text.append(buffer, n);
  const bool failed = std::ferror(file) != 0;
  const int error = errno;
  std::fclose(file);
  if (failed) return cannot_read(error);
  return text;
}

// Follows `job` to its end with a ProgressDisplay on `out`, then prints the summary there.
// Returns the finished job, or the error (the live line cleared, so it prints cleanly).
StatusOr<v1::Job> FollowWithProgress(CoordinatorClient& client, const std::string& job_id,
                                     double reconnect_seconds, std::ostream& out, bool terminal,
                                     int64_t min_line_interval_ms, CommandContext& context) {
  ProgressDisplayOptions display_options;
  display_options.terminal = terminal;
  display_options.columns = context.terminal_columns;
  display_options.min_line_interval_ms = min_line_interval_ms;
  display_options.zone = context.zone;
  ProgressDisplay display(out, display_options, context.clock);
  const StatusOr<FollowResult> result =
      FollowJob(client,
                MakeFollowOptions(job_id, /*follow=*/true, /*events=*/true,
                                  /*logs=*/false, reconnect_seconds),
                display, context.clock);
  if (!result.ok()) {
    display.ClearLiveLine();
    return result.status();
  }
  display.Finish(*result->job);
  return *result->job;
}

}  // namespace

int RunSubmitCommand(const ControlOptions& control, const SubmitOptions& options,
                     CommandContext& context) {
  const StatusOr<std::string> spec = ReadJobFile(options.job_file);
  if (!spec.ok()) return ReportFailure(spec.status(), context.err);
  // Checked here, before anything is sent, so the error names the file (the coordinator
  // refuses it too, for other clients).
  if (const std::string invalid = DescribeInvalidUtf8(*spec); !invalid.empty()) {
    return ReportFailure(InvalidArgument(options.job_file + ": " + invalid +
                                         " (a job spec is a UTF-8 text file; was it saved in "
                                         "another encoding?)"),
                         context.err);
  }
  auto client = ConnectToCoordinator(control, context);
  if (!client.ok()) return ReportFailure(client.status(), context.err);

  v1::SubmitJobRequest request;
  request.set_spec_yaml(*spec);
  // A file name need not be UTF-8; the coordinator puts `source` in its events, which must be.
  if (IsValidUtf8(options.job_file)) request.set_source(options.job_file);
  if (std::optional<v1::ModelShape> shape = SubmitModelShape(*spec)) {
    *request.mutable_model_shape() = *shape;
  }
  const StatusOr<v1::Job> job = (*client)->SubmitJob(request);
  if (!job.ok()) {
    if (job.status().code() == StatusCode::kInvalidArgument) {
      return ReportFailure(InvalidArgument("the coordinator rejected " + options.job_file + ":\n" +
                                           job.status().message()),
                           context.err);
    }
    return ReportFailure(job.status().WithContext("submitting " + options.job_file), context.err);
  }
  if (!options.wait) {
    return PrintAnswer(
        *job, control.format, [&] { return job->id() + "\n"; }, context);
  }

  // The id first, so that a user who stops waiting still knows what to ask about.
  if (control.format == OutputFormat::kTable) context.out << job->id() << std::endl;
  const StatusOr<v1::Job> finished =
      FollowWithProgress(**client, job->id(), options.reconnect_seconds, context.err,
                         context.err_is_terminal, /*min_line_interval_ms=*/10'000, context);
  if (!finished.ok()) return ReportFailure(finished.status(), context.err);
  if (control.format == OutputFormat::kJson) {
    const int code = PrintAnswer(*finished, control.format, nullptr, context);
    if (code != kExitSuccess) return code;
  }
  return FinishedJobExitCode(*finished, context.err);
}

int RunStatusCommand(const ControlOptions& control, const StatusOptions& options,
                     CommandContext& context) {
  auto client = ConnectToCoordinator(control, context);
  if (!client.ok()) return ReportFailure(client.status(), context.err);
  const StatusOr<v1::Job> job = (*client)->GetJob(options.job_id);
  if (!job.ok()) return ReportFailure(job.status(), context.err);
  const int code = PrintAnswer(
      *job, control.format, [&] { return FormatJobStatus(*job); }, context);
  if (code != kExitSuccess || !options.watch) return code;

  if (control.format == OutputFormat::kJson) {
    JobJsonPrinter printer(context.out, context.err, context.zone, context.clock);
    const StatusOr<FollowResult> result =
        FollowJob(**client,
                  MakeFollowOptions(options.job_id, /*follow=*/true, /*events=*/false,
                                    /*logs=*/false, options.reconnect_seconds),
                  printer, context.clock);
    if (!result.ok()) return ReportFailure(result.status(), context.err);
    if (!printer.status().ok()) return kExitFailure;
    return FinishedJobExitCode(*result->job, context.err);
  }
  context.out << "\n";
  const StatusOr<v1::Job> finished =
      FollowWithProgress(**client, options.job_id, options.reconnect_seconds, context.out,
                         context.out_is_terminal, /*min_line_interval_ms=*/0, context);
  if (!finished.ok()) return ReportFailure(finished.status(), context.err);
  return FinishedJobExitCode(*finished, context.err);
}

int RunJobsCommand(const ControlOptions& control, const ListOptions& options,
                   CommandContext& context) {
  auto client = ConnectToCoordinator(control, context);
  if (!client.ok()) return ReportFailure(client.status(), context.err);
  const StatusOr<v1::ListJobsResponse> jobs = (*client)->ListJobs(options.all);
  if (!jobs.ok()) return ReportFailure(jobs.status(), context.err);
  return PrintAnswer(
      *jobs, control.format, [&] { return FormatJobList(*jobs, context.clock.NowUnixMs()); },
      context);
}

int RunCancelCommand(const ControlOptions& control, const std::string& job_id,
                     CommandContext& context) {
  auto client = ConnectToCoordinator(control, context);
  if (!client.ok()) return ReportFailure(client.status(), context.err);
  const StatusOr<v1::Job> job = (*client)->CancelJob(job_id);
  if (!job.ok()) return ReportFailure(job.status(), context.err);
  return PrintAnswer(
      *job, control.format, [&] { return job->id() + " " + JobStateName(job->state()) + "\n"; },
      context);
}

int RunLogsCommand(const ControlOptions& control, const LogsOptions& options,
                   CommandContext& context) {
  auto client = ConnectToCoordinator(control, context);
  if (!client.ok()) return ReportFailure(client.status(), context.err);
  // A unary call first: an unreachable coordinator or unknown job fails at once with its own
  // exit code instead of being retried as a broken stream.
  const StatusOr<v1::Job> job = (*client)->GetJob(options.job_id);
  if (!job.ok()) return ReportFailure(job.status(), context.err);

  LogPrinter printer(context.out, context.err, control.format, context.zone, context.clock);
  const StatusOr<FollowResult> result =
      FollowJob(**client,
                MakeFollowOptions(options.job_id, options.follow, options.events, /*logs=*/true,
                                  options.reconnect_seconds),
                printer, context.clock);
  if (!result.ok()) return ReportFailure(result.status(), context.err);
  return printer.status().ok() ? kExitSuccess : kExitFailure;
}

}  // namespace geotrain::cli
