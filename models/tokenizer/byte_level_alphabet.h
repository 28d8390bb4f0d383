// The GPT-2 byte-level alphabet: each of the 256 byte values as one printable Unicode character.
//
// Byte-level BPE vocabularies spell tokens in this alphabet (a space is "Ġ" U+0120, a newline "Ċ"
// U+010A), so every byte sequence has a spelling and no text is ever unknown. Printable ASCII and
// most of Latin-1 map to themselves; the other 68 bytes map to U+0100.. in byte order (OpenAI's
// bytes_to_unicode). Stateless; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace geotrain::models {

char32_t ByteToAlphabetCodePoint(uint8_t byte);
// The byte a character of the alphabet stands for, or -1 if `code_point` is not in the alphabet.
int AlphabetCodePointToByte(char32_t code_point);

// The alphabet spelling (UTF-8) of raw `bytes`.
std::string BytesToAlphabet(std::string_view bytes);
// Inverse of BytesToAlphabet. Returns false (and leaves `bytes` partial) if `spelling` holds a
// character outside the alphabet.
bool AlphabetToBytes(std::string_view spelling, std::string* bytes);

}  // namespace geotrain::models
