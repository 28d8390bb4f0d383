// geotrain-run with each seed project's codec combination: four processes (2 stages x 2
// replicas) over loopback Gloo, each rank exits 0, the last stage prints a finite loss per step,
// and the bytes of its sends show the compression.
//
// The last stage sends gradients upstream, the data-parallel sync and the tied-embedding sync,
// never activations, so its forward wire bytes are always 0. A forward codec shows in the loss
// instead: the loss of step 1 depends only on the initial weights, the samples and the
// activations the first stage sent, so it differs from the codecs-off run's exactly when the
// forward codec changed them.
#include <gtest/gtest.h>

#include <memory>
#include <optional>

#include "tests/runtime/multiprocess/rank_processes.h"
#include "tests/runtime/runtime_test_job.h"

namespace geotrain::runtime::testing {
namespace {

// The activation gradients a last stage sends per step: 2 micro-batches of [2, 16, 32] floats.
constexpr double kGradientBytes = 2 * 2 * 16 * 32 * 4;

const Args kCodecsOff = {"--forward-compress-method",
                         "none",
                         "--backward-compress-method",
                         "none",
                         "--dp-mode",
                         "allreduce"};

std::vector<double> Losses(const std::vector<nlohmann::json>& lines) {
  std::vector<double> losses;
  for (const nlohmann::json& line : lines) losses.push_back(line.at("loss").get<double>());
  return losses;
}

// The step line's traffic entry for one peer, kind and direction, or null.
const nlohmann::json* Traffic(const nlohmann::json& line, const std::string& kind,
                              const std::string& direction, int peer_stage, int peer_replica) {
  const auto traffic = line.find("traffic");
  if (traffic == line.end() || !traffic->is_array()) return nullptr;
  for (const nlohmann::json& entry : *traffic) {
    if (entry.value("kind", "") == kind && entry.value("direction", "") == direction &&
        entry.value("peer_stage", -1) == peer_stage &&
        entry.value("peer_replica", -1) == peer_replica) {
      return &entry;
    }
  }
  return nullptr;
}

double Number(const nlohmann::json& entry, const char* key) { return entry.at(key).get<double>(); }

// Both last-stage ranks printed steps 1 to 6.
void ExpectSixSteps(const JobSteps& steps) {
  ASSERT_EQ(steps.size(), 2u);
  for (const auto& [rank, lines] : steps) {
    ASSERT_EQ(lines.size(), 6u) << "rank " << rank;
    EXPECT_EQ(lines.front().at("step"), 1) << "rank " << rank;
  }
}

// The tiny model, its data, and the codecs-off run, shared by the suite's tests.
class GeotrainRunCodecTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = std::make_unique<geotrain::testing::TempDir>();
    job_ = std::make_unique<StageAssignment>(TinyJob(*dir_, kStages, kReplicas));
  }
  static void TearDownTestSuite() {
    uncompressed_.reset();
    job_.reset();
    dir_.reset();
  }

  // Trains the tiny job with `flags` added; rendezvous through a file named after `name` unless
  // `dist_url` is given.
  static JobSteps Train(const std::string& name, const Args& flags, std::string dist_url = "") {
    if (dist_url.empty()) dist_url = "file://" + dir_->File(name + ".rdzv");
    Args all = TinyJobFlags(*job_);
    all.insert(all.end(), flags.begin(), flags.end());
    return RunJobToEnd(dir_->File(name), JobArgs(dist_url, all));
  }

  // The codecs-off run, trained once for the suite: what the compressed runs are compared with.
  static const JobSteps& Uncompressed() {
    if (!uncompressed_) uncompressed_ = Train("uncompressed", kCodecsOff);
    return *uncompressed_;
  }

  // The forward codec changed the activations the last stage received (see the file comment).
  static void ExpectLossyForward(const JobSteps& steps) {
    for (const auto& [rank, lines] : steps) {
      ASSERT_FALSE(lines.empty());
      ASSERT_EQ(Uncompressed().count(rank), 1u);
      ASSERT_FALSE(Uncompressed().at(rank).empty());
      EXPECT_NE(lines.front().at("loss"), Uncompressed().at(rank).front().at("loss"))
          << "rank " << rank << ": step 1 has the loss of uncompressed activations";
    }
  }

  static inline std::unique_ptr<geotrain::testing::TempDir> dir_;
  static inline std::unique_ptr<StageAssignment> job_;
  static inline std::optional<JobSteps> uncompressed_;
};

