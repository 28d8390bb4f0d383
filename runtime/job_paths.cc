#include "runtime/job_paths.h"

#include <functional>
#include <utility>

namespace geotrain::runtime {
namespace {

constexpr int kMaxProfileSuffix = 99;

// Calls `visit(field, path)` for every path field that is set.
void ForEachPath(StageAssignment* a,
                 const std::function<void(const std::string&, std::string*)>& visit) {
  const auto maybe = [&](const std::string& field, std::string* path) {
    if (!path->empty()) visit(field, path);
  };
  maybe("model.dir", &a->model_dir);
  for (size_t i = 0; i < a->data.train.size(); ++i) {
    maybe("data.train[" + std::to_string(i) + "]", &a->data.train[i].path);
  }
  for (size_t i = 0; i < a->data.valid.size(); ++i) {
    maybe("data.valid[" + std::to_string(i) + "]", &a->data.valid[i].path);
  }
  maybe("data.tokenizer", &a->data.tokenizer_dir);
  maybe("data.cache_dir", &a->data.cache_dir);
  maybe("compression.forward.cache_dir", &a->compression.forward.cache_dir);
  maybe("compression.backward.cache_dir", &a->compression.backward.cache_dir);
  maybe("data_parallel.codec.cache_dir", &a->compression.data_parallel.codec.cache_dir);
  maybe("training.checkpoint_dir", &a->training.checkpoint_dir);
  maybe("training.profile", &a->training.profile_path);
}

// The entries CheckpointStore writes at the top of its directory: step-NNNNNNNN and the
// step-*.deleting-* a Prune renamed aside.
bool IsCheckpointEntry(const std::string& name) { return name.rfind("step-", 0) == 0; }

Status CheckCheckpointDir(const std::string& dir, io::Env* env) {
  const std::string field = "training.checkpoint_dir: " + dir;
  if (env->IsRegularFile(dir)) return InvalidArgument(field + " is a file, not a directory");
  if (!env->IsDirectory(dir)) return OkStatus();  // created by the job
  StatusOr<std::vector<std::string>> names = env->ListDirectory(dir);
  if (!names.ok()) return names.status().WithContext("training.checkpoint_dir");
  for (const std::string& name : *names) {
    if (!IsCheckpointEntry(name) || env->IsRegularFile(dir + "/" + name)) {
      return InvalidArgument(field + " holds " + name +
                             ", which is not a geotrain checkpoint; a job writes and prunes "
                             "checkpoints only in a directory it created (name a new one)");
    }
  }
  return OkStatus();
}

Status CheckCacheDir(const std::string& field, const std::string& dir, io::Env* env) {
  if (dir.empty() || !env->IsRegularFile(dir)) return OkStatus();
  return InvalidArgument(field + ": " + dir + " is a file, not a directory");
}

// Creates the trace file exclusively: `path`, else PATH.1 .. PATH.99. Returns the one created.
StatusOr<std::string> ClaimProfile(const std::string& path, io::Env* env) {
  Status last;
  for (int suffix = 0; suffix <= kMaxProfileSuffix; ++suffix) {
    const std::string candidate = suffix == 0 ? path : path + "." + std::to_string(suffix);
    StatusOr<std::unique_ptr<io::WritableFile>> file = env->NewExclusiveFile(candidate);
    if (file.ok()) {
      GEOTRAIN_RETURN_IF_ERROR((*file)->Close());
      return candidate;
    }
    last = file.status();
    // Anything but "exists" (a missing parent, no permission) fails the same for every suffix.
    if (!env->IsRegularFile(candidate) && !env->IsDirectory(candidate)) break;
  }
  return InvalidArgument("training.profile: cannot create a new trace file at " + path + " or " +
                         path + ".1.." + std::to_string(kMaxProfileSuffix) +
                         " (an existing file is never replaced): " + last.message());
}

}  // namespace

Status ConfineJobPaths(const io::PathConfinement& confinement, StageAssignment* assignment) {
  std::vector<std::string> problems;
  ForEachPath(assignment, [&](const std::string& field, std::string* path) {
    StatusOr<std::string> resolved = confinement.Resolve(field, *path);
    if (resolved.ok()) {
      *path = std::move(resolved).value();
    } else {
      problems.push_back(resolved.status().message());
    }
  });
  return ProblemListStatus(problems);
}

Status ClaimJobOutputs(StageAssignment* assignment, io::Env* env, std::vector<std::string>* notes) {
  TrainingSettings& training = assignment->training;
  if (!training.checkpoint_dir.empty()) {
    GEOTRAIN_RETURN_IF_ERROR(CheckCheckpointDir(training.checkpoint_dir, env));
  }
  GEOTRAIN_RETURN_IF_ERROR(CheckCacheDir("data.cache_dir", assignment->data.cache_dir, env));
  const CompressionSettings& c = assignment->compression;
  GEOTRAIN_RETURN_IF_ERROR(
      CheckCacheDir("compression.forward.cache_dir", c.forward.cache_dir, env));
  GEOTRAIN_RETURN_IF_ERROR(
      CheckCacheDir("compression.backward.cache_dir", c.backward.cache_dir, env));
  GEOTRAIN_RETURN_IF_ERROR(
      CheckCacheDir("data_parallel.codec.cache_dir", c.data_parallel.codec.cache_dir, env));
  if (!training.profile_path.empty()) {
    GEOTRAIN_ASSIGN_OR_RETURN(std::string claimed, ClaimProfile(training.profile_path, env));
    if (claimed != training.profile_path && notes != nullptr) {
      notes->push_back("training.profile: " + training.profile_path +
                       " exists and is not replaced; this rank's trace goes to " + claimed);
    }
    training.profile_path = std::move(claimed);
  }
  return OkStatus();
}

}  // namespace geotrain::runtime
