// geotrain-run: trains one rank of a job (stage = rank % S, replica = rank / S).
//
//   geotrain-run --dist-url tcp://10.0.0.1:29500 --world-size 4 --rank 1
//       --pipeline-group-size 2 --data-group-size 2 --model-name MODEL_DIR ...
//   geotrain-run --dist-url file:///shared/rdzv --world-size 4 --rank 1 --config job.yaml
//       [--config-changes changes.jsonl]   (adaptive compression's changes,
//       runtime/config_change.h)
//       [--frame-key-file job.key]   (32 raw bytes or 64 hex digits, the same file on every rank:
//                                     seals every data-plane frame with AES-256-GCM)
//       [--emulate-link-mbit 200]    (every link of this rank sends at most that many Mbit/s:
//                                     net/paced_transport.h, a WAN on one machine without tc)
//       [--data-root DIR [--allow-path DIR ...]]   (confine the job's paths as a worker does,
//                                     runtime/job_paths.h; without it, a user running this by
//                                     hand reads and writes with their own rights)
//
// Flags follow the seed projects (runtime/seed_flags.h; docs/job-spec.md maps them onto the job
// spec). Rank 0 serves the rendezvous store of a tcp:// URL; a file:// URL names a file every rank
// can reach. Every step prints one JSON line on stdout (with the loss on the last stage); logs go
// to stderr.
// Exit codes: 0 trained to the end, 1 training failed (the message names the rank, the operation
// and the peer), 2 bad flags or job file.
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <cmath>
#include <cstring>
#include <iostream>
#include <vector>

#include "common/io/host_port.h"
#include "common/io/path_confinement.h"
#include "net/deadline.h"
#include "net/gloo_transport.h"
#include "runtime/frame_key_file.h"
#include "runtime/job_paths.h"
#include "runtime/rank_runner.h"
#include "runtime/seed_flags.h"
#include "runtime/step_line.h"

namespace geotrain::runtime {
namespace {

// The rendezvous store a --dist-url names.
StatusOr<c10::intrusive_ptr<c10d::Store>> OpenStore(const SeedRunConfig& config,
                                                    net::Timeout timeout) {
  const std::string& url = config.dist_url;
  if (url.rfind("file://", 0) == 0) {
    return net::CreateFileStore(url.substr(7), config.world_size, timeout);
  }
  if (url.rfind("tcp://", 0) == 0) {
    GEOTRAIN_ASSIGN_OR_RETURN(io::HostPort where,
                              io::ParseHostPort(url.substr(6), "--dist-url", 1));
    net::TcpStoreOptions options;
    options.host = where.host;
    options.port = static_cast<uint16_t>(where.port);
    options.is_server = config.rank == 0;
    options.timeout = timeout;
    return net::CreateTcpStore(options);
  }
  return InvalidArgument("--dist-url: \"" + url + "\" is neither tcp://HOST:PORT nor file:///PATH");
}

constexpr const char* kFrameKeyFlag = "--frame-key-file";
constexpr const char* kEmulateLinkFlag = "--emulate-link-mbit";

constexpr const char* kDataRootFlag = "--data-root";
constexpr const char* kAllowPathFlag = "--allow-path";

// Takes every `flag` VALUE (or `flag`=VALUE) out of argv, which keeps the seed projects' flags,
// and returns the VALUEs in order (none when absent).
StatusOr<std::vector<std::string>> TakeFlagValues(std::vector<char*>* args,
                                                  const std::string& flag) {
  std::vector<std::string> values;
  for (size_t i = 1; i < args->size();) {
    std::string value;
    const std::string arg = (*args)[i];
    const std::string with_value = flag + "=";
    if (arg == flag) {
      if (i + 1 >= args->size()) return InvalidArgument(flag + ": no value");
      value = (*args)[i + 1];
      args->erase(args->begin() + i, args->begin() + i + 2);
    } else if (arg.rfind(with_value, 0) == 0) {
      value = arg.substr(with_value.size());
      args->erase(args->begin() + i);
    } else {
      ++i;
      continue;
    }
    if (value.empty()) return InvalidArgument(flag + ": empty value");
    values.push_back(std::move(value));
  }
  return values;
}

// The last `flag` VALUE of argv, taken out ("" when absent).
StatusOr<std::string> TakeFlag(std::vector<char*>* args, const std::string& flag) {
  GEOTRAIN_ASSIGN_OR_RETURN(std::vector<std::string> values, TakeFlagValues(args, flag));
  return values.empty() ? std::string() : values.back();
}

// --data-root and --allow-path: the job's paths confined and its outputs claimed as on a worker
// (runtime/job_paths.h); nothing without --data-root.
Status ConfineWhenAsked(const std::string& data_root, const std::vector<std::string>& allowed,
                        StageAssignment* assignment) {
  if (data_root.empty()) {
    if (!allowed.empty())
      return InvalidArgument(std::string(kAllowPathFlag) + ": needs --data-root");
    return OkStatus();
  }
  GEOTRAIN_ASSIGN_OR_RETURN(io::PathConfinement confinement,
                            io::PathConfinement::Create(data_root, allowed));
  GEOTRAIN_RETURN_IF_ERROR(ConfineJobPaths(confinement, assignment));
  std::vector<std::string> notes;
  GEOTRAIN_RETURN_IF_ERROR(ClaimJobOutputs(assignment, io::Env::Default(), &notes));
  for (const std::string& note : notes) spdlog::warn("{}", note);
  return OkStatus();
}

// --emulate-link-mbit's value: a positive number of Mbit/s, or 0 when the flag is absent.
StatusOr<double> ParseLinkMbit(const std::string& text) {
  if (text.empty()) return 0.0;
  size_t used = 0;
  double mbit = 0;
  try {
    mbit = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != text.size() || !(mbit > 0) || !std::isfinite(mbit)) {
    return InvalidArgument(std::string(kEmulateLinkFlag) + ": \"" + text +
                           "\" is not a positive number of Mbit/s");
  }
  return mbit;
}

Status Train(const SeedRunConfig& config, const std::string& frame_key, double link_mbit) {
  const net::Timeout timeout(
      static_cast<int64_t>(config.assignment.training.timeout_seconds * 1000));
  RankRunOptions options;
  options.assignment = config.assignment;
  options.bind_address = config.bind_address;
  options.frame_key = frame_key;
  options.emulated_link_mbit = link_mbit;
  if (!config.config_changes_path.empty()) {
    options.poll_changes = CodecChangePoller(config.config_changes_path);
  }
  // A job of one rank joins no group, so it needs no rendezvous.
  if (config.assignment.world_size() > 1) {
    // Opening the store and agreeing on the run's name share one budget of --timeout (joining
    // the groups later gets one of its own: runtime/stage_links.h).
    const net::Deadline store_deadline(timeout);
    GEOTRAIN_ASSIGN_OR_RETURN(options.store, OpenStore(config, timeout));
    if (!frame_key.empty()) {
      // The key may serve many runs; a run name of its own gives each run its own subkeys.
      GEOTRAIN_ASSIGN_OR_RETURN(std::string run_name, AgreeOnRunName(*options.store, config.rank,
                                                                     store_deadline.Remaining()));
      options.group_prefix += "/" + run_name;
    }
    spdlog::info("rank {}: joining the job's groups through {}", config.assignment.global_rank(),
                 config.dist_url);
  }
  return RunRank(options, [&](const StepResult& result) {
    std::cout << StepLineText(StepLineOf(config.assignment, result)) << std::endl;
  });
}

}  // namespace
}  // namespace geotrain::runtime

