#include "models/safetensors_writer.h"

#include <algorithm>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>

#include "common/half.h"
#include "common/io/atomic_file_writer.h"

namespace geotrain::models {
namespace {

// Streams float32 values as 16-bit words in chunks of this many elements.
constexpr size_t kConvertChunk = 16384;

Status WriteConverted(const float* values, size_t n, SafetensorsDType dtype,
                      io::AtomicFileWriter* out) {
  std::vector<uint16_t> words(std::min(n, kConvertChunk));
  for (size_t done = 0; done < n; done += kConvertChunk) {
    const size_t count = std::min(kConvertChunk, n - done);
    if (dtype == SafetensorsDType::kF16) {
      FloatToHalf(values + done, words.data(), count);
    } else {
      FloatToBFloat16(values + done, words.data(), count);
    }
    GEOTRAIN_RETURN_IF_ERROR(out->Append(words.data(), 2 * count));
  }
  return OkStatus();
}

}  // namespace

Status SafetensorsWriter::CheckNewTensor(const std::string& name, SafetensorsDType dtype,
                                         const std::vector<int64_t>& shape,
                                         uint64_t* elements) const {
  if (name.empty() || name == "__metadata__") {
    return InvalidArgument("tensor name \"" + name + "\" is reserved or empty");
  }
  if (tensors_.count(name)) return InvalidArgument("tensor \"" + name + "\" added twice");
  if (!IsFloatDType(dtype)) {
    return InvalidArgument("tensor \"" + name + "\": dtype " + DTypeName(dtype) +
                           " cannot be written (supported: F32, F16, BF16)");
  }
  uint64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0 || __builtin_mul_overflow(n, static_cast<uint64_t>(d), &n) ||
        n > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      return InvalidArgument("tensor \"" + name + "\": shape has a negative or overflowing size");
    }
  }
  *elements = n;
  return OkStatus();
}

Status SafetensorsWriter::AddFloat32(const std::string& name, std::vector<int64_t> shape,
                                     Span<const float> values, SafetensorsDType stored_as) {
  uint64_t elements;
  GEOTRAIN_RETURN_IF_ERROR(CheckNewTensor(name, stored_as, shape, &elements));
  if (values.size() != elements) {
    return InvalidArgument("tensor \"" + name + "\": " + std::to_string(values.size()) +
                           " values for a shape of " + std::to_string(elements) + " elements");
  }
  PendingTensor& t = tensors_[name];
  t.dtype = stored_as;
  t.shape = std::move(shape);
  t.from_float = true;
  t.float_values = values;
  t.bytes = elements * DTypeSize(stored_as);
  return OkStatus();
}

Status SafetensorsWriter::AddEncoded(const std::string& name, SafetensorsDType dtype,
                                     std::vector<int64_t> shape, Span<const uint8_t> bytes) {
  uint64_t elements;
  GEOTRAIN_RETURN_IF_ERROR(CheckNewTensor(name, dtype, shape, &elements));
  if (bytes.size() != elements * DTypeSize(dtype)) {
    return InvalidArgument("tensor \"" + name + "\": " + std::to_string(bytes.size()) +
                           " bytes for " + std::to_string(elements) + " " + DTypeName(dtype) +
                           " elements");
  }
  PendingTensor& t = tensors_[name];
  t.dtype = dtype;
  t.shape = std::move(shape);
  t.encoded = bytes;
  t.bytes = bytes.size();
  return OkStatus();
}

Status SafetensorsWriter::Write(const std::string& path, io::Env* env) const {
  // Largest elements first, then by name: contiguous and naturally aligned, as the reference
  // writer lays tensors out.
  std::vector<const std::pair<const std::string, PendingTensor>*> order;
  for (const auto& entry : tensors_) order.push_back(&entry);
  std::stable_sort(order.begin(), order.end(), [](const auto* a, const auto* b) {
    return DTypeSize(a->second.dtype) > DTypeSize(b->second.dtype);
  });

  nlohmann::json header = nlohmann::json::object();
  if (!metadata_.empty()) header["__metadata__"] = metadata_;
  uint64_t offset = 0;
  for (const auto* entry : order) {
    const PendingTensor& t = entry->second;
    header[entry->first] = {{"dtype", DTypeName(t.dtype)},
                            {"shape", t.shape},
                            {"data_offsets", {offset, offset + t.bytes}}};
    offset += t.bytes;
  }
  std::string text;
  try {
    text = header.dump();  // throws on invalid UTF-8 in a name or metadata value
  } catch (const std::exception& e) {
    return InvalidArgument(path + ": header: " + e.what());
  }
  text.append((8 - text.size() % 8) % 8, ' ');
  const uint64_t header_length = text.size();

  GEOTRAIN_ASSIGN_OR_RETURN(std::unique_ptr<io::AtomicFileWriter> out,
                            io::AtomicFileWriter::Create(path, env));
  GEOTRAIN_RETURN_IF_ERROR(out->Append(&header_length, 8));  // little-endian host
  GEOTRAIN_RETURN_IF_ERROR(out->Append(text.data(), text.size()));
  for (const auto* entry : order) {
    const PendingTensor& t = entry->second;
    if (!t.from_float) {
      GEOTRAIN_RETURN_IF_ERROR(out->Append(t.encoded.data(), t.encoded.size()));
    } else if (t.dtype == SafetensorsDType::kF32) {
      GEOTRAIN_RETURN_IF_ERROR(out->Append(t.float_values.data(), t.bytes));
    } else {
      GEOTRAIN_RETURN_IF_ERROR(
          WriteConverted(t.float_values.data(), t.float_values.size(), t.dtype, out.get()));
    }
  }
  return out->Commit();
}

}  // namespace geotrain::models
