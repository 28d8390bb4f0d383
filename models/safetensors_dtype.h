// SafetensorsDType: the element types a safetensors header may name, with their sizes.
//
// geotrain computes in float32 and stores F32, F16 or BF16; the other types are known so that a
// header naming them (an int64 step counter, a bool mask) still validates, and only reading such a
// tensor as float is refused. Plain values; thread-safe.
#pragma once

#include <cstddef>
#include <optional>
#include <string_view>

namespace geotrain::models {

enum class SafetensorsDType {
  kBool,
  kU8,
  kI8,
  kF8E5M2,
  kF8E4M3,
  kI16,
  kU16,
  kF16,
  kBF16,
  kI32,
  kU32,
  kF32,
  kF64,
  kI64,
  kU64,
};

// Bytes per element.
size_t DTypeSize(SafetensorsDType dtype);
// The header spelling: "F32", "BF16", "F8_E4M3", ...
const char* DTypeName(SafetensorsDType dtype);
// Inverse of DTypeName; nullopt for a name safetensors does not define (or sub-byte types).
std::optional<SafetensorsDType> ParseDTypeName(std::string_view name);
// F32, F16 and BF16: the types geotrain reads as float32 and writes.
bool IsFloatDType(SafetensorsDType dtype);

}  // namespace geotrain::models
