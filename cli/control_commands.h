// The control-plane commands of `geotrain` (submit, status, jobs, cancel, workers, links, logs,
// steps):
// each asks the coordinator (CoordinatorClient), prints the answer as a table or one JSON line,
// and returns the process's exit code (cli/exit_codes.h), having printed any error on stderr.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>

#include "cli/control_address.h"
#include "cli/control_format.h"
#include "cli/control_steps_format.h"
#include "cli/output_format.h"
#include "common/clock.h"

namespace geotrain::cli {

// Flags every control command takes.
struct ControlOptions {
  // --coordinator HOST:PORT; empty: GEOTRAIN_COORDINATOR, else 127.0.0.1:7070.
  std::string coordinator;
  // -o table|json.
  OutputFormat format = OutputFormat::kTable;
  // --timeout-seconds: the deadline of each request (not of a followed stream).
  double timeout_seconds = 10;
  // --tls-ca, --tls-cert, --tls-key, --admin-token-file (empty: from the environment, or none).
  CredentialFlags credentials;
};

struct SubmitOptions {
  std::string job_file;
  // --wait: follow the job to its end; exit 0 if it succeeded, kExitJobFailed otherwise.
  bool wait = false;
  // --reconnect-seconds: how long to keep trying when the coordinator goes away while following.
  double reconnect_seconds = 120;
};

struct StatusOptions {
  std::string job_id;
  // --watch: print again on every update until the job ends; exit as submit --wait.
  bool watch = false;
  double reconnect_seconds = 120;
};

struct ListOptions {
  // --all: jobs that ended too (jobs), dead workers too (workers).
  bool all = false;
};

struct LogsOptions {
  std::string job_id;
  // -f: keep printing new lines until the job ends.
  bool follow = false;
  // --events: job events between the log lines.
  bool events = false;
  double reconnect_seconds = 120;
};

struct StepsOptions {
  std::string job_id;
  // --after: only the steps after this one (0: every step).
  int64_t after_step = 0;
  // -o table|json|csv (steps has csv, so it does not use ControlOptions::format).
  StepsFormat format = StepsFormat::kTable;
};

// Where a command writes and what it knows of its environment.
struct CommandContext {
  std::ostream& out;
  std::ostream& err;
  Clock& clock;
  bool out_is_terminal = false;
  bool err_is_terminal = false;
  // The terminal's width in columns (0: unknown).
  int terminal_columns = 0;
  // GEOTRAIN_COORDINATOR's value (nullptr: unset).
  const char* coordinator_env = nullptr;
  // GEOTRAIN_TLS_CA, GEOTRAIN_TLS_CERT, GEOTRAIN_TLS_KEY, GEOTRAIN_ADMIN_TOKEN_FILE.
  CredentialEnv credential_env;
  TimeZone zone = TimeZone::kLocal;
};

// std::cout / std::cerr, whether they are terminals, the environment and the real clock.
CommandContext ProcessCommandContext();

int RunSubmitCommand(const ControlOptions& control, const SubmitOptions& options,
                     CommandContext& context);
int RunStatusCommand(const ControlOptions& control, const StatusOptions& options,
                     CommandContext& context);
int RunJobsCommand(const ControlOptions& control, const ListOptions& options,
                   CommandContext& context);
int RunCancelCommand(const ControlOptions& control, const std::string& job_id,
                     CommandContext& context);
int RunWorkersCommand(const ControlOptions& control, const ListOptions& options,
                      CommandContext& context);
int RunLinksCommand(const ControlOptions& control, CommandContext& context);
int RunLogsCommand(const ControlOptions& control, const LogsOptions& options,
                   CommandContext& context);
int RunStepsCommand(const ControlOptions& control, const StepsOptions& options,
                    CommandContext& context);

}  // namespace geotrain::cli
