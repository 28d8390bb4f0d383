// io::PathConfinement: what a job path may name on a worker (docs/security.md, "files on the
// worker"), against a real directory tree with real symlinks.
#include "common/io/path_confinement.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "tests/testing/temp_dir.h"

namespace geotrain::io {
namespace {
namespace fs = std::filesystem;

class PathConfinementTest : public ::testing::Test {
 protected:
  void SetUp() override {
    base_ = fs::canonical(dir_.path()).string();
    root_ = base_ + "/root";
    outside_ = base_ + "/outside";
    fs::create_directories(root_ + "/data");
    fs::create_directories(outside_);
    dir_.Write("root/data/train.txt", "inside");
    dir_.Write("outside/secret.txt", "outside");
  }
  PathConfinement Confine(const std::vector<std::string>& allowed = {}) {
    StatusOr<PathConfinement> confinement = PathConfinement::Create(root_, allowed);
    EXPECT_TRUE(confinement.ok()) << confinement.status().ToString();
    return std::move(confinement).value();
  }
  // The error of a refused path, checked to name the field and the path as written.
  std::string Refusal(const PathConfinement& confinement, const std::string& path) {
    StatusOr<std::string> resolved = confinement.Resolve("data.train[0]", path);
    EXPECT_FALSE(resolved.ok()) << path << " resolved to " << resolved.value();
    if (resolved.ok()) return "";
    EXPECT_EQ(resolved.status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(resolved.status().message().rfind("data.train[0]: " + path, 0), 0u)
        << resolved.status().message();
    return resolved.status().message();
  }

  testing::TempDir dir_;
  std::string base_, root_, outside_;
};

TEST_F(PathConfinementTest, RelativePathsResolveUnderTheRoot) {
  const PathConfinement confinement = Confine();
  EXPECT_EQ(confinement.root(), root_);
  EXPECT_EQ(confinement.Resolve("f", "data/train.txt").value(), root_ + "/data/train.txt");
  EXPECT_EQ(confinement.Resolve("f", "./data/../data/train.txt").value(),
            root_ + "/data/train.txt");
  EXPECT_EQ(confinement.Resolve("f", "data/").value(), root_ + "/data");
}

TEST_F(PathConfinementTest, TheRootItselfIsInside) {
  const PathConfinement confinement = Confine();
  EXPECT_EQ(confinement.Resolve("f", ".").value(), root_);
  EXPECT_EQ(confinement.Resolve("f", root_).value(), root_);
  EXPECT_EQ(confinement.Resolve("f", root_ + "/").value(), root_);
}

TEST_F(PathConfinementTest, DotDotOutOfTheRootIsRefused) {
  const PathConfinement confinement = Confine();
  const std::string message = Refusal(confinement, "../outside/secret.txt");
  EXPECT_NE(message.find("resolves to " + outside_ + "/secret.txt"), std::string::npos) << message;
  EXPECT_NE(message.find("outside the data root " + root_), std::string::npos) << message;
  Refusal(confinement, "data/../../outside/secret.txt");
  Refusal(confinement, "..");
  // Through a directory that does not exist yet: lexically still out.
  Refusal(confinement, "new/../../outside/made-by-job");
}

TEST_F(PathConfinementTest, AbsolutePathsMustLieInside) {
  const PathConfinement confinement = Confine();
  EXPECT_EQ(confinement.Resolve("f", root_ + "/data/train.txt").value(), root_ + "/data/train.txt");
  Refusal(confinement, outside_ + "/secret.txt");
  Refusal(confinement, "/etc/passwd");
  Refusal(confinement, "/");
  // A sibling whose name merely starts with the root's is not inside it.
  fs::create_directories(root_ + "-sibling");
  Refusal(confinement, root_ + "-sibling");
}

TEST_F(PathConfinementTest, ASymlinkOutOfTheRootIsRefused) {
  fs::create_directory_symlink(outside_, root_ + "/escape");
  fs::create_symlink(outside_ + "/secret.txt", root_ + "/data/secret-link.txt");
  const PathConfinement confinement = Confine();
  const std::string message = Refusal(confinement, "escape/secret.txt");
  EXPECT_NE(message.find("resolves to " + outside_ + "/secret.txt"), std::string::npos) << message;
  Refusal(confinement, "data/secret-link.txt");
  // A directory the job would create below the link lies outside too.
  Refusal(confinement, "escape/checkpoints/new");
}

TEST_F(PathConfinementTest, ADanglingSymlinkIsRefused) {
  fs::create_symlink(outside_ + "/not-yet", root_ + "/dangling");
  const PathConfinement confinement = Confine();
  const std::string message = Refusal(confinement, "dangling");
  EXPECT_NE(message.find("a symlink to a path that does not exist"), std::string::npos) << message;
  Refusal(confinement, "dangling/below");
}

TEST_F(PathConfinementTest, ASymlinkInsideTheRootIsFollowed) {
  fs::create_directory_symlink(root_ + "/data", root_ + "/alias");
  const PathConfinement confinement = Confine();
  EXPECT_EQ(confinement.Resolve("f", "alias/train.txt").value(), root_ + "/data/train.txt");
  EXPECT_EQ(confinement.Resolve("f", "alias/new-dir").value(), root_ + "/data/new-dir");
}

TEST_F(PathConfinementTest, ANonExistentLeafIsCheckedThroughItsParent) {
  const PathConfinement confinement = Confine();
  EXPECT_EQ(confinement.Resolve("f", "checkpoints/run-1").value(), root_ + "/checkpoints/run-1");
  EXPECT_EQ(confinement.Resolve("f", "data/trace.json").value(), root_ + "/data/trace.json");
  Refusal(confinement, outside_ + "/new/dir");
}

TEST_F(PathConfinementTest, AllowedPathsExtendTheRoot) {
  const PathConfinement confinement = Confine({outside_});
  EXPECT_EQ(confinement.Resolve("f", outside_ + "/secret.txt").value(), outside_ + "/secret.txt");
  EXPECT_EQ(confinement.Resolve("f", "../outside/ckpt").value(), outside_ + "/ckpt");
  StatusOr<std::string> refused = confinement.Resolve("training.checkpoint_dir", "/etc/x");
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("(and the allowed paths " + outside_ + ")"),
            std::string::npos)
      << refused.status().message();
}

TEST_F(PathConfinementTest, EmptyPathsAndBadDirectoriesAreErrors) {
  EXPECT_FALSE(Confine().Resolve("model.dir", "").ok());
  StatusOr<PathConfinement> missing = PathConfinement::Create(base_ + "/nope");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().message().rfind("data root " + base_ + "/nope", 0), 0u);
  StatusOr<PathConfinement> file = PathConfinement::Create(root_, {root_ + "/data/train.txt"});
  ASSERT_FALSE(file.ok());
  EXPECT_NE(file.status().message().find("not a directory"), std::string::npos);
}

}  // namespace
}  // namespace geotrain::io
