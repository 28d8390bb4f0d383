// geotrain: the command-line program. This file only declares the flags and calls the commands
// (cli/*_command.h); exit codes are in cli/exit_codes.h and cli/README.md.
//
// Local commands: tokenize, eval, model init, model import, checkpoint merge. Control-plane
// commands (cli/control_commands.h): submit, status, jobs, cancel, workers, links, logs, steps;
// they share --coordinator, -o table|json (steps: also csv) and --timeout-seconds.
#include <CLI/CLI.hpp>

#include <iostream>

#include "cli/certs_command.h"
#include "cli/checkpoint_merge_command.h"
#include "cli/control_address.h"
#include "cli/control_commands.h"
#include "cli/eval_command.h"
#include "cli/exit_codes.h"
#include "cli/model_init_command.h"
#include "cli/output_format.h"
#include "cli/tokenize_command.h"
#include "models/gguf/gguf_import.h"

namespace {

using namespace geotrain::cli;  // NOLINT: main wires this module's commands only

int Fail(const geotrain::Status& status) {
  std::cerr << "geotrain: " << status.ToString() << "\n";
  return kExitFailure;
}

// --coordinator and --timeout-seconds, bound to the one ControlOptions (one subcommand runs).
void AddConnectionFlags(CLI::App* command, ControlOptions& control) {
  command
      ->add_option("--coordinator", control.coordinator,
                   std::string("coordinator address HOST:PORT (default: $") + kCoordinatorEnvVar +
                       ", else " + kDefaultCoordinatorAddress + ")")
      ->check(CLI::Validator([](std::string& value) { return CoordinatorAddressProblem(value); },
                             "HOST:PORT"));
  command->add_option("--timeout-seconds", control.timeout_seconds, "deadline of each request")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  CredentialFlags& credentials = control.credentials;
  command->add_option(
      "--tls-ca", credentials.tls_ca,
      std::string("CA of the coordinator's certificate: TLS on (default: $") + kTlsCaEnvVar + ")");
  command->add_option("--tls-cert", credentials.tls_cert,
                      std::string("client certificate, if the coordinator wants one (default: $") +
                          kTlsCertEnvVar + ")");
  command->add_option("--tls-key", credentials.tls_key,
                      std::string("its private key (default: $") + kTlsKeyEnvVar + ")");
  command->add_option(
      "--admin-token-file", credentials.admin_token_file,
      std::string("file with the coordinator's admin token (default: $") + kAdminTokenEnvVar + ")");
}

// The flags every control command takes: the connection and -o table|json.
void AddControlFlags(CLI::App* command, ControlOptions& control) {
  AddConnectionFlags(command, control);
  command->add_option("-o,--output", control.format, "table or json")
      ->transform(CLI::CheckedTransformer(OutputFormatNames(), CLI::ignore_case))
      ->default_str("table");
}

void AddReconnectFlag(CLI::App* command, double& reconnect_seconds) {
  command
      ->add_option("--reconnect-seconds", reconnect_seconds,
                   "keep reconnecting this long when the coordinator goes away while following")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"geotrain: fine-tune LLMs over slow WAN links"};
  app.require_subcommand(1);

  TokenizeOptions tokenize;
  CLI::App* tokenize_cmd =
      app.add_subcommand("tokenize", "UTF-8 text on stdin -> token ids as a JSON array");
  tokenize_cmd
      ->add_option("--tokenizer", tokenize.tokenizer_dir,
                   "directory with tokenizer.json, vocab.json + merges.txt, or vocab.txt")
      ->required();

  EvalOptions eval;
  CLI::App* eval_cmd = app.add_subcommand("eval", "loss and perplexity of a model on a text file");
  eval_cmd->add_option("--model", eval.model_dir, "Hugging Face model directory")->required();
  eval_cmd->add_option("--tokenizer", eval.tokenizer_dir, "tokenizer directory")->required();
  eval_cmd->add_option("--data", eval.data_path, "text file, tokenized as one text")->required();
  eval_cmd->add_option("--seq-length", eval.seq_length, "tokens per block")->required();
  eval_cmd->add_option("--batch-size", eval.batch_size, "blocks per forward pass")
      ->capture_default_str();
  eval_cmd->add_option("-o,--output", eval.format, "table or json")
      ->transform(CLI::CheckedTransformer(OutputFormatNames(), CLI::ignore_case))
      ->default_str("table");

