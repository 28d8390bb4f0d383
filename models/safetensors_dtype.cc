#include "models/safetensors_dtype.h"

namespace geotrain::models {
namespace {

struct DTypeInfo {
  SafetensorsDType dtype;
  const char* name;
  size_t size;
};

constexpr DTypeInfo kDTypes[] = {
    {SafetensorsDType::kBool, "BOOL", 1},      {SafetensorsDType::kU8, "U8", 1},
    {SafetensorsDType::kI8, "I8", 1},          {SafetensorsDType::kF8E5M2, "F8_E5M2", 1},
    {SafetensorsDType::kF8E4M3, "F8_E4M3", 1}, {SafetensorsDType::kI16, "I16", 2},
    {SafetensorsDType::kU16, "U16", 2},        {SafetensorsDType::kF16, "F16", 2},
    {SafetensorsDType::kBF16, "BF16", 2},      {SafetensorsDType::kI32, "I32", 4},
    {SafetensorsDType::kU32, "U32", 4},        {SafetensorsDType::kF32, "F32", 4},
    {SafetensorsDType::kF64, "F64", 8},        {SafetensorsDType::kI64, "I64", 8},
    {SafetensorsDType::kU64, "U64", 8},
};

const DTypeInfo& Info(SafetensorsDType dtype) {
  for (const DTypeInfo& info : kDTypes) {
    if (info.dtype == dtype) return info;
  }
  return kDTypes[0];  // unreachable: every enumerator is in the table
}

}  // namespace

size_t DTypeSize(SafetensorsDType dtype) { return Info(dtype).size; }

const char* DTypeName(SafetensorsDType dtype) { return Info(dtype).name; }

std::optional<SafetensorsDType> ParseDTypeName(std::string_view name) {
  for (const DTypeInfo& info : kDTypes) {
    if (name == info.name) return info.dtype;
  }
  return std::nullopt;
}

bool IsFloatDType(SafetensorsDType dtype) {
  return dtype == SafetensorsDType::kF32 || dtype == SafetensorsDType::kF16 ||
         dtype == SafetensorsDType::kBF16;
}

}  // namespace geotrain::models
