// GgufFile parsing and validation (gguf_file.h).
#include "models/gguf/gguf_file.h"

#include <algorithm>
#include <cstring>
#include <limits>

#include "models/gguf/ggml_dequantize.h"

namespace geotrain::models {

int64_t GgufTensorInfo::NumElements() const {
  int64_t n = 1;
  for (int64_t d : ne) n *= d;  // validated by the parser not to overflow
  return n;
}

std::vector<int64_t> GgufTensorInfo::Shape() const { return {ne.rbegin(), ne.rend()}; }

// Reads the header, metadata and tensor infos from the mapped bytes; every read is bounds-checked
// and every error names the field being read.
class GgufParser {
 public:
  GgufParser(GgufFile* file, Span<const uint8_t> bytes) : file_(file), bytes_(bytes) {}

  Status Parse() {
    if (bytes_.size() < 4 || std::memcmp(bytes_.data(), "GGUF", 4) != 0) {
      return Error("gguf.magic", "not a GGUF file (the first 4 bytes are not \"GGUF\")");
    }
    pos_ = 4;
    uint32_t version = 0;
    GEOTRAIN_RETURN_IF_ERROR(Read(&version, "gguf.version"));
    if (version != 2 && version != 3) {
      // A big-endian v3 file reads as 0x03000000 here.
      const std::string why = (version & 0xFFFF) == 0 && version != 0
                                  ? " (a big-endian file; only little-endian is read)"
                                  : " (supported: 2 and 3)";
      return Error("gguf.version", std::to_string(version) + " is not supported" + why);
    }
    file_->version_ = version;
    uint64_t tensor_count = 0, kv_count = 0;
    GEOTRAIN_RETURN_IF_ERROR(Read(&tensor_count, "gguf.tensor_count"));
    GEOTRAIN_RETURN_IF_ERROR(Read(&kv_count, "gguf.metadata_count"));
    if (tensor_count > GgufLimits::kMaxTensors) {
      return Limit("gguf.tensor_count", tensor_count, GgufLimits::kMaxTensors);
    }
    if (kv_count > GgufLimits::kMaxMetadata) {
      return Limit("gguf.metadata_count", kv_count, GgufLimits::kMaxMetadata);
    }
    // Each entry takes at least 8 (key length) + 4 (type) bytes; each tensor info 8+4+4+8.
    if (kv_count > Remaining() / 12 || tensor_count > (Remaining() - kv_count * 12) / 24) {
      return Error("gguf.tensor_count", std::to_string(tensor_count) + " tensors and " +
                                            std::to_string(kv_count) +
                                            " metadata entries cannot fit in the file");
    }
    for (uint64_t i = 0; i < kv_count; ++i) GEOTRAIN_RETURN_IF_ERROR(ParseKeyValue(i));
    GEOTRAIN_RETURN_IF_ERROR(ParseAlignment());
    file_->tensors_.reserve(tensor_count);
    for (uint64_t i = 0; i < tensor_count; ++i) GEOTRAIN_RETURN_IF_ERROR(ParseTensorInfo(i));
    const uint64_t alignment = file_->alignment_;
    const uint64_t data_offset = (pos_ + alignment - 1) / alignment * alignment;
    if (data_offset > bytes_.size() && tensor_count > 0) {
      return Error("gguf.data", "the data section starts at " + std::to_string(data_offset) +
                                    ", beyond the end of the file");
    }
    file_->data_offset_ = data_offset;
    return CheckTensorPlacement(bytes_.size() > data_offset ? bytes_.size() - data_offset : 0);
  }

 private:
  uint64_t Remaining() const { return bytes_.size() - pos_; }

  Status Error(const std::string& field, const std::string& reason) const {
    return InvalidArgument(file_->path_ + ": " + field + ": " + reason);
  }
  Status Limit(const std::string& field, uint64_t value, uint64_t max) const {
    return OutOfRange(file_->path_ + ": " + field + ": " + std::to_string(value) +
                      " exceeds the limit of " + std::to_string(max));
  }
  Status Truncated(const std::string& field, uint64_t need) const {
    return DataLoss(file_->path_ + ": " + field + ": needs " + std::to_string(need) +
                    " bytes at offset " + std::to_string(pos_) + ", the file has " +
                    std::to_string(Remaining()) + " left (truncated?)");
  }

  template <typename T>
  Status Read(T* out, const std::string& field) {
    if (Remaining() < sizeof(T)) return Truncated(field, sizeof(T));
    std::memcpy(out, bytes_.data() + pos_, sizeof(T));  // little-endian hosts only (x86, arm64)
    pos_ += sizeof(T);
    return OkStatus();
  }