  CLI::App* model_cmd = app.add_subcommand("model", "model directories");
  model_cmd->require_subcommand(1);
  ModelInitOptions model_init;
  CLI::App* model_init_cmd =
      model_cmd->add_subcommand("init", "write a randomly initialised Hugging Face directory");
  model_init_cmd->add_option("--config", model_init.config_path, "config.json")->required();
  model_init_cmd->add_option("--out", model_init.out_dir, "output directory")->required();
  model_init_cmd->add_option("--seed", model_init.seed, "random seed")->required();

  std::string import_gguf, import_out;
  CLI::App* model_import_cmd = model_cmd->add_subcommand(
      "import", "turn a llama.cpp GGUF model (e.g. SmolLM2) into a Hugging Face directory");
  model_import_cmd->add_option("--gguf", import_gguf, "the .gguf file")->required();
  model_import_cmd->add_option("--out", import_out, "output directory")->required();

  CLI::App* checkpoint_cmd = app.add_subcommand("checkpoint", "checkpoints");
  checkpoint_cmd->require_subcommand(1);
  CheckpointMergeOptions merge;
  CLI::App* merge_cmd = checkpoint_cmd->add_subcommand(
      "merge", "join per-stage safetensors shards into one Hugging Face directory");
  merge_cmd
      ->add_option("--shards", merge.inputs,
                   "stage shard files, or directories searched for *.safetensors")
      ->required();
  merge_cmd->add_option("--config", merge.config_path,
                        "config.json (default: in the first --shards directory)");
  merge_cmd->add_option("--out", merge.out_dir, "output directory (absent or empty)")->required();
  merge_cmd
      ->add_option("--max-shard-bytes", merge.max_shard_bytes,
                   "split larger outputs into shards + index")
      ->capture_default_str();

  CLI::App* certs_cmd = app.add_subcommand("certs", "TLS certificates and tokens");
  certs_cmd->require_subcommand(1);
  geotrain::auth::CertsInitOptions certs_init;
  std::string certs_hosts;
  CLI::App* certs_init_cmd = certs_cmd->add_subcommand(
      "init", "make a CA, the coordinator's and workers' certificates and the two tokens");
  certs_init_cmd->add_option("--dir", certs_init.dir, "output directory (created if missing)")
      ->required();
  certs_init_cmd->add_option("--hosts", certs_hosts,
                             "the coordinator's names and IPs, comma-separated (localhost and "
                             "127.0.0.1 are always added)");
  certs_init_cmd->add_option("--days", certs_init.days, "validity of the certificates")
      ->capture_default_str();
  certs_init_cmd->add_flag("--force", certs_init.force, "replace existing files");
  geotrain::auth::AddWorkerOptions certs_add_worker;
  CLI::App* certs_add_worker_cmd = certs_cmd->add_subcommand(
      "add-worker", "issue one worker's own certificate (identity geotrain:worker:NAME)");
  certs_add_worker_cmd
      ->add_option("--dir", certs_add_worker.dir, "the directory `certs init` wrote (ca.key)")
      ->required();
  certs_add_worker_cmd
      ->add_option("--name", certs_add_worker.name, "the worker's name: letters, digits, . _ -")
      ->required();
  certs_add_worker_cmd->add_option("--days", certs_add_worker.days, "validity of the certificate")
      ->capture_default_str();
  certs_add_worker_cmd->add_flag("--force", certs_add_worker.force, "replace existing files");

  ControlOptions control;
  SubmitOptions submit;
  CLI::App* submit_cmd = app.add_subcommand("submit", "submit a job (YAML, docs/job-spec.md)");
  submit_cmd->add_option("job_file", submit.job_file, "the job YAML file")->required();
  submit_cmd->add_flag("--wait", submit.wait,
                       "follow the job until it ends; exit 0 if it succeeded, 4 otherwise");
  AddReconnectFlag(submit_cmd, submit.reconnect_seconds);
  AddControlFlags(submit_cmd, control);

  StatusOptions status;
  CLI::App* status_cmd = app.add_subcommand("status", "a job's state, progress and placement");
  status_cmd->add_option("job", status.job_id, "job id (job-N)")->required();
  status_cmd->add_flag("--watch", status.watch,
                       "print progress on every update until the job ends (exit as submit --wait)");
  AddReconnectFlag(status_cmd, status.reconnect_seconds);
  AddControlFlags(status_cmd, control);

  ListOptions jobs;
  CLI::App* jobs_cmd = app.add_subcommand("jobs", "list the jobs");
  jobs_cmd->add_flag("--all", jobs.all, "also jobs that ended");
  AddControlFlags(jobs_cmd, control);

  std::string cancel_job;
  CLI::App* cancel_cmd = app.add_subcommand("cancel", "cancel a job");
  cancel_cmd->add_option("job", cancel_job, "job id (job-N)")->required();
  AddControlFlags(cancel_cmd, control);

