#include "cli/checkpoint_merge_command.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>

#include "common/io/atomic_file_writer.h"
#include "common/io/env.h"
#include "common/io/file_contents.h"
#include "models/model_config.h"
#include "models/model_layout.h"
#include "models/safetensors.h"
#include "models/safetensors_checkpoint.h"
#include "models/safetensors_writer.h"

namespace geotrain::cli {

namespace fs = std::filesystem;

namespace {

constexpr size_t kMaxConfigBytes = 1 << 20;
constexpr char kSafetensorsExtension[] = ".safetensors";

// Each input file, or every *.safetensors file below each input directory, in sorted order.
StatusOr<std::vector<std::string>> ExpandInputs(const std::vector<std::string>& inputs) {
  std::vector<std::string> files;
  for (const std::string& input : inputs) {
    std::error_code error;
    if (fs::is_directory(input, error)) {
      std::vector<std::string> found;
      for (fs::recursive_directory_iterator it(input, error), end; !error && it != end;
           it.increment(error)) {
        if (it->is_regular_file() && it->path().extension() == kSafetensorsExtension) {
          found.push_back(it->path().string());
        }
      }
      if (error) return Unavailable("--shards " + input + ": " + error.message());
      if (found.empty()) return NotFound("--shards " + input + ": no *.safetensors file in it");
      std::sort(found.begin(), found.end());
      files.insert(files.end(), found.begin(), found.end());
    } else if (fs::is_regular_file(input, error)) {
      files.push_back(input);
    } else {
      return NotFound("--shards " + input + ": no such file or directory");
    }
  }
  return files;
}

std::string DefaultConfigPath(const std::vector<std::string>& inputs) {
  const std::string& first = inputs.front();
  std::error_code error;
  if (fs::is_directory(first, error)) return (fs::path(first) / "config.json").string();
  return (fs::path(first).parent_path() / "config.json").string();
}

// A tensor of the merged model and the shard file it comes from.
struct SourcedTensor {
  models::TensorView view;
  std::string file;
};

bool SameTensor(const models::TensorView& a, const models::TensorView& b) {
  return a.dtype == b.dtype && a.shape == b.shape && a.bytes.size() == b.bytes.size() &&
         std::memcmp(a.bytes.data(), b.bytes.data(), a.bytes.size()) == 0;
}

std::string ShapeString(const std::vector<int64_t>& shape) {
  std::string out = "[";
  for (size_t i = 0; i < shape.size(); ++i) out += (i ? ", " : "") + std::to_string(shape[i]);
  return out + "]";
}

// Collects every tensor of `shards`; a name in two shards must hold identical values.
StatusOr<std::map<std::string, SourcedTensor>> CollectTensors(
    const std::vector<std::unique_ptr<models::SafetensorsFile>>& shards) {
  std::map<std::string, SourcedTensor> tensors;
  for (const auto& shard : shards) {
    for (const std::string& name : shard->TensorNames()) {
      GEOTRAIN_ASSIGN_OR_RETURN(models::TensorView view, shard->Get(name));
      auto [it, inserted] = tensors.emplace(name, SourcedTensor{view, shard->path()});
      if (!inserted && !SameTensor(it->second.view, view)) {
        return InvalidArgument("tensor " + name + ": " + it->second.file + " and " + shard->path() +
                               " hold different values (or shapes or dtypes)");
      }
    }
  }
  return tensors;
}

// The tensors in the config's order, under the names the shards used; refuses missing,
// misshapen and unexpected tensors.
StatusOr<std::vector<const SourcedTensor*>> MatchModelLayout(
    const models::ModelConfig& config, const std::string& config_path,
    const std::map<std::string, SourcedTensor>& tensors) {
  std::vector<const SourcedTensor*> ordered;
  std::vector<std::string> missing;
  size_t matched = 0;
  for (const models::TensorSpec& spec : models::ModelTensorSpecs(config)) {
    auto it = tensors.find(spec.name);
    if (it == tensors.end() && !spec.legacy_name.empty()) it = tensors.find(spec.legacy_name);
    if (it == tensors.end()) {
      missing.push_back(spec.name);
      continue;
    }
    if (it->second.view.shape != spec.shape) {
      return InvalidArgument("tensor " + it->first + " in " + it->second.file + ": shape " +
                             ShapeString(it->second.view.shape) + ", but " + config_path +
                             " implies " + ShapeString(spec.shape));
    }
    ordered.push_back(&it->second);
    ++matched;
  }
  if (!missing.empty()) {
    std::string list;
    for (size_t i = 0; i < missing.size() && i < 8; ++i) list += (i ? ", " : "") + missing[i];
    if (missing.size() > 8) list += ", ...";
    return InvalidArgument("the shards lack " + std::to_string(missing.size()) + " tensor(s) of " +
                           config_path + "'s model (" + list + "): a stage's shard is missing");
  }
  if (matched != tensors.size()) {
    for (const auto& [name, tensor] : tensors) {
      const bool expected = std::any_of(ordered.begin(), ordered.end(),
                                        [&](const SourcedTensor* t) { return t == &tensor; });
      if (!expected) {
        return InvalidArgument("tensor " + name + " in " + tensor.file + " is not part of the " +
                               "model " + config_path + " describes");
      }
    }
  }
  return ordered;
}

Status WriteTextFile(const std::string& path, const std::string& text) {
  GEOTRAIN_ASSIGN_OR_RETURN(auto writer, io::AtomicFileWriter::Create(path));
  GEOTRAIN_RETURN_IF_ERROR(writer->Append(text.data(), text.size()));
  return writer->Commit();
}

std::string ShardFileName(size_t index, size_t count) {
  char name[64];
  std::snprintf(name, sizeof(name), "model-%05zu-of-%05zu.safetensors", index + 1, count);
  return name;
}

// Writes model.safetensors, or shards of at most max_shard_bytes (a larger tensor alone) and the
// index, into `dir`.
StatusOr<size_t> WriteSafetensors(
    const std::vector<std::pair<std::string, const SourcedTensor*>>& tensors,
    uint64_t max_shard_bytes, const std::string& dir) {
  std::vector<std::vector<size_t>> groups(1);
  uint64_t group_bytes = 0;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const uint64_t bytes = tensors[i].second->view.bytes.size();
    if (!groups.back().empty() && group_bytes + bytes > max_shard_bytes) {
      groups.emplace_back();
      group_bytes = 0;
    }
    groups.back().push_back(i);
    group_bytes += bytes;
  }
  nlohmann::json weight_map = nlohmann::json::object();
  uint64_t total_bytes = 0;
  for (size_t g = 0; g < groups.size(); ++g) {
    const std::string file =
        groups.size() == 1 ? models::kSafetensorsSingleFile : ShardFileName(g, groups.size());
    models::SafetensorsWriter writer;
    writer.SetMetadata("format", "pt");
    for (size_t i : groups[g]) {
      const auto& [name, tensor] = tensors[i];
      GEOTRAIN_RETURN_IF_ERROR(
          writer.AddEncoded(name, tensor->view.dtype, tensor->view.shape, tensor->view.bytes));
      weight_map[name] = file;
      total_bytes += tensor->view.bytes.size();
    }
    GEOTRAIN_RETURN_IF_ERROR(writer.Write(dir + "/" + file));
  }
  if (groups.size() > 1) {
    const nlohmann::json index = {{"metadata", {{"total_size", total_bytes}}},
                                  {"weight_map", weight_map}};
    GEOTRAIN_RETURN_IF_ERROR(
        WriteTextFile(dir + "/" + models::kSafetensorsIndexFile, index.dump(2) + "\n"));
  }
  return groups.size();
}

// Renames the finished `staging` directory to `out_dir` (an empty directory there is replaced)
// and syncs the parent, so a crash leaves either no output or a complete one.
Status CommitDirectory(const std::string& staging, const std::string& out_dir) {
  std::error_code error;
  if (fs::exists(out_dir, error)) {
    if (!fs::is_directory(out_dir, error) || !fs::is_empty(out_dir, error)) {
      return FailedPrecondition("--out " + out_dir + ": exists and is not an empty directory");
    }
    fs::remove(out_dir, error);
  }
  io::Env* env = io::Env::Default();
  GEOTRAIN_RETURN_IF_ERROR(env->Rename(staging, out_dir).WithContext("--out"));
  // The output is in place; a parent that cannot be synced does not undo it.
  (void)env->SyncDirectory(fs::absolute(out_dir).parent_path().string());
  return OkStatus();
}

}  // namespace

