// `geotrain eval`: the loss and perplexity of a model on a text file.
//
// Convention (a contract; cli/README.md states it): the whole file is tokenized as one text with
// no special tokens added (added tokens written in it are ordinary text), cut into consecutive
// blocks of seq_length tokens (the remainder dropped); the loss is the mean next-token
// cross-entropy over all seq_length - 1 predictions of every block, computed in float32;
// tokens = blocks * (seq_length - 1); perplexity = exp(loss).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "cli/output_format.h"
#include "common/status.h"

namespace geotrain::models {
class Stage;
}

namespace geotrain::cli {

struct EvalOptions {
  std::string model_dir;      // Hugging Face directory (config.json + safetensors)
  std::string tokenizer_dir;  // tokenizer.json, or vocab.json + merges.txt
  std::string data_path;      // the text file, read as raw bytes
  int64_t seq_length = 0;     // tokens per block, >= 2
  int64_t batch_size = 4;     // blocks per forward pass (memory only; the result is the same)
  OutputFormat format = OutputFormat::kTable;
};

struct EvalResult {
  double loss = 0;        // mean cross-entropy in nats
  double perplexity = 0;  // exp(loss)
  int64_t tokens = 0;     // predicted tokens: blocks * (seq_length - 1)
};

// Evaluates a loaded whole-model stage (first and last) on `token_ids` under the convention
// above. INVALID_ARGUMENT naming the flag when seq_length < 2, batch_size < 1, the text is shorter
// than one block, or an id is outside the model's vocabulary.
StatusOr<EvalResult> EvaluateTokens(const models::Stage& stage,
                                    const std::vector<int32_t>& token_ids, int64_t seq_length,
                                    int64_t batch_size);

// Loads the model (float32, CPU), tokenizer and file, and evaluates.
StatusOr<EvalResult> RunEval(const EvalOptions& options);

// {"loss": ..., "perplexity": ..., "tokens": ...} or "loss 3.2104  perplexity 24.785  tokens 4095".
std::string FormatEvalResult(const EvalResult& result, OutputFormat format);

}  // namespace geotrain::cli
