// SafetensorsWriter: collects named F32/F16/BF16 tensors and writes them as one safetensors file.
//
// The file is what the Hugging Face safetensors library writes and reads back: the JSON header is
// padded with spaces so the data section starts 8-byte aligned, and tensors are laid out
// contiguously (no gaps, which the reference reader rejects) ordered by element size, largest
// first, then by name, so every tensor starts aligned to its own element size. The write is
// atomic (AtomicFileWriter). Tensor data is borrowed, not copied: the caller keeps each buffer
// alive and unchanged until Write returns. float32 data stored as F16/BF16 is converted in small
// chunks while writing (round to nearest even), so no second copy of a checkpoint is held.
// Not thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common/io/env.h"
#include "common/span.h"
#include "common/status.h"
#include "models/safetensors_dtype.h"

namespace geotrain::models {

class SafetensorsWriter {
 public:
  // Adds float32 values, stored as `stored_as` (F32, F16 or BF16).
  Status AddFloat32(const std::string& name, std::vector<int64_t> shape, Span<const float> values,
                    SafetensorsDType stored_as = SafetensorsDType::kF32);
  // Adds bytes already encoded as `dtype` (F32, F16 or BF16, little-endian).
  Status AddEncoded(const std::string& name, SafetensorsDType dtype, std::vector<int64_t> shape,
                    Span<const uint8_t> bytes);
  // Adds or replaces an entry of "__metadata__" (e.g. {"format": "pt"}, as transformers writes).
  void SetMetadata(const std::string& key, const std::string& value) { metadata_[key] = value; }

  size_t tensor_count() const { return tensors_.size(); }

  // Writes every tensor added so far to `path` atomically, through `env`.
  Status Write(const std::string& path, io::Env* env = io::Env::Default()) const;

 private:
  struct PendingTensor {
    SafetensorsDType dtype;
    std::vector<int64_t> shape;
    bool from_float = false;  // float_values to convert, else encoded bytes as they are
    Span<const float> float_values;
    Span<const uint8_t> encoded;
    uint64_t bytes = 0;
  };
  Status CheckNewTensor(const std::string& name, SafetensorsDType dtype,
                        const std::vector<int64_t>& shape, uint64_t* elements) const;

  std::map<std::string, PendingTensor> tensors_;
  std::map<std::string, std::string> metadata_;
};

}  // namespace geotrain::models
