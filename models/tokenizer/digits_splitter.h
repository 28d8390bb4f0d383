// SplitDigits: Hugging Face tokenizers' Digits pre-tokenizer, run before the GPT-2 pattern when a
// tokenizer.json's pre_tokenizer is Sequence[Digits, ByteLevel] (SmolLM2, tokenizer.ggml.pre
// "smollm").
//
// Digits are the Unicode numbers \p{N} (Nd, Nl, No: Rust's char::is_numeric, which the reference
// uses), so "٣", "²", "½", "Ⅻ" and "①" count as digits as "7" does. With kIndividual every digit
// is a piece of its own ("a12" -> "a", "1", "2"); with kContiguous a run of digits is one piece
// ("a12" -> "a", "12"). The text between digits is one piece. Invalid UTF-8 bytes are not digits.
// Stateless; thread-safe.
#pragma once

#include <string_view>
#include <vector>

namespace geotrain::models {

enum class DigitSplitting : unsigned char {
  kNone,        // no Digits pre-tokenizer
  kIndividual,  // Digits{individual_digits: true}
  kContiguous,  // Digits{individual_digits: false}
};

// Appends to `pieces` the consecutive, non-empty pieces of `text`; together they are `text`.
// kNone appends `text` itself (when not empty).
void SplitDigits(std::string_view text, DigitSplitting mode, std::vector<std::string_view>* pieces);

}  // namespace geotrain::models
