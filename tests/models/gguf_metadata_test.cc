// GGUF metadata: every value type and arrays, read from a file gguf-py wrote (types.gguf).
#include <gtest/gtest.h>

#include "models/gguf/gguf_file.h"
#include "tests/models/gguf_golden_files.h"

namespace geotrain::models {
namespace {

class GgufMetadataTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto file = GgufFile::Open(geotrain::testing::GgufGoldenPath("types.gguf"));
    ASSERT_TRUE(file.ok()) << file.status().ToString();
    file_ = std::move(*file);
  }
  const GgufValue& Get(const std::string& key) {
    const GgufValue* value = file_->FindMetadata(key);
    EXPECT_NE(value, nullptr) << key;
    static const GgufValue kEmpty;
    return value ? *value : kEmpty;
  }
  std::unique_ptr<GgufFile> file_;
};

TEST_F(GgufMetadataTest, HeaderAndAlignment) {
  EXPECT_EQ(file_->version(), 3u);
  EXPECT_EQ(file_->alignment(), 32u);
  EXPECT_EQ(file_->data_offset() % 32, 0u);
  EXPECT_EQ(*Get("general.architecture").String("a"), "test");
}

TEST_F(GgufMetadataTest, IntegerScalars) {
  EXPECT_EQ(*Get("test.u8").Int64("k"), 200);
  EXPECT_EQ(*Get("test.i8").Int64("k"), -100);
  EXPECT_EQ(*Get("test.u16").Int64("k"), 60000);
  EXPECT_EQ(*Get("test.i16").Int64("k"), -30000);
  EXPECT_EQ(*Get("test.u32").Int64("k"), 4000000000);
  EXPECT_EQ(*Get("test.i32").Int64("k"), -2000000000);
  EXPECT_EQ(*Get("test.u64").Uint64("k"), 18000000000000000000ull);
  EXPECT_EQ(*Get("test.i64").Int64("k"), -9000000000000000000ll);
  // Out-of-range reads are errors naming the key, not wraps.
  auto too_big = Get("test.u64").Int64("test.u64");
  ASSERT_FALSE(too_big.ok());
  EXPECT_NE(too_big.status().message().find("test.u64"), std::string::npos);
  EXPECT_FALSE(Get("test.i8").Uint64("test.i8").ok());
  EXPECT_EQ(Get("test.u32").TypeName(), "uint32");
}

TEST_F(GgufMetadataTest, FloatBoolAndString) {
  EXPECT_EQ(*Get("test.f32").Double("k"), static_cast<double>(0.1f));
  EXPECT_EQ(*Get("test.f64").Double("k"), 0.1);
  EXPECT_TRUE(*Get("test.bool").Bool("k"));
  EXPECT_EQ(*Get("test.string").String("k"), "h\xc3\xa9llo w\xc3\xb6rld");
  auto wrong = Get("test.string").Int64("test.string");
  ASSERT_FALSE(wrong.ok());
  EXPECT_EQ(wrong.status().message(), "test.string: expected an integer, got string");
}

TEST_F(GgufMetadataTest, Arrays) {
  const GgufValue& ints = Get("test.array_i32");
  EXPECT_TRUE(ints.is_array);
  EXPECT_EQ(ints.TypeName(), "array[int32]");
  ASSERT_EQ(ints.size(), 3u);
  EXPECT_EQ(*ints.Int64("k", 1), -2);
  EXPECT_FALSE(ints.Int64("k", 3).ok());
  const GgufValue& floats = Get("test.array_f32");
  ASSERT_EQ(floats.size(), 2u);
  EXPECT_EQ(*floats.Double("k", 1), -1.25);
  const GgufValue& bools = Get("test.array_bool");
  EXPECT_TRUE(*bools.Bool("k", 0));
  EXPECT_FALSE(*bools.Bool("k", 1));
  const GgufValue& strings = Get("test.array_string");
  EXPECT_EQ(strings.strings, (std::vector<std::string>{"a", "", "ccc"}));
}

}  // namespace
}  // namespace geotrain::models
