// GgufValue: one metadata value of a GGUF file (a scalar, a string or an array of either).
//
// A scalar is stored as an array of one element, so accessors are shared; nested arrays are
// refused by the reader (llama.cpp writes none and its own reader rejects them too). Integers keep
// their bit pattern in uint64 (signed types sign-extended) so uint64 values above INT64_MAX
// survive; the typed accessors check the range and say which key failed. Plain value;
// thread-safe to read.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"

namespace geotrain::models {

// The on-disk value type ids (gguf.h enum gguf_type).
enum class GgufValueType : uint32_t {
  kUint8 = 0,
  kInt8 = 1,
  kUint16 = 2,
  kInt16 = 3,
  kUint32 = 4,
  kInt32 = 5,
  kFloat32 = 6,
  kBool = 7,
  kString = 8,
  kArray = 9,
  kUint64 = 10,
  kInt64 = 11,
  kFloat64 = 12,
};

// "uint32", "string", ...; "invalid" for ids beyond the enum.
const char* GgufValueTypeName(GgufValueType type);
bool IsGgufIntegerType(GgufValueType type);  // the eight integer types (not bool)
bool IsGgufSignedType(GgufValueType type);

struct GgufValue {
  bool is_array = false;
  GgufValueType type = GgufValueType::kUint8;  // the element type for arrays
  // Exactly one of these holds the elements, by `type`: integers and bools (0/1) in `integers`,
  // float32/64 in `floats`, strings in `strings`.
  std::vector<uint64_t> integers;
  std::vector<double> floats;
  std::vector<std::string> strings;

  size_t size() const;
  // Typed reads of a scalar (or of element `i` of an array). `key` names the value in errors:
  // "llama.block_count: expected an integer, got string".
  StatusOr<int64_t> Int64(const std::string& key, size_t i = 0) const;
  StatusOr<uint64_t> Uint64(const std::string& key, size_t i = 0) const;
  StatusOr<double> Double(const std::string& key, size_t i = 0) const;  // floats and integers
  StatusOr<bool> Bool(const std::string& key, size_t i = 0) const;
  StatusOr<std::string> String(const std::string& key, size_t i = 0) const;
  // "uint32", "array[string]".
  std::string TypeName() const;
};

}  // namespace geotrain::models
