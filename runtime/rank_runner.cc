#include "runtime/rank_runner.h"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <memory>
#include <system_error>

#include "models/init_random_model.h"
#include "models/model_config.h"
#include "models/safetensors_checkpoint.h"
#include "net/paced_transport.h"
#include "runtime/stage_device.h"
#include "runtime/stage_links.h"

namespace geotrain::runtime {
namespace {

namespace fs = std::filesystem;

bool HasWeights(const std::string& model_dir) {
  std::error_code ec;
  return fs::exists(fs::path(model_dir) / models::kSafetensorsSingleFile, ec) ||
         fs::exists(fs::path(model_dir) / models::kSafetensorsIndexFile, ec);
}

// Removes a directory RunRank made for itself when it returns.
class ScopedDirectory {
 public:
  explicit ScopedDirectory(std::string path) : path_(std::move(path)) {}
  ~ScopedDirectory() {
    std::error_code ignored;
    if (!path_.empty()) fs::remove_all(path_, ignored);
  }
  ScopedDirectory(const ScopedDirectory&) = delete;
  ScopedDirectory& operator=(const ScopedDirectory&) = delete;

 private:
  std::string path_;
};

nlohmann::json PhasesJson(const StepPhases& p) {
  return {{"forward", p.forward}, {"backward", p.backward}, {"encode", p.encode},
          {"decode", p.decode},   {"send", p.send},         {"recv", p.recv},
          {"sync", p.sync},       {"optimizer", p.optimizer}, {"data", p.data},
          {"eval", p.eval},       {"checkpoint", p.checkpoint}};
}

nlohmann::json TrafficJson(const std::vector<LinkTraffic>& traffic) {
  nlohmann::json entries = nlohmann::json::array();
  for (const LinkTraffic& t : traffic) {
    nlohmann::json entry = {{"peer_stage", t.peer_stage},
                            {"peer_replica", t.peer_replica},
                            {"kind", TrafficKindName(t.kind)},
                            {"direction", t.sent ? "sent" : "received"},
                            {"raw_bytes", t.raw_bytes},
                            {"wire_bytes", t.wire_bytes},
                            {"seconds", t.seconds},
                            {"bits", t.bits},
                            {"relative_error", t.relative_error}};
    if (t.latency_seconds) entry["latency_seconds"] = *t.latency_seconds;
    entries.push_back(std::move(entry));
  }
  return entries;
}

}  // namespace

std::function<std::vector<CodecChange>()> CodecChangePoller(const std::string& path) {
  auto file = std::make_shared<CodecChangeFile>(path);
  return [file]() {
    std::vector<CodecChange> changes;
    StatusOr<std::vector<CodecChangeFileLine>> lines = file->Poll();
    if (!lines.ok()) {
      spdlog::error("--config-changes {}: {}", file->path(), lines.status().message());
      return changes;
    }
    for (CodecChangeFileLine& line : *lines) {
      if (!line.status.ok()) {
        spdlog::error("--config-changes {} line {}: {} (skipped)", file->path(), line.number,
                      line.status.message());
        continue;
      }
      spdlog::info("--config-changes {} line {}: scheduled {}", file->path(), line.number,
                   CodecChangeLine(line.change));
      changes.push_back(std::move(line.change));
    }
    return changes;
  };
}

nlohmann::json StepResultJson(const StageAssignment& assignment, const StepResult& r) {
  nlohmann::json line = {
      {"rank", assignment.global_rank()},
      {"stage", assignment.stage},
      {"replica", assignment.dp_rank},
      {"step", r.step},
      {"total_steps", r.total_steps},
      {"lr", r.lr},
      {"grad_norm", r.grad_norm},
      {"compressed", r.compressed},
      {"checkpointed", r.checkpointed},
      {"forward_relative_error", r.forward_relative_error},
      {"backward_relative_error", r.backward_relative_error},
      {"tokens", r.tokens},
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
      {"phases", PhasesJson(r.phases)},
      {"traffic", TrafficJson(r.traffic)},
  };
  if (std::isfinite(r.loss)) line["loss"] = r.loss;  // the last stage's
  if (r.eval_loss) line["eval_loss"] = *r.eval_loss;
  if (r.eval_metrics) {
    line["eval_accuracy"] = r.eval_metrics->accuracy;
    line["eval_f1"] = r.eval_metrics->f1;
    line["eval_mcc"] = r.eval_metrics->mcc;
  }
  if (!r.checkpoint_error.empty()) line["checkpoint_error"] = r.checkpoint_error;
  return line;
}

Status RunRank(const RankRunOptions& options,
               const std::function<void(const StepResult&)>& on_step) {
  StageAssignment assignment = options.assignment;
  const std::string where = "rank " + std::to_string(assignment.global_rank()) + " (stage " +
                            std::to_string(assignment.stage) + ", replica " +
                            std::to_string(assignment.dp_rank) + ")";
  // First of all: a rank placed where its device is missing fails now, instead of joining the
  // rendezvous and leaving its peers to time out when it fails later.
  if (StatusOr<at::Device> device = StageDevice(assignment); !device.ok()) {
    return device.status().WithContext(where);
  }
  GEOTRAIN_ASSIGN_OR_RETURN(models::ModelConfig model,
                            models::LoadModelConfig(assignment.model_dir));

  // Weights from a seed: every rank derives the same ones (counter-based randomness), so the
  // stages agree without shipping a file.
  std::string scratch;
  if (assignment.model_init_seed && !HasWeights(assignment.model_dir)) {
    std::string dir = options.init_dir;
    if (dir.empty()) {
      std::error_code ec;
      scratch = (fs::temp_directory_path(ec) /
                 ("geotrain-init-" + std::to_string(::getpid()) + "-" +
                  std::to_string(assignment.global_rank())))
                    .string();
      dir = scratch;
    }
    GEOTRAIN_RETURN_IF_ERROR(models::InitRandomModel(model, dir, *assignment.model_init_seed)
                                 .WithContext(where + ": model.init_seed"));
    spdlog::info("{}: initialised the weights of {} with seed {}", where, assignment.model_dir,
                 *assignment.model_init_seed);
    assignment.model_dir = dir;
  }
  const ScopedDirectory remove_scratch(scratch);

  if (assignment.world_size() > 1 && !options.store) {
    return FailedPrecondition(where + ": a job of several ranks needs a rendezvous store");
  }
  auto links = ConnectGlooStageLinks(assignment, model.tie_word_embeddings, options.store,
                                     options.bind_address, options.group_prefix,
                                     options.frame_key);
  if (!links.ok()) return links.status().WithContext(where);
  if (options.emulated_link_mbit > 0) {
    for (auto* link : {&links->upstream, &links->downstream, &links->data_parallel,
                       &links->embedding}) {
      if (*link) *link = net::PaceTransport(std::move(*link), options.emulated_link_mbit);
    }
    spdlog::info("{}: links paced at {} Mbit/s (emulated)", where, options.emulated_link_mbit);
  }
  auto runtime = StageRuntime::Create(assignment, std::move(links).value());
  if (!runtime.ok()) return runtime.status().WithContext(where);
  auto resumed = (*runtime)->Resume();
  if (!resumed.ok()) return resumed.status().WithContext(where + ": resuming");
  if (*resumed > 0) spdlog::info("{}: resumed from the checkpoint of step {}", where, *resumed);

  StageRuntime& rank = **runtime;
  const Status status = rank.Run(
      [&](const StepResult& result) {
        if (on_step) on_step(result);
        spdlog::debug("{}: step {} took {:.3f} s", where, result.step, result.step_seconds);
      },
      [&] {
        if (!options.poll_changes) return;
        for (const CodecChange& change : options.poll_changes()) rank.ScheduleCodecChange(change);
      });
  if (!status.ok()) return status.WithContext(where);
  spdlog::info("{}: trained to step {}", where, (*runtime)->step());
  return OkStatus();
}

}  // namespace geotrain::runtime
