// ImportGgufModel: a llama.cpp GGUF model file to a Hugging Face model directory.
//
// Writes into `out_dir` (created if absent): config.json (ModelConfigToJson), model.safetensors
// (every tensor dequantized to float32 under its Hugging Face name; float32 because dequantized
// Q4/Q8 values are exact in float32 and would be rounded again in bf16) and tokenizer.json
// (GgufTokenizerToJson). Architecture "llama" only; anything the import does not translate
// (another architecture, rope scaling, partial rotary, an unknown tensor, a quantization type
// DequantizeGgml lacks) is refused by name rather than approximated.
//
// llama.cpp's converter permutes the rows of attn_q and attn_k inside each head (its rotary
// pairs adjacent values, transformers' rotate_half pairs the two halves); the import undoes it,
// so the directory computes what the original Hugging Face checkpoint computed.
// Thread-safe (no shared state); peak memory is about the float32 size of the model.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/span.h"
#include "common/status.h"
#include "models/gguf/gguf_file.h"
#include "models/model_config.h"

namespace geotrain::models {

Status ImportGgufModel(const std::string& gguf_path, const std::string& out_dir);

// The ModelConfig a llama GGUF file describes (exposed for tests and `model import` dry runs).
StatusOr<ModelConfig> GgufLlamaConfig(const GgufFile& file);

// "blk.3.attn_q.weight" -> "model.layers.3.self_attn.q_proj.weight"; NOT_FOUND for a name the
// llama mapping does not know.
StatusOr<std::string> GgufToHuggingFaceTensorName(const std::string& gguf_name);

// Undoes convert_hf_to_gguf.py's `permute(w, n_head, n_head_kv)` on a row-major [rows, cols]
// matrix: llama.cpp row h*D + 2*j + s holds Hugging Face row h*D + s*D/2 + j (D = rows / n_head).
// INVALID_ARGUMENT when n_head does not divide rows into even head sizes.
StatusOr<std::vector<float>> UnpermuteRotaryRows(Span<const float> values, int64_t rows,
                                                 int64_t cols, int64_t n_head);

}  // namespace geotrain::models