  Status ReadString(std::string* out, const std::string& field) {
    uint64_t length = 0;
    GEOTRAIN_RETURN_IF_ERROR(Read(&length, field + ".length"));
    if (length > GgufLimits::kMaxStringBytes) {
      return Limit(field + ".length", length, GgufLimits::kMaxStringBytes);
    }
    if (length > Remaining()) return Truncated(field, length);
    out->assign(reinterpret_cast<const char*>(bytes_.data() + pos_), length);
    pos_ += length;
    return OkStatus();
  }

  StatusOr<GgufValueType> ReadValueType(const std::string& field) {
    uint32_t id = 0;
    GEOTRAIN_RETURN_IF_ERROR(Read(&id, field));
    if (id > static_cast<uint32_t>(GgufValueType::kFloat64)) {
      return Error(field, std::to_string(id) + " is not a GGUF value type (0..12)");
    }
    return static_cast<GgufValueType>(id);
  }

  // Appends one element of scalar type `type` to `value`.
  Status ReadElement(GgufValueType type, GgufValue* value, const std::string& field) {
    switch (type) {
      case GgufValueType::kUint8:
        return ReadInteger<uint8_t>(value, field);
      case GgufValueType::kInt8:
        return ReadInteger<int8_t>(value, field);
      case GgufValueType::kUint16:
        return ReadInteger<uint16_t>(value, field);
      case GgufValueType::kInt16:
        return ReadInteger<int16_t>(value, field);
      case GgufValueType::kUint32:
        return ReadInteger<uint32_t>(value, field);
      case GgufValueType::kInt32:
        return ReadInteger<int32_t>(value, field);
      case GgufValueType::kUint64:
        return ReadInteger<uint64_t>(value, field);
      case GgufValueType::kInt64:
        return ReadInteger<int64_t>(value, field);
      case GgufValueType::kBool: {
        uint8_t b = 0;
        GEOTRAIN_RETURN_IF_ERROR(Read(&b, field));
        if (b > 1) return Error(field, "bool byte " + std::to_string(b) + " is neither 0 nor 1");
        value->integers.push_back(b);
        return OkStatus();
      }
      case GgufValueType::kFloat32: {
        float f = 0;
        GEOTRAIN_RETURN_IF_ERROR(Read(&f, field));
        value->floats.push_back(f);
        return OkStatus();
      }
      case GgufValueType::kFloat64: {
        double d = 0;
        GEOTRAIN_RETURN_IF_ERROR(Read(&d, field));
        value->floats.push_back(d);
        return OkStatus();
      }
      case GgufValueType::kString: {
        std::string s;
        GEOTRAIN_RETURN_IF_ERROR(ReadString(&s, field));
        value->strings.push_back(std::move(s));
        return OkStatus();
      }
      case GgufValueType::kArray:
        return Error(field, "nested arrays are not supported");
    }
    return Internal(field + ": unhandled value type");
  }

  template <typename T>
  Status ReadInteger(GgufValue* value, const std::string& field) {
    T v{};
    GEOTRAIN_RETURN_IF_ERROR(Read(&v, field));
    // Signed values are sign-extended into the uint64 bit pattern (gguf_value.h).
    value->integers.push_back(static_cast<uint64_t>(static_cast<int64_t>(v)));
    if (!std::numeric_limits<T>::is_signed) value->integers.back() = static_cast<uint64_t>(v);
    return OkStatus();
  }

  static uint64_t MinElementBytes(GgufValueType type) {
    switch (type) {
      case GgufValueType::kUint8:
      case GgufValueType::kInt8:
      case GgufValueType::kBool:
        return 1;
      case GgufValueType::kUint16:
      case GgufValueType::kInt16:
        return 2;
      case GgufValueType::kUint32:
      case GgufValueType::kInt32:
      case GgufValueType::kFloat32:
        return 4;
      default:
        return 8;  // 64-bit scalars; a string's length prefix
    }
  }

