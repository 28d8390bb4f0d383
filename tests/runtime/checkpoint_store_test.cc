// CheckpointStore: round trips, completeness across ranks, crash leftovers, corruption, pruning,
// layout checks, concurrent writers, and failed writes that must not lose the previous checkpoint.
#include "runtime/checkpoint_store.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/resource.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <set>
#include <thread>
#include <vector>

#include "models/safetensors.h"
#include "tests/testing/full_disk_env.h"
#include "tests/testing/temp_dir.h"

namespace geotrain::runtime {
namespace {

namespace fs = std::filesystem;

CheckpointStore OpenStore(const std::string& dir, int stage, int stages, int replica,
                          int replicas) {
  StatusOr<CheckpointStore> store = CheckpointStore::Open(dir, stage, stages, replica, replicas);
  EXPECT_TRUE(store.ok()) << store.status().ToString();
  return std::move(store).value();
}

// A small checkpoint whose values depend on `seed`, so ranks and steps are told apart.
RankCheckpoint Sample(int64_t step, float seed) {
  RankCheckpoint c;
  c.step = step;
  c.model["transformer.wte.weight"] = at::arange(12, at::kFloat).reshape({4, 3}) + seed;
  c.model["transformer.h.0.ln_1.bias"] = at::full({3}, seed, at::kBFloat16);
  c.optimizer["transformer.wte.weight.exp_avg"] = at::full({4, 3}, seed / 2);
  c.optimizer["adamw.step"] = at::scalar_tensor(static_cast<int64_t>(step), at::kLong);
  c.extra["cocktail.error"] = at::full({2, 2}, -seed, at::kDouble);
  c.extra["codec.counters"] = at::tensor({1, 2, 3}, at::kInt);
  c.extra["codec.mask"] = at::tensor({1, 0}, at::kInt).to(at::kBool);
  c.extra["loss_scale"] = at::scalar_tensor(seed + 0.5);
  c.extra["empty"] = at::empty({0, 3});
  c.state = {{"lr", 0.001}, {"rng", {1, 2, 3}}, {"data", {{"epoch", 1}, {"offset", step}}}};
  return c;
}

void ExpectSameTensors(const std::map<std::string, at::Tensor>& expected,
                       const std::map<std::string, at::Tensor>& actual) {
  ASSERT_EQ(expected.size(), actual.size());
  for (const auto& [name, tensor] : expected) {
    ASSERT_TRUE(actual.count(name)) << name;
    const at::Tensor& got = actual.at(name);
    EXPECT_EQ(got.sizes(), tensor.sizes()) << name;
    if (at::isFloatingType(tensor.scalar_type())) {
      EXPECT_EQ(got.scalar_type(), at::kFloat) << name;
      EXPECT_TRUE(at::equal(got, tensor.to(at::kFloat))) << name;
    } else {
      EXPECT_EQ(got.scalar_type(), tensor.scalar_type()) << name;
      EXPECT_TRUE(at::equal(got, tensor)) << name;
    }
  }
}

void ExpectSameCheckpoint(const RankCheckpoint& expected, const RankCheckpoint& actual) {
  EXPECT_EQ(actual.step, expected.step);
  ExpectSameTensors(expected.model, actual.model);
  ExpectSameTensors(expected.optimizer, actual.optimizer);
  ExpectSameTensors(expected.extra, actual.extra);
  EXPECT_EQ(actual.state, expected.state);
}

std::optional<int64_t> Newest(const CheckpointStore& store) {
  StatusOr<std::optional<int64_t>> newest = store.NewestComplete();
  EXPECT_TRUE(newest.ok()) << newest.status().ToString();
  return newest.ok() ? *newest : std::nullopt;
}

std::set<std::string> Entries(const std::string& dir) {
  std::set<std::string> names;
  for (const auto& entry : fs::directory_iterator(dir))
    names.insert(entry.path().filename().string());
  return names;
}

TEST(CheckpointStoreTest, RoundTripsEveryField) {
  testing::TempDir tmp;
  CheckpointStore store = OpenStore(tmp.path(), 1, 2, 0, 1);
  ASSERT_TRUE(OpenStore(tmp.path(), 0, 2, 0, 1).Write(Sample(100, 9)).ok());
  const RankCheckpoint written = Sample(100, 3);
  ASSERT_TRUE(store.Write(written).ok());

  ASSERT_EQ(Newest(store), 100);
  StatusOr<RankCheckpoint> read = store.Read(100);
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  ExpectSameCheckpoint(written, *read);

  // model.safetensors is a plain Hugging Face file holding exactly the model's tensors.
  const std::string part = tmp.path() + "/step-00000100/stage-01.replica-00";
  auto model = models::SafetensorsFile::Open(part + "/model.safetensors");
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  EXPECT_EQ((*model)->TensorNames(),
            (std::vector<std::string>{"transformer.h.0.ln_1.bias", "transformer.wte.weight"}));
  EXPECT_EQ((*model)->metadata().at("format"), "pt");
  EXPECT_EQ(Entries(part), (std::set<std::string>{"extra.safetensors", "model.safetensors",
                                                  "optimizer.safetensors", "state.json"}));
}

TEST(CheckpointStoreTest, CompleteOnlyOnceEveryRankHasWritten) {
  testing::TempDir tmp;
  std::vector<CheckpointStore> ranks;
  for (int rank = 0; rank < 4; ++rank) {
    ranks.push_back(OpenStore(tmp.path(), rank % 2, 2, rank / 2, 2));
  }
  for (int rank = 0; rank < 4; ++rank) ASSERT_TRUE(ranks[rank].Write(Sample(5, rank)).ok());
  ASSERT_EQ(Newest(ranks[0]), 5);

  for (int rank = 0; rank < 4; ++rank) {
    for (const CheckpointStore& store : ranks) EXPECT_EQ(Newest(store), 5) << "rank " << rank;
    StatusOr<RankCheckpoint> early = ranks[0].Read(10);
    if (rank > 0) {
      EXPECT_EQ(early.status().code(), StatusCode::kFailedPrecondition);
      EXPECT_NE(early.status().message().find("incomplete"), std::string::npos);
    }
    ASSERT_TRUE(ranks[rank].Write(Sample(10, 10 + rank)).ok());
  }
  EXPECT_EQ(Newest(ranks[3]), 10);
  for (int rank = 0; rank < 4; ++rank) {
    StatusOr<RankCheckpoint> read = ranks[rank].Read(10);
    ASSERT_TRUE(read.ok()) << read.status().ToString();
    ExpectSameCheckpoint(Sample(10, 10 + rank), *read);
  }
}

TEST(CheckpointStoreTest, InterruptedWritesAreIgnoredAndCleanedUp) {
  testing::TempDir tmp;
  CheckpointStore first = OpenStore(tmp.path(), 0, 1, 0, 2);
  CheckpointStore second = OpenStore(tmp.path(), 0, 1, 1, 2);
  ASSERT_TRUE(first.Write(Sample(10, 1)).ok());
  ASSERT_TRUE(second.Write(Sample(10, 2)).ok());
  ASSERT_TRUE(first.Write(Sample(20, 1)).ok());

  // The second replica crashed twice: mid-write (temporary directory), and after the rename but
  // before its marker.
  const std::string step_dir = tmp.path() + "/step-00000020";
  fs::create_directory(step_dir + "/stage-00.replica-01.tmp-999-0");
  tmp.Write("step-00000020/stage-00.replica-01.tmp-999-0/model.safetensors", "trunc");
  fs::copy(step_dir + "/stage-00.replica-00", step_dir + "/stage-00.replica-01");
  EXPECT_EQ(Newest(first), 10);
  EXPECT_EQ(first.Read(20).status().code(), StatusCode::kFailedPrecondition);

  ASSERT_TRUE(second.Write(Sample(20, 2)).ok());
  EXPECT_EQ(Newest(first), 20);
  EXPECT_EQ(Entries(step_dir),
            (std::set<std::string>{"job.json", "stage-00.replica-00", "stage-00.replica-00.done",
                                   "stage-00.replica-01", "stage-00.replica-01.done"}));
  StatusOr<RankCheckpoint> read = second.Read(20);
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  ExpectSameCheckpoint(Sample(20, 2), *read);
}

TEST(CheckpointStoreTest, RewriteReplacesThePart) {
  testing::TempDir tmp;
  CheckpointStore store = OpenStore(tmp.path(), 0, 1, 0, 1);
  ASSERT_TRUE(store.Write(Sample(7, 1)).ok());
  RankCheckpoint second = Sample(7, 2);
  second.extra.erase("codec.mask");
  ASSERT_TRUE(store.Write(second).ok());
  StatusOr<RankCheckpoint> read = store.Read(7);
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  ExpectSameCheckpoint(second, *read);
  EXPECT_EQ(Entries(tmp.path() + "/step-00000007"),
            (std::set<std::string>{"job.json", "stage-00.replica-00", "stage-00.replica-00.done"}));
}

// Overwrites `size` bytes of `path` at `offset` with 'X' (or truncates it to `offset`).
void Damage(const std::string& path, size_t offset, size_t size, bool truncate) {
  if (truncate) {
    fs::resize_file(path, offset);
    return;
  }
  std::fstream file(path, std::ios::in | std::ios::out | std::ios::binary);
  file.seekp(static_cast<std::streamoff>(offset));
  file << std::string(size, 'X');
}

TEST(CheckpointStoreTest, CorruptFilesGiveErrorsNamingTheFile) {
  struct Case {
    const char* file;
    size_t offset;
    bool truncate;
    const char* expected;  // in the message besides the file name
  };
  const Case cases[] = {
      {"model.safetensors", 0, true, "truncated"},
      {"optimizer.safetensors", 20, false, "fingerprint"},
      {"extra.safetensors", 10, true, "truncated"},
      {"state.json", 3, false, "state.json"},
      {"state.json", 0, true, "state.json"},
  };
  for (const Case& c : cases) {
    testing::TempDir tmp;
    CheckpointStore store = OpenStore(tmp.path(), 0, 1, 0, 1);
    ASSERT_TRUE(store.Write(Sample(3, 1)).ok());
    const std::string path = tmp.path() + "/step-00000003/stage-00.replica-00/" + c.file;
    Damage(path, c.offset, 4, c.truncate);
    EXPECT_EQ(Newest(store), 3);
    const Status status = store.Read(3).status();
    EXPECT_FALSE(status.ok()) << c.file;
    EXPECT_NE(status.message().find(path), std::string::npos) << status.ToString();
    EXPECT_NE(status.message().find(c.expected), std::string::npos) << status.ToString();
  }
}

TEST(CheckpointStoreTest, StateFieldsAreValidated) {
  testing::TempDir tmp;
  CheckpointStore store = OpenStore(tmp.path(), 0, 1, 0, 1);
  ASSERT_TRUE(store.Write(Sample(3, 1)).ok());
  const std::string state_path = tmp.path() + "/step-00000003/stage-00.replica-00/state.json";
  std::ifstream in(state_path);
  const nlohmann::json original = nlohmann::json::parse(in);

  const std::pair<std::function<void(nlohmann::json*)>, std::string> edits[] = {
      {[](nlohmann::json* j) { (*j)["step"] = 99; }, "step: 99, expected 3"},
      {[](nlohmann::json* j) { (*j)["version"] = 2; }, "version: 2, expected 1"},
      {[](nlohmann::json* j) { j->erase("files"); }, "files: missing"},
      {[](nlohmann::json* j) {
         (*j)["integer_tensors"]["optimizer"]["adamw.step"]["values"] = {1, 2};
       },
       "integer_tensors.optimizer[\"adamw.step\"].values: expected an array of 1 integers"},
      {[](nlohmann::json* j) { (*j)["files"]["model.safetensors"]["bytes"] = "many"; },
       "files.model.safetensors.bytes: expected an integer"},
  };
  for (const auto& [edit, expected] : edits) {
    nlohmann::json changed = original;
    edit(&changed);
    tmp.Write("step-00000003/stage-00.replica-00/state.json", changed.dump());
    const Status status = store.Read(3).status();
    EXPECT_EQ(status.code(), StatusCode::kDataLoss) << expected;
    EXPECT_NE(status.message().find(state_path + ": " + expected), std::string::npos)
        << status.ToString();
  }
}

TEST(CheckpointStoreTest, PruneKeepsTheNewestComplete) {
  testing::TempDir tmp;
  CheckpointStore a = OpenStore(tmp.path(), 0, 1, 0, 2);
  CheckpointStore b = OpenStore(tmp.path(), 0, 1, 1, 2);
  for (int64_t step : {1, 2, 3, 4, 5}) {
    ASSERT_TRUE(a.Write(Sample(step, 0)).ok());
    if (step != 3 && step != 5) {
      ASSERT_TRUE(b.Write(Sample(step, 1)).ok());
    }
  }
  EXPECT_EQ(a.Prune(0).code(), StatusCode::kInvalidArgument);
  // Both ranks prune at once: 1 goes (beyond keep), 3 goes (abandoned), 5 stays (in progress).
  Status pruned_a, pruned_b;
  std::thread other([&] { pruned_b = b.Prune(2); });
  pruned_a = a.Prune(2);
  other.join();
  ASSERT_TRUE(pruned_a.ok()) << pruned_a.ToString();
  ASSERT_TRUE(pruned_b.ok()) << pruned_b.ToString();
  EXPECT_EQ(Entries(tmp.path()),
            (std::set<std::string>{"step-00000002", "step-00000004", "step-00000005"}));
  EXPECT_EQ(Newest(a), 4);
  EXPECT_TRUE(b.Read(2).ok());
}

TEST(CheckpointStoreTest, PruneRemovesStepsAnInterruptedPruneRenamedAside) {
  testing::TempDir tmp;
  CheckpointStore store = OpenStore(tmp.path(), 0, 1, 0, 1);
  ASSERT_TRUE(store.Write(Sample(2, 0)).ok());
  std::filesystem::create_directory(tmp.File("step-00000001.deleting-123-0"));
  tmp.Write("step-00000001.deleting-123-0/model.safetensors", "left behind");
  ASSERT_TRUE(store.Prune(1).ok());
  EXPECT_EQ(Entries(tmp.path()), (std::set<std::string>{"step-00000002"}));
}

TEST(CheckpointStoreTest, AnotherLayoutIsAnError) {
  testing::TempDir tmp;
  ASSERT_TRUE(OpenStore(tmp.path(), 0, 2, 0, 1).Write(Sample(8, 0)).ok());
  ASSERT_TRUE(OpenStore(tmp.path(), 1, 2, 0, 1).Write(Sample(8, 1)).ok());

  CheckpointStore other = OpenStore(tmp.path(), 0, 1, 0, 2);
  const std::string job = tmp.path() + "/step-00000008/job.json";
  for (const Status& status : {other.NewestComplete().status(), other.Read(8).status(),
                               other.Write(Sample(8, 2)), other.Prune(1)}) {
    EXPECT_EQ(status.code(), StatusCode::kFailedPrecondition);
    EXPECT_NE(status.message().find(job + ": checkpoint of a job with 2 stages x 1 replicas"),
              std::string::npos)
        << status.ToString();
  }
}

TEST(CheckpointStoreTest, ConcurrentRanksProduceCompleteCheckpoints) {
  testing::TempDir tmp;
  std::vector<std::thread> threads;
  std::vector<Status> results(4);
  for (int rank = 0; rank < 4; ++rank) {
    threads.emplace_back([&, rank] {
      CheckpointStore store = OpenStore(tmp.path(), rank % 2, 2, rank / 2, 2);
      for (int64_t step = 1; step <= 3 && results[rank].ok(); ++step) {
        results[rank] = store.Write(Sample(step, rank));
        if (results[rank].ok()) results[rank] = store.Prune(2);
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (const Status& status : results) ASSERT_TRUE(status.ok()) << status.ToString();
  for (int rank = 0; rank < 4; ++rank) {
    CheckpointStore store = OpenStore(tmp.path(), rank % 2, 2, rank / 2, 2);
    ASSERT_EQ(Newest(store), 3);
    StatusOr<RankCheckpoint> read = store.Read(3);
    ASSERT_TRUE(read.ok()) << read.status().ToString();
    ExpectSameCheckpoint(Sample(3, rank), *read);
  }
}

// Lowers the file size limit (as a full disk would stop writes), restoring it afterwards.
class FileSizeLimit {
 public:
  explicit FileSizeLimit(rlim_t bytes) {
    ::signal(SIGXFSZ, SIG_IGN);  // writes past the limit then fail with EFBIG
    ::getrlimit(RLIMIT_FSIZE, &saved_);
    rlimit lowered = saved_;
    lowered.rlim_cur = bytes;
    ::setrlimit(RLIMIT_FSIZE, &lowered);
  }
  ~FileSizeLimit() { ::setrlimit(RLIMIT_FSIZE, &saved_); }

 private:
  rlimit saved_;
};

TEST(CheckpointStoreTest, FailedWriteKeepsThePreviousCheckpoint) {
  testing::TempDir tmp;
  CheckpointStore store = OpenStore(tmp.path(), 0, 1, 0, 1);
  ASSERT_TRUE(store.Write(Sample(1, 1)).ok());
  RankCheckpoint big = Sample(1, 5);
  big.model["lm_head.weight"] = at::ones({256, 1024});  // 1 MiB
  {
    FileSizeLimit limit(64 << 10);
    EXPECT_FALSE(store.Write(big).ok());  // rewrite of step 1
    big.step = 2;
    const Status failed = store.Write(big);
    EXPECT_FALSE(failed.ok());
    EXPECT_NE(failed.message().find("model.safetensors"), std::string::npos) << failed.ToString();
  }
  EXPECT_EQ(Newest(store), 1);
  StatusOr<RankCheckpoint> read = store.Read(1);
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  ExpectSameCheckpoint(Sample(1, 1), *read);
  EXPECT_EQ(Entries(tmp.path() + "/step-00000001"),
            (std::set<std::string>{"job.json", "stage-00.replica-00", "stage-00.replica-00.done"}));
  EXPECT_EQ(Entries(tmp.path() + "/step-00000002"), (std::set<std::string>{"job.json"}));
}

// One flipped bit inside a tensor's data (not its header) parses as a valid safetensors file: only
// the fingerprint recorded in state.json catches it. NewestComplete counts markers, not contents,
// so it still names the damaged step: a resume then fails naming the file rather than silently
// falling back, because every rank of a job must resume from the same step and the others' parts
// of that step are fine (docs/reliability.md: delete the damaged step to resume from the one
// before).
TEST(CheckpointStoreTest, AFlippedByteIsRejectedNamingTheFileAndTheOlderStepStaysReadable) {
  testing::TempDir tmp;
  CheckpointStore store = OpenStore(tmp.path(), 0, 1, 0, 1);
  ASSERT_TRUE(store.Write(Sample(4, 1)).ok());
  ASSERT_TRUE(store.Write(Sample(8, 2)).ok());
  const std::string path = tmp.path() + "/step-00000008/stage-00.replica-00/model.safetensors";
  {
    std::fstream file(path, std::ios::in | std::ios::out | std::ios::binary);
    file.seekg(-5, std::ios::end);  // inside the last tensor's float32 values
    const char byte = static_cast<char>(file.get());
    file.seekp(-5, std::ios::end);
    file.put(static_cast<char>(byte ^ 0x01));
  }
  EXPECT_EQ(Newest(store), 8);
  const Status status = store.Read(8).status();
  EXPECT_EQ(status.code(), StatusCode::kDataLoss) << status.ToString();
  EXPECT_NE(status.message().find(path), std::string::npos) << status.ToString();
  EXPECT_NE(status.message().find("fingerprint"), std::string::npos) << status.ToString();

  StatusOr<RankCheckpoint> older = store.Read(4);
  ASSERT_TRUE(older.ok()) << older.status().ToString();
  ExpectSameCheckpoint(Sample(4, 1), *older);
  fs::remove_all(tmp.path() + "/step-00000008");
  EXPECT_EQ(Newest(store), 4);
}

// A tmpfs of 256 KiB for the disk-full case; skipped where mounting is not allowed (not root).
class SmallDisk {
 public:
  SmallDisk() {
    fs::create_directories(dir_.path() + "/disk");
    mounted_ = ::mount("tmpfs", (dir_.path() + "/disk").c_str(), "tmpfs", 0, "size=256k") == 0;
  }
  ~SmallDisk() {
    if (mounted_) ::umount2(path().c_str(), MNT_DETACH);
  }
  bool mounted() const { return mounted_; }
  std::string path() const { return dir_.path() + "/disk"; }

 private:
  testing::TempDir dir_;
  bool mounted_ = false;
};

TEST(CheckpointStoreTest, AFullDiskIsNamedAndLeavesNoHalfWrittenCheckpoint) {
  SmallDisk disk;
  if (!disk.mounted()) GTEST_SKIP() << "cannot mount a tmpfs here (needs root)";
  CheckpointStore store = OpenStore(disk.path() + "/checkpoints", 0, 1, 0, 1);
  ASSERT_TRUE(store.Write(Sample(1, 1)).ok());
  RankCheckpoint big = Sample(2, 5);
  big.model["lm_head.weight"] = at::ones({256, 1024});  // 1 MiB: more than the disk holds
  const Status failed = store.Write(big);
  EXPECT_EQ(failed.code(), StatusCode::kResourceExhausted) << failed.ToString();
  EXPECT_NE(failed.message().find("ENOSPC"), std::string::npos) << failed.ToString();
  EXPECT_NE(failed.message().find("step-00000002"), std::string::npos) << failed.ToString();

  // The failed step has no part and no marker (nothing left half-written), the older one reads.
  EXPECT_EQ(Entries(disk.path() + "/checkpoints/step-00000002"),
            (std::set<std::string>{"job.json"}));
  EXPECT_EQ(Newest(store), 1);
  StatusOr<RankCheckpoint> read = store.Read(1);
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  ExpectSameCheckpoint(Sample(1, 1), *read);
  // The failed write's temporary files are gone: a checkpoint that fits is written again.
  ASSERT_TRUE(store.Write(Sample(3, 3)).ok());
  EXPECT_EQ(Newest(store), 3);
}

// The same full disk through the Env seam, on any machine: the code says what happened.
TEST(CheckpointStoreTest, AFullDiskIsResourceExhaustedByItsCode) {
  testing::TempDir tmp;
  const std::string dir = tmp.path() + "/checkpoints";
  // Full for the files of step 2's part (its temporary directory); job.json still fits.
  testing::FullDiskEnv full(dir + "/step-00000002/stage-00.replica-00.tmp-");
  StatusOr<CheckpointStore> store = CheckpointStore::Open(dir, 0, 1, 0, 1, &full);
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  ASSERT_TRUE(store->Write(Sample(1, 1)).ok());
  const Status failed = store->Write(Sample(2, 5));
  EXPECT_EQ(failed.code(), StatusCode::kResourceExhausted) << failed.ToString();
  EXPECT_EQ(full.refused(), 1);

  EXPECT_EQ(Entries(dir + "/step-00000002"), (std::set<std::string>{"job.json"}));
  EXPECT_EQ(Newest(*store), 1);
  StatusOr<RankCheckpoint> read = store->Read(1);
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  ExpectSameCheckpoint(Sample(1, 1), *read);
}

TEST(CheckpointStoreTest, RejectsBadArguments) {
  testing::TempDir tmp;
  EXPECT_FALSE(CheckpointStore::Open(tmp.path(), 2, 2, 0, 1).ok());
  EXPECT_FALSE(CheckpointStore::Open(tmp.path(), 0, 1, 0, 0).ok());
  EXPECT_FALSE(CheckpointStore::Open("", 0, 1, 0, 1).ok());
  CheckpointStore store = OpenStore(tmp.path(), 0, 1, 0, 1);
  EXPECT_EQ(store.Write(Sample(-1, 0)).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(store.Read(-1).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(store.Read(4).status().code(), StatusCode::kNotFound);

  RankCheckpoint bad = Sample(1, 0);
  bad.extra["complex"] = at::zeros({2}, at::kComplexFloat);
  Status status = store.Write(bad);
  EXPECT_NE(status.message().find("extra[\"complex\"]: dtype"), std::string::npos)
      << status.ToString();
  bad = Sample(1, 0);
  bad.optimizer["big.counter"] = at::zeros({CheckpointStore::kMaxIntegerElements + 1}, at::kLong);
  status = store.Write(bad);
  EXPECT_NE(status.message().find("optimizer[\"big.counter\"]"), std::string::npos)
      << status.ToString();
  bad = Sample(1, 0);
  bad.model["undefined"] = at::Tensor();
  EXPECT_EQ(store.Write(bad).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(Newest(store), std::nullopt);
}

}  // namespace
}  // namespace geotrain::runtime
