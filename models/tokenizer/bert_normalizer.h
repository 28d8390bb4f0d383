// NormalizeBert: Hugging Face's BertNormalizer, the text clean-up BERT tokenizers run before
// splitting words.
//
// In this order, each step optional: clean_text drops control characters, U+0000 and U+FFFD and
// makes white space a space; handle_chinese_chars puts a space on each side of a CJK ideograph;
// strip_accents decomposes (NFD) and drops nonspacing marks ("é" -> "e"); lowercase. The
// character data is the library's own (bert_unicode.h). Text is bytes: an invalid UTF-8 byte
// reads as U+FFFD, as Python's decode(errors="replace") would give the reference. Stateless;
// thread-safe.
#pragma once

#include <string>
#include <string_view>

namespace geotrain::models {

struct BertNormalizerOptions {
  bool clean_text = true;
  bool handle_chinese_chars = true;
  bool strip_accents = true;  // tokenizer.json's null means "as lowercase"; resolved by the loader
  bool lowercase = true;
};

// The normalized text as code points (the pre-tokenizer and WordPiece work on characters).
std::u32string NormalizeBert(std::string_view text, const BertNormalizerOptions& options);

}  // namespace geotrain::models
