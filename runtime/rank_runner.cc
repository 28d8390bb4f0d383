#include "runtime/rank_runner.h"

#include <spdlog/spdlog.h>
#include <sys/resource.h>
#include <unistd.h>

#include <filesystem>
#include <memory>
#include <optional>
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

// The process's resident-set high-water mark; unset if the kernel will not say.
std::optional<uint64_t> PeakHostMemoryBytes() {
  struct rusage usage {};
  if (::getrusage(RUSAGE_SELF, &usage) != 0 || usage.ru_maxrss <= 0) return std::nullopt;
  return static_cast<uint64_t>(usage.ru_maxrss) * 1024;  // Linux counts KiB
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
      scratch = (fs::temp_directory_path(ec) / ("geotrain-init-" + std::to_string(::getpid()) +
                                                "-" + std::to_string(assignment.global_rank())))
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
                                     options.bind_address, options.group_prefix, options.frame_key);
  if (!links.ok()) return links.status().WithContext(where);
  if (options.emulated_link_mbit > 0) {
    for (auto* link :
         {&links->upstream, &links->downstream, &links->data_parallel, &links->embedding}) {
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
      [&](const StepResult& step) {
        StepResult result = step;
        result.peak_host_memory_bytes = PeakHostMemoryBytes();
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
