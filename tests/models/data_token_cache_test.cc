// The token cache: file format, reuse, invalidation by source or tokenizer change, corruption.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "models/data/token_cache_file.h"
#include "models/data/tokenized_source.h"
#include "models/data/tokenizer_fingerprint.h"
#include "tests/models/data_test_tokenizer.h"
#include "tests/testing/temp_dir.h"

namespace geotrain::models::data {
namespace {

using geotrain::models::testing::kTinyEndOfTextId;
using geotrain::models::testing::LoadTinyDataTokenizer;
using geotrain::models::testing::TinyDataTokenizer;
using geotrain::testing::TempDir;

std::vector<uint32_t> ToVector(Span<const uint32_t> tokens) {
  return std::vector<uint32_t>(tokens.begin(), tokens.end());
}

SourceTokenizeOptions TinyOptions(const std::string& cache_dir,
                                  const BpeTokenizer& tokenizer = TinyDataTokenizer()) {
  SourceTokenizeOptions options;
  options.end_of_text_id = kTinyEndOfTextId;
  options.cache_dir = cache_dir;
  options.tokenizer_fingerprint = TokenizerFingerprint(tokenizer);
  return options;
}

TEST(DataTokenCacheTest, FileRoundTrips) {
  TempDir dir;
  TokenCacheKey key{1, 2, 3, -4, 5};
  const std::vector<uint32_t> tokens = {7, 0, 50256, 4294967295u};
  ASSERT_TRUE(WriteTokenCacheFile(dir.File("c.tokens"), key, tokens).ok());
  auto file = TokenCacheFile::Open(dir.File("c.tokens"));
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  EXPECT_EQ((*file)->key(), key);
  EXPECT_EQ(ToVector((*file)->tokens()), tokens);
  EXPECT_EQ(std::filesystem::file_size(dir.File("c.tokens")), 64u + 4 * 4 + 8);
}

TEST(DataTokenCacheTest, CorruptFilesAreDataLoss) {
  TempDir dir;
  const std::string path = dir.File("c.tokens");
  ASSERT_TRUE(WriteTokenCacheFile(path, TokenCacheKey{}, std::vector<uint32_t>{1, 2, 3}).ok());
  std::string good;
  {
    std::ifstream in(path, std::ios::binary);
    good.assign(std::istreambuf_iterator<char>(in), {});
  }
  struct Case {
    size_t offset;
    char value;
    const char* field;
  };
  for (const Case& c : {Case{0, 'X', "magic"}, Case{8, 9, "version"}, Case{12, 1, "header_size"},
                        Case{56, 9, "token_count"}, Case{64, 9, "checksum"}}) {
    std::string bad = good;
    bad[c.offset] = c.value;
    dir.Write("bad.tokens", bad);
    auto file = TokenCacheFile::Open(dir.File("bad.tokens"));
    ASSERT_FALSE(file.ok()) << c.field;
    EXPECT_EQ(file.status().code(), StatusCode::kDataLoss);
    EXPECT_NE(file.status().message().find(c.field), std::string::npos) << file.status().message();
  }
  dir.Write("short.tokens", good.substr(0, 70));
  EXPECT_EQ(TokenCacheFile::Open(dir.File("short.tokens")).status().code(), StatusCode::kDataLoss);
  EXPECT_EQ(TokenCacheFile::Open(dir.File("none.tokens")).status().code(), StatusCode::kNotFound);
}

TEST(DataTokenCacheTest, DocumentsAreFollowedByEndOfText) {
  TempDir dir;
  const std::string path = dir.Write("c.jsonl", "{\"text\": \"abc\"}\n{\"text\": \"<|eot|>\"}\n");
  auto source = TokenizedSource::Load(path, TinyOptions(""), TinyDataTokenizer());
  ASSERT_TRUE(source.ok()) << source.status().ToString();
  // A literal "<|eot|>" in a document is text, not the control token.
  std::vector<uint32_t> expected = {'a', 'b', 'c', kTinyEndOfTextId};
  for (char c : std::string("<|eot|>")) expected.push_back(static_cast<uint8_t>(c));
  expected.push_back(kTinyEndOfTextId);
  EXPECT_EQ(ToVector((*source)->tokens()), expected);
  EXPECT_FALSE((*source)->loaded_from_cache());
  EXPECT_TRUE((*source)->cache_path().empty());
}

TEST(DataTokenCacheTest, ReusedUntilTheSourceChanges) {
  TempDir dir;
  const std::string cache_dir = dir.File("cache");
  const std::string path = dir.Write("c.txt", "abcd");
  auto first = TokenizedSource::Load(path, TinyOptions(cache_dir), TinyDataTokenizer());
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_FALSE((*first)->loaded_from_cache());
  ASSERT_TRUE(std::filesystem::exists((*first)->cache_path()));
  EXPECT_EQ(ToVector((*first)->tokens()), (std::vector<uint32_t>{'a', 'b', 'c', 'd', 261}));

  auto second = TokenizedSource::Load(path, TinyOptions(cache_dir), TinyDataTokenizer());
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  EXPECT_TRUE((*second)->loaded_from_cache());
  EXPECT_EQ(ToVector((*second)->tokens()), ToVector((*first)->tokens()));

  // Same size, and the modification time put back: only the content fingerprint differs.
  const auto mtime = std::filesystem::last_write_time(path);
  dir.Write("c.txt", "abce");
  std::filesystem::last_write_time(path, mtime);
  auto changed = TokenizedSource::Load(path, TinyOptions(cache_dir), TinyDataTokenizer());
  ASSERT_TRUE(changed.ok()) << changed.status().ToString();
  EXPECT_FALSE((*changed)->loaded_from_cache());
  EXPECT_EQ(ToVector((*changed)->tokens()), (std::vector<uint32_t>{'a', 'b', 'c', 'e', 261}));

  auto again = TokenizedSource::Load(path, TinyOptions(cache_dir), TinyDataTokenizer());
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE((*again)->loaded_from_cache());
  EXPECT_EQ(ToVector((*again)->tokens()), ToVector((*changed)->tokens()));
}

TEST(DataTokenCacheTest, AnotherTokenizerOrSettingInvalidates) {
  TempDir dir;
  const std::string cache_dir = dir.File("cache");
  const std::string path = dir.Write("c.txt", "hello world");
  ASSERT_TRUE(TokenizedSource::Load(path, TinyOptions(cache_dir), TinyDataTokenizer()).ok());

  auto prefixed_tokenizer = LoadTinyDataTokenizer(/*add_prefix_space=*/true);
  ASSERT_NE(prefixed_tokenizer, nullptr);
  EXPECT_NE(TokenizerFingerprint(*prefixed_tokenizer), TokenizerFingerprint(TinyDataTokenizer()));
  auto other =
      TokenizedSource::Load(path, TinyOptions(cache_dir, *prefixed_tokenizer), *prefixed_tokenizer);
  ASSERT_TRUE(other.ok()) << other.status().ToString();
  EXPECT_FALSE((*other)->loaded_from_cache());

  SourceTokenizeOptions other_separator = TinyOptions(cache_dir, *prefixed_tokenizer);
  other_separator.end_of_text_id = 0;
  auto separated = TokenizedSource::Load(path, other_separator, *prefixed_tokenizer);
  ASSERT_TRUE(separated.ok());
  EXPECT_FALSE((*separated)->loaded_from_cache());
  EXPECT_EQ((*separated)->tokens()[(*separated)->tokens().size() - 1], 0u);
}

TEST(DataTokenCacheTest, CorruptCacheIsRebuilt) {
  TempDir dir;
  const std::string cache_dir = dir.File("cache");
  const std::string path = dir.Write("c.txt", "abcd");
  auto first = TokenizedSource::Load(path, TinyOptions(cache_dir), TinyDataTokenizer());
  ASSERT_TRUE(first.ok());
  const std::string cache_path = (*first)->cache_path();
  std::filesystem::resize_file(cache_path, 66);
  auto rebuilt = TokenizedSource::Load(path, TinyOptions(cache_dir), TinyDataTokenizer());
  ASSERT_TRUE(rebuilt.ok()) << rebuilt.status().ToString();
  EXPECT_FALSE((*rebuilt)->loaded_from_cache());
  EXPECT_TRUE(TokenCacheFile::Open(cache_path).ok());
}

TEST(DataTokenCacheTest, InvalidUtf8TextIsKeptByteForByte) {
  TempDir dir;
  const std::string bytes = "caf\xe9 \xff\xfe\xc3(";
  const std::string path = dir.Write("latin1.txt", bytes);
  auto source = TokenizedSource::Load(path, TinyOptions(""), TinyDataTokenizer());
  ASSERT_TRUE(source.ok()) << source.status().ToString();
  std::vector<int32_t> ids((*source)->tokens().begin(), (*source)->tokens().end());
  ASSERT_EQ(ids.back(), kTinyEndOfTextId);
  ids.pop_back();
  auto decoded = TinyDataTokenizer().Decode(ids);
  ASSERT_TRUE(decoded.ok());
  EXPECT_EQ(*decoded, bytes);
}

TEST(DataTokenCacheTest, MissingSourceIsNotFound) {
  TempDir dir;
  auto source = TokenizedSource::Load(dir.File("none.txt"), TinyOptions(""), TinyDataTokenizer());
  EXPECT_EQ(source.status().code(), StatusCode::kNotFound);
  EXPECT_NE(source.status().message().find("none.txt"), std::string::npos);
}

}  // namespace
}  // namespace geotrain::models::data
