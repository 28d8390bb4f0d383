// workers and links: the commands about the machines.
#include "cli/control_command_support.h"
#include "cli/control_commands.h"
#include "cli/control_tables.h"

namespace geotrain::cli {

int RunWorkersCommand(const ControlOptions& control, const ListOptions& options,
                      CommandContext& context) {
  auto client = ConnectToCoordinator(control, context);
  if (!client.ok()) return ReportFailure(client.status(), context.err);
  const StatusOr<v1::ListWorkersResponse> workers = (*client)->ListWorkers(options.all);
  if (!workers.ok()) return ReportFailure(workers.status(), context.err);
  return PrintAnswer(
      *workers, control.format,
      [&] { return FormatWorkerList(*workers, context.clock.NowUnixMs()); }, context);
}

int RunLinksCommand(const ControlOptions& control, CommandContext& context) {
  auto client = ConnectToCoordinator(control, context);
  if (!client.ok()) return ReportFailure(client.status(), context.err);
  const StatusOr<v1::LinkMatrix> links = (*client)->GetLinks();
  if (!links.ok()) return ReportFailure(links.status(), context.err);
  return PrintAnswer(
      *links, control.format, [&] { return FormatLinkMatrix(*links); }, context);
}

}  // namespace geotrain::cli
