// io::Env: the POSIX Env's error codes, and what a full disk (a FullDiskEnv around it) leaves
// behind an AtomicFileWriter.
#include "common/io/env.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cerrno>

#include "common/io/atomic_file_writer.h"
#include "common/io/errno_status.h"
#include "common/io/file_contents.h"
#include "tests/testing/full_disk_env.h"
#include "tests/testing/temp_dir.h"

namespace geotrain::io {
namespace {

Status WriteAtomically(const std::string& path, const std::string& text, Env* env) {
  GEOTRAIN_ASSIGN_OR_RETURN(auto writer, AtomicFileWriter::Create(path, env));
  GEOTRAIN_RETURN_IF_ERROR(writer->Append(text.data(), text.size()));
  return writer->Commit();
}

std::vector<std::string> Sorted(std::vector<std::string> names) {
  std::sort(names.begin(), names.end());
  return names;
}

TEST(ErrnoStatusTest, TheCodeIsTheKind) {
  EXPECT_EQ(ErrnoStatus("f", ENOSPC).code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(ErrnoStatus("f", EDQUOT).code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(ErrnoStatus("f", ENOENT).code(), StatusCode::kNotFound);
  EXPECT_EQ(ErrnoStatus("f", EACCES).code(), StatusCode::kUnavailable);
  // Operators grep logs for the errno's name.
  EXPECT_NE(ErrnoStatus("f: write failed", ENOSPC).message().find("ENOSPC"), std::string::npos);
  EXPECT_EQ(ErrnoStatus("f: cannot open", ENOENT).message().rfind("f: cannot open: ", 0), 0u);
}

TEST(PosixEnvTest, MissingPathsAreNotFound) {
  testing::TempDir dir;
  Env* env = Env::Default();
  EXPECT_EQ(env->ReadFile(dir.File("absent"), 10).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(env->MapFile(dir.File("absent")).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(env->ListDirectory(dir.File("absent")).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(env->Rename(dir.File("absent"), dir.File("b")).code(), StatusCode::kNotFound);
  EXPECT_TRUE(env->RemoveAll(dir.File("absent")).ok());
  EXPECT_EQ(env->ReadFile(dir.path(), 10).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(env->ReadFile(dir.Write("big", "12345"), 4).status().code(), StatusCode::kOutOfRange);
}

TEST(PosixEnvTest, DirectoriesAndExchange) {
  testing::TempDir dir;
  Env* env = Env::Default();
  ASSERT_TRUE(env->CreateDirectories(dir.File("a/b")).ok());
  EXPECT_TRUE(env->CreateDirectories(dir.File("a/b")).ok());
  EXPECT_FALSE(env->CreateDirectory(dir.File("a/b")).ok());
  ASSERT_TRUE(env->CreateDirectory(dir.File("c")).ok());
  EXPECT_TRUE(env->IsDirectory(dir.File("a/b")));
  EXPECT_FALSE(env->IsRegularFile(dir.File("a/b")));
  dir.Write("a/b/x", "x");
  const Status exchanged = env->Exchange(dir.File("a/b"), dir.File("c"));
  if (exchanged.code() != StatusCode::kFailedPrecondition) {  // the file system may not
    ASSERT_TRUE(exchanged.ok()) << exchanged.ToString();
    EXPECT_TRUE(env->IsRegularFile(dir.File("c/x")));
  }
  EXPECT_EQ(Sorted(*env->ListDirectory(dir.path())), (std::vector<std::string>{"a", "c"}));
  EXPECT_TRUE(env->SyncDirectory(dir.path()).ok());
  EXPECT_TRUE(env->RemoveAll(dir.File("a")).ok());
  EXPECT_FALSE(env->IsDirectory(dir.File("a")));
}

TEST(AtomicFileWriterTest, AFullDiskKeepsTheOldFileAndIsResourceExhausted) {
  testing::TempDir dir;
  const std::string path = dir.File("state.json");
  ASSERT_TRUE(WriteAtomically(path, "old", Env::Default()).ok());

  testing::FullDiskEnv full(dir.path() + "/", 4);  // room for 4 bytes only
  const Status failed = WriteAtomically(path, "the new contents", &full);
  EXPECT_EQ(failed.code(), StatusCode::kResourceExhausted) << failed.ToString();
  EXPECT_EQ(full.refused(), 1);
  EXPECT_NE(failed.message().find(path), std::string::npos) << failed.ToString();

  // The old file is intact and the temporary file is gone.
  EXPECT_EQ(*ReadFileContents(path, 100), "old");
  EXPECT_EQ(*Env::Default()->ListDirectory(dir.path()), std::vector<std::string>{"state.json"});
}

TEST(AtomicFileWriterTest, AWriterIsSpentAfterAFailure) {
  testing::TempDir dir;
  testing::FullDiskEnv full(dir.path() + "/");
  StatusOr<std::unique_ptr<AtomicFileWriter>> writer =
      AtomicFileWriter::Create(dir.File("f"), &full);
  ASSERT_TRUE(writer.ok()) << writer.status().ToString();
  EXPECT_EQ((*writer)->Append("x", 1).code(), StatusCode::kResourceExhausted);
  EXPECT_EQ((*writer)->Append("x", 1).code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ((*writer)->Commit().code(), StatusCode::kFailedPrecondition);
  EXPECT_TRUE(Env::Default()->ListDirectory(dir.path())->empty());
}

}  // namespace
}  // namespace geotrain::io
