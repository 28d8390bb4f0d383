// Assignment.frame_key on the worker: checked (empty or 32 bytes), and written to a file only
// its owner can read.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>

#include "tests/testing/temp_dir.h"
#include "worker/assignment_file.h"

namespace geotrain::worker {
namespace {

geotrain::v1::Assignment WithKey(const std::string& key) {
  geotrain::v1::Assignment assignment;
  assignment.set_job_id("job-4");
  assignment.set_generation(2);
  assignment.set_spec_yaml("name: x\n");
  assignment.set_frame_key(key);
  return assignment;
}

mode_t ModeOf(const std::string& path) {
  struct stat info {};
  EXPECT_EQ(::stat(path.c_str(), &info), 0) << path;
  return info.st_mode & 0777;
}

TEST(AssignmentFrameKeyTest, KeysAreEmptyOrThirtyTwoBytes) {
  EXPECT_TRUE(ValidateAssignment(WithKey("")).ok());
  EXPECT_TRUE(ValidateAssignment(WithKey(std::string(32, '\x7f'))).ok());
  const Status status = ValidateAssignment(WithKey("s3cr3"));
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message(), "assignment.frame_key: 5 bytes, expected 32");
  EXPECT_FALSE(ValidateAssignment(WithKey(std::string(33, 'k'))).ok());
}

TEST(AssignmentFrameKeyTest, TheFileIsTheOwnersOnlyAndKeepsTheKey) {
  geotrain::testing::TempDir dir;
  const std::string path = dir.File("assignment.pb");
  // A leftover temp file readable by everyone must not pass its mode on.
  { std::ofstream(path + ".tmp") << "old"; }
  ASSERT_EQ(::chmod((path + ".tmp").c_str(), 0644), 0);
  const std::string key(32, '\x42');
  ASSERT_TRUE(WriteAssignmentFile(path, WithKey(key)).ok());
  EXPECT_EQ(ModeOf(path), 0600u);
  auto read = ReadAssignmentFile(path);
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  EXPECT_EQ(read->frame_key(), key);
}

TEST(AssignmentFrameKeyTest, AFileWithABadKeyIsRefusedWithoutShowingIt) {
  geotrain::testing::TempDir dir;
  const std::string path = dir.File("assignment.pb");
  ASSERT_TRUE(WriteAssignmentFile(path, WithKey("s3cr3")).ok());
  auto read = ReadAssignmentFile(path);
  ASSERT_FALSE(read.ok());
  EXPECT_NE(read.status().message().find("assignment.frame_key: 5 bytes, expected 32"),
            std::string::npos)
      << read.status().message();
  EXPECT_EQ(read.status().message().find("s3cr3"), std::string::npos);
}

}  // namespace
}  // namespace geotrain::worker
