// ParseWeightedSourceList: the CocktailSGD "path:weight,..." mixture form.
#include <gtest/gtest.h>

#include "common/weighted_source_list.h"

namespace geotrain::models::data {
namespace {

TEST(DataSourceListTest, WeightsAreOptionalAndNormalised) {
  auto sources = ParseWeightedSourceList("a.txt:3,b.jsonl,c.txt:0.5e1");
  ASSERT_TRUE(sources.ok()) << sources.status().ToString();
  ASSERT_EQ(sources->size(), 3u);
  EXPECT_EQ((*sources)[0].path, "a.txt");
  EXPECT_EQ((*sources)[1].path, "b.jsonl");
  EXPECT_EQ((*sources)[2].path, "c.txt");
  EXPECT_DOUBLE_EQ((*sources)[0].weight, 3.0 / 9);
  EXPECT_DOUBLE_EQ((*sources)[1].weight, 1.0 / 9);
  EXPECT_DOUBLE_EQ((*sources)[2].weight, 5.0 / 9);
}

TEST(DataSourceListTest, WeightFollowsTheLastColon) {
  auto sources = ParseWeightedSourceList("/data/a:b.txt:2");
  ASSERT_TRUE(sources.ok()) << sources.status().ToString();
  EXPECT_EQ((*sources)[0].path, "/data/a:b.txt");
  EXPECT_DOUBLE_EQ((*sources)[0].weight, 1.0);
}

TEST(DataSourceListTest, ErrorsNameTheEntry) {
  struct Case {
    const char* spec;
    const char* expected;
  };
  for (const Case& c :
       {Case{"a.txt:x", "entry 0 \"a.txt:x\": weight \"x\""},
        Case{"a.txt,b.txt:0", "entry 1 \"b.txt:0\": weight \"0\""},
        Case{"a.txt,b.txt:-1", "entry 1 \"b.txt:-1\""}, Case{"a.txt:inf", "entry 0 \"a.txt:inf\""},
        Case{"a.txt:nan", "entry 0 \"a.txt:nan\""},
        Case{"a.txt:", "entry 0 \"a.txt:\": weight \"\""}, Case{"a.txt:1x", "weight \"1x\""},
        Case{"a.txt,,b.txt", "entry 1 \"\": empty entry"}, Case{"", "entry 0 \"\": empty entry"},
        Case{"a.txt,", "entry 1 \"\": empty entry"}, Case{":2", "entry 0 \":2\": empty path"},
        Case{"a.txt,a.txt:2", "entry 1 \"a.txt\": path listed twice"}}) {
    auto sources = ParseWeightedSourceList(c.spec);
    ASSERT_FALSE(sources.ok()) << c.spec;
    EXPECT_EQ(sources.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(sources.status().message().find(c.expected), std::string::npos)
        << c.spec << " -> " << sources.status().message();
  }
}

}  // namespace
}  // namespace geotrain::models::data
