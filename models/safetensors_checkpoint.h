// SafetensorsCheckpoint: the tensors of a Hugging Face checkpoint, in one file or in shards.
//
// A sharded checkpoint has model.safetensors.index.json: {"metadata": {...}, "weight_map":
// {tensor name: shard file name}}. Only the index is read up front; a shard is mapped the first
// time one of its tensors is asked for, so a pipeline stage that needs the layers of one shard
// never opens the others. Shard names must be plain file names in the index's directory (a hostile
// index cannot point elsewhere). Views borrow the shard mappings and stay valid while the
// checkpoint lives. Thread-safe: shard opening is serialised by a mutex.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/status.h"
#include "models/safetensors.h"
#include "models/tensor_view.h"

namespace geotrain::models {

constexpr char kSafetensorsIndexFile[] = "model.safetensors.index.json";
constexpr char kSafetensorsSingleFile[] = "model.safetensors";

class SafetensorsCheckpoint {
 public:
  // `dir`/model.safetensors.index.json when present, else `dir`/model.safetensors.
  static StatusOr<std::unique_ptr<SafetensorsCheckpoint>> OpenDirectory(const std::string& dir);
  // A sharded checkpoint through its index file; shards are looked up next to it.
  static StatusOr<std::unique_ptr<SafetensorsCheckpoint>> OpenIndex(const std::string& index_path);
  // One safetensors file (opened and validated at once).
  static StatusOr<std::unique_ptr<SafetensorsCheckpoint>> OpenFile(const std::string& path);

  std::vector<std::string> TensorNames() const;  // sorted
  bool Contains(const std::string& name) const { return shard_of_.count(name) > 0; }
  // The shard file name holding `name` (empty when absent).
  std::string ShardOf(const std::string& name) const;

  // Opens the tensor's shard if needed. NOT_FOUND when the checkpoint has no such tensor, or when
  // the shard the index names lacks it.
  StatusOr<TensorView> Get(const std::string& name);
  StatusOr<std::vector<float>> ReadFloat32(const std::string& name);

  // How many shard files have been mapped so far (tests check that stages open only their own).
  size_t open_shard_count() const;

 private:
  explicit SafetensorsCheckpoint(std::string dir) : dir_(std::move(dir)) {}
  StatusOr<const SafetensorsFile*> Shard(const std::string& shard_name);

  std::string dir_;
  std::map<std::string, std::string> shard_of_;  // tensor name -> shard file name
  mutable std::mutex mutex_;
  std::map<std::string, std::unique_ptr<SafetensorsFile>> open_shards_;  // guarded by mutex_
};

}  // namespace geotrain::models
