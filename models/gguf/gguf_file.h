// GgufFile: a llama.cpp GGUF file (versions 2 and 3, little-endian), memory-mapped and validated.
//
// Layout: "GGUF", uint32 version, uint64 tensor count, uint64 metadata count; the metadata
// key/values; the tensor infos (name, n_dims, ne[n_dims], ggml type id, offset); padding to
// `general.alignment` (default 32); the data section, where each tensor's offset is relative to
// the section start and aligned.
//
// Shapes: GGUF lists dimensions fastest-moving first (ggml's ne[0] is the row length), the reverse
// of PyTorch/Hugging Face shapes. GgufTensorInfo::ne keeps the file order; Shape() gives the
// PyTorch order, so a Llama q_proj stored with ne = [hidden, heads*head_dim] has Shape()
// [heads*head_dim, hidden], as in the safetensors checkpoint. The bytes are the same row-major
// array either way: only the shape's spelling differs.
//
// Open validates everything a hostile file could get wrong before returning: counts, string and
// array lengths against the bytes left and hard limits, type ids, n_dims, dims and their product,
// each tensor's size and offset (aligned, inside the data section, no two overlapping), duplicate
// keys and names, general.alignment. Errors name the field: "x.gguf: gguf.tensor[3].offset: ...".
// Owns the mapping; tensor bytes borrow it. Immutable after Open; thread-safe to read.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/io/mapped_file.h"
#include "common/span.h"
#include "common/status.h"
#include "models/gguf/ggml_type.h"
#include "models/gguf/gguf_value.h"

namespace geotrain::models {

struct GgufTensorInfo {
  std::string name;
  std::vector<int64_t> ne;  // GGUF/ggml order: ne[0] is the fastest-moving dimension
  GgmlType type = GgmlType::kF32;
  uint64_t offset = 0;  // from the start of the data section
  uint64_t num_bytes = 0;

  int64_t NumElements() const;
  std::vector<int64_t> Shape() const;  // PyTorch/Hugging Face order (ne reversed)
};

// Hard limits on what a GGUF file may declare (far beyond any real model, small enough that a
// hostile count cannot make the reader allocate without bound).
struct GgufLimits {
  static constexpr uint64_t kMaxTensors = 1 << 20;
  static constexpr uint64_t kMaxMetadata = 1 << 20;
  static constexpr uint64_t kMaxStringBytes = 1 << 26;
  static constexpr uint64_t kMaxArrayElements = 1 << 26;
  static constexpr uint32_t kMaxDims = 4;  // GGML_MAX_DIMS
  static constexpr uint64_t kMaxAlignment = 1 << 16;
};

class GgufFile {
 public:
  static constexpr uint32_t kDefaultAlignment = 32;

  static StatusOr<std::unique_ptr<GgufFile>> Open(const std::string& path);

  uint32_t version() const { return version_; }
  uint64_t alignment() const { return alignment_; }
  uint64_t data_offset() const { return data_offset_; }  // file offset of the data section
  const std::string& path() const { return path_; }

  const std::map<std::string, GgufValue>& metadata() const { return metadata_; }
  const GgufValue* FindMetadata(const std::string& key) const;
  // NOT_FOUND naming the key when absent.
  StatusOr<const GgufValue*> GetMetadata(const std::string& key) const;

  const std::vector<GgufTensorInfo>& tensors() const { return tensors_; }  // file order
  const GgufTensorInfo* FindTensor(const std::string& name) const;

  // The tensor's bytes inside the mapping (valid while this object lives).
  Span<const uint8_t> TensorBytes(const GgufTensorInfo& tensor) const;
  // The tensor as float32, row-major in Shape() order; INVALID_ARGUMENT naming the tensor and its
  // type for types DequantizeGgml does not handle.
  StatusOr<std::vector<float>> Dequantize(const GgufTensorInfo& tensor) const;

 private:
  friend class GgufParser;
  GgufFile() = default;

  std::string path_;
  std::unique_ptr<io::MappedFile> mapping_;
  uint32_t version_ = 0;
  uint64_t alignment_ = kDefaultAlignment;
  uint64_t data_offset_ = 0;
  std::map<std::string, GgufValue> metadata_;
  std::vector<GgufTensorInfo> tensors_;
  std::map<std::string, size_t> tensor_index_;
};

}  // namespace geotrain::models
