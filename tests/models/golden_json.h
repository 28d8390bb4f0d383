// What the tokenizer golden tests share: reading a reference file that scripts/golden/ made once
// and checked in, the fingerprint it keeps of a whole corpus's ids, and showing a tricky test
// string's bytes when it fails.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace geotrain::models::testing {

// tests/golden/<name>, parsed; a discarded value (is_discarded()) when it is missing or broken,
// which fails the test here and every lookup after.
inline nlohmann::json LoadGoldenJson(const std::string& name) {
  std::ifstream in(std::string(GEOTRAIN_SOURCE_DIR) + "/tests/golden/" + name);
  EXPECT_TRUE(in.good()) << "tests/golden/" << name;
  return nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
}

// FNV-1a 64 over the ids' little-endian bytes, as 16 hex digits: the golden files' "fnv1a64",
// which stands for a corpus's ids without storing them.
inline std::string IdsFingerprint(const std::vector<int32_t>& ids) {
  uint64_t h = 0xCBF29CE484222325ull;
  for (int32_t id : ids) {
    for (int byte = 0; byte < 4; ++byte) {
      h = (h ^ ((static_cast<uint32_t>(id) >> (8 * byte)) & 0xFF)) * 0x100000001B3ull;
    }
  }
  char hex[17];
  std::snprintf(hex, sizeof(hex), "%016llx", static_cast<unsigned long long>(h));
  return hex;
}

// `text` with every byte outside printable ASCII written as \xNN.
inline std::string Printable(const std::string& text) {
  std::string out;
  for (unsigned char c : text) {
    if (c >= 0x20 && c < 0x7f) {
      out += static_cast<char>(c);
    } else {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\x%02x", c);
      out += buf;
    }
  }
  return out;
}

}  // namespace geotrain::models::testing
