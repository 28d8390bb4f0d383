// GgmlType tables (ggml_type.h); sizes from ggml's type_traits (ggml.c) and gguf-py's
// GGML_QUANT_SIZES, which agree.
#include "models/gguf/ggml_type.h"

namespace geotrain::models {
namespace {

struct TypeEntry {
  GgmlType type;
  GgmlTypeTraits traits;
};

constexpr TypeEntry kTypes[] = {
    {GgmlType::kF32, {"F32", 1, 4}},
    {GgmlType::kF16, {"F16", 1, 2}},
    {GgmlType::kQ4_0, {"Q4_0", 32, 2 + 16}},
    {GgmlType::kQ4_1, {"Q4_1", 32, 2 + 2 + 16}},
    {GgmlType::kQ5_0, {"Q5_0", 32, 2 + 4 + 16}},
    {GgmlType::kQ5_1, {"Q5_1", 32, 2 + 2 + 4 + 16}},
    {GgmlType::kQ8_0, {"Q8_0", 32, 2 + 32}},
    {GgmlType::kQ8_1, {"Q8_1", 32, 4 + 4 + 32}},
    {GgmlType::kQ2_K, {"Q2_K", 256, 2 + 2 + 256 / 16 + 256 / 4}},
    {GgmlType::kQ3_K, {"Q3_K", 256, 2 + 256 / 4 + 256 / 8 + 12}},
    {GgmlType::kQ4_K, {"Q4_K", 256, 2 + 2 + 256 / 2 + 12}},
    {GgmlType::kQ5_K, {"Q5_K", 256, 2 + 2 + 256 / 2 + 256 / 8 + 12}},
    {GgmlType::kQ6_K, {"Q6_K", 256, 2 + 256 / 16 + 3 * 256 / 4}},
    {GgmlType::kQ8_K, {"Q8_K", 256, 4 + 256 + 256 / 8}},
    {GgmlType::kIQ2_XXS, {"IQ2_XXS", 256, 2 + 256 / 4}},
    {GgmlType::kIQ2_XS, {"IQ2_XS", 256, 2 + 256 / 4 + 256 / 32}},
    {GgmlType::kIQ3_XXS, {"IQ3_XXS", 256, 2 + 256 / 4 + 256 / 8}},
    {GgmlType::kIQ1_S, {"IQ1_S", 256, 2 + 256 / 8 + 256 / 16}},
    {GgmlType::kIQ4_NL, {"IQ4_NL", 32, 2 + 16}},
    {GgmlType::kIQ3_S, {"IQ3_S", 256, 2 + 256 / 4 + 256 / 8 + 256 / 32 + 4}},
    {GgmlType::kIQ2_S, {"IQ2_S", 256, 2 + 256 / 4 + 256 / 16}},
    {GgmlType::kIQ4_XS, {"IQ4_XS", 256, 2 + 2 + 256 / 2 + 256 / 64}},
    {GgmlType::kI8, {"I8", 1, 1}},
    {GgmlType::kI16, {"I16", 1, 2}},
    {GgmlType::kI32, {"I32", 1, 4}},
    {GgmlType::kI64, {"I64", 1, 8}},
    {GgmlType::kF64, {"F64", 1, 8}},
    {GgmlType::kIQ1_M, {"IQ1_M", 256, 256 / 8 + 256 / 16 + 256 / 32}},
    {GgmlType::kBF16, {"BF16", 1, 2}},
    {GgmlType::kTQ1_0, {"TQ1_0", 256, 2 + 4 * 13}},
    {GgmlType::kTQ2_0, {"TQ2_0", 256, 2 + 64}},
    {GgmlType::kMXFP4, {"MXFP4", 32, 1 + 16}},
};

}  // namespace

std::optional<GgmlType> GgmlTypeFromId(uint32_t id) {
  for (const TypeEntry& entry : kTypes) {
    if (static_cast<uint32_t>(entry.type) == id) return entry.type;
  }
  return std::nullopt;
}

GgmlTypeTraits GetGgmlTypeTraits(GgmlType type) {
  for (const TypeEntry& entry : kTypes) {
    if (entry.type == type) return entry.traits;
  }
  return {"unknown", 1, 0};  // unreachable for values from GgmlTypeFromId
}

bool CanDequantize(GgmlType type) {
  return type == GgmlType::kF32 || type == GgmlType::kF16 || type == GgmlType::kQ8_0 ||
         type == GgmlType::kQ4_0 || type == GgmlType::kQ4_1;
}

}  // namespace geotrain::models
