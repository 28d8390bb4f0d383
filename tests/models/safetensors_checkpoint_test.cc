// SafetensorsCheckpoint: sharded loading through model.safetensors.index.json opens only the shards
// whose tensors are asked for; hostile indexes are clear errors.
#include "models/safetensors_checkpoint.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "models/safetensors_writer.h"
#include "tests/testing/temp_dir.h"

namespace geotrain::models {
namespace {

using geotrain::testing::TempDir;

constexpr char kIndex[] = R"({
  "metadata": {"total_size": 40},
  "weight_map": {
    "h.0.w": "model-00001-of-00002.safetensors",
    "h.0.b": "model-00001-of-00002.safetensors",
    "h.1.w": "model-00002-of-00002.safetensors"
  }
})";

void WriteShard(const std::string& path, const std::vector<std::string>& names,
                const std::vector<float>& values) {
  SafetensorsWriter writer;
  for (const std::string& name : names) ASSERT_TRUE(writer.AddFloat32(name, {2, 2}, values).ok());
  ASSERT_TRUE(writer.Write(path).ok());
}

TEST(SafetensorsCheckpointTest, ReadsOnlyTheShardItNeeds) {
  TempDir dir;
  const std::vector<float> first = {1, 2, 3, 4};
  WriteShard(dir.File("model-00001-of-00002.safetensors"), {"h.0.w", "h.0.b"}, first);
  // The second shard is garbage: opening it would fail, so reading h.0.* proves it stays closed.
  dir.Write("model-00002-of-00002.safetensors", "not a safetensors file");
  dir.Write(kSafetensorsIndexFile, kIndex);

  auto checkpoint = SafetensorsCheckpoint::OpenDirectory(dir.path());
  ASSERT_TRUE(checkpoint.ok()) << checkpoint.status().ToString();
  SafetensorsCheckpoint& c = **checkpoint;
  EXPECT_EQ(c.TensorNames(), (std::vector<std::string>{"h.0.b", "h.0.w", "h.1.w"}));
  EXPECT_EQ(c.open_shard_count(), 0u);
  EXPECT_EQ(*c.ReadFloat32("h.0.w"), first);
  EXPECT_EQ(*c.ReadFloat32("h.0.b"), first);
  EXPECT_EQ(c.open_shard_count(), 1u);
  EXPECT_EQ(c.ShardOf("h.1.w"), "model-00002-of-00002.safetensors");

  const Status broken = c.Get("h.1.w").status();
  EXPECT_FALSE(broken.ok());
  EXPECT_NE(broken.message().find("model-00002-of-00002.safetensors"), std::string::npos)
      << broken.ToString();
  EXPECT_EQ(c.Get("h.9.w").status().code(), StatusCode::kNotFound);
}

TEST(SafetensorsCheckpointTest, SingleFileDirectory) {
  TempDir dir;
  const std::vector<float> values = {5, 6, 7, 8};
  WriteShard(dir.File(kSafetensorsSingleFile), {"wte.weight"}, values);
  auto checkpoint = SafetensorsCheckpoint::OpenDirectory(dir.path());
  ASSERT_TRUE(checkpoint.ok()) << checkpoint.status().ToString();
  EXPECT_EQ(*(*checkpoint)->ReadFloat32("wte.weight"), values);
  EXPECT_EQ((*checkpoint)->Get("wte.weight")->shape, (std::vector<int64_t>{2, 2}));
}

TEST(SafetensorsCheckpointTest, EmptyDirectoryIsNotFound) {
  TempDir dir;
  const Status s = SafetensorsCheckpoint::OpenDirectory(dir.path()).status();
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  EXPECT_NE(s.message().find(kSafetensorsIndexFile), std::string::npos);
}

TEST(SafetensorsCheckpointTest, TensorMissingFromItsShard) {
  TempDir dir;
  WriteShard(dir.File("a.safetensors"), {"x"}, {1, 2, 3, 4});
  dir.Write(kSafetensorsIndexFile,
            R"({"weight_map": {"x": "a.safetensors", "y": "a.safetensors"}})");
  auto checkpoint = SafetensorsCheckpoint::OpenDirectory(dir.path());
  ASSERT_TRUE(checkpoint.ok());
  const Status s = (*checkpoint)->Get("y").status();
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  EXPECT_NE(s.message().find("index maps it"), std::string::npos) << s.ToString();
}

TEST(SafetensorsCheckpointTest, HostileIndexes) {
  struct Case {
    const char* index;
    const char* expected;
  } cases[] = {
      {R"({"weight_map": )", "invalid JSON"},
      {R"([])", "expected a JSON object"},
      {R"({"metadata": {}})", "missing weight_map"},
      {R"({"weight_map": []})", "weight_map: expected an object"},
      {R"({"weight_map": {"x": 3}})", "weight_map[\"x\"]: expected a file name"},
      {R"({"weight_map": {"x": "../secret.safetensors"}})", "not a plain file name"},
      {R"({"weight_map": {"x": "/etc/passwd"}})", "not a plain file name"},
      {R"({"weight_map": {"x": ""}})", "not a plain file name"},
      {R"({"weight_map": {"x": "a", "x": "b"}})", "duplicate key \"x\""},
      {R"({"metadata": 7, "weight_map": {}})", "metadata: expected an object"},
  };
  for (const Case& c : cases) {
    TempDir dir;
    const std::string index = dir.Write(kSafetensorsIndexFile, c.index);
    const Status s = SafetensorsCheckpoint::OpenIndex(index).status();
    ASSERT_FALSE(s.ok()) << c.index;
    EXPECT_NE(s.message().find(c.expected), std::string::npos) << s.ToString();
    EXPECT_NE(s.message().find(index), std::string::npos) << s.ToString();
  }
}

TEST(SafetensorsCheckpointTest, MissingShardFileNamesIt) {
  TempDir dir;
  dir.Write(kSafetensorsIndexFile, R"({"weight_map": {"x": "gone.safetensors"}})");
  auto checkpoint = SafetensorsCheckpoint::OpenDirectory(dir.path());
  ASSERT_TRUE(checkpoint.ok());
  const Status s = (*checkpoint)->Get("x").status();
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  EXPECT_NE(s.message().find("gone.safetensors"), std::string::npos);
}

}  // namespace
}  // namespace geotrain::models