  ListOptions workers;
  CLI::App* workers_cmd = app.add_subcommand("workers", "list the workers");
  workers_cmd->add_flag("--all", workers.all, "also dead workers");
  AddControlFlags(workers_cmd, control);

  CLI::App* links_cmd =
      app.add_subcommand("links", "measured throughput between workers, by source and destination");
  AddControlFlags(links_cmd, control);

  LogsOptions logs;
  CLI::App* logs_cmd = app.add_subcommand("logs", "the log lines of a job's ranks");
  logs_cmd->add_option("job", logs.job_id, "job id (job-N)")->required();
  logs_cmd->add_flag("-f,--follow", logs.follow, "keep printing new lines until the job ends");
  logs_cmd->add_flag("--events", logs.events, "also the job's events");
  AddReconnectFlag(logs_cmd, logs.reconnect_seconds);
  AddControlFlags(logs_cmd, control);

  StepsOptions steps;
  CLI::App* steps_cmd =
      app.add_subcommand("steps", "a job's complete steps (loss, eval loss, time, bytes, lr)");
  steps_cmd->add_option("job", steps.job_id, "job id (job-N)")->required();
  steps_cmd->add_option("--after", steps.after_step, "only the steps after this one")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  steps_cmd->add_option("-o,--output", steps.format, "table, json or csv")
      ->transform(CLI::CheckedTransformer(StepsFormatNames(), CLI::ignore_case))
      ->default_str("table");
  AddConnectionFlags(steps_cmd, control);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);  // prints help (code 0) or the usage error
    return code == 0 ? kExitSuccess : kExitUsage;
  }

  if (tokenize_cmd->parsed()) {
    const geotrain::Status status = RunTokenize(tokenize, std::cin, std::cout);
    return status.ok() ? kExitSuccess : Fail(status);
  }
  if (eval_cmd->parsed()) {
    const geotrain::StatusOr<EvalResult> result = RunEval(eval);
    if (!result.ok()) return Fail(result.status());
    std::cout << FormatEvalResult(*result, eval.format) << std::endl;
    return kExitSuccess;
  }
  if (model_init_cmd->parsed()) {
    const geotrain::Status status = RunModelInit(model_init);
    if (!status.ok()) return Fail(status);
    std::cerr << "wrote " << model_init.out_dir << "\n";
    return kExitSuccess;
  }
  if (model_import_cmd->parsed()) {
    const geotrain::Status status = geotrain::models::ImportGgufModel(import_gguf, import_out);
    if (!status.ok()) return Fail(status);
    std::cerr << "wrote " << import_out << "\n";
    return kExitSuccess;
  }
  if (merge_cmd->parsed()) {
    const geotrain::StatusOr<CheckpointMergeResult> result = RunCheckpointMerge(merge);
    if (!result.ok()) return Fail(result.status());
    std::cerr << "merged " << result->tensors << " tensors from " << result->input_files
              << " file(s) into " << merge.out_dir << " (" << result->output_files
              << " safetensors file(s), " << result->bytes << " bytes)\n";
    return kExitSuccess;
  }

  if (certs_init_cmd->parsed()) {
    size_t begin = 0;
    while (!certs_hosts.empty() && begin <= certs_hosts.size()) {
      const size_t comma = certs_hosts.find(',', begin);
      certs_init.hosts.push_back(certs_hosts.substr(
          begin, comma == std::string::npos ? std::string::npos : comma - begin));
      if (comma == std::string::npos) break;
      begin = comma + 1;
    }
    return RunCertsInit(certs_init, std::cout, std::cerr);
  }
  if (certs_add_worker_cmd->parsed()) {
    return RunCertsAddWorker(certs_add_worker, std::cout, std::cerr);
  }

  CommandContext context = ProcessCommandContext();
  if (submit_cmd->parsed()) return RunSubmitCommand(control, submit, context);
  if (status_cmd->parsed()) return RunStatusCommand(control, status, context);
  if (jobs_cmd->parsed()) return RunJobsCommand(control, jobs, context);
  if (cancel_cmd->parsed()) return RunCancelCommand(control, cancel_job, context);
  if (workers_cmd->parsed()) return RunWorkersCommand(control, workers, context);
  if (links_cmd->parsed()) return RunLinksCommand(control, context);
  if (logs_cmd->parsed()) return RunLogsCommand(control, logs, context);
  if (steps_cmd->parsed()) return RunStepsCommand(control, steps, context);
  return kExitUsage;
}
