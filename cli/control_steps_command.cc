// steps: a job's complete steps, the loss curve, as a table, one JSON line or CSV.
#include <string>

#include "cli/control_command_support.h"
#include "cli/control_commands.h"
#include "cli/control_steps_format.h"
#include "cli/exit_codes.h"

namespace geotrain::cli {

int RunStepsCommand(const ControlOptions& control, const StepsOptions& options,
                    CommandContext& context) {
  // The flag parser refuses negative values; a caller that skipped it gets the same answer.
  if (options.after_step < 0) {
    return ReportFailure(
        InvalidArgument("--after: must not be negative, got " + std::to_string(options.after_step)),
        context.err);
  }
  auto client = ConnectToCoordinator(control, context);
  if (!client.ok()) return ReportFailure(client.status(), context.err);
  const StatusOr<v1::JobSteps> steps = (*client)->GetJobSteps(options.job_id, options.after_step);
  if (!steps.ok()) return ReportFailure(steps.status(), context.err);
  switch (options.format) {
    case StepsFormat::kCsv:
      context.out << FormatStepsCsv(*steps) << std::flush;
      return kExitSuccess;
    case StepsFormat::kJson:
      return PrintAnswer(*steps, OutputFormat::kJson, nullptr, context);
    case StepsFormat::kTable:
      break;
  }
  return PrintAnswer(
      *steps, OutputFormat::kTable, [&] { return FormatStepsTable(*steps); }, context);
}

}  // namespace geotrain::cli
