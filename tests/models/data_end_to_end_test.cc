// The data pipeline on the bundled Shakespeare corpus with the real GPT-2 tokenizer.
#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <vector>

#include "models/data/batch_iterator.h"
#include "models/data/dataset.h"
#include "models/data/sample_id.h"
#include "tests/models/gpt2_tokenizer_files.h"
#include "tests/testing/temp_dir.h"

namespace geotrain::models::data {
namespace {

using geotrain::models::testing::Gpt2FromVocabMerges;
using geotrain::testing::TempDir;

std::string CorpusPath(const std::string& name) {
  return std::string(GEOTRAIN_SOURCE_DIR) + "/examples/data/shakespeare/" + name;
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

TEST(DataEndToEndTest, ShakespeareWithGpt2) {
  const BpeTokenizer* tokenizer = Gpt2FromVocabMerges();
  ASSERT_NE(tokenizer, nullptr);
  TempDir dir;
  auto sources = ParseWeightedSourceList(CorpusPath("train.txt") + ":3," + CorpusPath("valid.txt"));
  ASSERT_TRUE(sources.ok()) << sources.status().ToString();
  DataOptions options;
  options.sources = *sources;
  options.seq_length = 256;
  options.cache_dir = dir.File("token-cache");

  auto dataset = OpenDataset(options, *tokenizer);
  ASSERT_TRUE(dataset.ok()) << dataset.status().ToString();
  EXPECT_EQ((*dataset)->end_of_text_id(), 50256u);
  // The token counts examples/data/README.md gives (from HF tokenizers), plus one end-of-text.
  EXPECT_EQ((*dataset)->source(0).tokens().size(), 469540u + 1);
  EXPECT_EQ((*dataset)->source(1).tokens().size(), 31485u + 1);
  EXPECT_EQ((*dataset)->num_blocks(0), 469541u / 256);
  EXPECT_EQ((*dataset)->num_blocks(1), 31486u / 256);
  EXPECT_DOUBLE_EQ((*dataset)->source_weight(0), 0.75);

  auto reopened = OpenDataset(options, *tokenizer);
  ASSERT_TRUE(reopened.ok()) << reopened.status().ToString();
  EXPECT_TRUE((*reopened)->source(0).loaded_from_cache());
  EXPECT_TRUE((*reopened)->source(1).loaded_from_cache());

  // Two data-parallel ranks, micro-batches of 4: each block decodes to a stretch of its file.
  const std::string train = ReadAll(CorpusPath("train.txt"));
  const std::string valid = ReadAll(CorpusPath("valid.txt"));
  std::vector<std::unique_ptr<BatchIterator>> ranks;
  for (int64_t rank = 0; rank < 2; ++rank) {
    auto iterator = BatchIterator::Create(reopened->get(), BatchOptions{4, rank, 2, 1234, 0});
    ASSERT_TRUE(iterator.ok()) << iterator.status().ToString();
    ranks.push_back(std::move(iterator).value());
  }
  size_t from_train = 0;
  for (int step = 0; step < 25; ++step) {
    for (auto& iterator : ranks) {
      auto batch = iterator->Next();
      ASSERT_TRUE(batch.ok()) << batch.status().ToString();
      ASSERT_EQ(batch->tokens.size(), 4u * 256);
      for (size_t row = 0; row < 4; ++row) {
        const uint64_t id = batch->sample_ids[row];
        std::vector<int32_t> ids(batch->tokens.begin() + row * 256,
                                 batch->tokens.begin() + (row + 1) * 256);
        auto text = tokenizer->Decode(ids);
        ASSERT_TRUE(text.ok());
        const bool is_train = SampleIdSource(id) == 0;
        from_train += is_train;
        EXPECT_NE((is_train ? train : valid).find(*text), std::string::npos) << "sample " << id;
      }
    }
  }
  EXPECT_GT(from_train, 100u);  // 3:1 weights: about 150 of 200
  EXPECT_LT(from_train, 190u);
}

}  // namespace
}  // namespace geotrain::models::data
