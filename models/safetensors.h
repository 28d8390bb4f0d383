// SafetensorsFile: one memory-mapped safetensors file whose tensors are read by name.
//
// Open validates the whole header (safetensors_header.h) but touches no tensor data, so a pipeline
// stage that needs 3 of 300 tensors reads only their pages. Views borrow the mapping and are valid
// while the SafetensorsFile lives. Immutable after Open: thread-safe. For checkpoints split over
// several files, see SafetensorsCheckpoint (safetensors_checkpoint.h).
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/io/mapped_file.h"
#include "common/status.h"
#include "models/safetensors_header.h"
#include "models/tensor_view.h"

namespace geotrain::models {

class SafetensorsFile {
 public:
  // Errors name `path` and the offending header field.
  static StatusOr<std::unique_ptr<SafetensorsFile>> Open(const std::string& path);

  const std::string& path() const { return file_->path(); }
  std::vector<std::string> TensorNames() const;  // sorted
  bool Contains(const std::string& name) const { return header_.tensors.count(name) > 0; }
  // nullptr when absent.
  const SafetensorsTensorInfo* Find(const std::string& name) const;
  const std::map<std::string, std::string>& metadata() const { return header_.metadata; }

  // A view of any dtype; NOT_FOUND naming the file when absent.
  StatusOr<TensorView> Get(const std::string& name) const;
  // Get + ConvertToFloat32 (F32, F16, BF16 only).
  StatusOr<std::vector<float>> ReadFloat32(const std::string& name) const;

 private:
  SafetensorsFile(std::unique_ptr<io::MappedFile> file, SafetensorsHeader header)
      : file_(std::move(file)), header_(std::move(header)) {}

  std::unique_ptr<io::MappedFile> file_;
  SafetensorsHeader header_;
};

}  // namespace geotrain::models
