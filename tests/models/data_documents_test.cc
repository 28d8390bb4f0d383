// Corpus files to documents: jsonl (strict, errors name file:line and field) and plain text.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "models/data/source_documents.h"

namespace geotrain::models::data {
namespace {

StatusOr<std::vector<std::string>> Documents(const std::string& contents,
                                             const std::string& path = "corpus.jsonl",
                                             const std::string& field = "text") {
  std::vector<std::string> documents;
  Status status = ForEachDocument(contents, path, SourceFormatForPath(path), field,
                                  [&](std::string_view d) { documents.emplace_back(d); });
  if (!status.ok()) return status;
  return documents;
}

TEST(DataDocumentsTest, FormatFollowsTheExtension) {
  EXPECT_EQ(SourceFormatForPath("a/b.jsonl"), SourceFormat::kJsonl);
  EXPECT_EQ(SourceFormatForPath("b.ndjson"), SourceFormat::kJsonl);
  EXPECT_EQ(SourceFormatForPath("b.txt"), SourceFormat::kText);
  EXPECT_EQ(SourceFormatForPath("jsonl"), SourceFormat::kText);
}

TEST(DataDocumentsTest, JsonlLinesAreDocuments) {
  auto documents = Documents(
      "{\"text\": \"first\", \"meta\": 3}\r\n{\"id\": 1, \"text\": \"\"}\n{\"text\": \"a\\nb\"}");
  ASSERT_TRUE(documents.ok()) << documents.status().ToString();
  EXPECT_EQ(*documents, (std::vector<std::string>{"first", "", "a\nb"}));
}

TEST(DataDocumentsTest, JsonlFieldIsConfigurable) {
  auto documents = Documents("{\"content\": \"x\", \"text\": 5}\n", "c.jsonl", "content");
  ASSERT_TRUE(documents.ok()) << documents.status().ToString();
  EXPECT_EQ(*documents, std::vector<std::string>{"x"});
}

TEST(DataDocumentsTest, HostileJsonlNamesFileLineAndField) {
  const std::string good = "{\"text\": \"ok\"}\n";
  struct Case {
    std::string third_line;
    std::string expected;
  };
  for (const Case& c : {
           Case{"{\"text\": \"unterminated}", "corpus.jsonl:3: invalid JSON"},
           Case{"not json", "corpus.jsonl:3: invalid JSON"},
           Case{"{\"other\": \"x\"}", "corpus.jsonl:3: field \"text\" is missing"},
           Case{"{\"text\": 42}", "corpus.jsonl:3: field \"text\" must be a string, got"},
           Case{"{\"text\": null}", "corpus.jsonl:3: field \"text\" must be a string, got null"},
           Case{"{\"text\": [\"a\"]}",
                "corpus.jsonl:3: field \"text\" must be a string, got an array"},
           Case{"[\"text\"]",
                "corpus.jsonl:3: expected a JSON object with a string field \"text\""},
           Case{"\"text\"", "corpus.jsonl:3: expected a JSON object"},
           Case{"{\"text\": \"a\", \"text\": \"b\"}", "corpus.jsonl:3: duplicate key \"text\""},
           Case{"{\"text\": \"a\"} {\"text\": \"b\"}", "corpus.jsonl:3: invalid JSON"},
           Case{"   ",
                "corpus.jsonl:3: empty line, expected a JSON object with a string field \"text\""},
           Case{"", "corpus.jsonl:3: empty line"},
           Case{"{\"text\": \"\xff\"}", "corpus.jsonl:3: invalid JSON"},
       }) {
    auto documents = Documents(good + good + c.third_line + "\n" + good);
    ASSERT_FALSE(documents.ok()) << c.third_line;
    EXPECT_EQ(documents.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(documents.status().message().find(c.expected), std::string::npos)
        << c.third_line << " -> " << documents.status().message();
    EXPECT_NE(documents.status().message().find("field \"text\""), std::string::npos)
        << documents.status().message();
  }
}

TEST(DataDocumentsTest, TextFileIsOneDocumentOfRawBytes) {
  const std::string bytes = std::string("line one\n\nline two \xff\xfe invalid \xc3(\n");
  auto documents = Documents(bytes, "notes.txt");
  ASSERT_TRUE(documents.ok()) << documents.status().ToString();
  EXPECT_EQ(*documents, std::vector<std::string>{bytes});
  auto empty = Documents("", "empty.txt");
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->empty());
}

}  // namespace
}  // namespace geotrain::models::data
