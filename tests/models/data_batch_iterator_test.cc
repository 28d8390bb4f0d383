// Dataset + BatchIterator: packing, stable ids, determinism, resume, sharding, weights.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "models/data/batch_iterator.h"
#include "models/data/dataset.h"
#include "models/data/sample_id.h"
#include "tests/models/data_test_tokenizer.h"
#include "tests/testing/temp_dir.h"

namespace geotrain::models::data {
namespace {

using geotrain::models::testing::kTinyEndOfText;
using geotrain::models::testing::kTinyEndOfTextId;
using geotrain::models::testing::TinyDataTokenizer;
using geotrain::testing::TempDir;

constexpr int64_t kSeqLength = 8;

// Two sources the tiny tokenizer encodes byte for byte (no 'h', 'e', 'l', 'w'): a text file of
// 399 bytes (400 ids with end-of-text: 50 blocks) and a jsonl file of 30 documents of 7 bytes
// (240 ids: 30 blocks).
class DataBatchIteratorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string text;
    for (int i = 0; i < 399; ++i) text.push_back("0123456789abcdfgijk"[i % 19]);
    text_path_ = dir_.Write("book.txt", text);
    std::string jsonl;
    for (int i = 0; i < 30; ++i) {
      jsonl += "{\"text\": \"doc" + std::string(1, static_cast<char>('A' + i % 26)) +
               std::to_string(100 + i) + "\"}\n";
    }
    jsonl_path_ = dir_.Write("docs.jsonl", jsonl);
  }

  DataOptions Options(double text_weight = 1, double jsonl_weight = 1) const {
    DataOptions options;
    options.sources = {{text_path_, text_weight}, {jsonl_path_, jsonl_weight}};
    options.seq_length = kSeqLength;
    options.end_of_text_token = kTinyEndOfText;
    options.cache_dir = dir_.File("cache");
    return options;
  }

  std::unique_ptr<Dataset> Open(const DataOptions& options) const {
    auto dataset = OpenDataset(options, TinyDataTokenizer());
    EXPECT_TRUE(dataset.ok()) << dataset.status().ToString();
    return dataset.ok() ? std::move(dataset).value() : nullptr;
  }

  static std::unique_ptr<BatchIterator> Iterator(const Dataset& dataset,
                                                 const BatchOptions& options) {
    auto iterator = BatchIterator::Create(&dataset, options);
    EXPECT_TRUE(iterator.ok()) << iterator.status().ToString();
    return iterator.ok() ? std::move(iterator).value() : nullptr;
  }

  static std::vector<Batch> Take(BatchIterator* iterator, int n) {
    std::vector<Batch> batches;
    for (int i = 0; i < n; ++i) {
      auto batch = iterator->Next();
      EXPECT_TRUE(batch.ok()) << batch.status().ToString();
      if (batch.ok()) batches.push_back(std::move(batch).value());
    }
    return batches;
  }

  static void ExpectSameBatches(const std::vector<Batch>& a, const std::vector<Batch>& b) {
    ASSERT_EQ(a.size(), b.size());
    for (size_t i = 0; i < a.size(); ++i) {
      EXPECT_EQ(a[i].sample_ids, b[i].sample_ids) << "batch " << i;
      EXPECT_EQ(a[i].tokens, b[i].tokens) << "batch " << i;
      EXPECT_EQ(a[i].epoch, b[i].epoch) << "batch " << i;
      EXPECT_EQ(a[i].index, b[i].index) << "batch " << i;
    }
  }

  TempDir dir_;
  std::string text_path_;
  std::string jsonl_path_;
};

