// geotrain-run: trains one rank of a job (stage = rank % S, replica = rank / S).
//
//   geotrain-run --dist-url tcp://10.0.0.1:29500 --world-size 4 --rank 1
//       --pipeline-group-size 2 --data-group-size 2 --model-name MODEL_DIR ...
//   geotrain-run --dist-url file:///shared/rdzv --world-size 4 --rank 1 --config job.yaml
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
#include <iostream>
#include <nlohmann/json.hpp>

#include "models/model_config.h"
#include "net/gloo_transport.h"
#include "runtime/job_spec.h"
#include "runtime/seed_flags.h"
#include "runtime/stage_runtime.h"

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
    const std::string address = url.substr(6);
    const size_t colon = address.rfind(':');
    if (colon == std::string::npos) {
      return InvalidArgument("--dist-url: \"" + url + "\" has no port (tcp://HOST:PORT)");
    }
    net::TcpStoreOptions options;
    options.host = address.substr(0, colon);
    try {
      const int port = std::stoi(address.substr(colon + 1));
      if (port <= 0 || port > 65535) throw std::out_of_range("port");
      options.port = static_cast<uint16_t>(port);
    } catch (const std::exception&) {
      return InvalidArgument("--dist-url: \"" + url + "\" has no valid port");
    }
    options.is_server = config.rank == 0;
    options.timeout = timeout;
    return net::CreateTcpStore(options);
  }
  return InvalidArgument("--dist-url: \"" + url + "\" is neither tcp://HOST:PORT nor file:///PATH");
}

nlohmann::json StepJson(const StageAssignment& assignment, const StepResult& r) {
  nlohmann::json line = {
      {"rank", assignment.global_rank()},
      {"stage", assignment.stage},
      {"replica", assignment.dp_rank},
      {"step", r.step},
      {"lr", r.lr},
      {"grad_norm", r.grad_norm},
      {"compressed", r.compressed},
      {"forward_relative_error", r.forward_relative_error},
      {"step_seconds", r.step_seconds},
      {"compute_seconds", r.compute_seconds},
      {"codec_seconds", r.codec_seconds},
      {"comm_seconds", r.comm_seconds},
      {"raw_bytes",
       {{"forward", r.raw_bytes.forward}, {"backward", r.raw_bytes.backward}, {"dp", r.raw_bytes.dp},
        {"embedding", r.raw_bytes.embedding}}},
      {"wire_bytes",
       {{"forward", r.wire_bytes.forward},
        {"backward", r.wire_bytes.backward},
        {"dp", r.wire_bytes.dp},
        {"embedding", r.wire_bytes.embedding}}},
  };
  if (std::isfinite(r.loss)) line["loss"] = r.loss;  // the last stage's
  if (r.eval_loss) line["eval_loss"] = *r.eval_loss;
  return line;
}

Status Train(const SeedRunConfig& config) {
  const StageAssignment& assignment = config.assignment;
  const std::string where = "rank " + std::to_string(assignment.global_rank()) + " (stage " +
                            std::to_string(assignment.stage) + ", replica " +
                            std::to_string(assignment.dp_rank) + ")";
  const net::Timeout timeout(static_cast<int64_t>(assignment.training.timeout_seconds * 1000));
  GEOTRAIN_ASSIGN_OR_RETURN(models::ModelConfig model,
                            models::LoadModelConfig(assignment.model_dir));
  // A job of one rank joins no group, so it needs no rendezvous.
  c10::intrusive_ptr<c10d::Store> store;
  if (assignment.world_size() > 1) {
    GEOTRAIN_ASSIGN_OR_RETURN(store, OpenStore(config, timeout));
    spdlog::info("{}: joining the job's groups through {}", where, config.dist_url);
  }
  auto links = ConnectGlooStageLinks(assignment, model.tie_word_embeddings, store,
                                     config.bind_address, "geotrain-run");
  if (!links.ok()) return links.status().WithContext(where);
  auto runtime = StageRuntime::Create(assignment, std::move(links).value());
  if (!runtime.ok()) return runtime.status().WithContext(where);
  auto resumed = (*runtime)->Resume();
  if (!resumed.ok()) return resumed.status().WithContext(where + ": resuming");
  if (*resumed > 0) spdlog::info("{}: resumed from the checkpoint of step {}", where, *resumed);

  const Status status = (*runtime)->Run([&](const StepResult& result) {
    std::cout << StepJson(assignment, result).dump() << std::endl;
    spdlog::debug("{}: step {} took {:.3f} s", where, result.step, result.step_seconds);
  });
  if (!status.ok()) return status.WithContext(where);
  spdlog::info("{}: trained to step {}", where, (*runtime)->step());
  return OkStatus();
}

}  // namespace
}  // namespace geotrain::runtime

int main(int argc, char** argv) {
  spdlog::set_default_logger(spdlog::stderr_color_mt("geotrain-run"));
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) == "--help" || std::string(argv[i]) == "-h") {
      std::cout << geotrain::runtime::SeedFlagsHelp();
      return 0;
    }
  }
  auto config = geotrain::runtime::ParseSeedFlags(argc, argv);
  if (!config.ok()) {
    std::cerr << "geotrain-run: " << config.status().message() << "\n";
    return 2;
  }
  const geotrain::Status status = geotrain::runtime::Train(*config);
  if (!status.ok()) {
    spdlog::error("{}", status.ToString());
    return 1;
  }
  return 0;
}