int main(int argc, char** argv) {
  spdlog::set_default_logger(spdlog::stderr_color_mt("geotrain-run"));
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) == "--help" || std::string(argv[i]) == "-h") {
      std::cout << geotrain::runtime::SeedFlagsHelp()
                << "\n  --frame-key-file FILE  the job's data-plane key (32 raw bytes or 64 hex "
                   "digits, the same\n                         file on every rank): seals every "
                   "frame with AES-256-GCM\n"
                << "  --emulate-link-mbit R  every link of this rank sends at most R Mbit/s (an "
                   "emulated WAN\n                         on one machine; net/paced_transport.h)\n"
                << "  --data-root DIR        every job path must resolve below DIR (relative ones "
                   "from there), as\n                         on a worker; outputs never replace "
                   "existing files (docs/job-spec.md)\n"
                << "  --allow-path DIR       with --data-root: another directory job paths may "
                   "name (repeatable)\n";
      return 0;
    }
  }
  std::vector<char*> args(argv, argv + argc);
  auto key_path = geotrain::runtime::TakeFlag(&args, geotrain::runtime::kFrameKeyFlag);
  auto link_mbit = key_path.ok()
                       ? geotrain::runtime::TakeFlag(&args, geotrain::runtime::kEmulateLinkFlag)
                       : key_path;
  auto link_rate = link_mbit.ok() ? geotrain::runtime::ParseLinkMbit(*link_mbit)
                                  : geotrain::StatusOr<double>(link_mbit.status());
  if (!link_rate.ok()) {
    std::cerr << "geotrain-run: " << link_rate.status().message() << "\n";
    return 2;
  }
  auto data_root = geotrain::runtime::TakeFlag(&args, geotrain::runtime::kDataRootFlag);
  auto allowed = data_root.ok()
                     ? geotrain::runtime::TakeFlagValues(&args, geotrain::runtime::kAllowPathFlag)
                     : geotrain::StatusOr<std::vector<std::string>>(data_root.status());
  if (!allowed.ok()) {
    std::cerr << "geotrain-run: " << allowed.status().message() << "\n";
    return 2;
  }
  std::string frame_key;
  if (!key_path->empty()) {
    std::string warning;
    auto key = geotrain::runtime::ReadFrameKeyFile(*key_path, &warning);
    if (!key.ok()) {
      std::cerr << "geotrain-run: " << key.status().message() << "\n";
      return 2;
    }
    if (!warning.empty()) spdlog::warn("{}", warning);
    frame_key = std::move(key).value();
  }
  auto config = geotrain::runtime::ParseSeedFlags(static_cast<int>(args.size()), args.data());
  if (!config.ok()) {
    std::cerr << "geotrain-run: " << config.status().message() << "\n";
    return 2;
  }
  if (const geotrain::Status confined =
          geotrain::runtime::ConfineWhenAsked(*data_root, *allowed, &config->assignment);
      !confined.ok()) {
    std::cerr << "geotrain-run: " << confined.message() << "\n";
    return 2;
  }
  if (frame_key.empty() && config->assignment.world_size() > 1) {
    spdlog::warn(
        "no --frame-key-file: data-plane frames (activations, gradients) cross the "
        "network in the clear, unauthenticated");
  }
  const geotrain::Status status = geotrain::runtime::Train(*config, frame_key, *link_rate);
  if (!status.ok()) {
    spdlog::error("{}", status.ToString());
    return 1;
  }
  return 0;
}
