// Hostile safetensors headers: every malformed field is an error value naming the field and
// reason, never a crash or an out-of-bounds view.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "models/safetensors.h"
#include "models/safetensors_header.h"
#include "tests/testing/temp_dir.h"

namespace geotrain::models {
namespace {

// A safetensors file: length field, `header` verbatim, `data_bytes` bytes of data.
std::string MakeFile(const std::string& header, size_t data_bytes) {
  std::string file(8, '\0');
  const uint64_t n = header.size();
  std::memcpy(file.data(), &n, 8);
  return file + header + std::string(data_bytes, '\x3f');
}

Status Parse(const std::string& file) {
  return ParseSafetensorsHeader(
             Span<const uint8_t>(reinterpret_cast<const uint8_t*>(file.data()), file.size()))
      .status();
}

struct HostileCase {
  const char* label;
  std::string file;
  std::vector<std::string> expected;  // substrings the error message must contain
};

std::vector<HostileCase> HostileCases() {
  const std::string ok_entry = R"("ok":{"dtype":"F32","shape":[2],"data_offsets":[0,8]})";
  std::string beyond_file(8, '\0');
  const uint64_t big = 5000;
  std::memcpy(beyond_file.data(), &big, 8);
  beyond_file += "{}";
  std::string beyond_limit(8, '\0');
  const uint64_t huge = 100'000'001;
  std::memcpy(beyond_limit.data(), &huge, 8);
  beyond_limit += "{}";
  return {
      {"shorter than the length field", std::string("\x02\0\0", 3), {"header length", "3 bytes"}},
      {"length beyond the file", beyond_file, {"header length", "5000"}},
      {"length beyond the hard limit", beyond_limit, {"header length", "limit"}},
      {"invalid JSON", MakeFile(R"({"t": {"dtype": )", 0), {"header", "invalid JSON"}},
      {"invalid UTF-8", MakeFile("{\"t\xff\": 1}", 0), {"header", "invalid JSON"}},
      {"top level not an object", MakeFile("[1, 2]", 0), {"header", "expected a JSON object"}},
      {"entry not an object", MakeFile(R"({"w": 5})", 0), {"\"w\"", "expected an object"}},
      {"missing dtype",
       MakeFile(R"({"w":{"shape":[1],"data_offsets":[0,4]}})", 4),
       {"\"w\"", "missing field dtype"}},
      {"missing data_offsets",
       MakeFile(R"({"w":{"dtype":"F32","shape":[1]}})", 4),
       {"\"w\"", "missing field data_offsets"}},
      {"unknown dtype",
       MakeFile(R"({"w":{"dtype":"F17","shape":[1],"data_offsets":[0,4]}})", 4),
       {"\"w\"", "dtype", "F17", "not a safetensors dtype"}},
      {"dtype not a string",
       MakeFile(R"({"w":{"dtype":4,"shape":[1],"data_offsets":[0,4]}})", 4),
       {"\"w\"", "dtype", "expected a string"}},
      {"negative size",
       MakeFile(R"({"w":{"dtype":"F32","shape":[2,-3],"data_offsets":[0,4]}})", 4),
       {"\"w\"", "shape[1]", "negative"}},
      {"fractional size",
       MakeFile(R"({"w":{"dtype":"F32","shape":[1.5],"data_offsets":[0,4]}})", 4),
       {"\"w\"", "shape[0]", "not an integer"}},
      {"size beyond 64 bits",
       MakeFile(R"({"w":{"dtype":"F32","shape":[99999999999999999999],"data_offsets":[0,4]}})", 4),
       {"\"w\"", "shape[0]"}},
      {"overflowing element count",
       MakeFile(R"({"w":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,4]}})", 4),
       {"\"w\"", "shape", "overflows"}},
      {"overflowing byte count",
       MakeFile(R"({"w":{"dtype":"F64","shape":[4611686018427387904],"data_offsets":[0,4]}})", 4),
       {"\"w\"", "data_offsets", "more than 2^64"}},
      {"shape not an array",
       MakeFile(R"({"w":{"dtype":"F32","shape":3,"data_offsets":[0,4]}})", 4),
       {"\"w\"", "shape", "expected an array"}},
      {"one offset",
       MakeFile(R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[4]}})", 4),
       {"\"w\"", "data_offsets", "two integers"}},
      {"three offsets",
       MakeFile(R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4,8]}})", 8),
       {"\"w\"", "data_offsets", "two integers"}},
      {"offset not an integer",
       MakeFile(R"({"w":{"dtype":"F32","shape":[1],"data_offsets":["0",4]}})", 4),
       {"\"w\"", "data_offsets[0]", "expected an integer"}},
      {"negative offset",
       MakeFile(R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[-4,0]}})", 4),
       {"\"w\"", "data_offsets[0]", "negative"}},
      {"decreasing offsets",
       MakeFile(R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[8,4]}})", 8),
       {"\"w\"", "data_offsets", "before begin"}},
      {"offsets beyond the data section",
       MakeFile(R"({"w":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})", 12),
       {"\"w\"", "data_offsets", "beyond the data section of 12 bytes"}},
      {"dtype x shape differs from the byte length",
       MakeFile(R"({"w":{"dtype":"F16","shape":[2,3],"data_offsets":[0,8]}})", 8),
       {"\"w\"", "data_offsets", "8 bytes", "F16", "[2, 3]", "needs 12"}},
      {"overlapping tensors",
       MakeFile("{" + ok_entry + R"(,"w":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})", 12),
       {"data_offsets", "\"ok\"", "\"w\"", "overlap"}},
      {"duplicate tensor name",
       MakeFile("{" + ok_entry + "," + ok_entry + "}", 8),
       {"duplicate key", "\"ok\""}},
      {"metadata not an object",
       MakeFile("{" + ok_entry + R"(,"__metadata__":[1]})", 8),
       {"__metadata__", "expected an object"}},
      {"metadata value not a string",
       MakeFile("{" + ok_entry + R"(,"__metadata__":{"format":"pt","step":3}})", 8),
       {"__metadata__[\"step\"]", "expected a string"}},
  };
}

