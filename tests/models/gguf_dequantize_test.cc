// Dequantization of F32, F16, Q8_0, Q4_0 and Q4_1 against gguf-py's reference (types.gguf) and
// against hand-built blocks that pin the nibble order.
#include <gtest/gtest.h>

#include <cstring>

#include "common/half.h"
#include "common/io/file_contents.h"
#include "common/io/strict_json.h"
#include "models/gguf/ggml_dequantize.h"
#include "models/gguf/gguf_file.h"
#include "tests/models/gguf_golden_files.h"

namespace geotrain::models {
namespace {

using geotrain::testing::GgufGoldenPath;

TEST(GgufDequantizeTest, MatchesReferenceForEveryType) {
  auto file = GgufFile::Open(GgufGoldenPath("types.gguf"));
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  auto text = io::ReadFileContents(GgufGoldenPath("types.expected.json"), 1 << 20);
  ASSERT_TRUE(text.ok());
  auto expected = io::ParseStrictJson(*text, "types.expected.json");
  ASSERT_TRUE(expected.ok());
  const auto& tensors = (*expected)["tensors"];
  ASSERT_EQ(tensors.size(), 5u);
  ASSERT_EQ((*file)->tensors().size(), 5u);
  for (const auto& [name, want] : tensors.items()) {
    SCOPED_TRACE(name);
    const GgufTensorInfo* info = (*file)->FindTensor(name);
    ASSERT_NE(info, nullptr);
    EXPECT_EQ(GetGgmlTypeTraits(info->type).name, want["type"].get<std::string>());
    EXPECT_EQ(info->Shape(), want["shape"].get<std::vector<int64_t>>());
    EXPECT_EQ(info->ne, want["ne"].get<std::vector<int64_t>>());
    auto values = (*file)->Dequantize(*info);
    ASSERT_TRUE(values.ok()) << values.status().ToString();
    const auto want_values = want["values"].get<std::vector<double>>();
    ASSERT_EQ(values->size(), want_values.size());
    for (size_t i = 0; i < want_values.size(); ++i) {
      ASSERT_EQ((*values)[i], static_cast<float>(want_values[i])) << "element " << i;
    }
  }
}

TEST(GgufDequantizeTest, Q4_0LowNibblesAreTheFirstHalf) {
  uint8_t block[18] = {};
  const uint16_t d = FloatToHalf(0.5f);
  std::memcpy(block, &d, 2);
  block[2] = 0xF0;  // element 0: 0 - 8; element 16: 15 - 8
  block[3] = 0x19;  // element 1: 9 - 8; element 17: 1 - 8
  std::vector<float> out(32);
  ASSERT_TRUE(
      DequantizeGgml(GgmlType::kQ4_0, Span<const uint8_t>(block, 18), Span<float>(out)).ok());
  EXPECT_EQ(out[0], -4.0f);
  EXPECT_EQ(out[16], 3.5f);
  EXPECT_EQ(out[1], 0.5f);
  EXPECT_EQ(out[17], -3.5f);
  EXPECT_EQ(out[2], -4.0f);  // zero byte: both nibbles are 0 - 8
}

TEST(GgufDequantizeTest, Q4_1AddsTheMinimum) {
  uint8_t block[20] = {};
  const uint16_t d = FloatToHalf(0.25f), m = FloatToHalf(-1.0f);
  std::memcpy(block, &d, 2);
  std::memcpy(block + 2, &m, 2);
  block[4] = 0x4F;
  std::vector<float> out(32);
  ASSERT_TRUE(
      DequantizeGgml(GgmlType::kQ4_1, Span<const uint8_t>(block, 20), Span<float>(out)).ok());
  EXPECT_EQ(out[0], 15 * 0.25f - 1.0f);
  EXPECT_EQ(out[16], 4 * 0.25f - 1.0f);
  EXPECT_EQ(out[31], -1.0f);
}

TEST(GgufDequantizeTest, Q8_0IsSignedBytesTimesScale) {
  uint8_t block[34] = {};
  const uint16_t d = FloatToHalf(-2.0f);
  std::memcpy(block, &d, 2);
  block[2] = 0x80;  // -128
  block[3] = 0x7F;  // 127
  std::vector<float> out(32);
  ASSERT_TRUE(
      DequantizeGgml(GgmlType::kQ8_0, Span<const uint8_t>(block, 34), Span<float>(out)).ok());
  EXPECT_EQ(out[0], 256.0f);
  EXPECT_EQ(out[1], -254.0f);
}

TEST(GgufDequantizeTest, RefusesUnsupportedTypesAndBadSizes) {
  std::vector<uint8_t> bytes(210);
  std::vector<float> out(256);
  Status status = DequantizeGgml(GgmlType::kQ6_K, Span<const uint8_t>(bytes), Span<float>(out));
  EXPECT_FALSE(status.ok());
  EXPECT_NE(status.message().find("Q6_K"), std::string::npos) << status.message();
  std::vector<float> odd(33);
  EXPECT_FALSE(DequantizeGgml(GgmlType::kQ8_0, Span<const uint8_t>(bytes), Span<float>(odd)).ok());
  std::vector<float> one_block(32);
  EXPECT_FALSE(
      DequantizeGgml(GgmlType::kQ8_0, Span<const uint8_t>(bytes), Span<float>(one_block)).ok());
}

}  // namespace
}  // namespace geotrain::models