TEST_F(DataBatchIteratorTest, PacksSourcesIntoBlocksWithStableIds) {
  auto dataset = Open(Options());
  ASSERT_NE(dataset, nullptr);
  ASSERT_EQ(dataset->num_sources(), 2u);
  EXPECT_EQ(dataset->num_blocks(0), 50u);
  EXPECT_EQ(dataset->num_blocks(1), 30u);
  EXPECT_EQ(dataset->end_of_text_id(), static_cast<uint32_t>(kTinyEndOfTextId));
  // Block 2 of the jsonl source is its third document, "docC102", and end-of-text.
  auto block = dataset->Block(MakeSampleId(1, 2));
  ASSERT_TRUE(block.ok());
  const std::string doc = "docC102";
  std::vector<uint32_t> expected(doc.begin(), doc.end());
  expected.push_back(kTinyEndOfTextId);
  EXPECT_EQ(std::vector<uint32_t>(block->begin(), block->end()), expected);
  EXPECT_EQ(dataset->Block(MakeSampleId(1, 30)).status().code(), StatusCode::kOutOfRange);
  EXPECT_EQ(dataset->Block(MakeSampleId(2, 0)).status().code(), StatusCode::kOutOfRange);

  // Every batch row is the block its id names, whatever the seed or epoch.
  for (uint64_t seed : {1, 2}) {
    BatchOptions options;
    options.batch_size = 4;
    options.seed = seed;
    auto iterator = Iterator(*dataset, options);
    for (const Batch& batch : Take(iterator.get(), 45)) {
      ASSERT_EQ(batch.tokens.size(), 4u * kSeqLength);
      for (size_t row = 0; row < batch.sample_ids.size(); ++row) {
        auto expected_block = dataset->Block(batch.sample_ids[row]);
        ASSERT_TRUE(expected_block.ok());
        EXPECT_TRUE(std::equal(expected_block->begin(), expected_block->end(),
                               batch.tokens.begin() + row * kSeqLength));
      }
    }
  }
}

TEST_F(DataBatchIteratorTest, SameSeedSameBatchesAcrossRuns) {
  BatchOptions options;
  options.batch_size = 3;
  options.seed = 42;
  auto first_dataset = Open(Options());   // tokenizes and writes the cache
  auto second_dataset = Open(Options());  // reads the cache
  ASSERT_NE(second_dataset, nullptr);
  EXPECT_TRUE(second_dataset->source(0).loaded_from_cache());
  EXPECT_TRUE(second_dataset->source(1).loaded_from_cache());
  auto first = Iterator(*first_dataset, options);
  auto second = Iterator(*second_dataset, options);
  ExpectSameBatches(Take(first.get(), 60), Take(second.get(), 60));

  options.seed = 43;
  auto other_seed = Iterator(*first_dataset, options);
  auto same_seed = Iterator(*first_dataset, BatchOptions{3, 0, 1, 42, 0});
  EXPECT_NE(Take(other_seed.get(), 5)[0].sample_ids, Take(same_seed.get(), 5)[0].sample_ids);
}

TEST_F(DataBatchIteratorTest, ResumeMidEpochContinuesIdentically) {
  auto dataset = Open(Options(2, 1));
  BatchOptions options;
  options.batch_size = 4;
  options.world_size = 2;
  options.rank = 1;
  options.seed = 7;
  auto uninterrupted = Iterator(*dataset, options);
  ASSERT_EQ(uninterrupted->batches_per_epoch(), 10u);  // 80 samples / (2 * 4)
  const std::vector<Batch> expected = Take(uninterrupted.get(), 27);

  for (int stop : {0, 4, 10, 13}) {
    auto before = Iterator(*dataset, options);
    const std::vector<Batch> head = Take(before.get(), stop);
    const nlohmann::json saved = DataPositionToJson(before->position());
    auto restored_position = DataPositionFromJson(nlohmann::json::parse(saved.dump()));
    ASSERT_TRUE(restored_position.ok()) << restored_position.status().ToString();
    EXPECT_EQ(*restored_position, before->position());

    auto reopened = Open(Options(2, 1));  // a new process: new dataset and iterator
    auto after = Iterator(*reopened, options);
    ASSERT_TRUE(after->Seek(*restored_position).ok());
    std::vector<Batch> all = head;
    for (Batch& batch : Take(after.get(), 27 - stop)) all.push_back(std::move(batch));
    ExpectSameBatches(all, expected);
  }
  EXPECT_EQ(expected[9].epoch, 0u);
  EXPECT_EQ(expected[10].epoch, 1u);
  EXPECT_EQ(expected[10].index, 0u);
}

