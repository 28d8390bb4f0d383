#include "models/safetensors_checkpoint.h"

#include <sys/stat.h>

#include "common/io/file_contents.h"
#include "common/io/strict_json.h"

namespace geotrain::models {
namespace {

// Indexes of the largest public checkpoints are a few hundred KB.
constexpr size_t kMaxIndexBytes = 64 << 20;

bool FileExists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

std::string DirectoryOf(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? "." : path.substr(0, slash == 0 ? 1 : slash);
}

std::string FileNameOf(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// A shard name must stay inside the checkpoint directory.
bool IsPlainFileName(const std::string& name) {
  return !name.empty() && name != "." && name != ".." && name.find('/') == std::string::npos &&
         name.find('\0') == std::string::npos;
}

}  // namespace

StatusOr<std::unique_ptr<SafetensorsCheckpoint>> SafetensorsCheckpoint::OpenDirectory(
    const std::string& dir) {
  const std::string index = dir + "/" + kSafetensorsIndexFile;
  if (FileExists(index)) return OpenIndex(index);
  const std::string single = dir + "/" + kSafetensorsSingleFile;
  if (FileExists(single)) return OpenFile(single);
  return NotFound(dir + ": neither " + kSafetensorsIndexFile + " nor " + kSafetensorsSingleFile);
}

StatusOr<std::unique_ptr<SafetensorsCheckpoint>> SafetensorsCheckpoint::OpenIndex(
    const std::string& index_path) {
  GEOTRAIN_ASSIGN_OR_RETURN(std::string text, io::ReadFileContents(index_path, kMaxIndexBytes));
  GEOTRAIN_ASSIGN_OR_RETURN(nlohmann::json root, io::ParseStrictJson(text, index_path));
  if (!root.is_object()) {
    return InvalidArgument(index_path + ": expected a JSON object, got " + io::JsonKindName(root));
  }
  if (!root.contains("weight_map")) return InvalidArgument(index_path + ": missing weight_map");
  const nlohmann::json& weight_map = root["weight_map"];
  if (!weight_map.is_object()) {
    return InvalidArgument(index_path + ": weight_map: expected an object, got " +
                           io::JsonKindName(weight_map));
  }
  if (root.contains("metadata") && !root["metadata"].is_object()) {
    return InvalidArgument(index_path + ": metadata: expected an object, got " +
                           io::JsonKindName(root["metadata"]));
  }
  std::unique_ptr<SafetensorsCheckpoint> checkpoint(
      new SafetensorsCheckpoint(DirectoryOf(index_path)));
  for (const auto& [name, shard] : weight_map.items()) {
    const std::string field = index_path + ": weight_map[\"" + name + "\"]";
    if (!shard.is_string()) {
      return InvalidArgument(field + ": expected a file name, got " + io::JsonKindName(shard));
    }
    const std::string shard_name = shard.get<std::string>();
    if (!IsPlainFileName(shard_name)) {
      return InvalidArgument(field + ": \"" + shard_name +
                             "\" is not a plain file name in the checkpoint directory");
    }
    checkpoint->shard_of_[name] = shard_name;
  }
  return checkpoint;
}

StatusOr<std::unique_ptr<SafetensorsCheckpoint>> SafetensorsCheckpoint::OpenFile(
    const std::string& path) {
  GEOTRAIN_ASSIGN_OR_RETURN(std::unique_ptr<SafetensorsFile> file, SafetensorsFile::Open(path));
  std::unique_ptr<SafetensorsCheckpoint> checkpoint(new SafetensorsCheckpoint(DirectoryOf(path)));
  const std::string shard_name = FileNameOf(path);
  for (const std::string& name : file->TensorNames()) checkpoint->shard_of_[name] = shard_name;
  checkpoint->open_shards_[shard_name] = std::move(file);
  return checkpoint;
}

std::vector<std::string> SafetensorsCheckpoint::TensorNames() const {
  std::vector<std::string> names;
  names.reserve(shard_of_.size());
  for (const auto& entry : shard_of_) names.push_back(entry.first);
  return names;
}

std::string SafetensorsCheckpoint::ShardOf(const std::string& name) const {
  auto it = shard_of_.find(name);
  return it == shard_of_.end() ? std::string() : it->second;
}

StatusOr<const SafetensorsFile*> SafetensorsCheckpoint::Shard(const std::string& shard_name) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = open_shards_.find(shard_name);
  if (it != open_shards_.end()) return static_cast<const SafetensorsFile*>(it->second.get());
  GEOTRAIN_ASSIGN_OR_RETURN(std::unique_ptr<SafetensorsFile> file,
                            SafetensorsFile::Open(dir_ + "/" + shard_name));
  const SafetensorsFile* opened = file.get();
  open_shards_[shard_name] = std::move(file);
  return opened;
}

StatusOr<TensorView> SafetensorsCheckpoint::Get(const std::string& name) {
  auto it = shard_of_.find(name);
  if (it == shard_of_.end()) {
    return NotFound(dir_ + ": the checkpoint has no tensor named \"" + name + "\"");
  }
  GEOTRAIN_ASSIGN_OR_RETURN(const SafetensorsFile* shard, Shard(it->second));
  if (!shard->Contains(name)) {
    return NotFound(shard->path() + ": no tensor named \"" + name +
                    "\", although the index maps it to this shard");
  }
  return shard->Get(name);
}

StatusOr<std::vector<float>> SafetensorsCheckpoint::ReadFloat32(const std::string& name) {
  GEOTRAIN_ASSIGN_OR_RETURN(TensorView view, Get(name));
  return ConvertToFloat32(view);
}

size_t SafetensorsCheckpoint::open_shard_count() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return open_shards_.size();
}

}  // namespace geotrain::models
