// UTF-8 decoding and encoding: for the tokenizer, and to check that job files are UTF-8.
//
// Text given to the tokenizer is bytes; it need not be valid UTF-8 (a corpus cut mid-character, a
// binary blob). Invalid sequences decode one byte at a time as kInvalidCodePoint, which the
// pre-tokenizer treats as "other" (neither letter, number nor space), and byte-level BPE encodes
// the raw byte, so encode then decode still returns the exact input bytes. Stateless; thread-safe.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace geotrain {

// Stands for one byte that does not start a valid UTF-8 sequence.
constexpr char32_t kInvalidCodePoint = 0xFFFFFFFF;

struct DecodedCodePoint {
  char32_t code_point;  // kInvalidCodePoint for an invalid byte
  size_t length;        // bytes consumed: 1..4 (1 for an invalid byte)
};

// Decodes the code point at text[pos] (pos < text.size()). Rejects overlong forms, surrogates,
// values above U+10FFFF and truncated sequences, as the Unicode standard requires.
DecodedCodePoint DecodeUtf8(std::string_view text, size_t pos);

// Appends the UTF-8 form of `code_point` (<= U+10FFFF, not a surrogate).
void AppendUtf8(char32_t code_point, std::string* out);

bool IsValidUtf8(std::string_view text);

// Where `text` first stops being UTF-8, for error messages: "byte offset 1234 (line 5, column
// 3) is 0xff, not valid UTF-8" (the offset from 0, the line and the byte column from 1); ""
// when all of it is valid.
std::string DescribeInvalidUtf8(std::string_view text);

}  // namespace geotrain
