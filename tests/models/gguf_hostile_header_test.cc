// Hostile GGUF files: every count, length, type id, dimension and offset is checked before use, and
// the error names the field.
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>

#include "common/io/file_contents.h"
#include "models/gguf/gguf_file.h"
#include "tests/models/gguf_golden_files.h"
#include "tests/testing/temp_dir.h"

namespace geotrain::models {
namespace {

// Little-endian GGUF bytes, appended field by field.
class GgufBytes {
 public:
  GgufBytes& U8(uint8_t v) { return Raw(&v, 1); }
  GgufBytes& U32(uint32_t v) { return Raw(&v, 4); }
  GgufBytes& U64(uint64_t v) { return Raw(&v, 8); }
  GgufBytes& Str(const std::string& s) {
    U64(s.size());
    return Raw(s.data(), s.size());
  }
  GgufBytes& Raw(const void* p, size_t n) {
    bytes_.append(static_cast<const char*>(p), n);
    return *this;
  }
  GgufBytes& PadTo(size_t alignment) {
    while (bytes_.size() % alignment) bytes_.push_back('\0');
    return *this;
  }
  std::string& bytes() { return bytes_; }

 private:
  std::string bytes_;
};

// Parts of a small valid file: "GGUF" v3, one string key, tensor "w" F32 ne=[4] at offset 0.
struct FileParts {
  uint32_t version = 3;
  uint64_t tensor_count = 1;
  uint64_t kv_count = 1;
  std::string kv;       // the key/value section
  std::string tensors;  // the tensor info section
  size_t data_bytes = 16;
};

std::string DefaultKv() {
  GgufBytes b;
  b.Str("general.name").U32(8).Str("tiny");
  return b.bytes();
}
std::string TensorInfo(const std::string& name, std::vector<uint64_t> ne, uint32_t type,
                       uint64_t offset) {
  GgufBytes b;
  b.Str(name).U32(static_cast<uint32_t>(ne.size()));
  for (uint64_t d : ne) b.U64(d);
  b.U32(type).U64(offset);
  return b.bytes();
}

std::string Build(const FileParts& parts) {
  GgufBytes b;
  b.Raw("GGUF", 4).U32(parts.version).U64(parts.tensor_count).U64(parts.kv_count);
  b.Raw(parts.kv.data(), parts.kv.size()).Raw(parts.tensors.data(), parts.tensors.size());
  b.PadTo(32);
  b.bytes().append(parts.data_bytes, '\0');
  return b.bytes();
}

FileParts ValidParts() {
  FileParts parts;
  parts.kv = DefaultKv();
  parts.tensors = TensorInfo("w", {4}, 0, 0);
  return parts;
}

class GgufHostileHeaderTest : public ::testing::Test {
 protected:
  // Opens `bytes` as a file; returns the error message ("" when it opened).
  std::string OpenError(const std::string& bytes) {
    const std::string path = dir_.File("f" + std::to_string(n_++) + ".gguf");
    std::ofstream(path, std::ios::binary).write(bytes.data(), bytes.size());
    auto file = GgufFile::Open(path);
    return file.ok() ? "" : file.status().message();
  }
  void ExpectError(const FileParts& parts, const std::string& needle) {
    const std::string message = OpenError(Build(parts));
    EXPECT_NE(message.find(needle), std::string::npos)
        << "expected \"" << needle << "\" in: " << (message.empty() ? "(opened)" : message);
  }
  geotrain::testing::TempDir dir_;
  int n_ = 0;
};

TEST_F(GgufHostileHeaderTest, ValidFileOpens) {
  EXPECT_EQ(OpenError(Build(ValidParts())), "");
  FileParts v2 = ValidParts();
  v2.version = 2;
  EXPECT_EQ(OpenError(Build(v2)), "");
}

TEST_F(GgufHostileHeaderTest, MagicAndVersion) {
  std::string bytes = Build(ValidParts());
  bytes[0] = 'X';
  EXPECT_NE(OpenError(bytes).find("gguf.magic"), std::string::npos);
  EXPECT_NE(OpenError("GGU").find("gguf.magic"), std::string::npos);
  FileParts parts = ValidParts();
  parts.version = 1;
  ExpectError(parts, "gguf.version: 1 is not supported");
  parts.version = 0x03000000;
  ExpectError(parts, "big-endian");
}

TEST_F(GgufHostileHeaderTest, Counts) {
  FileParts parts = ValidParts();
  parts.tensor_count = uint64_t{1} << 40;
  ExpectError(parts, "gguf.tensor_count");
  parts = ValidParts();
  parts.kv_count = ~uint64_t{0};
  ExpectError(parts, "gguf.metadata_count");
  parts = ValidParts();
  parts.tensor_count = 1000;  // under the limit, but the file is far too short
  ExpectError(parts, "cannot fit in the file");
}

TEST_F(GgufHostileHeaderTest, Strings) {
  FileParts parts = ValidParts();
  GgufBytes kv;
  kv.U64(uint64_t{1} << 40);  // key length
  parts.kv = kv.bytes();
  ExpectError(parts, "gguf.metadata[0].key.length");
  GgufBytes kv2;
  kv2.Str("general.name").U32(8).U64(10000).Raw("abc", 3);  // value longer than the file
  parts.kv = kv2.bytes();
  parts.tensor_count = 0;
  parts.data_bytes = 0;
  ExpectError(parts, "gguf.metadata[0] (general.name)");
}

TEST_F(GgufHostileHeaderTest, ValueTypes) {
  FileParts parts = ValidParts();
  GgufBytes kv;
  kv.Str("k").U32(13);
  parts.kv = kv.bytes();
  ExpectError(parts, "gguf.metadata[0] (k).type: 13 is not a GGUF value type");
  GgufBytes nested;
  nested.Str("k").U32(9).U32(9).U64(1);
  parts.kv = nested.bytes();
  ExpectError(parts, "nested arrays are not supported");
  GgufBytes huge;
  huge.Str("k").U32(9).U32(6).U64(uint64_t{1} << 25);  // 128 MiB of float32 in a tiny file
  parts.kv = huge.bytes();
  ExpectError(parts, "gguf.metadata[0] (k).count");
  GgufBytes bad_bool;
  bad_bool.Str("k").U32(7).U8(2);
  parts.kv = bad_bool.bytes();
  ExpectError(parts, "bool byte 2");
  GgufBytes dup;
  dup.Str("k").U32(4).U32(1).Str("k").U32(4).U32(2);
  parts.kv = dup.bytes();
  parts.kv_count = 2;
  ExpectError(parts, "gguf.metadata[1] (k): duplicate key");
}

TEST_F(GgufHostileHeaderTest, Alignment) {
  FileParts parts = ValidParts();
  GgufBytes kv;
  kv.Str("general.alignment").U32(4).U32(24);
  parts.kv = kv.bytes();
  ExpectError(parts, "general.alignment: 24 is not a power of two");
  GgufBytes wrong_type;
  wrong_type.Str("general.alignment").U32(10).U64(32);
  parts.kv = wrong_type.bytes();
  ExpectError(parts, "general.alignment: expected uint32");
}

TEST_F(GgufHostileHeaderTest, TensorInfos) {
  FileParts parts = ValidParts();
  parts.tensors = TensorInfo("w", {}, 0, 0);
  ExpectError(parts, "gguf.tensor[0] (w).n_dims: 0");
  parts.tensors = TensorInfo("w", {1, 1, 1, 1, 1}, 0, 0);
  ExpectError(parts, "gguf.tensor[0] (w).n_dims: 5");
  parts.tensors = TensorInfo("w", {uint64_t{1} << 32, uint64_t{1} << 32}, 0, 0);
  ExpectError(parts, "gguf.tensor[0] (w).ne");
  parts.tensors = TensorInfo("w", {~uint64_t{0}}, 0, 0);
  ExpectError(parts, "gguf.tensor[0] (w).ne[0]");
  parts.tensors = TensorInfo("w", {4}, 4, 0);  // id 4 was removed from ggml
  ExpectError(parts, "gguf.tensor[0] (w).type: 4 is not a ggml type");
  parts.tensors = TensorInfo("w", {16}, 8, 0);  // Q8_0 rows must be whole 32-value blocks
  ExpectError(parts, "gguf.tensor[0] (w).ne[0]: 16 is not a multiple of the Q8_0 block size 32");
  parts.tensors = TensorInfo("", {4}, 0, 0);
  ExpectError(parts, "gguf.tensor[0].name: empty");
}

TEST_F(GgufHostileHeaderTest, TensorPlacement) {
  FileParts parts = ValidParts();
  parts.tensors = TensorInfo("w", {4}, 0, 8);
  ExpectError(parts, "gguf.tensor[0] (w).offset: 8 is not a multiple of the alignment 32");
  parts.tensors = TensorInfo("w", {4}, 0, 32);
  ExpectError(parts, "runs past the end of the data section");
  parts.tensors = TensorInfo("w", {4}, 0, ~uint64_t{0} - 31);
  ExpectError(parts, "gguf.tensor[0] (w).offset");
  parts.tensors = TensorInfo("w", {16}, 0, 0);  // 64 bytes, 16 in the file: truncated
  ExpectError(parts, "truncated file?");
  parts.tensor_count = 2;
  parts.data_bytes = 64;
  parts.tensors = TensorInfo("a", {16}, 0, 0) + TensorInfo("b", {4}, 0, 32);
  ExpectError(parts, "gguf.tensor[1] (b).offset: 32 overlaps tensor a [0, 64)");
  parts.tensors = TensorInfo("a", {4}, 0, 0) + TensorInfo("a", {4}, 0, 32);
  ExpectError(parts, "gguf.tensor[1] (a).name: duplicate");
}

TEST_F(GgufHostileHeaderTest, EveryTruncationIsAnError) {
  const std::string bytes = Build(ValidParts());
  // Cutting anywhere inside the header, metadata or tensor infos must fail cleanly.
  const size_t header_end = bytes.size() - 16;
  for (size_t cut = 0; cut < header_end; ++cut) {
    EXPECT_NE(OpenError(bytes.substr(0, cut)), "") << "cut at " << cut;
  }
}

// Every single-byte corruption of the header, metadata and tensor infos of a real file (gguf-py's
// types.gguf) either opens, with every tensor still inside the file, or fails with an error; none
// may crash (run under ASan in CI). The data section is left alone: any bytes are valid there.
TEST_F(GgufHostileHeaderTest, EveryByteCorruptionIsSafe) {
  auto original = io::ReadFileContents(geotrain::testing::GgufGoldenPath("types.gguf"), 1 << 20);
  ASSERT_TRUE(original.ok());
  auto intact = GgufFile::Open(geotrain::testing::GgufGoldenPath("types.gguf"));
  ASSERT_TRUE(intact.ok());
  const size_t header_bytes = (*intact)->data_offset();
  // One file, patched in place: truncating and rewriting a file per case is slow on some disks.
  const std::string path = dir_.File("corrupt.gguf");
  std::ofstream(path, std::ios::binary).write(original->data(), original->size());
  auto patch = [&](size_t at, char byte) {
    std::fstream out(path, std::ios::binary | std::ios::in | std::ios::out);
    out.seekp(static_cast<std::streamoff>(at));
    out.put(byte);
  };
  int opened = 0;
  for (size_t i = 0; i < header_bytes; ++i) {
    for (uint8_t flip : {0x01, 0xFF}) {
      patch(i, static_cast<char>((*original)[i] ^ flip));
      {
        auto file = GgufFile::Open(path);
        if (file.ok()) {
          ++opened;
          for (const GgufTensorInfo& tensor : (*file)->tensors()) {
            ASSERT_LE((*file)->data_offset() + tensor.offset + tensor.num_bytes, original->size());
            auto values = (*file)->Dequantize(tensor);  // may fail (type changed), not crash
            (void)values;
          }
        }
      }  // unmapped before the byte is restored
      patch(i, (*original)[i]);
    }
  }
  EXPECT_GT(opened, 0);  // e.g. flips inside metadata strings leave the file valid
}

}  // namespace
}  // namespace geotrain::models
