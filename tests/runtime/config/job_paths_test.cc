// ConfineJobPaths and ClaimJobOutputs: every path field of a job is confined, named as in the
// YAML when refused, and nothing the job writes replaces a file it did not create.
#include "runtime/job_paths.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "tests/testing/files_and_ports.h"
#include "tests/testing/temp_dir.h"

namespace geotrain::runtime {
namespace {
namespace fs = std::filesystem;

class JobPathsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    base_ = fs::canonical(dir_.path()).string();
    root_ = base_ + "/root";
    fs::create_directories(root_ + "/model");
    fs::create_directories(base_ + "/outside");
    confinement_ =
        std::make_unique<io::PathConfinement>(io::PathConfinement::Create(root_).value());
  }
  StageAssignment Job() const {
    StageAssignment a;
    a.model_dir = "model";
    a.data.train = {{"train.txt", 0.5}, {"more/train.txt", 0.5}};
    a.data.valid = {{"valid.txt", 1.0}};
    a.data.cache_dir = "cache";
    a.training.checkpoint_dir = "checkpoints/run";
    a.training.profile_path = "trace.json";
    return a;
  }

  testing::TempDir dir_;
  std::string base_, root_;
  std::unique_ptr<io::PathConfinement> confinement_;
};

TEST_F(JobPathsTest, EveryPathBecomesCanonicalUnderTheRoot) {
  StageAssignment a = Job();
  a.data.tokenizer_dir = "./model/";
  a.compression.forward.cache_dir = "acts";
  ASSERT_TRUE(ConfineJobPaths(*confinement_, &a).ok());
  EXPECT_EQ(a.model_dir, root_ + "/model");
  EXPECT_EQ(a.data.train[1].path, root_ + "/more/train.txt");
  EXPECT_EQ(a.data.valid[0].path, root_ + "/valid.txt");
  EXPECT_EQ(a.data.tokenizer_dir, root_ + "/model");
  EXPECT_EQ(a.data.cache_dir, root_ + "/cache");
  EXPECT_EQ(a.compression.forward.cache_dir, root_ + "/acts");
  EXPECT_EQ(a.compression.backward.cache_dir, "");  // unset stays unset
  EXPECT_EQ(a.training.checkpoint_dir, root_ + "/checkpoints/run");
  EXPECT_EQ(a.training.profile_path, root_ + "/trace.json");
}

TEST_F(JobPathsTest, EveryRefusalNamesItsField) {
  StageAssignment a = Job();
  a.model_dir = "/etc";
  a.data.train[1].path = "../outside/train.txt";
  a.data.tokenizer_dir = base_ + "/outside";
  a.compression.data_parallel.codec.cache_dir = "../outside/acts";
  a.training.checkpoint_dir = "/tmp/geotrain-elsewhere";
  a.training.profile_path = "../outside/trace.json";
  const Status status = ConfineJobPaths(*confinement_, &a);
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  for (const char* field :
       {"model.dir: /etc resolves", "data.train[1]: ../outside/train.txt", "data.tokenizer: ",
        "data_parallel.codec.cache_dir: ", "training.checkpoint_dir: /tmp/geotrain-elsewhere",
        "training.profile: ../outside/trace.json"}) {
    EXPECT_NE(status.message().find(field), std::string::npos) << field << "\n" << status.message();
  }
  EXPECT_EQ(status.message().find("data.train[0]"), std::string::npos) << status.message();
}

TEST_F(JobPathsTest, ACheckpointDirOfTheJobsOwnCheckpointsIsKept) {
  StageAssignment a = Job();
  ASSERT_TRUE(ConfineJobPaths(*confinement_, &a).ok());
  ASSERT_TRUE(ClaimJobOutputs(&a).ok());  // missing: the store creates it
  fs::create_directories(a.training.checkpoint_dir + "/step-00000010/stage-00.replica-00");
  fs::create_directories(a.training.checkpoint_dir + "/step-00000005.deleting-1-2");
  a.training.profile_path.clear();
  EXPECT_TRUE(ClaimJobOutputs(&a).ok());
}

TEST_F(JobPathsTest, ACheckpointDirOfOtherFilesIsRefused) {
  StageAssignment a = Job();
  a.training.checkpoint_dir = ".";  // the data root itself: datasets, models
  std::ofstream(root_ + "/README.md") << "operator's file";
  ASSERT_TRUE(ConfineJobPaths(*confinement_, &a).ok());
  const Status status = ClaimJobOutputs(&a);
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.message().rfind("training.checkpoint_dir: " + root_ + " holds ", 0), 0u)
      << status.message();
  EXPECT_NE(status.message().find("not a geotrain checkpoint"), std::string::npos);
  // A file named like a step is not a checkpoint either; nor is a file as the directory.
  fs::create_directories(root_ + "/ckpt");
  std::ofstream(root_ + "/ckpt/step-00000001") << "x";
  a.training.checkpoint_dir = root_ + "/ckpt";
  EXPECT_FALSE(ClaimJobOutputs(&a).ok());
  a.training.checkpoint_dir = root_ + "/README.md";
  EXPECT_NE(ClaimJobOutputs(&a).message().find("is a file, not a directory"), std::string::npos);
}

TEST_F(JobPathsTest, ACacheDirThatIsAFileIsRefused) {
  StageAssignment a = Job();
  std::ofstream(root_ + "/cache") << "x";
  ASSERT_TRUE(ConfineJobPaths(*confinement_, &a).ok());
  const Status status = ClaimJobOutputs(&a);
  EXPECT_EQ(status.message(), "data.cache_dir: " + root_ + "/cache is a file, not a directory");
}

TEST_F(JobPathsTest, AnExistingProfileIsNeverReplaced) {
  StageAssignment a = Job();
  ASSERT_TRUE(ConfineJobPaths(*confinement_, &a).ok());
  const std::string path = a.training.profile_path;
  std::ofstream(path) << "someone's file";
  std::vector<std::string> notes;
  ASSERT_TRUE(ClaimJobOutputs(&a, io::Env::Default(), &notes).ok());
  EXPECT_EQ(a.training.profile_path, path + ".1");
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("exists and is not replaced"), std::string::npos);
  EXPECT_EQ(testing::ReadFile(path), "someone's file");
  EXPECT_TRUE(fs::is_regular_file(path + ".1"));  // created, so the next rank takes .2
  a.training.profile_path = path;
  ASSERT_TRUE(ClaimJobOutputs(&a).ok());
  EXPECT_EQ(a.training.profile_path, path + ".2");
}

TEST_F(JobPathsTest, AProfileThatCannotBeCreatedIsAnError) {
  StageAssignment a = Job();
  a.training.checkpoint_dir.clear();
  a.training.profile_path = root_ + "/no/such/dir/trace.json";
  const Status status = ClaimJobOutputs(&a);
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.message().rfind("training.profile: cannot create", 0), 0u) << status.message();
}

}  // namespace
}  // namespace geotrain::runtime
