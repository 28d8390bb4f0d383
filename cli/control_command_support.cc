#include "cli/control_command_support.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <iostream>

#include "cli/control_channel.h"
#include "cli/control_job_state.h"
#include "cli/control_json.h"
#include "cli/exit_codes.h"

namespace geotrain::cli {

CommandContext ProcessCommandContext() {
  CommandContext context{std::cout, std::cerr, RealClock()};
  context.out_is_terminal = ::isatty(STDOUT_FILENO) == 1;
  context.err_is_terminal = ::isatty(STDERR_FILENO) == 1;
  winsize size{};
  const int fd = context.err_is_terminal ? STDERR_FILENO : STDOUT_FILENO;
  if (::ioctl(fd, TIOCGWINSZ, &size) == 0) context.terminal_columns = size.ws_col;
  context.coordinator_env = std::getenv(kCoordinatorEnvVar);
  context.credential_env.tls_ca = std::getenv(kTlsCaEnvVar);
  context.credential_env.tls_cert = std::getenv(kTlsCertEnvVar);
  context.credential_env.tls_key = std::getenv(kTlsKeyEnvVar);
  context.credential_env.admin_token_file = std::getenv(kAdminTokenEnvVar);
  return context;
}

bool IsUnauthenticated(const Status& status) {
  return status.code() == StatusCode::kUnauthenticated;
}

int ReportFailure(const Status& status, std::ostream& err) {
  const std::string text = status.ToString();
  size_t begin = 0;
  bool first = true;
  while (begin <= text.size()) {
    const size_t end = text.find('\n', begin);
    const std::string line = text.substr(begin, end == std::string::npos ? end : end - begin);
    if (first || !line.empty()) err << (first ? "geotrain: " : "  ") << line << "\n";
    first = false;
    if (end == std::string::npos) break;
    begin = end + 1;
  }
  if (IsUnauthenticated(status)) {
    err << "  (the coordinator wants the admin token: --admin-token-file or " << kAdminTokenEnvVar
        << ", over TLS: --tls-ca or " << kTlsCaEnvVar << ")\n";
    err.flush();
    return kExitUnauthenticated;
  }
  err.flush();
  return status.code() == StatusCode::kUnavailable ? kExitUnreachable : kExitFailure;
}

StatusOr<std::unique_ptr<CoordinatorClient>> ConnectToCoordinator(const ControlOptions& control,
                                                                  const CommandContext& context) {
  GEOTRAIN_ASSIGN_OR_RETURN(
      CoordinatorAddress address,
      ResolveCoordinatorAddress(control.coordinator, context.coordinator_env));
  if (!(control.timeout_seconds > 0)) {
    return InvalidArgument("--timeout-seconds: must be positive, got " +
                           std::to_string(control.timeout_seconds));
  }
  GEOTRAIN_ASSIGN_OR_RETURN(auth::ClientCredentialFiles files,
                            ResolveCredentialFiles(control.credentials, context.credential_env));
  GEOTRAIN_ASSIGN_OR_RETURN(std::shared_ptr<grpc::ChannelCredentials> credentials,
                            auth::MakeChannelCredentials(files));
  std::shared_ptr<grpc::Channel> channel =
      CreateCoordinatorChannel(address, std::move(credentials));
  const int64_t timeout_ms = std::llround(control.timeout_seconds * 1000.0);
  return std::make_unique<CoordinatorClient>(std::move(address), std::move(channel), timeout_ms);
}

int PrintAnswer(const google::protobuf::Message& message, OutputFormat format,
                const std::function<std::string()>& table, CommandContext& context) {
  if (format == OutputFormat::kTable) {
    context.out << table() << std::flush;
    return kExitSuccess;
  }
  const StatusOr<std::string> json = ToJsonLine(message);
  if (!json.ok()) return ReportFailure(json.status(), context.err);
  context.out << *json << std::endl;
  return kExitSuccess;
}

FollowOptions MakeFollowOptions(const std::string& job_id, bool follow, bool events, bool logs,
                                double reconnect_seconds) {
  FollowOptions options;
  options.request.set_job_id(job_id);
  options.request.set_follow(follow);
  options.request.set_include_events(events);
  options.request.set_include_logs(logs);
  options.reconnect_ms = std::llround(std::max(0.0, reconnect_seconds) * 1000.0);
  return options;
}

int FinishedJobExitCode(const v1::Job& job, std::ostream& err) {
  if (job.state() == v1::JOB_STATE_SUCCEEDED) return kExitSuccess;
  err << "geotrain: " << job.id() << " " << JobStateName(job.state())
      << (job.message().empty() ? std::string() : ": " + job.message()) << std::endl;
  return kExitJobFailed;
}

}  // namespace geotrain::cli
