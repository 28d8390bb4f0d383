// Issue 20: every numeric key of a job spec has a range, checked when the key is read, so a
// value that could only fail on the workers (after every restart of the job) is refused at
// submit, naming the key, its line and the range (docs/job-spec.md "Ranges").
#include <gtest/gtest.h>

#include <string>

#include "runtime/job_spec.h"

namespace geotrain::runtime {
namespace {

const std::string kRequired = "name: j\nmodel: {dir: /m}\n";

std::string Message(const std::string& yaml) {
  const StatusOr<JobSpec> spec = ParseJobSpec(yaml);
  EXPECT_FALSE(spec.ok()) << "accepted: " << yaml;
  return spec.ok() ? "" : spec.status().message();
}

TEST(JobSpecRangesTest, TheIssuesValuesAreRefusedAtSubmitNamingKeyAndRange) {
  EXPECT_EQ(Message(kRequired + "data: {train: [/d], seq_length: 1000000000}\n"),
            "data.seq_length (line 3): 1000000000 is outside [1, 1048576]");
  EXPECT_EQ(Message(kRequired + "data: {train: [/d]}\ntraining: {timeout_seconds: 1e300}\n"),
            "training.timeout_seconds (line 4): 1e300 is outside (0, 86400]");
}

TEST(JobSpecRangesTest, EachEndIsCheckedOpenOrClosed) {
  const std::string job = kRequired + "data: {train: [/d]}\n";
  EXPECT_EQ(Message(job + "optimizer: {beta1: 1}\n"),
            "optimizer.beta1 (line 4): 1 is outside [0, 1)");
  EXPECT_TRUE(ParseJobSpec(job + "optimizer: {beta1: 0}\n").ok());
  EXPECT_EQ(Message(job + "optimizer: {eps: 0}\n"), "optimizer.eps (line 4): 0 is outside (0, 1]");
  EXPECT_EQ(Message(job + "training: {max_restarts: 1001}\n"),
            "training.max_restarts (line 4): 1001 is outside [0, 1000]");
  EXPECT_TRUE(ParseJobSpec(job + "training: {max_restarts: 1000, timeout_seconds: 86400}\n").ok());
  EXPECT_EQ(Message(job + "compression: {forward: {threads: 0}}\n"),
            "compression.forward.threads (line 4): 0 is outside [1, 256]");
  EXPECT_EQ(Message(job + "pipeline: {micro_batch_size: 100000}\n"),
            "pipeline.micro_batch_size (line 4): 100000 is outside [1, 65536]");
  EXPECT_EQ(Message(kRequired + "data: {train: [{path: /d, weight: 0}]}\n"),
            "data.train[0].weight (line 3): 0 is outside (0, 1000000000]");
  EXPECT_EQ(Message("name: j\nmodel: {dir: /m, layers: [[0, 2], [2, 9999999]]}\n"
                    "data: {train: [/d]}\npipeline: {stages: 2}\n"),
            "model.layers[1] (line 2): [2, 9999999]: a layer index is outside [0, 1000000]");
}

// Every problem at once, and a value out of range is not checked again by the later checks.
TEST(JobSpecRangesTest, OutOfRangeValuesAreListedOnceWithTheOtherProblems) {
  const std::string message =
      Message(kRequired + "data: {train: [/d], seq_length: 0}\ntraining: {steps: 0, epochs: -1}\n");
  EXPECT_EQ(message,
            "3 problems:\n"
            "  data.seq_length (line 3): 0 is outside [1, 1048576]\n"
            "  training.steps (line 4): 0 is outside [1, 1000000000000]\n"
            "  training.epochs (line 4): -1 is outside [0, 1000000]");
}

// What JobSpecToYaml writes (every key, the defaults included) is within every range.
TEST(JobSpecRangesTest, TheDefaultsAreWithinTheRanges) {
  const StatusOr<JobSpec> spec = ParseJobSpec(kRequired + "data: {train: [/d]}\n");
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  const StatusOr<JobSpec> again = ParseJobSpec(JobSpecToYaml(*spec));
  EXPECT_TRUE(again.ok()) << again.status().ToString();
}

}  // namespace
}  // namespace geotrain::runtime
