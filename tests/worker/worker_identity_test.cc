#include "worker/worker_identity.h"

#include <gtest/gtest.h>

#include "tests/testing/temp_dir.h"

namespace geotrain::worker {
namespace {

TEST(WorkerIdentityTest, AbsentFileMeansNoIdYet) {
  geotrain::testing::TempDir dir;
  auto id = LoadWorkerId(WorkerIdPath(dir.path()));
  ASSERT_TRUE(id.ok()) << id.status().ToString();
  EXPECT_EQ(*id, "");
}

TEST(WorkerIdentityTest, SavedIdIsCreatedAndReused) {
  geotrain::testing::TempDir dir;
  const std::string path = WorkerIdPath(dir.path());
  EXPECT_EQ(path, dir.path() + "/worker-id");
  ASSERT_TRUE(SaveWorkerId(path, "worker-3").ok());
  auto id = LoadWorkerId(path);
  ASSERT_TRUE(id.ok()) << id.status().ToString();
  EXPECT_EQ(*id, "worker-3");
  // A second daemon start reads the same id again; a new id replaces it.
  ASSERT_TRUE(SaveWorkerId(path, "worker-9").ok());
  EXPECT_EQ(*LoadWorkerId(path), "worker-9");
}

TEST(WorkerIdentityTest, CorruptFileIsAClearErrorNamingTheFile) {
  geotrain::testing::TempDir dir;
  for (const std::string& contents :
       {std::string(""), std::string("worker-1\nworker-2\n"), std::string("w\0x", 3),
        std::string("has space\n"), std::string(300, 'a')}) {
    const std::string path = dir.Write("worker-id", contents);
    auto id = LoadWorkerId(path);
    ASSERT_FALSE(id.ok()) << "accepted \"" << contents << "\"";
    EXPECT_EQ(id.status().code(), StatusCode::kDataLoss);
    EXPECT_NE(id.status().message().find(path), std::string::npos) << id.status().message();
    EXPECT_NE(id.status().message().find("corrupt"), std::string::npos);
  }
}

TEST(WorkerIdentityTest, InvalidIdsAreNotSaved) {
  geotrain::testing::TempDir dir;
  const std::string path = WorkerIdPath(dir.path());
  EXPECT_FALSE(SaveWorkerId(path, "").ok());
  EXPECT_FALSE(SaveWorkerId(path, "../escape").ok());
  EXPECT_EQ(*LoadWorkerId(path), "");
}

TEST(WorkerIdentityTest, UnwritableDirectoryIsAnError) {
  const Status status = SaveWorkerId("/nonexistent/dir/worker-id", "worker-1");
  EXPECT_FALSE(status.ok());
  EXPECT_NE(status.message().find("/nonexistent/dir/worker-id"), std::string::npos);
}

}  // namespace
}  // namespace geotrain::worker
