#include "worker/assignment_file.h"

#include <gtest/gtest.h>

#include "tests/testing/temp_dir.h"
#include "worker/task_assignment.h"

namespace geotrain::worker {
namespace {

constexpr char kSpec[] = R"(name: two-by-two
model:
  dir: /models/gpt2-tiny
pipeline:
  stages: 2
data_parallel:
  replicas: 2
data:
  train: ["train.txt"]
training:
  steps: 10
  resume: false
  timeout_seconds: 30
)";

geotrain::v1::Assignment ValidAssignment() {
  geotrain::v1::Assignment assignment;
  assignment.set_job_id("job-4");
  assignment.set_generation(2);
  assignment.set_stage(1);
  assignment.set_replica(1);
  assignment.set_spec_yaml(kSpec);
  assignment.mutable_rendezvous()->set_job_id("job-4");
  assignment.mutable_rendezvous()->set_generation(2);
  return assignment;
}

TEST(AssignmentFileTest, RoundTrips) {
  geotrain::testing::TempDir dir;
  const std::string path = dir.File("assignment.pb");
  ASSERT_TRUE(WriteAssignmentFile(path, ValidAssignment()).ok());
  auto read = ReadAssignmentFile(path);
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  EXPECT_EQ(read->SerializeAsString(), ValidAssignment().SerializeAsString());
}

TEST(AssignmentFileTest, BadFilesAreErrorsNamingTheFile) {
  geotrain::testing::TempDir dir;
  const std::string missing = dir.File("missing.pb");
  auto read = ReadAssignmentFile(missing);
  ASSERT_FALSE(read.ok());
  EXPECT_NE(read.status().message().find(missing), std::string::npos);

  const std::string garbage = dir.Write("garbage.pb", "\xff\xff\xff\xff not protobuf");
  read = ReadAssignmentFile(garbage);
  ASSERT_FALSE(read.ok());
  EXPECT_NE(read.status().message().find(garbage + ": not a serialised geotrain.v1.Assignment"),
            std::string::npos)
      << read.status().message();

  const std::string empty = dir.Write("empty.pb", "");
  read = ReadAssignmentFile(empty);
  ASSERT_FALSE(read.ok());
  EXPECT_NE(read.status().message().find(empty + ": not a valid Assignment"), std::string::npos)
      << read.status().message();
}

TEST(AssignmentFileTest, ValidationNamesEveryBadField) {
  EXPECT_TRUE(ValidateAssignment(ValidAssignment()).ok());
  geotrain::v1::Assignment bad;
  bad.set_job_id("../../etc");
  bad.set_stage(-1);
  bad.set_replica(-2);
  const Status status = ValidateAssignment(bad);
  ASSERT_FALSE(status.ok());
  for (const char* part :
       {"assignment.job_id: \"../../etc\" starts with '.'", "assignment.stage: -1 is negative",
        "assignment.replica: -2 is negative", "assignment.spec_yaml: empty"}) {
    EXPECT_NE(status.message().find(part), std::string::npos) << status.message();
  }
  bad = ValidAssignment();
  bad.set_job_id("job/1");
  EXPECT_NE(ValidateAssignment(bad).message().find("assignment.job_id"), std::string::npos);
  bad.set_job_id("");
  EXPECT_NE(ValidateAssignment(bad).message().find("assignment.job_id: empty"), std::string::npos);
}

TEST(TaskAssignmentTest, TakesTheRanksPartOfTheJob) {
  auto stage = StageAssignmentOf(ValidAssignment());
  ASSERT_TRUE(stage.ok()) << stage.status().ToString();
  EXPECT_EQ(stage->stage, 1);
  EXPECT_EQ(stage->dp_rank, 1);
  EXPECT_EQ(stage->num_stages, 2);
  EXPECT_EQ(stage->dp_size, 2);
  EXPECT_EQ(stage->model_dir, "/models/gpt2-tiny");
  EXPECT_EQ(stage->training.total_steps, 10);
  EXPECT_FALSE(stage->training.resume);
}

TEST(TaskAssignmentTest, ALaterPlacementAlwaysResumes) {
  geotrain::v1::Assignment assignment = ValidAssignment();
  assignment.set_resume(true);
  auto stage = StageAssignmentOf(assignment);
  ASSERT_TRUE(stage.ok()) << stage.status().ToString();
  EXPECT_TRUE(stage->training.resume);
}

TEST(TaskAssignmentTest, ErrorsNameTheField) {
  geotrain::v1::Assignment assignment = ValidAssignment();
  assignment.set_stage(2);
  auto stage = StageAssignmentOf(assignment);
  ASSERT_FALSE(stage.ok());
  EXPECT_NE(stage.status().message().find("assignment.stage: 2 is outside the job's "
                                          "pipeline.stages (2)"),
            std::string::npos)
      << stage.status().message();

  assignment = ValidAssignment();
  assignment.set_replica(5);
  stage = StageAssignmentOf(assignment);
  ASSERT_FALSE(stage.ok());
  EXPECT_NE(stage.status().message().find("assignment.replica: 5"), std::string::npos);

  assignment = ValidAssignment();
  assignment.set_spec_yaml(std::string(kSpec) + "bogus_section: 1\n");
  stage = StageAssignmentOf(assignment);
  ASSERT_FALSE(stage.ok());
  EXPECT_EQ(stage.status().message().rfind("assignment.spec_yaml: ", 0), 0u)
      << stage.status().message();
  EXPECT_NE(stage.status().message().find("bogus_section"), std::string::npos);
}

}  // namespace
}  // namespace geotrain::worker