TEST_F(DataBatchIteratorTest, ShardsAreDisjointAndCoverTheEpoch) {
  // Weights in proportion to the block counts (50:30): an epoch shows every block once.
  auto dataset = Open(Options(5, 3));
  const int64_t world_size = 3;
  const int64_t batch_size = 2;
  for (uint64_t epoch = 0; epoch < 2; ++epoch) {
    std::vector<std::vector<Batch>> per_rank;
    for (int64_t rank = 0; rank < world_size; ++rank) {
      auto iterator = Iterator(*dataset, BatchOptions{batch_size, rank, world_size, 11, 0});
      ASSERT_EQ(iterator->batches_per_epoch(), 13u);  // 80 / 6, 2 samples dropped
      ASSERT_TRUE(iterator->Seek(DataPosition{epoch, 0}).ok());
      per_rank.push_back(Take(iterator.get(), 13));
    }
    std::set<uint64_t> epoch_ids;
    size_t total = 0;
    for (const auto& batches : per_rank) {
      ASSERT_EQ(batches.size(), 13u);
      for (const Batch& batch : batches) {
        EXPECT_EQ(batch.epoch, epoch);
        ASSERT_EQ(batch.sample_ids.size(), static_cast<size_t>(batch_size));
        epoch_ids.insert(batch.sample_ids.begin(), batch.sample_ids.end());
        total += batch.sample_ids.size();
      }
    }
    // Every block at most once in the epoch, so no id is on two ranks.
    EXPECT_EQ(epoch_ids.size(), total);
    EXPECT_EQ(total, 78u);
    // Together the ranks take exactly the first 78 samples of the epoch's order.
    EpochMixture mixture{dataset->block_counts(), dataset->weights(), 80};
    auto order = BuildEpochOrder(mixture, 11, epoch);
    ASSERT_TRUE(order.ok());
    EXPECT_EQ(epoch_ids, std::set<uint64_t>(order->begin(), order->begin() + 78));
    // Round k of rank r is positions [(k * 3 + r) * 2, + 2).
    for (int64_t rank = 0; rank < world_size; ++rank) {
      for (size_t k = 0; k < 13; ++k) {
        const size_t first = (k * world_size + rank) * batch_size;
        EXPECT_EQ(per_rank[rank][k].sample_ids,
                  std::vector<uint64_t>(order->begin() + first, order->begin() + first + 2));
      }
    }
  }
}

TEST_F(DataBatchIteratorTest, WeightsAreRespectedOverManySamples) {
  // Source 0 has 50 of 80 blocks, but weight 0.2; source 1 weight 0.8.
  auto dataset = Open(Options(1, 4));
  BatchOptions options;
  options.batch_size = 5;
  options.seed = 3;
  options.samples_per_epoch = 97;  // not a multiple of anything, to exercise rounding
  auto iterator = Iterator(*dataset, options);
  std::map<uint64_t, uint64_t> per_source;
  std::map<uint64_t, uint64_t> per_id;
  for (const Batch& batch : Take(iterator.get(), 1000)) {
    for (uint64_t id : batch.sample_ids) {
      ++per_source[SampleIdSource(id)];
      ++per_id[id];
    }
  }
  const double fraction = static_cast<double>(per_source[1]) / 5000.0;
  EXPECT_NEAR(fraction, 0.8, 0.01);
  EXPECT_EQ(per_id.size(), 80u);  // every block of both sources is visited
}

TEST_F(DataBatchIteratorTest, BadOptionsAreRefusedByName) {
  auto dataset = Open(Options());
  struct Case {
    BatchOptions options;
    const char* field;
  };
  for (const Case& c : {Case{{0, 0, 1, 0, 0}, "batch_size"}, Case{{1, 0, 0, 0, 0}, "world_size"},
                        Case{{1, 2, 2, 0, 0}, "rank"}, Case{{1, -1, 2, 0, 0}, "rank"},
                        Case{{9, 0, 9, 0, 0}, "shorter than one round"}}) {
    auto iterator = BatchIterator::Create(dataset.get(), c.options);
    ASSERT_FALSE(iterator.ok()) << c.field;
    EXPECT_NE(iterator.status().message().find(c.field), std::string::npos)
        << iterator.status().message();
  }
  auto iterator = Iterator(*dataset, BatchOptions{8, 0, 1, 0, 0});
  EXPECT_EQ(iterator->Seek(DataPosition{0, 11}).code(), StatusCode::kOutOfRange);
  // The end of an epoch is a valid position: the next batch starts the following epoch.
  ASSERT_TRUE(iterator->Seek(DataPosition{2, 10}).ok());
  auto batch = iterator->Next();
  ASSERT_TRUE(batch.ok());
  EXPECT_EQ(batch->epoch, 3u);
  EXPECT_EQ(batch->index, 0u);
}

