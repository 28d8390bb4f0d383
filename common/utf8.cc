#include "common/utf8.h"

#include <cstdint>
#include <cstdio>

namespace geotrain {

DecodedCodePoint DecodeUtf8(std::string_view text, size_t pos) {
  const auto byte = [&](size_t i) { return static_cast<uint8_t>(text[i]); };
  const uint8_t b0 = byte(pos);
  if (b0 < 0x80) return {b0, 1};
  size_t length;
  char32_t cp;
  char32_t min_value;  // below it the form is overlong
  if ((b0 & 0xE0) == 0xC0) {
    length = 2, cp = b0 & 0x1F, min_value = 0x80;
  } else if ((b0 & 0xF0) == 0xE0) {
    length = 3, cp = b0 & 0x0F, min_value = 0x800;
  } else if ((b0 & 0xF8) == 0xF0) {
    length = 4, cp = b0 & 0x07, min_value = 0x10000;
  } else {
    return {kInvalidCodePoint, 1};  // continuation byte or 0xF8..0xFF
  }
  if (pos + length > text.size()) return {kInvalidCodePoint, 1};
  for (size_t i = 1; i < length; ++i) {
    const uint8_t b = byte(pos + i);
    if ((b & 0xC0) != 0x80) return {kInvalidCodePoint, 1};
    cp = (cp << 6) | (b & 0x3F);
  }
  if (cp < min_value || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
    return {kInvalidCodePoint, 1};
  }
  return {cp, length};
}

void AppendUtf8(char32_t cp, std::string* out) {
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

bool IsValidUtf8(std::string_view text) {
  for (size_t pos = 0; pos < text.size();) {
    const DecodedCodePoint d = DecodeUtf8(text, pos);
    if (d.code_point == kInvalidCodePoint) return false;
    pos += d.length;
  }
  return true;
}

std::string DescribeInvalidUtf8(std::string_view text) {
  size_t line = 1;
  size_t line_start = 0;
  for (size_t pos = 0; pos < text.size();) {
    const DecodedCodePoint d = DecodeUtf8(text, pos);
    if (d.code_point == kInvalidCodePoint) {
      char byte[8];
      std::snprintf(byte, sizeof(byte), "0x%02x", static_cast<unsigned char>(text[pos]));
      return "byte offset " + std::to_string(pos) + " (line " + std::to_string(line) + ", column " +
             std::to_string(pos - line_start + 1) + ") is " + byte + ", not valid UTF-8";
    }
    if (text[pos] == '\n') {
      ++line;
      line_start = pos + 1;
    }
    pos += d.length;
  }
  return "";
}

}  // namespace geotrain
