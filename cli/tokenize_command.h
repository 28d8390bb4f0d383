// `geotrain tokenize --tokenizer DIR`: UTF-8 text on stdin -> token ids as one JSON array.
//
// The text is encoded as Hugging Face tokenizers' `encode(text)` does: added tokens written in the
// text (e.g. "<|endoftext|>") become their ids, and no special tokens are added around it.
#pragma once

#include <iosfwd>
#include <string>

#include "common/status.h"

namespace geotrain::cli {

struct TokenizeOptions {
  std::string tokenizer_dir;  // holds tokenizer.json, or vocab.json + merges.txt
};

// Reads all of `in`, writes "[id,id,...]\n" to `out`. Errors name the tokenizer file and field.
Status RunTokenize(const TokenizeOptions& options, std::istream& in, std::ostream& out);

}  // namespace geotrain::cli