  Status ParseKeyValue(uint64_t i) {
    const std::string field = "gguf.metadata[" + std::to_string(i) + "]";
    std::string key;
    GEOTRAIN_RETURN_IF_ERROR(ReadString(&key, field + ".key"));
    if (key.empty()) return Error(field + ".key", "empty");
    const std::string value_field = field + " (" + key + ")";
    if (file_->metadata_.count(key) != 0) return Error(value_field, "duplicate key");
    GgufValue value;
    GEOTRAIN_ASSIGN_OR_RETURN(GgufValueType type, ReadValueType(value_field + ".type"));
    if (type == GgufValueType::kArray) {
      value.is_array = true;
      GEOTRAIN_ASSIGN_OR_RETURN(type, ReadValueType(value_field + ".element_type"));
      if (type == GgufValueType::kArray) {
        return Error(value_field + ".element_type", "nested arrays are not supported");
      }
      uint64_t count = 0;
      GEOTRAIN_RETURN_IF_ERROR(Read(&count, value_field + ".count"));
      if (count > GgufLimits::kMaxArrayElements) {
        return Limit(value_field + ".count", count, GgufLimits::kMaxArrayElements);
      }
      if (count > Remaining() / MinElementBytes(type)) {
        return Truncated(value_field + ".count (" + std::to_string(count) + " elements)",
                         count * MinElementBytes(type));
      }
      value.type = type;
      if (type == GgufValueType::kString) value.strings.reserve(count);
      for (uint64_t e = 0; e < count; ++e) {
        GEOTRAIN_RETURN_IF_ERROR(
            ReadElement(type, &value, value_field + "[" + std::to_string(e) + "]"));
      }
    } else {
      value.type = type;
      GEOTRAIN_RETURN_IF_ERROR(ReadElement(type, &value, value_field));
    }
    file_->metadata_.emplace(std::move(key), std::move(value));
    return OkStatus();
  }

  Status ParseAlignment() {
    const GgufValue* value = file_->FindMetadata("general.alignment");
    if (value == nullptr) return OkStatus();
    if (value->is_array || value->type != GgufValueType::kUint32) {
      return Error("general.alignment", "expected uint32, got " + value->TypeName());
    }
    const uint64_t alignment = value->integers[0];
    if (alignment == 0 || (alignment & (alignment - 1)) != 0 ||
        alignment > GgufLimits::kMaxAlignment) {
      return Error("general.alignment", std::to_string(alignment) +
                                            " is not a power of two in [1, " +
                                            std::to_string(GgufLimits::kMaxAlignment) + "]");
    }
    file_->alignment_ = alignment;
    return OkStatus();
  }

  Status ParseTensorInfo(uint64_t i) {
    const std::string field = "gguf.tensor[" + std::to_string(i) + "]";
    GgufTensorInfo info;
    GEOTRAIN_RETURN_IF_ERROR(ReadString(&info.name, field + ".name"));
    if (info.name.empty()) return Error(field + ".name", "empty");
    const std::string named = field + " (" + info.name + ")";
    if (file_->tensor_index_.count(info.name) != 0) return Error(named + ".name", "duplicate");
    uint32_t n_dims = 0;
    GEOTRAIN_RETURN_IF_ERROR(Read(&n_dims, named + ".n_dims"));
    if (n_dims == 0 || n_dims > GgufLimits::kMaxDims) {
      return Error(named + ".n_dims", std::to_string(n_dims) + " is not in [1, " +
                                          std::to_string(GgufLimits::kMaxDims) + "]");
    }
    int64_t elements = 1;
    for (uint32_t d = 0; d < n_dims; ++d) {
      const std::string dim_field = named + ".ne[" + std::to_string(d) + "]";
      uint64_t dim = 0;
      GEOTRAIN_RETURN_IF_ERROR(Read(&dim, dim_field));
      if (dim > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
        return Error(dim_field, std::to_string(dim) + " is negative as int64");
      }
      if (dim != 0 && elements > std::numeric_limits<int64_t>::max() / static_cast<int64_t>(dim)) {
        return Error(dim_field, "the product of the dimensions overflows int64");
      }
      elements *= static_cast<int64_t>(dim);
      info.ne.push_back(static_cast<int64_t>(dim));
    }
    uint32_t type_id = 0;
    GEOTRAIN_RETURN_IF_ERROR(Read(&type_id, named + ".type"));
    const auto type = GgmlTypeFromId(type_id);
    if (!type) return Error(named + ".type", std::to_string(type_id) + " is not a ggml type");
    info.type = *type;
    const GgmlTypeTraits traits = GetGgmlTypeTraits(info.type);
    if (info.ne[0] % traits.block_elements != 0) {
      return Error(named + ".ne[0]", std::to_string(info.ne[0]) + " is not a multiple of the " +
                                         traits.name + " block size " +
                                         std::to_string(traits.block_elements));
    }
    // elements / block <= 2^63 / 1 and block_bytes <= 300, so check before multiplying.
    const uint64_t blocks = static_cast<uint64_t>(elements) / traits.block_elements;
    if (blocks > bytes_.size() / traits.block_bytes + 1) {
      return Error(named + ".ne", std::to_string(elements) + " " + traits.name +
                                      " values need more bytes than the file has (" +
                                      std::to_string(bytes_.size()) + ")");
    }
    info.num_bytes = blocks * traits.block_bytes;
    GEOTRAIN_RETURN_IF_ERROR(Read(&info.offset, named + ".offset"));
    file_->tensor_index_.emplace(info.name, file_->tensors_.size());
    file_->tensors_.push_back(std::move(info));
    return OkStatus();
  }

