// Round trips through SafetensorsWriter and SafetensorsFile: values, dtypes, layout, metadata.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <vector>

#include "common/half.h"
#include "models/safetensors.h"
#include "models/safetensors_writer.h"
#include "tests/testing/temp_dir.h"

namespace geotrain::models {
namespace {

using geotrain::testing::TempDir;

std::vector<float> Ramp(size_t n, float scale) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = scale * (static_cast<float>(i) - n / 2.0f) + 0.1f;
  return v;
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

TEST(SafetensorsRoundTripTest, Float32Float16BFloat16) {
  TempDir dir;
  const std::vector<float> a = Ramp(6, 0.37f);
  const std::vector<float> b = Ramp(15, 1.5f);  // odd count: next tensor must stay aligned
  const std::vector<float> c = Ramp(4, -3.1f);
  SafetensorsWriter writer;
  ASSERT_TRUE(writer.AddFloat32("a.weight", {2, 3}, a).ok());
  ASSERT_TRUE(writer.AddFloat32("b.weight", {15}, b, SafetensorsDType::kF16).ok());
  ASSERT_TRUE(writer.AddFloat32("c.bias", {2, 2}, c, SafetensorsDType::kBF16).ok());
  writer.SetMetadata("format", "pt");
  const std::string path = dir.File("model.safetensors");
  ASSERT_TRUE(writer.Write(path).ok());

  auto file = SafetensorsFile::Open(path);
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  EXPECT_EQ((*file)->TensorNames(), (std::vector<std::string>{"a.weight", "b.weight", "c.bias"}));
  EXPECT_EQ((*file)->metadata().at("format"), "pt");

  auto va = (*file)->Get("a.weight");
  ASSERT_TRUE(va.ok());
  EXPECT_EQ(va->dtype, SafetensorsDType::kF32);
  EXPECT_EQ(va->shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(va->bytes.size(), 24u);
  EXPECT_EQ(*(*file)->ReadFloat32("a.weight"), a);  // exact

  auto rb = (*file)->ReadFloat32("b.weight");
  ASSERT_TRUE(rb.ok());
  for (size_t i = 0; i < b.size(); ++i) EXPECT_EQ((*rb)[i], HalfToFloat(FloatToHalf(b[i])));
  auto rc = (*file)->ReadFloat32("c.bias");
  ASSERT_TRUE(rc.ok());
  for (size_t i = 0; i < c.size(); ++i) {
    EXPECT_EQ((*rc)[i], BFloat16ToFloat(FloatToBFloat16(c[i])));
  }
  EXPECT_EQ((*file)->Get("b.weight")->dtype, SafetensorsDType::kF16);
  EXPECT_EQ((*file)->Get("c.bias")->dtype, SafetensorsDType::kBF16);
}

TEST(SafetensorsRoundTripTest, LayoutIsAlignedContiguousAndSpacePadded) {
  TempDir dir;
  const std::vector<float> x = Ramp(3, 1.0f), y = Ramp(5, 2.0f), z = Ramp(2, 3.0f);
  SafetensorsWriter writer;
  ASSERT_TRUE(writer.AddFloat32("h16", {3}, x, SafetensorsDType::kF16).ok());
  ASSERT_TRUE(writer.AddFloat32("f32", {5}, y).ok());
  ASSERT_TRUE(writer.AddFloat32("b16", {2}, z, SafetensorsDType::kBF16).ok());
  const std::string path = dir.File("m.safetensors");
  ASSERT_TRUE(writer.Write(path).ok());

  const std::string bytes = ReadAll(path);
  uint64_t n;
  std::memcpy(&n, bytes.data(), 8);
  EXPECT_EQ((8 + n) % 8, 0u);
  const std::string text = bytes.substr(8, n);
  EXPECT_EQ(text[text.find_last_not_of(' ')], '}');  // padding is spaces after the JSON
  const auto header = nlohmann::json::parse(text);
  // float32 first, then the 16-bit tensors by name; no gaps; the data section ends the file.
  EXPECT_EQ(header["f32"]["data_offsets"], nlohmann::json({0, 20}));
  EXPECT_EQ(header["b16"]["data_offsets"], nlohmann::json({20, 24}));
  EXPECT_EQ(header["h16"]["data_offsets"], nlohmann::json({24, 30}));
  EXPECT_EQ(bytes.size(), 8 + n + 30);
  EXPECT_FALSE(header.contains("__metadata__"));
}

TEST(SafetensorsRoundTripTest, EncodedBytesAndEmptyTensorsAndScalars) {
  TempDir dir;
  std::vector<uint16_t> halves = {FloatToHalf(1.0f), FloatToHalf(-2.5f)};
  const std::vector<float> scalar = {42.0f};
  SafetensorsWriter writer;
  ASSERT_TRUE(
      writer
          .AddEncoded("encoded", SafetensorsDType::kF16, {2},
                      Span<const uint8_t>(reinterpret_cast<const uint8_t*>(halves.data()), 4))
          .ok());
  ASSERT_TRUE(writer.AddFloat32("empty", {0, 4}, Span<const float>()).ok());
  ASSERT_TRUE(writer.AddFloat32("scalar", {}, scalar).ok());
  const std::string path = dir.File("m.safetensors");
  ASSERT_TRUE(writer.Write(path).ok());
  auto file = SafetensorsFile::Open(path);
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  EXPECT_EQ(*(*file)->ReadFloat32("encoded"), (std::vector<float>{1.0f, -2.5f}));
  EXPECT_TRUE((*file)->ReadFloat32("empty")->empty());
  EXPECT_EQ((*file)->Get("empty")->shape, (std::vector<int64_t>{0, 4}));
  EXPECT_EQ(*(*file)->ReadFloat32("scalar"), scalar);
  EXPECT_TRUE((*file)->Get("scalar")->shape.empty());
}

TEST(SafetensorsRoundTripTest, WriterRefusesBadInput) {
  const std::vector<float> v = {1, 2, 3};
  SafetensorsWriter writer;
  ASSERT_TRUE(writer.AddFloat32("t", {3}, v).ok());
  EXPECT_NE(writer.AddFloat32("t", {3}, v).message().find("added twice"), std::string::npos);
  EXPECT_FALSE(writer.AddFloat32("u", {2, 2}, v).ok());
  EXPECT_FALSE(writer.AddFloat32("__metadata__", {3}, v).ok());
  EXPECT_FALSE(writer.AddFloat32("w", {-3}, v).ok());
  EXPECT_FALSE(writer.AddFloat32("x", {3}, v, SafetensorsDType::kI64).ok());
  EXPECT_EQ(writer.tensor_count(), 1u);
}

TEST(SafetensorsRoundTripTest, WriteIsAtomicAndLeavesNoTemporaryFiles) {
  TempDir dir;
  const std::string path = dir.File("m.safetensors");
  const std::vector<float> v1 = {1, 2}, v2 = {3, 4, 5};
  SafetensorsWriter first;
  ASSERT_TRUE(first.AddFloat32("t", {2}, v1).ok());
  ASSERT_TRUE(first.Write(path).ok());
  auto open_first = SafetensorsFile::Open(path);  // a reader holding the old file keeps it intact
  ASSERT_TRUE(open_first.ok());
  SafetensorsWriter second;
  ASSERT_TRUE(second.AddFloat32("t", {3}, v2).ok());
  ASSERT_TRUE(second.Write(path).ok());
  EXPECT_EQ(*(*open_first)->ReadFloat32("t"), v1);
  EXPECT_EQ(*(*SafetensorsFile::Open(path))->ReadFloat32("t"), v2);
  size_t files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir.path())) {
    (void)entry;
    ++files;
  }
  EXPECT_EQ(files, 1u);
  // A directory that does not exist is an error value, not a crash.
  EXPECT_FALSE(second.Write(dir.File("missing/m.safetensors")).ok());
}

TEST(SafetensorsRoundTripTest, MissingTensorAndNonFloatDTypeAreClearErrors) {
  TempDir dir;
  // A header naming an I64 tensor is valid; reading it as float is refused.
  const std::string json = R"({"step":{"dtype":"I64","shape":[1],"data_offsets":[0,8]}})";
  std::string file(8, '\0');
  const uint64_t n = json.size();
  std::memcpy(file.data(), &n, 8);
  file += json + std::string(8, '\x01');
  const std::string path = dir.Write("m.safetensors", file);
  auto opened = SafetensorsFile::Open(path);
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  EXPECT_EQ((*opened)->Get("step")->dtype, SafetensorsDType::kI64);
  const Status s = (*opened)->ReadFloat32("step").status();
  EXPECT_NE(s.message().find("I64"), std::string::npos) << s.ToString();
  const Status missing = (*opened)->Get("nope").status();
  EXPECT_EQ(missing.code(), StatusCode::kNotFound);
  EXPECT_NE(missing.message().find("nope"), std::string::npos);
  EXPECT_EQ(SafetensorsFile::Open(dir.File("absent.safetensors")).status().code(),
            StatusCode::kNotFound);
}

TEST(SafetensorsRoundTripTest, ReadsFileWrittenByTheReferenceLibrary) {
  // tests/golden/reference.safetensors: scripts/golden/make_safetensors_golden.py (HF safetensors).
  auto file = SafetensorsFile::Open(std::string(GEOTRAIN_SOURCE_DIR) +
                                    "/tests/golden/reference.safetensors");
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  EXPECT_EQ((*file)->metadata().at("format"), "pt");
  auto wte = (*file)->ReadFloat32("transformer.wte.weight");
  ASSERT_TRUE(wte.ok()) << wte.status().ToString();
  ASSERT_EQ(wte->size(), 12u);
  for (size_t i = 0; i < 12; ++i) EXPECT_EQ((*wte)[i], (static_cast<float>(i) - 5.5f) / 4);
  EXPECT_EQ((*file)->Get("transformer.wte.weight")->shape, (std::vector<int64_t>{3, 4}));
  EXPECT_EQ(*(*file)->ReadFloat32("transformer.h.0.ln_1.bias"),
            (std::vector<float>{0.5f, -1.25f, 3.0f}));
  EXPECT_EQ((*file)->Get("step")->dtype, SafetensorsDType::kI64);
  EXPECT_EQ((*file)->Get("empty")->shape, (std::vector<int64_t>{0, 3}));
}

}  // namespace
}  // namespace geotrain::models
