#include "coordinator/kv_store.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

namespace geotrain::coordinator {
namespace {

using std::chrono::milliseconds;

// Long enough never to end a wait in a passing test; a failing one ends within it.
constexpr milliseconds kLongWait{10000};

const KvScopeId kScope{"job-1", 1};

KvWaitOptions WaitUpTo(milliseconds timeout) {
  KvWaitOptions wait;
  wait.timeout = timeout;
  return wait;
}

// Waits until `count` calls block in the store (false if that never happens), so a test sets a
// key only once the reader waits: a set before the wait would pass without testing the wake-up.
bool AwaitWaiters(const KvStore& store, size_t count) {
  const auto give_up = std::chrono::steady_clock::now() + kLongWait;
  while (store.NumWaiters() != count) {
    if (std::chrono::steady_clock::now() > give_up) return false;
    std::this_thread::sleep_for(milliseconds(1));
  }
  return true;
}

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(KvStoreTest, SetThenGet) {
  KvStore store;
  ASSERT_TRUE(store.Set(kScope, "a", "1").ok());
  auto value = store.Get(kScope, "a");
  ASSERT_TRUE(value.ok()) << value.status().ToString();
  EXPECT_EQ(*value, "1");
  ASSERT_TRUE(store.Set(kScope, "a", std::string("\0\xff", 2)).ok());
  EXPECT_EQ(*store.Get(kScope, "a"), std::string("\0\xff", 2));
}

TEST(KvStoreTest, GetWithoutWaitOfMissingKeyIsNotFound) {
  KvStore store;
  auto value = store.Get(kScope, "missing");
  ASSERT_FALSE(value.ok());
  EXPECT_EQ(value.status().code(), StatusCode::kNotFound);
  EXPECT_TRUE(Contains(value.status().message(), "'missing'")) << value.status().message();
}

TEST(KvStoreTest, GetWaitsForALaterSetFromAnotherThread) {
  KvStore store;
  StatusOr<std::string> value = Internal("not run");
  std::thread reader([&] { value = store.Get(kScope, "late", WaitUpTo(kLongWait)); });
  EXPECT_TRUE(AwaitWaiters(store, 1));
  ASSERT_TRUE(store.Set(kScope, "late", "here").ok());
  reader.join();
  ASSERT_TRUE(value.ok()) << value.status().ToString();
  EXPECT_EQ(*value, "here");
  EXPECT_EQ(store.NumWaiters(), 0u);
}

TEST(KvStoreTest, GetTimesOutWithDeadlineExceeded) {
  KvStore store;
  auto value = store.Get(kScope, "never", WaitUpTo(milliseconds(50)));
  ASSERT_FALSE(value.ok());
  EXPECT_EQ(value.status().code(), StatusCode::kDeadlineExceeded);
  EXPECT_TRUE(Contains(value.status().message(), "timed out after 50 ms waiting for key 'never'"))
      << value.status().message();
  // A wait on a scope that never got a key leaves nothing behind.
  EXPECT_EQ(store.NumScopes(), 0u);
}

TEST(KvStoreTest, WaitForSeveralKeys) {
  KvStore store;
  ASSERT_TRUE(store.Set(kScope, "a", "").ok());
  Status status = Internal("not run");
  std::thread waiter([&] { status = store.Wait(kScope, {"a", "b", "c"}, WaitUpTo(kLongWait)); });
  EXPECT_TRUE(AwaitWaiters(store, 1));
  ASSERT_TRUE(store.Set(kScope, "b", "").ok());
  ASSERT_TRUE(store.Set(kScope, "c", "").ok());
  waiter.join();
  EXPECT_TRUE(status.ok()) << status.ToString();
}

TEST(KvStoreTest, WaitTimeoutNamesTheMissingKeys) {
  KvStore store;
  ASSERT_TRUE(store.Set(kScope, "present", "").ok());
  const Status status = store.Wait(kScope, {"present", "absent"}, WaitUpTo(milliseconds(20)));
  EXPECT_EQ(status.code(), StatusCode::kDeadlineExceeded);
  EXPECT_TRUE(Contains(status.message(), "waiting for keys 'absent'")) << status.message();
  EXPECT_FALSE(Contains(status.message(), "present")) << status.message();
  EXPECT_TRUE(store.Wait(kScope, {}, WaitUpTo(milliseconds(0))).ok());
}

TEST(KvStoreTest, AbandonedWaitEndsEarly) {
  KvStore store;
  std::atomic<bool> gone{false};
  KvWaitOptions wait = WaitUpTo(kLongWait);
  wait.abandoned = [&] { return gone.load(); };
  wait.abandon_check_interval = milliseconds(5);
  Status status;
  std::thread waiter([&] { status = store.Get(kScope, "k", wait).status(); });
  EXPECT_TRUE(AwaitWaiters(store, 1));
  gone = true;
  waiter.join();
  EXPECT_EQ(status.code(), StatusCode::kUnavailable) << status.ToString();
  EXPECT_TRUE(Contains(status.message(), "gave up")) << status.message();
}

TEST(KvStoreTest, AddCountsInDecimalText) {
  KvStore store;
  auto first = store.Add(kScope, "n", 5);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_EQ(*first, 5);  // missing counts as 0
  EXPECT_EQ(*store.Get(kScope, "n"), "5");
  EXPECT_EQ(*store.Add(kScope, "n", -7), -2);
  EXPECT_EQ(*store.Get(kScope, "n"), "-2");
  ASSERT_TRUE(store.Set(kScope, "m", "40").ok());
  EXPECT_EQ(*store.Add(kScope, "m", 2), 42);
}

TEST(KvStoreTest, AddOnNonIntegerIsFailedPrecondition) {
  KvStore store;
  for (const char* bad : {"abc", "", "12x", " 1", "+1", "99999999999999999999"}) {
    ASSERT_TRUE(store.Set(kScope, "text", bad).ok());
    auto sum = store.Add(kScope, "text", 1);
    ASSERT_FALSE(sum.ok()) << "'" << bad << "'";
    EXPECT_EQ(sum.status().code(), StatusCode::kFailedPrecondition);
    EXPECT_TRUE(Contains(sum.status().message(), "key 'text'")) << sum.status().message();
    EXPECT_EQ(*store.Get(kScope, "text"), bad);  // unchanged
  }
}

TEST(KvStoreTest, AddOverflowIsOutOfRange) {
  KvStore store;
  ASSERT_TRUE(store.Set(kScope, "n", "9223372036854775807").ok());
  EXPECT_EQ(store.Add(kScope, "n", 1).status().code(), StatusCode::kOutOfRange);
}

TEST(KvStoreTest, AddFromManyThreadsSums) {
  KvStore store;
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 100; ++i) ASSERT_TRUE(store.Add(kScope, "n", 1).ok());
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(*store.Get(kScope, "n"), "800");
}

TEST(KvStoreTest, CompareSetAsC10d) {
  KvStore store;
  // Missing, expected empty: set.
  EXPECT_EQ(*store.CompareSet(kScope, "k", "", "first"), "first");
  EXPECT_EQ(*store.Get(kScope, "k"), "first");
  // Present and equal: swapped.
  EXPECT_EQ(*store.CompareSet(kScope, "k", "first", "second"), "second");
  // Present and different: unchanged, the current value comes back.
  EXPECT_EQ(*store.CompareSet(kScope, "k", "stale", "third"), "second");
  EXPECT_EQ(*store.Get(kScope, "k"), "second");
  // Missing, expected not empty: nothing stored, `expected` comes back (as c10d's stores).
  EXPECT_EQ(*store.CompareSet(kScope, "other", "x", "y"), "x");
  EXPECT_FALSE(*store.Check(kScope, {"other"}));
}

TEST(KvStoreTest, CompareSetWakesAWaiter) {
  KvStore store;
  StatusOr<std::string> value = Internal("not run");
  std::thread reader([&] { value = store.Get(kScope, "k", WaitUpTo(kLongWait)); });
  EXPECT_TRUE(AwaitWaiters(store, 1));
  ASSERT_TRUE(store.CompareSet(kScope, "k", "", "v").ok());
  reader.join();
  ASSERT_TRUE(value.ok()) << value.status().ToString();
  EXPECT_EQ(*value, "v");
}

TEST(KvStoreTest, CheckAndDelete) {
  KvStore store;
  EXPECT_TRUE(*store.Check(kScope, {}));
  EXPECT_FALSE(*store.Check(kScope, {"a"}));
  ASSERT_TRUE(store.Set(kScope, "a", "1").ok());
  ASSERT_TRUE(store.Set(kScope, "b", "2").ok());
  EXPECT_TRUE(*store.Check(kScope, {"a", "b"}));
  EXPECT_FALSE(*store.Check(kScope, {"a", "c"}));
  EXPECT_TRUE(*store.Delete(kScope, "a"));
  EXPECT_FALSE(*store.Delete(kScope, "a"));
  EXPECT_FALSE(*store.Check(kScope, {"a", "b"}));
  EXPECT_TRUE(*store.Delete(kScope, "b"));
  EXPECT_EQ(store.NumScopes(), 0u);
  EXPECT_EQ(store.TotalBytes(), 0u);
}

TEST(KvStoreTest, NumKeysPerScope) {
  KvStore store;
  const KvScopeId other{"job-1", 2};
  EXPECT_EQ(*store.NumKeys(kScope), 0);
  ASSERT_TRUE(store.Set(kScope, "a", "").ok());
  ASSERT_TRUE(store.Set(kScope, "b", "").ok());
  ASSERT_TRUE(store.Set(kScope, "a", "again").ok());
  ASSERT_TRUE(store.Add(other, "n", 1).ok());
  EXPECT_EQ(*store.NumKeys(kScope), 2);
  EXPECT_EQ(*store.NumKeys(other), 1);
}

TEST(KvStoreTest, ScopesAreIsolatedByJobAndGeneration) {
  KvStore store;
  const KvScopeId next_generation{"job-1", 2};
  const KvScopeId other_job{"job-2", 1};
  ASSERT_TRUE(store.Set(kScope, "k", "mine").ok());
  EXPECT_EQ(store.Get(next_generation, "k").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(store.Get(other_job, "k").status().code(), StatusCode::kNotFound);
  ASSERT_TRUE(store.Set(other_job, "k", "theirs").ok());
  EXPECT_EQ(*store.Get(kScope, "k"), "mine");
  EXPECT_EQ(*store.Get(other_job, "k"), "theirs");
  EXPECT_FALSE(*store.Delete(next_generation, "k"));
  EXPECT_EQ(store.NumScopes(), 2u);
}

TEST(KvStoreTest, DropScopeWakesAWaiterWithAnError) {
  KvStore store;
  const KvScopeId other_generation{"job-1", 2};
  ASSERT_TRUE(store.Set(kScope, "old", "1").ok());
  ASSERT_TRUE(store.Set(other_generation, "kept", "1").ok());
  Status status;
  std::thread waiter([&] { status = store.Get(kScope, "never", WaitUpTo(kLongWait)).status(); });
  EXPECT_TRUE(AwaitWaiters(store, 1));
  store.DropScope("job-1", 1);
  waiter.join();
  EXPECT_EQ(status.code(), StatusCode::kFailedPrecondition) << status.ToString();
  EXPECT_TRUE(Contains(status.message(), "scope dropped")) << status.message();
  EXPECT_EQ(store.Get(kScope, "old").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(*store.Get(other_generation, "kept"), "1");
  // The scope starts afresh on the next write.
  ASSERT_TRUE(store.Set(kScope, "new", "2").ok());
  EXPECT_EQ(*store.NumKeys(kScope), 1);
}

TEST(KvStoreTest, DropJobForgetsEveryGeneration) {
  KvStore store;
  ASSERT_TRUE(store.Set({"job-1", 1}, "a", "1").ok());
  ASSERT_TRUE(store.Set({"job-1", 2}, "a", "1").ok());
  ASSERT_TRUE(store.Set({"job-2", 1}, "a", "1").ok());
  Status status;
  std::thread waiter([&] { status = store.Wait({"job-1", 3}, {"x"}, WaitUpTo(kLongWait)); });
  EXPECT_TRUE(AwaitWaiters(store, 1));
  store.DropJob("job-1");
  waiter.join();
  EXPECT_EQ(status.code(), StatusCode::kFailedPrecondition) << status.ToString();
  EXPECT_EQ(store.NumScopes(), 1u);
  EXPECT_EQ(*store.Get({"job-2", 1}, "a"), "1");
  store.DropJob("job-2");
  store.DropJob("never-existed");
  EXPECT_EQ(store.NumScopes(), 0u);
  EXPECT_EQ(store.TotalBytes(), 0u);
}

TEST(KvStoreTest, RejectsEmptyNames) {
  KvStore store;
  const Status no_job = store.Set({"", 1}, "k", "v");
  EXPECT_EQ(no_job.code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(Contains(no_job.message(), "scope.job_id: empty")) << no_job.message();
  const Status no_key = store.Set(kScope, "", "v");
  EXPECT_EQ(no_key.code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(Contains(no_key.message(), "key: empty")) << no_key.message();
  const Status second_key = store.Wait(kScope, {"a", ""}, WaitUpTo(milliseconds(0)));
  EXPECT_EQ(second_key.code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(Contains(second_key.message(), "keys[1]: empty")) << second_key.message();
}

TEST(KvStoreTest, ValueLimit) {
  KvStoreLimits limits;
  limits.max_value_bytes = 10;
  KvStore store(limits);
  EXPECT_TRUE(store.Set(kScope, "k", std::string(10, 'x')).ok());
  const Status big = store.Set(kScope, "k", std::string(11, 'x'));
  EXPECT_EQ(big.code(), StatusCode::kResourceExhausted);
  EXPECT_TRUE(Contains(big.message(), "key 'k'")) << big.message();
  EXPECT_EQ(*store.Get(kScope, "k"), std::string(10, 'x'));
  EXPECT_EQ(
      store.CompareSet(kScope, "k", std::string(10, 'x'), std::string(11, 'y')).status().code(),
      StatusCode::kResourceExhausted);
}

TEST(KvStoreTest, DefaultValueLimitIs16MiB) {
  KvStore store;
  EXPECT_TRUE(store.Set(kScope, "k", std::string(size_t{16} << 20, 'x')).ok());
  EXPECT_EQ(store.Set(kScope, "k", std::string((size_t{16} << 20) + 1, 'x')).code(),
            StatusCode::kResourceExhausted);
}

TEST(KvStoreTest, KeysPerScopeLimit) {
  KvStoreLimits limits;
  limits.max_keys_per_scope = 3;
  KvStore store(limits);
  for (const char* key : {"a", "b", "c"}) ASSERT_TRUE(store.Set(kScope, key, "").ok());
  EXPECT_EQ(store.Set(kScope, "d", "").code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(store.Add(kScope, "d", 1).status().code(), StatusCode::kResourceExhausted);
  EXPECT_TRUE(store.Set(kScope, "a", "overwrite is fine").ok());
  EXPECT_TRUE(store.Set({"job-1", 2}, "d", "").ok());  // another scope has its own budget
  EXPECT_EQ(*store.NumKeys(kScope), 3);
}

TEST(KvStoreTest, TotalBytesLimitCoversEveryScope) {
  KvStoreLimits limits;
  limits.max_total_bytes = 1000;
  KvStore store(limits);
  int stored = 0;
  Status status;
  for (int job = 0; job < 100 && status.ok(); ++job) {
    status = store.Set({"job-" + std::to_string(job), 1}, "k", std::string(100, 'x'));
    if (status.ok()) ++stored;
  }
  EXPECT_EQ(status.code(), StatusCode::kResourceExhausted);
  EXPECT_GT(stored, 0);
  EXPECT_LE(store.TotalBytes(), 1000u);
  store.DropJob("job-0");
  EXPECT_TRUE(store.Set({"job-new", 1}, "k", std::string(100, 'x')).ok());
}

TEST(KvStoreTest, OneJobCannotFillTheStoreForTheOthers) {
  KvStoreLimits limits;
  limits.max_total_bytes = 100000;
  limits.max_job_bytes = 10000;
  KvStore store(limits);
  Status status;
  int stored = 0;
  // Spread over generations: the quota is the job's, not one scope's.
  for (uint32_t generation = 1; generation < 100 && status.ok(); ++generation) {
    status = store.Set({"job-1", generation}, "k", std::string(1000, 'x'));
    if (status.ok()) ++stored;
  }
  EXPECT_EQ(status.code(), StatusCode::kResourceExhausted);
  EXPECT_TRUE(Contains(status.message(), "job 'job-1' would exceed its quota of 10000 bytes"))
      << status.message();
  EXPECT_TRUE(Contains(status.message(), "--rendezvous-job-max-bytes")) << status.message();
  EXPECT_EQ(stored, 9);  // 9 x (1000 + key + overhead) fit in 10000
  EXPECT_LE(store.JobBytes("job-1"), 10000u);
  // Another job still has room, and a delete or a dropped scope gives the job its room back.
  EXPECT_TRUE(store.Set({"job-2", 1}, "k", std::string(1000, 'x')).ok());
  ASSERT_TRUE(*store.Delete({"job-1", 1}, "k"));
  EXPECT_TRUE(store.Set({"job-1", 50}, "k", std::string(1000, 'x')).ok());
  store.DropScope("job-1", 2);
  EXPECT_TRUE(store.Set({"job-1", 51}, "k", std::string(1000, 'x')).ok());
  // Ended jobs hold nothing.
  store.DropJob("job-1");
  EXPECT_EQ(store.JobBytes("job-1"), 0u);
  EXPECT_EQ(store.JobKeys("job-1"), 0u);
  EXPECT_EQ(store.TotalBytes(), store.JobBytes("job-2"));
}

TEST(KvStoreTest, KeysPerJobQuota) {
  KvStoreLimits limits;
  limits.max_job_keys = 4;
  KvStore store(limits);
  for (const char* key : {"a", "b"}) ASSERT_TRUE(store.Set({"job-1", 1}, key, "").ok());
  for (const char* key : {"a", "b"}) ASSERT_TRUE(store.Set({"job-1", 2}, key, "").ok());
  const Status full = store.Set({"job-1", 3}, "a", "");
  EXPECT_EQ(full.code(), StatusCode::kResourceExhausted);
  EXPECT_TRUE(Contains(full.message(), "quota of 4 keys")) << full.message();
  EXPECT_EQ(store.Add({"job-1", 3}, "n", 1).status().code(), StatusCode::kResourceExhausted);
  EXPECT_TRUE(store.Set({"job-1", 1}, "a", "overwrite is fine").ok());
  EXPECT_TRUE(store.Set({"job-2", 1}, "a", "").ok());
  EXPECT_EQ(store.JobKeys("job-1"), 4u);
}

TEST(KvStoreTest, KeyLengthLimit) {
  KvStoreLimits limits;
  limits.max_key_bytes = 8;
  KvStore store(limits);
  EXPECT_TRUE(store.Set(kScope, std::string(8, 'k'), "").ok());
  const Status long_key = store.Set(kScope, std::string(9, 'k'), "");
  EXPECT_EQ(long_key.code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(Contains(long_key.message(), "key: 9 bytes exceeds the limit of 8"))
      << long_key.message();
}

}  // namespace
}  // namespace geotrain::coordinator
