// GgmlType: the tensor element types a GGUF file may name, with their block layouts.
//
// ggml stores quantized tensors in blocks along the fastest-moving dimension (ne[0]): a block of
// `block_elements` values takes `block_bytes` bytes. Every type llama.cpp defines is listed, so a
// file naming any of them still parses (sizes are known and validated); only F32, F16, Q8_0, Q4_0
// and Q4_1 can be dequantized here (CanDequantize). Plain values; thread-safe.
#pragma once

#include <cstdint>
#include <optional>

namespace geotrain::models {

// The on-disk type ids (ggml.h enum ggml_type); ids 4, 5 and 31..33 were removed upstream.
enum class GgmlType : uint32_t {
  kF32 = 0,
  kF16 = 1,
  kQ4_0 = 2,
  kQ4_1 = 3,
  kQ5_0 = 6,
  kQ5_1 = 7,
  kQ8_0 = 8,
  kQ8_1 = 9,
  kQ2_K = 10,
  kQ3_K = 11,
  kQ4_K = 12,
  kQ5_K = 13,
  kQ6_K = 14,
  kQ8_K = 15,
  kIQ2_XXS = 16,
  kIQ2_XS = 17,
  kIQ3_XXS = 18,
  kIQ1_S = 19,
  kIQ4_NL = 20,
  kIQ3_S = 21,
  kIQ2_S = 22,
  kIQ4_XS = 23,
  kI8 = 24,
  kI16 = 25,
  kI32 = 26,
  kI64 = 27,
  kF64 = 28,
  kIQ1_M = 29,
  kBF16 = 30,
  kTQ1_0 = 34,
  kTQ2_0 = 35,
  kMXFP4 = 39,
};

struct GgmlTypeTraits {
  const char* name;         // "Q4_1", as gguf-py and llama.cpp print it
  uint32_t block_elements;  // values per block (1 for plain types)
  uint32_t block_bytes;     // bytes per block
};

// nullopt for an id ggml does not define.
std::optional<GgmlType> GgmlTypeFromId(uint32_t id);
GgmlTypeTraits GetGgmlTypeTraits(GgmlType type);
// F32, F16, Q8_0, Q4_0, Q4_1: the types DequantizeGgml handles.
bool CanDequantize(GgmlType type);

}  // namespace geotrain::models