// (a) none / none / allreduce.
TEST_F(GeotrainRunCodecTest, UncompressedReplicasAgreeAndLearn) {
  const JobSteps& steps = Uncompressed();
  ExpectSixSteps(steps);
  for (const auto& [rank, lines] : steps) {
    for (const nlohmann::json& line : lines) {
      EXPECT_EQ(line.at("compressed"), true) << "no warm-up was asked for";
      EXPECT_EQ(Bytes(line, "raw_bytes", "backward"), kGradientBytes);
      // Plain float32 frames: the wire adds only frame and message headers.
      for (const char* kind : {"backward", "dp"}) {
        EXPECT_GE(Bytes(line, "wire_bytes", kind), Bytes(line, "raw_bytes", kind)) << kind;
        EXPECT_LT(Bytes(line, "wire_bytes", kind), 1.05 * Bytes(line, "raw_bytes", kind)) << kind;
      }
      EXPECT_EQ(Bytes(line, "wire_bytes", "embedding"), Bytes(line, "raw_bytes", "embedding"));
      EXPECT_EQ(Bytes(line, "wire_bytes", "forward"), 0) << "the last stage sends no activations";
    }
    EXPECT_LT(lines.back().at("loss").get<double>(), lines.front().at("loss").get<double>())
        << "rank " << rank << " did not learn";
  }
  // The replicas average their gradients, so both see the same global norm at every step.
  for (size_t i = 0; i < steps.at(1).size() && i < steps.at(3).size(); ++i) {
    EXPECT_EQ(steps.at(1)[i].at("grad_norm"), steps.at(3)[i].at("grad_norm")) << "step " << i + 1;
  }
}

// The TCP store served by rank 0 instead of a file: the same training, bit for bit.
TEST_F(GeotrainRunCodecTest, TcpRendezvousTrainsLikeFileRendezvous) {
  const int port = FreeLoopbackPort();
  ASSERT_GT(port, 0);
  const JobSteps steps = Train("tcp", kCodecsOff, "tcp://127.0.0.1:" + std::to_string(port));
  ExpectSixSteps(steps);
  for (const auto& [rank, lines] : steps) {
    EXPECT_EQ(Losses(lines), Losses(Uncompressed().at(rank))) << "rank " << rank;
  }
}

// (b) AC-SGD: delta activations, fixpoint gradients, CocktailSGD between replicas.
TEST_F(GeotrainRunCodecTest, AcSgdCompressesEveryLink) {
  const JobSteps steps =
      Train("ac-sgd", {"--forward-compress-method", "delta", "--forward-bits", "4",
                       "--backward-compress-method", "fixpoint", "--backward-bits", "8",
                       "--dp-mode", "cocktail", "--compress-embedding-sync"});
  ExpectSixSteps(steps);
  ExpectLossyForward(steps);
  for (const auto& [rank, lines] : steps) {
    // Step t's CocktailSGD exchange overlaps step t+1 and is counted there.
    EXPECT_EQ(Bytes(lines.front(), "raw_bytes", "dp"), 0);
    for (const nlohmann::json& line : lines) {
      EXPECT_LT(Bytes(line, "wire_bytes", "backward"), Bytes(line, "raw_bytes", "backward") / 3);
      // The tied embedding travels with the model differences: both sparsified and 4-bit.
      EXPECT_LT(Bytes(line, "wire_bytes", "embedding"), Bytes(line, "raw_bytes", "embedding") / 20);
      if (line.at("step") == 1) continue;
      EXPECT_GT(Bytes(line, "raw_bytes", "dp"), 0);
      EXPECT_LT(Bytes(line, "wire_bytes", "dp"), Bytes(line, "raw_bytes", "dp") / 20);
    }
    // The same links per peer over Gloo (runtime/step_traffic.h): the last stage of replica r
    // sends gradients to and syncs the embedding with stage 0 of r, and exchanges with stage 1
    // of the other replica.
    const int replica = lines.front().at("replica").get<int>();
    for (const nlohmann::json& line : lines) {
      SCOPED_TRACE(line.dump());
      EXPECT_EQ(line.at("tokens"), 2 * 2 * 16);
      EXPECT_GT(line.at("phases").at("backward").get<double>(), 0);
      const nlohmann::json* gradient = Traffic(line, "gradient", "sent", 0, replica);
      const nlohmann::json* activation = Traffic(line, "activation", "received", 0, replica);
      const nlohmann::json* embedding = Traffic(line, "embedding", "sent", 0, replica);
      ASSERT_TRUE(gradient && activation && embedding);
      EXPECT_EQ(gradient->at("bits"), 8);
      EXPECT_EQ(activation->at("bits"), 4);
      EXPECT_GE(Number(*gradient, "wire_bytes"), Bytes(line, "wire_bytes", "backward"));
      EXPECT_GT(Number(*gradient, "relative_error"), 0);
      EXPECT_TRUE(gradient->contains("latency_seconds"));  // the gradient-norm sum's frames
      EXPECT_EQ(embedding->at("bits"), 4);
      EXPECT_LT(Number(*embedding, "wire_bytes"), Number(*embedding, "raw_bytes") / 20);
      if (line.at("step") == 1) continue;
      const nlohmann::json* dp = Traffic(line, "data_parallel", "sent", 1, 1 - replica);
      ASSERT_TRUE(dp);
      EXPECT_EQ(dp->at("bits"), 4);
      EXPECT_LT(Number(*dp, "wire_bytes"), Number(*dp, "raw_bytes") / 20);
    }
  }
}

