// ClassificationSet: jsonl and tsv (with a header, or columns by number) examples framed as
// [CLS] a [SEP] (b [SEP]), truncated longest-first and padded; labels as integers or names; and
// every bad file an error naming the file, the line and the field.
#include "models/data/classification_set.h"

#include <gtest/gtest.h>

#include "models/data/sample_id.h"
#include "models/tokenizer/tokenizer_loaders.h"
#include "tests/testing/temp_dir.h"

namespace geotrain::models::data {
namespace {

const Tokenizer& Gpt2() {
  static const Tokenizer* tokenizer =
      LoadTokenizerDirectory(std::string(GEOTRAIN_SOURCE_DIR) + "/examples/tokenizers/gpt2")
          ->release();
  return *tokenizer;
}
constexpr uint32_t kEndOfText = 50256;  // GPT-2 has no [CLS]/[SEP]/[PAD]: all three are this

StatusOr<std::unique_ptr<ClassificationSet>> Open(const std::string& path,
                                                  ClassificationOptions options) {
  options.sources = {{path, 1.0}};
  return OpenClassificationSet(options, Gpt2());
}

TEST(ClassificationSetTest, JsonlSingleTextsArePaddedRowsWithTheirLabels) {
  geotrain::testing::TempDir dir;
  const std::string path = dir.Write("train.jsonl",
                                     "{\"text\": \"Hello world\", \"label\": 1}\n"
                                     "{\"text\": \"A\", \"label\": 0, \"other\": 3}\n");
  ClassificationOptions options;
  options.seq_length = 6;
  auto set = Open(path, options);
  ASSERT_TRUE(set.ok()) << set.status().ToString();
  EXPECT_EQ((*set)->dataset().num_blocks(0), 2u);
  const std::vector<int32_t> hello = Gpt2().EncodeOrdinary("Hello world");
  ASSERT_EQ(hello.size(), 2u);
  const Span<const uint32_t> row = *(*set)->dataset().Block(MakeSampleId(0, 0));
  EXPECT_EQ(
      std::vector<uint32_t>(row.begin(), row.end()),
      (std::vector<uint32_t>{kEndOfText, static_cast<uint32_t>(hello[0]),
                             static_cast<uint32_t>(hello[1]), kEndOfText, kEndOfText, kEndOfText}));
  const ClassificationExample first = *(*set)->Example(MakeSampleId(0, 0));
  EXPECT_EQ(first.length, 4u);
  EXPECT_EQ(first.first_segment, 4u);
  EXPECT_EQ(first.label, 1);
  EXPECT_EQ((*set)->Example(MakeSampleId(0, 1))->label, 0);
  EXPECT_FALSE((*set)->Example(MakeSampleId(0, 2)).ok());
}

TEST(ClassificationSetTest, TsvPairsWithHeaderNamedLabelsAndLongestFirstTruncation) {
  geotrain::testing::TempDir dir;
  const std::string path =
      dir.Write("train.tsv",
                "index\tquestion\tsentence\tlabel\r\n"
                "0\tWhy?\tone two three four five six seven eight\tnot_entailment\r\n");
  ClassificationOptions options;
  options.seq_length = 8;
  options.text_field = "question";
  options.pair_field = "sentence";
  options.label_names = {"entailment", "not_entailment"};
  auto set = Open(path, options);
  ASSERT_TRUE(set.ok()) << set.status().ToString();
  const ClassificationExample example = *(*set)->Example(MakeSampleId(0, 0));
  const size_t question = Gpt2().EncodeOrdinary("Why?").size();
  EXPECT_EQ(example.length, 8u);  // the sentence was cut to fit
  EXPECT_EQ(example.first_segment, question + 2);
  EXPECT_EQ(example.label, 1);
}

TEST(ClassificationSetTest, HeaderlessTsvNamesColumnsByNumber) {
  geotrain::testing::TempDir dir;
  // GLUE's CoLA: source, label, original label, sentence; no header.
  const std::string path = dir.Write("in_domain_train.tsv",
                                     "gj04\t1\t\tOur friends won't buy.\n"
                                     "gj04\t0\t*\tOne more pseudo.\n");
  ClassificationOptions options;
  options.text_field = "3";
  options.label_field = "1";
  auto set = Open(path, options);
  ASSERT_TRUE(set.ok()) << set.status().ToString();
  EXPECT_EQ((*set)->Example(MakeSampleId(0, 0))->label, 1);
  EXPECT_EQ((*set)->Example(MakeSampleId(0, 1))->label, 0);
}

TEST(ClassificationSetTest, BadFilesNameTheLineAndTheField) {
  geotrain::testing::TempDir dir;
  ClassificationOptions options;
  const auto error = [&](const std::string& name, const std::string& contents) {
    auto set = Open(dir.Write(name, contents), options);
    return set.ok() ? std::string("(ok)") : set.status().message();
  };
  const std::string d = dir.path() + "/";
  EXPECT_EQ(error("a.jsonl", "{\"text\": \"x\", \"label\": 1}\n{\"label\": 1}\n"),
            d + "a.jsonl:2: text: missing");
  EXPECT_EQ(error("b.jsonl", "{\"text\": \"x\", \"label\": 2}\n"),
            d + "b.jsonl:1: label: 2 is outside [0, 2) (the model's num_labels)");
  EXPECT_EQ(error("c.jsonl", "{\"text\": \"x\", \"label\": \"yes\"}\n"),
            d + "c.jsonl:1: label: \"yes\" is not an integer label (give data.labels to name "
                "string labels)");
  EXPECT_EQ(error("d.jsonl", "{\"text\": \"x\", \"label\": 1}\n\n{\"text\": \"y\"}\n"),
            d + "d.jsonl:2: (line): empty line");
  EXPECT_EQ(error("e.tsv", "text\tlabel\nfine\n"),
            d + "e.tsv:2: label: the row has 1 columns, the label is in column 1");
  EXPECT_EQ(error("f.tsv", "sentence\tgold\nfine\t1\n"),
            d + "f.tsv:1: text: no such column in the header");
  EXPECT_EQ(error("g.jsonl", ""), d + "g.jsonl: no examples");
  EXPECT_NE(error("h.jsonl", "{\"text\": \"x\", \"label\": 1\n").find("h.jsonl:1"),
            std::string::npos);
}

}  // namespace
}  // namespace geotrain::models::data
