#include "models/tokenizer/byte_level_alphabet.h"

#include <array>

#include "common/utf8.h"

namespace geotrain::models {
namespace {

struct Alphabet {
  std::array<char32_t, 256> byte_to_code_point;
  std::array<int16_t, 324> code_point_to_byte;  // the alphabet lies within U+0000..U+0143
};

Alphabet MakeAlphabet() {
  Alphabet a;
  a.code_point_to_byte.fill(-1);
  int next_extra = 0;
  for (int b = 0; b < 256; ++b) {
    const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
    const char32_t cp = printable ? static_cast<char32_t>(b) : 256 + next_extra++;
    a.byte_to_code_point[b] = cp;
    a.code_point_to_byte[cp] = static_cast<int16_t>(b);
  }
  return a;
}

const Alphabet& TheAlphabet() {
  static const Alphabet alphabet = MakeAlphabet();
  return alphabet;
}

}  // namespace

char32_t ByteToAlphabetCodePoint(uint8_t byte) { return TheAlphabet().byte_to_code_point[byte]; }

int AlphabetCodePointToByte(char32_t code_point) {
  const Alphabet& a = TheAlphabet();
  return code_point < a.code_point_to_byte.size() ? a.code_point_to_byte[code_point] : -1;
}

std::string BytesToAlphabet(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size() * 2);
  for (char c : bytes) AppendUtf8(ByteToAlphabetCodePoint(static_cast<uint8_t>(c)), &out);
  return out;
}

bool AlphabetToBytes(std::string_view spelling, std::string* bytes) {
  for (size_t pos = 0; pos < spelling.size();) {
    const DecodedCodePoint d = DecodeUtf8(spelling, pos);
    const int byte = d.code_point == kInvalidCodePoint ? -1 : AlphabetCodePointToByte(d.code_point);
    if (byte < 0) return false;
    bytes->push_back(static_cast<char>(byte));
    pos += d.length;
  }
  return true;
}

}  // namespace geotrain::models