// (c) TAH-Quant activations, 6-bit gradients. TAH's default tile of 64 values does not divide
// the tiny model's width of 32, so the tile is 32.
TEST_F(GeotrainRunCodecTest, TahQuantCompressesThePipeline) {
  const JobSteps steps =
      Train("tah-quant",
            {"--forward-compress-method", "tah", "--tile-size", "32", "--high-precision-bits", "4",
             "--low-precision-bits", "3", "--high-precision-allocation-ratio", "0.8",
             "--backward-compress-method", "fixpoint", "--backward-bits", "6"});
  ExpectSixSteps(steps);
  ExpectLossyForward(steps);
  for (const auto& [rank, lines] : steps) {
    for (const nlohmann::json& line : lines) {
      EXPECT_LT(Bytes(line, "wire_bytes", "backward"), Bytes(line, "raw_bytes", "backward") / 4);
    }
  }
}

// (d) Optimus-CC: PowerSGD gradients in the drain phase (all of GPipe's backwards), PowerSGD
// between replicas on stage 0 only. PowerSGD's rank-16 factors of a [32, 32] gradient are as
// large as the gradient, so the samples are 32 tokens long: [64, 32] gradients, factors 3/4 of it.
TEST_F(GeotrainRunCodecTest, OptimusCcCompressesTheDrainPhaseAndStageZero) {
  const JobSteps steps =
      Train("optimus-cc", {"--backward-compress-method", "powersgd", "--epilogue-only", "--dp-mode",
                           "powersgd", "--compressed-stages", "1", "--seq-length", "32"});
  ExpectSixSteps(steps);
  for (const auto& [rank, lines] : steps) {
    for (const nlohmann::json& line : lines) {
      EXPECT_EQ(Bytes(line, "raw_bytes", "backward"), 2 * kGradientBytes);
      EXPECT_LT(Bytes(line, "wire_bytes", "backward"), 0.8 * Bytes(line, "raw_bytes", "backward"));
      // Stage 1 is not < --compressed-stages 1: its replicas all-reduce plain gradients.
      EXPECT_GE(Bytes(line, "wire_bytes", "dp"), Bytes(line, "raw_bytes", "dp"));
      EXPECT_LT(Bytes(line, "wire_bytes", "dp"), 1.05 * Bytes(line, "raw_bytes", "dp"));
    }
  }
}

// (e) MCBench: an 8-wide autoencoder on the link, 8-bit activations, 8-bit Adam momentum.
TEST_F(GeotrainRunCodecTest, McBenchShrinksTheLinkAndTheMomentum) {
  const JobSteps steps =
      Train("mcbench", {"--autoencoder-dim", "8", "--forward-compress-method", "fixpoint",
                        "--forward-bits", "8", "--dp-mode", "quantized-momentum"});
  ExpectSixSteps(steps);
  for (const auto& [rank, lines] : steps) {
    for (const nlohmann::json& line : lines) {
      // The gradient of the 8-wide code travels upstream, not that of the 32-wide hidden state.
      EXPECT_EQ(Bytes(line, "raw_bytes", "backward"), kGradientBytes / 4);
      EXPECT_LT(Bytes(line, "wire_bytes", "dp"), Bytes(line, "raw_bytes", "dp") / 3);
    }
  }
}

// (f) AC-SGD's delta with a low-bit activation cache.
TEST_F(GeotrainRunCodecTest, DeltaLowbitsCompressesActivations) {
  const JobSteps steps = Train("delta-lowbits", {"--forward-compress-method", "delta-lowbits",
                                                 "--forward-bits", "4", "--forward-bits-act", "4"});
  ExpectSixSteps(steps);
  ExpectLossyForward(steps);
}

// (g) 1F1B over 4 micro-batches of one sample.
TEST_F(GeotrainRunCodecTest, OneFOneBSchedule) {
  const JobSteps steps =
      Train("1f1b", {"--schedule", "1f1b", "--micro-batch-size", "1", "--batch-size", "4"});
  ExpectSixSteps(steps);
  for (const auto& [rank, lines] : steps) {
    for (const nlohmann::json& line : lines) {
      EXPECT_EQ(Bytes(line, "raw_bytes", "backward"), kGradientBytes);  // 4 x [1, 16, 32]
    }
  }
  for (size_t i = 0; i < steps.at(1).size() && i < steps.at(3).size(); ++i) {
    EXPECT_EQ(steps.at(1)[i].at("grad_norm"), steps.at(3)[i].at("grad_norm")) << "step " << i + 1;
  }
}

}  // namespace
}  // namespace geotrain::runtime::testing