StatusOr<CheckpointMergeResult> RunCheckpointMerge(const CheckpointMergeOptions& options) {
  if (options.inputs.empty()) return InvalidArgument("--shards: no input given");
  if (options.out_dir.empty()) return InvalidArgument("--out: no directory given");
  if (options.max_shard_bytes == 0) return InvalidArgument("--max-shard-bytes: must be positive");
  std::error_code error;
  if (fs::exists(options.out_dir, error) &&
      (!fs::is_directory(options.out_dir, error) || !fs::is_empty(options.out_dir, error))) {
    return FailedPrecondition("--out " + options.out_dir +
                              ": exists and is not an empty directory");
  }

  const std::string config_path =
      options.config_path.empty() ? DefaultConfigPath(options.inputs) : options.config_path;
  GEOTRAIN_ASSIGN_OR_RETURN(std::string config_text,
                            io::ReadFileContents(config_path, kMaxConfigBytes));
  GEOTRAIN_ASSIGN_OR_RETURN(models::ModelConfig config,
                            models::ParseModelConfig(config_text, config_path));

  GEOTRAIN_ASSIGN_OR_RETURN(std::vector<std::string> files, ExpandInputs(options.inputs));
  std::vector<std::unique_ptr<models::SafetensorsFile>> shards;
  for (const std::string& file : files) {
    GEOTRAIN_ASSIGN_OR_RETURN(auto shard, models::SafetensorsFile::Open(file));
    shards.push_back(std::move(shard));
  }
  GEOTRAIN_ASSIGN_OR_RETURN(auto tensors, CollectTensors(shards));
  GEOTRAIN_ASSIGN_OR_RETURN(auto ordered, MatchModelLayout(config, config_path, tensors));
  std::vector<std::pair<std::string, const SourcedTensor*>> named;
  CheckpointMergeResult result;
  for (const SourcedTensor* tensor : ordered) {
    named.emplace_back(tensor->view.name, tensor);
    result.bytes += tensor->view.bytes.size();
  }

  // Next to --out (same filesystem, so the final rename is atomic); "out/" names "out" too.
  fs::path out_path = fs::path(options.out_dir).lexically_normal();
  if (!out_path.has_filename()) out_path = out_path.parent_path();
  const std::string staging = out_path.string() + ".tmp." + std::to_string(::getpid());
  fs::remove_all(staging, error);
  if (!fs::create_directories(staging, error) && error) {
    return Unavailable("--out " + options.out_dir + ": cannot create " + staging + ": " +
                       error.message());
  }
  auto written = WriteSafetensors(named, options.max_shard_bytes, staging);
  Status status = written.status();
  if (status.ok()) status = WriteTextFile(staging + "/config.json", config_text);
  if (status.ok()) status = CommitDirectory(staging, options.out_dir);
  if (!status.ok()) {
    fs::remove_all(staging, error);
    return status;
  }
  result.tensors = named.size();
  result.input_files = files.size();
  result.output_files = *written;
  return result;
}

}  // namespace geotrain::cli