  // Every tensor aligned, inside the data section, and no two overlapping.
  Status CheckTensorPlacement(uint64_t data_bytes) const {
    std::vector<size_t> order(file_->tensors_.size());
    for (size_t i = 0; i < order.size(); ++i) {
      const GgufTensorInfo& t = file_->tensors_[i];
      const std::string field = "gguf.tensor[" + std::to_string(i) + "] (" + t.name + ").offset";
      if (t.offset % file_->alignment_ != 0) {
        return Error(field, std::to_string(t.offset) + " is not a multiple of the alignment " +
                                std::to_string(file_->alignment_));
      }
      if (t.offset > data_bytes || t.num_bytes > data_bytes - t.offset) {
        return Error(field, std::to_string(t.offset) + " + " + std::to_string(t.num_bytes) +
                                " bytes runs past the end of the data section (" +
                                std::to_string(data_bytes) + " bytes; truncated file?)");
      }
      order[i] = i;
    }
    const auto& tensors = file_->tensors_;
    std::sort(order.begin(), order.end(),
              [&](size_t a, size_t b) { return tensors[a].offset < tensors[b].offset; });
    for (size_t k = 1; k < order.size(); ++k) {
      const GgufTensorInfo& prev = tensors[order[k - 1]];
      const GgufTensorInfo& cur = tensors[order[k]];
      if (prev.offset + prev.num_bytes > cur.offset) {
        return Error("gguf.tensor[" + std::to_string(order[k]) + "] (" + cur.name + ").offset",
                     std::to_string(cur.offset) + " overlaps tensor " + prev.name + " [" +
                         std::to_string(prev.offset) + ", " +
                         std::to_string(prev.offset + prev.num_bytes) + ")");
      }
    }
    return OkStatus();
  }

  GgufFile* file_;
  Span<const uint8_t> bytes_;
  uint64_t pos_ = 0;
};

StatusOr<std::unique_ptr<GgufFile>> GgufFile::Open(const std::string& path) {
  GEOTRAIN_ASSIGN_OR_RETURN(std::unique_ptr<io::MappedFile> mapping, io::MappedFile::Open(path));
  std::unique_ptr<GgufFile> file(new GgufFile());
  file->path_ = path;
  file->mapping_ = std::move(mapping);
  GgufParser parser(file.get(), file->mapping_->bytes());
  GEOTRAIN_RETURN_IF_ERROR(parser.Parse());
  return file;
}

const GgufValue* GgufFile::FindMetadata(const std::string& key) const {
  auto it = metadata_.find(key);
  return it == metadata_.end() ? nullptr : &it->second;
}

StatusOr<const GgufValue*> GgufFile::GetMetadata(const std::string& key) const {
  const GgufValue* value = FindMetadata(key);
  if (value == nullptr) return NotFound(path_ + ": metadata key " + key + " is missing");
  return value;
}

const GgufTensorInfo* GgufFile::FindTensor(const std::string& name) const {
  auto it = tensor_index_.find(name);
  return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

Span<const uint8_t> GgufFile::TensorBytes(const GgufTensorInfo& tensor) const {
  return mapping_->bytes().subspan(data_offset_ + tensor.offset, tensor.num_bytes);
}

StatusOr<std::vector<float>> GgufFile::Dequantize(const GgufTensorInfo& tensor) const {
  if (!CanDequantize(tensor.type)) {
    return InvalidArgument(path_ + ": tensor " + tensor.name + ": ggml type " +
                           GetGgmlTypeTraits(tensor.type).name +
                           " cannot be dequantized (supported: F32, F16, Q8_0, Q4_0, Q4_1)");
  }
  std::vector<float> values(static_cast<size_t>(tensor.NumElements()));
  Status status = DequantizeGgml(tensor.type, TensorBytes(tensor), Span<float>(values));
  if (!status.ok()) return status.WithContext(path_ + ": tensor " + tensor.name);
  return values;
}

}  // namespace geotrain::models
