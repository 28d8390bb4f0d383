// GgufValue accessors (gguf_value.h).
#include "models/gguf/gguf_value.h"

#include <limits>

namespace geotrain::models {

const char* GgufValueTypeName(GgufValueType type) {
  switch (type) {
    case GgufValueType::kUint8:
      return "uint8";
    case GgufValueType::kInt8:
      return "int8";
    case GgufValueType::kUint16:
      return "uint16";
    case GgufValueType::kInt16:
      return "int16";
    case GgufValueType::kUint32:
      return "uint32";
    case GgufValueType::kInt32:
      return "int32";
    case GgufValueType::kFloat32:
      return "float32";
    case GgufValueType::kBool:
      return "bool";
    case GgufValueType::kString:
      return "string";
    case GgufValueType::kArray:
      return "array";
    case GgufValueType::kUint64:
      return "uint64";
    case GgufValueType::kInt64:
      return "int64";
    case GgufValueType::kFloat64:
      return "float64";
  }
  return "invalid";
}

bool IsGgufIntegerType(GgufValueType type) {
  switch (type) {
    case GgufValueType::kUint8:
    case GgufValueType::kInt8:
    case GgufValueType::kUint16:
    case GgufValueType::kInt16:
    case GgufValueType::kUint32:
    case GgufValueType::kInt32:
    case GgufValueType::kUint64:
    case GgufValueType::kInt64:
      return true;
    default:
      return false;
  }
}

bool IsGgufSignedType(GgufValueType type) {
  return type == GgufValueType::kInt8 || type == GgufValueType::kInt16 ||
         type == GgufValueType::kInt32 || type == GgufValueType::kInt64;
}

size_t GgufValue::size() const {
  if (type == GgufValueType::kString) return strings.size();
  if (type == GgufValueType::kFloat32 || type == GgufValueType::kFloat64) return floats.size();
  return integers.size();
}

std::string GgufValue::TypeName() const {
  const std::string name = GgufValueTypeName(type);
  return is_array ? "array[" + name + "]" : name;
}

namespace {

Status WrongType(const std::string& key, const char* expected, const GgufValue& value) {
  return InvalidArgument(key + ": expected " + expected + ", got " + value.TypeName());
}

Status BadIndex(const std::string& key, size_t i, const GgufValue& value) {
  return OutOfRange(key + ": index " + std::to_string(i) + " beyond " +
                    std::to_string(value.size()) + " elements");
}

}  // namespace

StatusOr<int64_t> GgufValue::Int64(const std::string& key, size_t i) const {
  if (!IsGgufIntegerType(type)) return WrongType(key, "an integer", *this);
  if (i >= integers.size()) return BadIndex(key, i, *this);
  const uint64_t bits = integers[i];
  if (!IsGgufSignedType(type) &&
      bits > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
    return OutOfRange(key + ": " + std::to_string(bits) + " does not fit int64");
  }
  return static_cast<int64_t>(bits);
}

StatusOr<uint64_t> GgufValue::Uint64(const std::string& key, size_t i) const {
  if (!IsGgufIntegerType(type)) return WrongType(key, "an integer", *this);
  if (i >= integers.size()) return BadIndex(key, i, *this);
  if (IsGgufSignedType(type) && static_cast<int64_t>(integers[i]) < 0) {
    return OutOfRange(key + ": " + std::to_string(static_cast<int64_t>(integers[i])) +
                      " is negative");
  }
  return integers[i];
}

StatusOr<double> GgufValue::Double(const std::string& key, size_t i) const {
  if (type == GgufValueType::kFloat32 || type == GgufValueType::kFloat64) {
    if (i >= floats.size()) return BadIndex(key, i, *this);
    return floats[i];
  }
  if (IsGgufIntegerType(type)) {
    if (i >= integers.size()) return BadIndex(key, i, *this);
    return IsGgufSignedType(type) ? static_cast<double>(static_cast<int64_t>(integers[i]))
                                  : static_cast<double>(integers[i]);
  }
  return WrongType(key, "a number", *this);
}

StatusOr<bool> GgufValue::Bool(const std::string& key, size_t i) const {
  if (type != GgufValueType::kBool) return WrongType(key, "a bool", *this);
  if (i >= integers.size()) return BadIndex(key, i, *this);
  return integers[i] != 0;
}

StatusOr<std::string> GgufValue::String(const std::string& key, size_t i) const {
  if (type != GgufValueType::kString) return WrongType(key, "a string", *this);
  if (i >= strings.size()) return BadIndex(key, i, *this);
  return strings[i];
}

}  // namespace geotrain::models