TEST_F(DataBatchIteratorTest, BadDataOptionsAreRefusedByName) {
  DataOptions options = Options();
  options.seq_length = 0;
  EXPECT_NE(OpenDataset(options, TinyDataTokenizer()).status().message().find("seq_length"),
            std::string::npos);
  options = Options();
  options.seq_length = 401;
  auto too_long = OpenDataset(options, TinyDataTokenizer());
  EXPECT_NE(too_long.status().message().find("book.txt: 400 tokens, fewer than one block"),
            std::string::npos)
      << too_long.status().message();
  options = Options();
  options.end_of_text_token = "<|endoftext|>";
  EXPECT_NE(OpenDataset(options, TinyDataTokenizer()).status().message().find("end_of_text_token"),
            std::string::npos);
  options = Options();
  options.sources[1].weight = -1;
  EXPECT_NE(OpenDataset(options, TinyDataTokenizer()).status().message().find("docs.jsonl"),
            std::string::npos);
  options = Options();
  options.sources.clear();
  EXPECT_FALSE(OpenDataset(options, TinyDataTokenizer()).ok());
  // A broken jsonl source names file:line and field.
  dir_.Write("docs.jsonl", "{\"text\": \"ok\"}\n{\"txt\": \"no\"}\n");
  auto broken = OpenDataset(Options(), TinyDataTokenizer());
  EXPECT_NE(broken.status().message().find("docs.jsonl:2: field \"text\" is missing"),
            std::string::npos)
      << broken.status().message();
}

TEST(DataPositionTest, JsonRoundTripAndErrors) {
  const DataPosition position{3, 17};
  EXPECT_EQ(DataPositionToJson(position).dump(), "{\"epoch\":3,\"index\":17}");
  auto parsed = DataPositionFromJson(DataPositionToJson(position));
  ASSERT_TRUE(parsed.ok());
  EXPECT_EQ(*parsed, position);
  for (const char* bad :
       {"[]", "{\"epoch\": 1}", "{\"epoch\": 1, \"index\": -2}",
        "{\"epoch\": 1, \"index\": 2, \"step\": 3}", "{\"epoch\": \"1\", \"index\": 2}"}) {
    EXPECT_FALSE(DataPositionFromJson(nlohmann::json::parse(bad)).ok()) << bad;
  }
}

// With stable shards every rank keeps its epoch-0 share, in a new order every epoch.
TEST_F(DataBatchIteratorTest, StableShardsKeepEachRanksShareInANewOrder) {
  // Weights proportional to the block counts: an epoch visits every block once.
  const auto dataset = Open(Options(50, 30));
  ASSERT_NE(dataset, nullptr);
  std::vector<std::vector<std::vector<uint64_t>>> by_rank(2);  // [rank][epoch] -> ids
  for (int rank = 0; rank < 2; ++rank) {
    BatchOptions options{2, rank, 2, 9, 0, /*stable_shards=*/true};
    BatchOptions plain_options = options;
    plain_options.stable_shards = false;
    const auto stable = Iterator(*dataset, options);
    const auto plain = Iterator(*dataset, plain_options);
    const int per_epoch = static_cast<int>(stable->batches_per_epoch());
    for (uint64_t epoch = 0; epoch < 3; ++epoch) {
      std::vector<uint64_t> ids;
      for (const Batch& batch : Take(stable.get(), per_epoch)) {
        EXPECT_EQ(batch.epoch, epoch);
        ids.insert(ids.end(), batch.sample_ids.begin(), batch.sample_ids.end());
      }
      std::vector<uint64_t> plain_ids;
      for (const Batch& batch : Take(plain.get(), per_epoch)) {
        plain_ids.insert(plain_ids.end(), batch.sample_ids.begin(), batch.sample_ids.end());
      }
      if (epoch == 0) {
        EXPECT_EQ(ids, plain_ids);  // epoch 0 is dealt as without stable shards
      }
      by_rank[rank].push_back(ids);
    }
  }
  auto sorted = [](std::vector<uint64_t> ids) {
    std::sort(ids.begin(), ids.end());
    return ids;
  };
  for (int rank = 0; rank < 2; ++rank) {
    EXPECT_EQ(sorted(by_rank[rank][1]), sorted(by_rank[rank][0]));
    EXPECT_EQ(sorted(by_rank[rank][2]), sorted(by_rank[rank][0]));
    EXPECT_NE(by_rank[rank][1], by_rank[rank][0]);
    EXPECT_NE(by_rank[rank][2], by_rank[rank][1]);
  }
  for (uint64_t id : by_rank[0][0]) {
    EXPECT_EQ(std::count(by_rank[1][0].begin(), by_rank[1][0].end(), id), 0) << id;
  }
}

}  // namespace
}  // namespace geotrain::models::data