TEST(SafetensorsHostileHeaderTest, EveryMalformedFieldIsNamed) {
  for (const HostileCase& c : HostileCases()) {
    const Status s = Parse(c.file);
    ASSERT_FALSE(s.ok()) << c.label;
    for (const std::string& want : c.expected) {
      EXPECT_NE(s.message().find(want), std::string::npos)
          << c.label << ": \"" << want << "\" missing from: " << s.ToString();
    }
  }
}

TEST(SafetensorsHostileHeaderTest, OpenNamesTheFile) {
  geotrain::testing::TempDir dir;
  const std::string path =
      dir.Write("bad.safetensors",
                MakeFile(R"({"w":{"dtype":"F32","shape":[2,-3],"data_offsets":[0,4]}})", 4));
  const Status s = SafetensorsFile::Open(path).status();
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find(path), std::string::npos) << s.ToString();
  EXPECT_NE(s.message().find("shape[1]"), std::string::npos) << s.ToString();
  const std::string empty = dir.Write("empty.safetensors", "");
  EXPECT_FALSE(SafetensorsFile::Open(empty).ok());
}

TEST(SafetensorsHostileHeaderTest, ValidEdgeCasesAreAccepted) {
  // Unsupported-but-known dtypes, zero-size tensors, gaps, padding and metadata all parse.
  const std::string header = R"({"__metadata__":{"format":"pt"},)"
                             R"("mask":{"dtype":"BOOL","shape":[3],"data_offsets":[0,3]},)"
                             R"("empty":{"dtype":"F32","shape":[0,7],"data_offsets":[3,3]},)"
                             R"("w":{"dtype":"BF16","shape":[2],"data_offsets":[8,12]}}    )";
  const std::string file = MakeFile(header, 12);
  auto parsed = ParseSafetensorsHeader(
      Span<const uint8_t>(reinterpret_cast<const uint8_t*>(file.data()), file.size()));
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_EQ(parsed->tensors.size(), 3u);
  EXPECT_EQ(parsed->metadata.at("format"), "pt");
  EXPECT_EQ(parsed->tensors.at("w").data_begin, 8u);
  EXPECT_EQ(parsed->tensors.at("empty").NumElements(), 0);
}

TEST(SafetensorsHostileHeaderTest, RandomCorruptionNeverCrashes) {
  const std::string valid = MakeFile(
      R"({"__metadata__":{"k":"v"},"a":{"dtype":"F32","shape":[2,2],"data_offsets":[0,16]},)"
      R"("b":{"dtype":"F16","shape":[3],"data_offsets":[16,22]}})",
      22);
  ASSERT_TRUE(Parse(valid).ok());
  std::mt19937 rng(12345);
  int rejected = 0;
  for (int trial = 0; trial < 3000; ++trial) {
    std::string file = valid;
    const int edits = 1 + static_cast<int>(rng() % 4);
    for (int e = 0; e < edits; ++e) {
      const size_t at = rng() % file.size();
      switch (rng() % 3) {
        case 0:
          file[at] = static_cast<char>(rng());
          break;
        case 1:
          file.erase(at, 1 + rng() % 3);
          break;
        default:
          file.insert(at, 1, "{}[],:\"0-9e "[rng() % 12]);
          break;
      }
      if (file.empty()) file = "x";
    }
    const std::string copy = file;  // exact-size heap buffer: ASan catches any over-read
    auto parsed = ParseSafetensorsHeader(
        Span<const uint8_t>(reinterpret_cast<const uint8_t*>(copy.data()), copy.size()));
    if (!parsed.ok()) {
      ++rejected;
      EXPECT_FALSE(parsed.status().message().empty());
      continue;
    }
    // Whatever was accepted must describe views inside the file.
    for (const auto& [name, info] : parsed->tensors) {
      EXPECT_LE(parsed->data_offset + info.data_end, copy.size()) << name;
    }
  }
  EXPECT_GT(rejected, 1000);
}

}  // namespace
}  // namespace geotrain::models
