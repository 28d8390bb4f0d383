// Tests of CreateDataParallelSync's four modes: D replicas as threads of this process, joined by
// the fake transport (the same collective code as Gloo), each with its own copy of the parameters.
#include "runtime/data_parallel_sync.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <iostream>
#include <thread>

#include "net/fake_transport.h"

namespace geotrain::runtime {
namespace {

using Shape = std::vector<int64_t>;
// Parameter groups by name and shape.
using Layout = std::vector<std::vector<std::pair<std::string, Shape>>>;

// Runs body(rank) on `size` threads at once and returns each rank's Status.
std::vector<Status> OnEachRank(int size, const std::function<Status(int)>& body) {
  std::vector<Status> results(size);
  std::vector<std::thread> threads;
  for (int r = 0; r < size; ++r) threads.emplace_back([&, r] { results[r] = body(r); });
  for (std::thread& t : threads) t.join();
  return results;
}

void ExpectAllOk(const std::vector<Status>& results) {
  for (size_t r = 0; r < results.size(); ++r) {
    EXPECT_TRUE(results[r].ok()) << "rank " << r << ": " << results[r].ToString();
  }
}

struct Replica {
  std::vector<std::vector<models::NamedParameter>> groups;
  std::unique_ptr<AdamW> optimizer;
  std::unique_ptr<DataParallelSync> sync;

  std::vector<at::Tensor> Tensors() const {
    std::vector<at::Tensor> all;
    for (const auto& group : groups) {
      for (const models::NamedParameter& p : group) all.push_back(p.tensor);
    }
    return all;
  }
  at::Tensor Flat() const {
    std::vector<at::Tensor> flat;
    for (const at::Tensor& t : Tensors()) flat.push_back(t.detach().reshape(-1));
    return at::cat(flat);
  }
};

// D replicas of one stage over a fresh fake transport group, starting from identical parameters
// (randn under `seed`), each with an AdamW over its parameters.
struct ReplicaSet {
  ReplicaSet(int size, const Layout& layout, const DataParallelSettings& settings,
             uint64_t seed = 1, int stage = 0, net::Timeout timeout = net::Timeout(10000))
      : transports(net::CreateFakeTransportGroup(size)), replicas(size) {
    at::manual_seed(seed);
    std::vector<std::vector<at::Tensor>> initial;
    for (const auto& group : layout) {
      initial.emplace_back();
      for (const auto& [name, shape] : group) initial.back().push_back(at::randn(shape));
    }
    for (int r = 0; r < size; ++r) {
      Replica& replica = replicas[r];
      std::vector<models::NamedParameter> all;
      for (size_t g = 0; g < layout.size(); ++g) {
        replica.groups.emplace_back();
        for (size_t i = 0; i < layout[g].size(); ++i) {
          models::NamedParameter p{layout[g][i].first, initial[g][i].clone().requires_grad_(true)};
          replica.groups.back().push_back(p);
          all.push_back(p);
        }
      }
      AdamWOptions options;
      options.weight_decay = 0;
      replica.optimizer = std::make_unique<AdamW>(all, options);
      DataParallelContext context;
      context.stage = stage;
      context.group = transports[r].get();
      context.groups = replica.groups;
      context.optimizer = replica.optimizer.get();
      context.timeout = timeout;
      context.seed = 7;
      auto sync = CreateDataParallelSync(settings, context);
      EXPECT_TRUE(sync.ok()) << sync.status().ToString();
      if (sync.ok()) replica.sync = std::move(*sync);
    }
  }

  int size() const { return static_cast<int>(replicas.size()); }
  // Sets every parameter's gradient on every rank to grads[rank][parameter index].
  void SetGrads(const std::vector<std::vector<at::Tensor>>& grads) {
    for (int r = 0; r < size(); ++r) {
      const std::vector<at::Tensor> params = replicas[r].Tensors();
      for (size_t i = 0; i < params.size(); ++i) {
        params[i].mutable_grad() = grads[r][i].defined() ? grads[r][i].clone() : at::Tensor();
      }
    }
  }
  // Adds noise * scale (randn under `seed`, different per rank) to every parameter.
  void Perturb(uint64_t seed, double scale) {
    at::manual_seed(seed);
    at::NoGradGuard no_grad;
    for (Replica& replica : replicas) {
      for (const at::Tensor& t : replica.Tensors()) t.add_(at::randn(t.sizes()) * scale);
    }
  }

