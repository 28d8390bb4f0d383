// GgufTokenizerToJson: the tokenizer a GGUF file carries, as a Hugging Face tokenizer.json.
//
// GGUF stores the BPE vocabulary (tokenizer.ggml.tokens, in id order), the merges ("a b" in rank
// order) and a type per token; tokenizer.ggml.model must be "gpt2" (byte-level BPE). Control
// tokens (type 3) become special added tokens and user-defined tokens (type 4) plain added tokens,
// as transformers lists them. The pre-tokenizer is not stored, only its llama.cpp name
// (tokenizer.ggml.pre), which is translated to the pre-tokenizer of the original tokenizer.json:
//   "gpt-2"   -> ByteLevel (the GPT-2 split pattern)
//   "smollm"  -> Sequence[Digits(individual_digits), ByteLevel]  (SmolLM/SmolLM2)
// Other names are refused. LoadTokenizerJson implements both (digits_splitter.h). SmolLM2's
// vocabulary lacks tokens for 21 bytes, which the tokenizer drops as Hugging Face does.
// Thread-safe (no shared state).
#pragma once

#include <string>

#include "common/status.h"
#include "models/gguf/gguf_file.h"

namespace geotrain::models {

StatusOr<std::string> GgufTokenizerToJson(const GgufFile& file);

}  // namespace geotrain::models
