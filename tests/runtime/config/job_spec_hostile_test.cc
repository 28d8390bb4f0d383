// Hostile job YAMLs (SubmitJob hands the coordinator whatever a client sends): each ends in an
// InvalidArgument naming the field, never an exception, a crash or an absurd allocation.
#include <gtest/gtest.h>

#include <string>

#include "runtime/job_spec.h"

namespace geotrain::runtime {
namespace {

// The smallest valid job: what every job needs besides its name.
const std::string kRequired = "model: {dir: /m}\ndata: {train: [/d.txt], seq_length: 16}\n";

// Expects `yaml` to be refused with a message naming `field`.
void ExpectRefused(const std::string& yaml, const std::string& field) {
  const StatusOr<JobSpec> spec = ParseJobSpec(yaml);
  ASSERT_FALSE(spec.ok()) << "accepted: " << yaml.substr(0, 200);
  EXPECT_EQ(spec.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(spec.status().message().find(field), std::string::npos) << spec.status().message();
}

TEST(JobSpecHostileTest, NameIsBounded) {
  ExpectRefused("name: " + std::string(1000000, 'n') + "\n", "name: 1000000 bytes");
  ExpectRefused("name: \"a\\x01b\"\n", "name: contains a control character");
  const auto spec = ParseJobSpec("name: " + std::string(256, 'n') + "\n" + kRequired);
  EXPECT_TRUE(spec.ok()) << spec.status().ToString();
}

// yaml-cpp would read the bytes and write each back as U+FFFD (three bytes), so the spec would
// change on its way through JobSpecToYaml.
TEST(JobSpecHostileTest, TextThatIsNotUtf8IsRefusedWithItsLine) {
  ExpectRefused("name: j\nmodel: {dir: \"/m\\xff\"}\n# caf\xe9\n", "(line 3, column 6) is 0xe9");
  ExpectRefused("name: \"j\xc0\xaf\"\n",
                "byte offset 8 (line 1, column 9) is 0xc0");  // overlong '/'
  ExpectRefused("name: j\xed\xa0\x80\n",
                "byte offset 7 (line 1, column 8) is 0xed");  // a surrogate
  const auto spec = ParseJobSpec("name: caf\xc3\xa9-\xe2\x82\xac\n" + kRequired);
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_EQ(spec->name, "caf\xc3\xa9-\xe2\x82\xac");
  const auto again = ParseJobSpec(JobSpecToYaml(*spec));
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(again->name, spec->name);
}

TEST(JobSpecHostileTest, StagesAndReplicasAreBounded) {
  ExpectRefused("name: j\npipeline: {stages: 2147483647}\n",
                "pipeline.stages (line 2): 2147483647 is outside [1, 1024]");
  ExpectRefused("name: j\npipeline: {stages: 1025}\n", "pipeline.stages");
  ExpectRefused("name: j\ndata_parallel: {replicas: 2147483647}\n",
                "data_parallel.replicas (line 2): 2147483647 is outside [1, 4096]");
  ExpectRefused("name: j\npipeline: {stages: -3}\n", "pipeline.stages");
  // Each within its own limit, together more than 65536 ranks.
  ExpectRefused("name: j\npipeline: {stages: 1024}\ndata_parallel: {replicas: 4096}\n",
                "exceed the limit of 65536 ranks");
  const auto spec = ParseJobSpec(
      "name: j\npipeline: {stages: 64}\ndata_parallel: {replicas: 1024}\n" + kRequired);
  EXPECT_TRUE(spec.ok()) << spec.status().ToString();
}

TEST(JobSpecHostileTest, GarbageIsAnErrorNotAnException) {
  for (const std::string& text :
       {std::string("{{{{"), std::string(100000, '['), std::string("\xff\xfe\x00\x01", 4),
        std::string("name: &a [*a]\n"), std::string("- 1\n- 2\n"), std::string(""),
        std::string("name: j\npipeline: {stages: 1e999}\n"),
        std::string("name: j\npipeline: !!binary AAAA\n")}) {
    const StatusOr<JobSpec> spec = ParseJobSpec(text);
    EXPECT_FALSE(spec.ok()) << text.substr(0, 100);
    if (!spec.ok()) {
      EXPECT_FALSE(spec.status().message().empty());
    }
  }
}

}  // namespace
}  // namespace geotrain::runtime