  std::vector<std::unique_ptr<net::Transport>> transports;
  std::vector<Replica> replicas;
};

// randn gradients for every rank and parameter of `layout`, under `seed`.
std::vector<std::vector<at::Tensor>> RandomGrads(int size, const Layout& layout, uint64_t seed) {
  at::manual_seed(seed);
  std::vector<std::vector<at::Tensor>> grads(size);
  for (int r = 0; r < size; ++r) {
    for (const auto& group : layout) {
      for (const auto& entry : group) grads[r].push_back(at::randn(entry.second));
    }
  }
  return grads;
}

double RelativeError(const at::Tensor& actual, const at::Tensor& expected) {
  return (actual - expected).norm().item<double>() / expected.norm().item<double>();
}

DataParallelSettings Settings(DataParallelMode mode) {
  DataParallelSettings settings;
  settings.mode = mode;
  return settings;
}

// --- allreduce -----------------------------------------------------------------------------------

TEST(DataParallelAllReduceTest, AveragesExactlyAndIdentically) {
  const Layout layout = {{{"w", {4, 5}}, {"b", {5}}}, {{"e", {7, 3}}}};
  ReplicaSet set(3, layout, Settings(DataParallelMode::kAllReduce));
  std::vector<std::vector<at::Tensor>> grads = RandomGrads(3, layout, 11);
  grads[1][1] = at::Tensor();  // rank 1 computed no gradient for "b": it counts as zeros
  set.SetGrads(grads);
  ExpectAllOk(OnEachRank(3, [&](int r) { return set.replicas[r].sync->BeforeClip(0, true); }));

  for (size_t i = 0; i < grads[0].size(); ++i) {
    at::Tensor sum = at::zeros_like(grads[0][i]);
    for (int r = 0; r < 3; ++r) {
      if (grads[r][i].defined()) sum += grads[r][i];
    }
    const at::Tensor mean = sum / 3;
    const at::Tensor first = set.replicas[0].Tensors()[i].grad();
    EXPECT_TRUE(at::allclose(first, mean, 1e-6, 1e-7)) << "parameter " << i;
    for (int r = 1; r < 3; ++r) {
      EXPECT_TRUE(at::equal(set.replicas[r].Tensors()[i].grad(), first)) << "rank " << r;
    }
  }
  const TrafficCount traffic = set.replicas[0].sync->traffic();
  EXPECT_EQ(traffic.raw_bytes, 2 * 2 * 4 * 25 / 3 + 2 * 2 * 4 * 21 / 3);
  EXPECT_GT(traffic.wire_bytes, 0u);
}

TEST(DataParallelAllReduceTest, SingleReplicaDoesNothing) {
  const Layout layout = {{{"w", {4, 5}}}};
  ReplicaSet set(1, layout, Settings(DataParallelMode::kCocktail));
  const std::vector<std::vector<at::Tensor>> grads = RandomGrads(1, layout, 3);
  set.SetGrads(grads);
  DataParallelSync& sync = *set.replicas[0].sync;
  EXPECT_TRUE(sync.BeforeClip(0, false).ok());
  EXPECT_TRUE(sync.AfterUpdate(0, true).ok());
  EXPECT_TRUE(sync.Flush().ok());
  EXPECT_TRUE(at::equal(set.replicas[0].Tensors()[0].grad(), grads[0][0]));
  EXPECT_EQ(sync.traffic().raw_bytes, 0u);
  EXPECT_EQ(sync.traffic().wire_bytes, 0u);

  // A job of one replica has no data-parallel transport at all.
  DataParallelContext context;
  context.groups = set.replicas[0].groups;
  auto no_group = CreateDataParallelSync(Settings(DataParallelMode::kPowerSgd), context);
  ASSERT_TRUE(no_group.ok()) << no_group.status().ToString();
  EXPECT_TRUE((*no_group)->BeforeClip(1, true).ok());
  EXPECT_TRUE(at::equal(set.replicas[0].Tensors()[0].grad(), grads[0][0]));
}

// --- powersgd ------------------------------------------------------------------------------------

DataParallelSettings PowerSgdSettings(int rank, int compressed_stages = -1) {
  DataParallelSettings settings = Settings(DataParallelMode::kPowerSgd);
  settings.powersgd_rank = rank;
  settings.compressed_stages = compressed_stages;
  return settings;
}

TEST(DataParallelPowerSgdTest, ReproducesRankTwoMeanInOneStep) {
  const Layout layout = {{{"w", {16, 12}}, {"b", {12}}}};
  ReplicaSet set(2, layout, PowerSgdSettings(2));
  at::manual_seed(5);
  const at::Tensor u = at::randn({16, 2}), v = at::randn({12, 2});
  std::vector<std::vector<at::Tensor>> grads(2);
  for (int r = 0; r < 2; ++r) grads[r] = {u.mm(at::randn({2, 2})).mm(v.t()), at::randn({12})};
  set.SetGrads(grads);
  ExpectAllOk(OnEachRank(2, [&](int r) { return set.replicas[r].sync->BeforeClip(0, true); }));

  const at::Tensor w_mean = (grads[0][0] + grads[1][0]) / 2;
  const at::Tensor b_mean = (grads[0][1] + grads[1][1]) / 2;
  for (int r = 0; r < 2; ++r) {
    const std::vector<at::Tensor> params = set.replicas[r].Tensors();
    EXPECT_LT(RelativeError(params[0].grad(), w_mean), 1e-4) << "rank " << r;
    EXPECT_TRUE(at::allclose(params[1].grad(), b_mean, 1e-6, 1e-7)) << "rank " << r;
    EXPECT_TRUE(at::equal(params[0].grad(), set.replicas[0].Tensors()[0].grad()));
    EXPECT_TRUE(at::equal(params[1].grad(), set.replicas[0].Tensors()[1].grad()));
  }
  const TrafficCount traffic = set.replicas[0].sync->traffic();
  EXPECT_EQ(traffic.raw_bytes, 4u * (16 * 12 + 12));
  EXPECT_LT(traffic.wire_bytes, traffic.raw_bytes / 2);  // P [16, 2] and Q [12, 2]
}

TEST(DataParallelPowerSgdTest, ErrorFeedbackTracksTheSumOfGradients) {
  const Layout layout = {{{"w", {24, 20}}}};
  ReplicaSet set(2, layout, PowerSgdSettings(1));
  at::manual_seed(9);
  const at::Tensor signal = at::randn({24, 20});
  at::Tensor sum_true = at::zeros({24, 20}), sum_sent = at::zeros({24, 20});
  double undelivered_at_30 = 0;
  constexpr int kSteps = 60;
  for (int step = 0; step < kSteps; ++step) {
    std::vector<std::vector<at::Tensor>> grads(2);
    for (int r = 0; r < 2; ++r) grads[r] = {signal + at::randn({24, 20})};
    sum_true += (grads[0][0] + grads[1][0]) / 2;
    set.SetGrads(grads);
    ExpectAllOk(OnEachRank(2, [&](int r) { return set.replicas[r].sync->BeforeClip(step, true); }));
    EXPECT_TRUE(
        at::equal(set.replicas[0].Tensors()[0].grad(), set.replicas[1].Tensors()[0].grad()));
    sum_sent += set.replicas[0].Tensors()[0].grad();
    if (step == 29) undelivered_at_30 = (sum_true - sum_sent).norm().item<double>();
  }
  // What was not delivered is exactly the replicas' mean error buffer...
  const at::Tensor mean_error = (set.replicas[0].sync->StateTensors().at("powersgd.w.error") +
                                 set.replicas[1].sync->StateTensors().at("powersgd.w.error")) /
                                2;
  EXPECT_LT(RelativeError(sum_sent + mean_error, sum_true), 1e-4);
  // ...and stops growing (rank 1 of 20 needs ~25 steps to get there), so the sum of what the
  // replicas applied converges to the sum of their true gradients.
  EXPECT_LT(mean_error.norm().item<double>(), 1.25 * undelivered_at_30);
  EXPECT_LT(RelativeError(sum_sent, sum_true), 0.25);
}

TEST(DataParallelPowerSgdTest, LaterStagesAndWarmupUsePlainAllReduce) {
  const Layout layout = {{{"w", {16, 12}}, {"b", {12}}}};
  for (const bool warmup : {false, true}) {
    // Stage 1 of a job compressing stage 0 only; or stage 0 during the warm-up.
    ReplicaSet set(2, layout, PowerSgdSettings(2, 1), 1, warmup ? 0 : 1);
    const std::vector<std::vector<at::Tensor>> grads = RandomGrads(2, layout, 4);
    set.SetGrads(grads);
    ExpectAllOk(OnEachRank(2, [&](int r) { return set.replicas[r].sync->BeforeClip(0, !warmup); }));
    for (int r = 0; r < 2; ++r) {
      for (size_t i = 0; i < 2; ++i) {
        EXPECT_TRUE(at::allclose(set.replicas[r].Tensors()[i].grad(),
                                 (grads[0][i] + grads[1][i]) / 2, 1e-6, 1e-7))
            << "warm-up " << warmup << " rank " << r << " parameter " << i;
      }
    }
    const auto state = set.replicas[0].sync->StateTensors();
    if (warmup) {
      EXPECT_EQ(state.at("powersgd.w.error").abs().max().item<float>(), 0.0f);
    } else {
      EXPECT_TRUE(state.empty());
    }
  }
}

// --- cocktail ------------------------------------------------------------------------------------

DataParallelSettings CocktailSettings(bool overlap) {
  DataParallelSettings settings = Settings(DataParallelMode::kCocktail);
  settings.overlap = overlap;
  return settings;
}

std::vector<at::Tensor> Globals(Replica& replica) {
  std::vector<at::Tensor> globals;
  auto state = replica.sync->StateTensors();
  for (size_t g = 0; g < replica.groups.size(); ++g) {
    globals.push_back(state.at("cocktail.g" + std::to_string(g) + ".global"));
  }
  return globals;
}

TEST(DataParallelCocktailTest, GlobalCopiesStayIdentical) {
  const Layout layout = {{{"w", {40, 30}}, {"b", {30}}}, {{"e", {50, 8}}}};
  ReplicaSet set(3, layout, CocktailSettings(false));
  const at::Tensor before = set.replicas[0].Flat();
  for (int step = 1; step <= 3; ++step) {
    set.Perturb(step, 0.01);
    ExpectAllOk(
        OnEachRank(3, [&](int r) { return set.replicas[r].sync->AfterUpdate(step, true); }));
  }
  const std::vector<at::Tensor> first = Globals(set.replicas[0]);
  for (int r = 1; r < 3; ++r) {
    const std::vector<at::Tensor> globals = Globals(set.replicas[r]);
    for (size_t g = 0; g < globals.size(); ++g) EXPECT_TRUE(at::equal(globals[g], first[g]));
  }
  // The global copy moved (every replica's local differs from it by what it has not sent yet).
  EXPECT_FALSE(at::equal(at::cat(first), before));
}

TEST(DataParallelCocktailTest, SendsFarFewerBytesThanAnAllReduce) {
  const Layout layout = {{{"w", {1024, 1024}}}};
  ReplicaSet set(2, layout, CocktailSettings(false));
  set.Perturb(3, 1e-3);
  ExpectAllOk(OnEachRank(2, [&](int r) { return set.replicas[r].sync->AfterUpdate(1, true); }));
  const TrafficCount traffic = set.replicas[0].sync->traffic();
  EXPECT_EQ(traffic.raw_bytes, 4u * 1024 * 1024);
  ASSERT_GT(traffic.wire_bytes, 0u);
  const double ratio = static_cast<double>(traffic.raw_bytes) / traffic.wire_bytes;
  std::cout << "cocktail wire " << traffic.wire_bytes << " bytes, raw " << traffic.raw_bytes
            << " bytes: " << ratio << "x\n";
  EXPECT_GE(ratio, 50.0);
}

TEST(DataParallelCocktailTest, RepeatedExchangesBringReplicasTogether) {
  const Layout layout = {{{"w", {64, 64}}}};
  ReplicaSet set(2, layout, CocktailSettings(false));
  set.Perturb(4, 0.1);  // each replica takes its own step, then only syncs
  auto distance = [&] {
    return (set.replicas[0].Flat() - set.replicas[1].Flat()).norm().item<double>();
  };
  const double initial = distance();
  double previous = initial;
  for (int step = 0; step < 40; ++step) {
    ExpectAllOk(
        OnEachRank(2, [&](int r) { return set.replicas[r].sync->AfterUpdate(step, true); }));
    const double now = distance();
    EXPECT_LE(now, previous * 1.05) << "step " << step;
    previous = now;
  }
  EXPECT_LT(previous, 0.5 * initial);
}

TEST(DataParallelCocktailTest, OverlapGivesTheSameParametersAsSynchronous) {
  const Layout layout = {{{"w", {30, 20}}}, {{"b", {20}}}};
  std::vector<at::Tensor> finals[2];
  for (const bool overlap : {false, true}) {
    ReplicaSet set(2, layout, CocktailSettings(overlap));
    for (int step = 0; step < 5; ++step) {
      set.Perturb(100 + step, 0.01);
      ExpectAllOk(OnEachRank(2, [&](int r) {
        GEOTRAIN_RETURN_IF_ERROR(set.replicas[r].sync->AfterUpdate(step, true));
        return set.replicas[r].sync->Flush();
      }));
    }
    for (int r = 0; r < 2; ++r) finals[overlap].push_back(set.replicas[r].Flat());
  }
  for (int r = 0; r < 2; ++r) EXPECT_TRUE(at::equal(finals[0][r], finals[1][r])) << "rank " << r;
}

TEST(DataParallelCocktailTest, WarmupKeepsGlobalEqualToLocal) {
  const Layout layout = {{{"w", {12, 10}}, {"b", {10}}}};
  ReplicaSet set(2, layout, CocktailSettings(true));
  set.SetGrads(RandomGrads(2, layout, 8));
  ExpectAllOk(OnEachRank(2, [&](int r) {
    Replica& replica = set.replicas[r];
    GEOTRAIN_RETURN_IF_ERROR(replica.sync->BeforeClip(0, false));
    {
      at::NoGradGuard no_grad;
      for (const at::Tensor& t : replica.Tensors()) t.sub_(t.grad() * 0.1);
    }
    return replica.sync->AfterUpdate(0, false);
  }));
  EXPECT_TRUE(at::equal(set.replicas[0].Flat(), set.replicas[1].Flat()));
  for (int r = 0; r < 2; ++r) {
    EXPECT_TRUE(at::equal(Globals(set.replicas[r])[0], set.replicas[r].Flat())) << "rank " << r;
  }
}

TEST(DataParallelCocktailTest, SilentPeerTimesOutInTheBackground) {
  const Layout layout = {{{"w", {12, 10}}}};
  for (const bool flush : {true, false}) {
    // Rank 1 is alive but never joins the exchange that rank 0 starts in the background.
    auto set =
        std::make_unique<ReplicaSet>(2, layout, CocktailSettings(true), 1, 0, net::Timeout(500));
    DataParallelSync& sync = *set->replicas[0].sync;
    set->Perturb(1, 0.01);
    const auto start = std::chrono::steady_clock::now();
    ASSERT_TRUE(sync.AfterUpdate(1, true).ok());  // started, not waited for
    if (flush) {
      const Status status = sync.Flush();
      EXPECT_EQ(status.code(), StatusCode::kDeadlineExceeded) << status.ToString();
      EXPECT_NE(status.message().find("cocktail exchange step 1: all-to-all"), std::string::npos)
          << status.ToString();
      EXPECT_FALSE(sync.BeforeClip(2, true).ok());  // the failure sticks
    }
    set.reset();  // without a Flush the destructor waits for the thread
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    EXPECT_LT(seconds, 2.0) << "flush " << flush;
  }
}

// --- quantized momentum --------------------------------------------------------------------------

TEST(DataParallelQuantizedMomentumTest, AveragesFirstMomentsAtEightBits) {
  const Layout layout = {{{"w", {8, 300}}, {"b", {300}}}};
  ReplicaSet set(3, layout, Settings(DataParallelMode::kQuantizedMomentum));
  // Replicas see related data: a common gradient plus their own noise.
  at::manual_seed(6);
  const at::Tensor w = at::randn({8, 300}), b = at::randn({300});
  std::vector<std::vector<at::Tensor>> grads(3);
  for (int r = 0; r < 3; ++r)
    grads[r] = {w + 0.5 * at::randn({8, 300}), b + 0.5 * at::randn({300})};
  set.SetGrads(grads);
  for (Replica& replica : set.replicas) replica.optimizer->UpdateMoments();
  std::vector<at::Tensor> mean;
  for (size_t i = 0; i < 2; ++i) {
    mean.push_back((set.replicas[0].optimizer->first_moments()[i] +
                    set.replicas[1].optimizer->first_moments()[i] +
                    set.replicas[2].optimizer->first_moments()[i]) /
                   3);
  }
  ExpectAllOk(OnEachRank(3, [&](int r) {
    GEOTRAIN_RETURN_IF_ERROR(set.replicas[r].sync->BeforeClip(1, true));
    return set.replicas[r].sync->AfterMoments(1, true);
  }));
  for (size_t i = 0; i < 2; ++i) {
    const at::Tensor first = set.replicas[0].optimizer->first_moments()[i];
    EXPECT_LT(RelativeError(first, mean[i]), 1e-2) << "moment " << i;
    for (int r = 1; r < 3; ++r) {
      EXPECT_TRUE(at::equal(set.replicas[r].optimizer->first_moments()[i], first)) << "rank " << r;
    }
  }
  const TrafficCount traffic = set.replicas[0].sync->traffic();
  EXPECT_EQ(traffic.raw_bytes, 2u * 2 * 4 * 2700 / 3);
  EXPECT_LT(traffic.wire_bytes, traffic.raw_bytes / 3);  // 8 bits instead of 32
}

TEST(DataParallelQuantizedMomentumTest, MatchesMomentsToGroupsByPosition) {
  auto transports = net::CreateFakeTransportGroup(2);
  const at::Tensor w = at::zeros({4, 3}, at::requires_grad()), b = at::zeros({3});
  const at::Tensor tied = at::zeros({5, 3}, at::requires_grad());
  DataParallelContext context;
  context.group = transports[0].get();
  context.groups = {{{"w", w}, {"b", b}}};
  // The optimizer may hold more parameters after the groups' (a tied embedding synced elsewhere).
  AdamW with_tied({{"w", w}, {"b", b}, {"tied", tied}}, AdamWOptions{});
  context.optimizer = &with_tied;
  EXPECT_TRUE(CreateDataParallelSync(Settings(DataParallelMode::kQuantizedMomentum), context).ok());
  AdamW reordered({{"b", b}, {"w", w}}, AdamWOptions{});
  context.optimizer = &reordered;
  const auto rejected =
      CreateDataParallelSync(Settings(DataParallelMode::kQuantizedMomentum), context);
  EXPECT_EQ(rejected.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(rejected.status().message().find("quantized-momentum sync: context.optimizer"),
            std::string::npos)
      << rejected.status().ToString();
}

// --- all modes -----------------------------------------------------------------------------------

class DataParallelModesTest : public ::testing::TestWithParam<DataParallelMode> {};

// One training step of every replica, the hooks in the runtime's order.
Status TrainStep(Replica& replica, int64_t step) {
  DataParallelSync& sync = *replica.sync;
  GEOTRAIN_RETURN_IF_ERROR(sync.BeforeClip(step, true));
  replica.optimizer->UpdateMoments();
  GEOTRAIN_RETURN_IF_ERROR(sync.AfterMoments(step, true));
  replica.optimizer->ApplyUpdate(0.01);
  GEOTRAIN_RETURN_IF_ERROR(sync.AfterUpdate(step, true));
  return sync.Flush();
}

// Makes `to` (parameters of the same layout over `transport`) a copy of `from`: parameters,
// optimizer state, a new sync and, if asked, the sync's state. False (with a failure) otherwise.
bool RebuildFrom(Replica& from, const DataParallelSettings& settings, net::Transport* transport,
                 bool load_sync_state, Replica* to) {
  {
    at::NoGradGuard no_grad;
    for (size_t i = 0; i < from.Tensors().size(); ++i) to->Tensors()[i].copy_(from.Tensors()[i]);
  }
  const Status loaded = to->optimizer->LoadStateTensors(from.optimizer->StateTensors());
  EXPECT_TRUE(loaded.ok()) << loaded.ToString();
  DataParallelContext context;
  context.group = transport;
  context.groups = to->groups;
  context.optimizer = to->optimizer.get();
  context.seed = 7;
  auto sync = CreateDataParallelSync(settings, context);
  EXPECT_TRUE(sync.ok()) << sync.status().ToString();
  if (!loaded.ok() || !sync.ok()) return false;
  to->sync = std::move(*sync);
  if (!load_sync_state) return true;
  const auto state = from.sync->StateTensors();
  EXPECT_EQ(state.empty(), settings.mode == DataParallelMode::kAllReduce);
  const Status restored = to->sync->LoadStateTensors(state);
  EXPECT_TRUE(restored.ok()) << restored.ToString();
  return restored.ok();
}

TEST_P(DataParallelModesTest, RestoredStateContinuesIdentically) {
  const Layout layout = {{{"w", {16, 12}}, {"b", {12}}}, {{"e", {9, 6}}}};
  DataParallelSettings settings = Settings(GetParam());
  settings.powersgd_rank = 2;
  std::vector<std::vector<std::vector<at::Tensor>>> grads;
  for (int step = 0; step < 4; ++step) grads.push_back(RandomGrads(2, layout, 20 + step));

  ReplicaSet original(2, layout, settings);
  for (int step = 0; step < 3; ++step) {
    original.SetGrads(grads[step]);
    ExpectAllOk(OnEachRank(2, [&](int r) { return TrainStep(original.replicas[r], step); }));
  }
  // `restored` loads the sync state; `fresh` does not, to show that the state matters.
  ReplicaSet restored(2, layout, Settings(DataParallelMode::kAllReduce));
  ReplicaSet fresh(2, layout, Settings(DataParallelMode::kAllReduce));
  for (int r = 0; r < 2; ++r) {
    ASSERT_TRUE(RebuildFrom(original.replicas[r], settings, restored.transports[r].get(),
                            /*load_sync_state=*/true, &restored.replicas[r]));
    ASSERT_TRUE(RebuildFrom(original.replicas[r], settings, fresh.transports[r].get(),
                            /*load_sync_state=*/false, &fresh.replicas[r]));
  }
  for (ReplicaSet* set : {&original, &restored, &fresh}) {
    set->SetGrads(grads[3]);
    ExpectAllOk(OnEachRank(2, [&](int r) { return TrainStep(set->replicas[r], 3); }));
  }
  for (int r = 0; r < 2; ++r) {
    EXPECT_TRUE(at::equal(original.replicas[r].Flat(), restored.replicas[r].Flat()))
        << "rank " << r;
    EXPECT_EQ(at::equal(original.replicas[r].Flat(), fresh.replicas[r].Flat()),
              GetParam() == DataParallelMode::kAllReduce)
        << "rank " << r;
  }
}

TEST_P(DataParallelModesTest, DeadPeerFailsEveryHookQuickly) {
  const Layout layout = {{{"w", {16, 12}}, {"b", {12}}}};
  for (const bool overlap : {false, true}) {
    if (overlap && GetParam() != DataParallelMode::kCocktail) continue;
    DataParallelSettings settings = Settings(GetParam());
    settings.overlap = overlap;
    settings.powersgd_rank = 2;
    auto set = std::make_unique<ReplicaSet>(3, layout, settings, 1, 0, net::Timeout(2000));
    set->SetGrads(RandomGrads(3, layout, 2));
    ASSERT_TRUE(net::KillFakeRank(*set->transports[0], 2).ok());
    const auto start = std::chrono::steady_clock::now();
    const std::vector<Status> results = OnEachRank(2, [&](int r) -> Status {
      Replica& replica = set->replicas[r];
      for (int step = 1; step <= 2; ++step) {  // the second step must fail as well
        Status status = TrainStep(replica, step);
        if (status.ok()) return Internal("step " + std::to_string(step) + " succeeded");
        if (status.message().find(DataParallelModeName(GetParam())) == std::string::npos) {
          return Internal("the error does not name the mode: " + status.ToString());
        }
      }
      return OkStatus();
    });
    ExpectAllOk(results);
    set.reset();  // joins any exchange thread
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    EXPECT_LT(seconds, 5.0) << "overlap " << overlap;
  }
}

INSTANTIATE_TEST_SUITE_P(DataParallel, DataParallelModesTest,
                         ::testing::Values(DataParallelMode::kAllReduce,
                                           DataParallelMode::kPowerSgd, DataParallelMode::kCocktail,
                                           DataParallelMode::kQuantizedMomentum),
                         [](const auto& info) {
                           std::string name = DataParallelModeName(info.param);
                           name.erase(std::remove(name.begin(), name.end(), '-'), name.end());
                           return name;
                         });

}  // namespace
}  // namespace geotrain::runtime
