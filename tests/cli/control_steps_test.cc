// `geotrain steps`: its table and CSV views and the command against an in-process Coordinator
// that answers GetJobSteps from a fixed list (the real binary's exit codes: control_binary_test).
#include <grpcpp/server.h>
#include <grpcpp/server_builder.h>
#include <gtest/gtest.h>

#include <optional>
#include <sstream>
#include <string>

#include "cli/control_commands.h"
#include "cli/control_steps_format.h"
#include "cli/exit_codes.h"
#include "geotrain/v1/coordinator.grpc.pb.h"
#include "tests/testing/manual_clock.h"

namespace geotrain::cli {
namespace {

using geotrain::testing::ManualClock;

const std::string kCsvHeader =
    "step,generation,loss,eval_loss,step_seconds,raw_bytes,wire_bytes,lr,unix_ms,eval_accuracy,"
    "eval_f1,eval_mcc\n";

v1::JobStep MakeStep(int64_t step, double loss, std::optional<double> eval_loss) {
  v1::JobStep row;
  row.set_step(step);
  row.set_generation(1);
  row.set_loss(loss);
  if (eval_loss) row.set_eval_loss(*eval_loss);
  row.set_step_seconds(1.5);
  row.set_raw_bytes(8'000'000);
  row.set_wire_bytes(1'000'000);
  row.set_lr(0.001);
  row.set_unix_ms(1709294463000 + step);
  return row;
}

v1::JobSteps SampleSteps() {
  v1::JobSteps steps;
  *steps.add_steps() = MakeStep(1, 10.5, std::nullopt);
  *steps.add_steps() = MakeStep(2, 3.25, 3.375);
  return steps;
}

TEST(StepsFormatTest, TableHasOneRowPerStepAndADashWithoutEvaluation) {
  EXPECT_EQ(FormatStepsTable(SampleSteps()),
            "STEP  GEN  LOSS     EVAL    TIME    RAW     WIRE    RATIO  LR\n"
            "1     1    10.5000  -       1.50 s  8.0 MB  1.0 MB  8.0x   0.001\n"
            "2     1    3.2500   3.3750  1.50 s  8.0 MB  1.0 MB  8.0x   0.001\n");
}

TEST(StepsFormatTest, AnEmptyTableSaysSo) {
  EXPECT_EQ(FormatStepsTable(v1::JobSteps()), "no complete steps\n");
}

TEST(StepsFormatTest, CsvWritesExactNumbersAndLeavesAMissingEvalLossEmpty) {
  v1::JobSteps steps = SampleSteps();
  steps.mutable_steps(1)->set_loss(0.1 + 0.2);  // not representable in few digits
  const std::string csv = FormatStepsCsv(steps);
  EXPECT_EQ(csv, kCsvHeader +
                     "1,1,10.5,,1.5,8000000,1000000,0.001,1709294463001,,,\n"
                     "2,1,0.30000000000000004,3.375,1.5,8000000,1000000,0.001,1709294463002,,,\n");
  // The loss reads back as the same double.
  EXPECT_EQ(std::stod("0.30000000000000004"), 0.1 + 0.2);
}

TEST(StepsFormatTest, CsvOfNoStepsIsTheHeaderOnly) {
  EXPECT_EQ(FormatStepsCsv(v1::JobSteps()), kCsvHeader);
}

TEST(StepsFormatTest, AClassifiersScoresGetColumnsOfTheirOwn) {
  v1::JobSteps steps = SampleSteps();
  v1::EvalScores* scores = steps.mutable_steps(1)->mutable_eval_scores();
  scores->set_accuracy(0.875);
  scores->set_f1(0.5);
  scores->set_mcc(-0.25);
  EXPECT_EQ(FormatStepsTable(steps),
            "STEP  GEN  LOSS     EVAL    TIME    RAW     WIRE    RATIO  LR     ACC    F1     MCC\n"
            "1     1    10.5000  -       1.50 s  8.0 MB  1.0 MB  8.0x   0.001  -      -      -\n"
            "2     1    3.2500   3.3750  1.50 s  8.0 MB  1.0 MB  8.0x   0.001  0.875  0.500  "
            "-0.250\n");
  EXPECT_EQ(FormatStepsCsv(steps),
            kCsvHeader +
                "1,1,10.5,,1.5,8000000,1000000,0.001,1709294463001,,,\n"
                "2,1,3.25,3.375,1.5,8000000,1000000,0.001,1709294463002,0.875,0.5,-0.25\n");
}

TEST(StepsFormatTest, FormatNames) {
  const auto names = StepsFormatNames();
  EXPECT_EQ(names.at("csv"), StepsFormat::kCsv);
  EXPECT_EQ(names.at("json"), StepsFormat::kJson);
  EXPECT_EQ(names.at("table"), StepsFormat::kTable);
  EXPECT_EQ(names.size(), 3u);
}

// Knows job-1 with steps 1..3 and answers as the coordinator does: the steps after after_step.
class StepsCoordinator final : public v1::Coordinator::Service {
 public:
  grpc::Status GetJobSteps(grpc::ServerContext*, const v1::GetJobStepsRequest* request,
                           v1::JobSteps* response) override {
    if (request->job_id() != "job-1") {
      return {grpc::StatusCode::NOT_FOUND, "job_id: no job '" + request->job_id() + "'"};
    }
    for (int64_t step = 1; step <= 3; ++step) {
      if (step > request->after_step()) {
        *response->add_steps() =
            MakeStep(step, 4.0 - step, step == 3 ? std::optional<double>(1.5) : std::nullopt);
      }
    }
    return grpc::Status::OK;
  }
};

class StepsCommandTest : public ::testing::Test {
 protected:
  void SetUp() override {
    grpc::ServerBuilder builder;
    int port = 0;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
    builder.RegisterService(&service_);
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    control_.coordinator = "127.0.0.1:" + std::to_string(port);
  }
  void TearDown() override { server_->Shutdown(); }

  int Run(const StepsOptions& options) {
    CommandContext context{out_, err_, clock_};
    return RunStepsCommand(control_, options, context);
  }

  StepsCoordinator service_;
  std::unique_ptr<grpc::Server> server_;
  ControlOptions control_;
  std::ostringstream out_, err_;
  ManualClock clock_{1709294463000};
};

TEST_F(StepsCommandTest, CsvHasEveryStepAfterTheOneAsked) {
  StepsOptions options{"job-1"};
  options.format = StepsFormat::kCsv;
  options.after_step = 1;
  ASSERT_EQ(Run(options), kExitSuccess) << err_.str();
  EXPECT_EQ(out_.str(), kCsvHeader +
                            "2,1,2,,1.5,8000000,1000000,0.001,1709294463002,,,\n"
                            "3,1,1,1.5,1.5,8000000,1000000,0.001,1709294463003,,,\n");
  EXPECT_EQ(err_.str(), "");
}

TEST_F(StepsCommandTest, JsonIsOneLineWithProtoNames) {
  StepsOptions options{"job-1"};
  options.format = StepsFormat::kJson;
  options.after_step = 2;
  ASSERT_EQ(Run(options), kExitSuccess) << err_.str();
  const std::string out = out_.str();
  ASSERT_FALSE(out.empty());
  EXPECT_EQ(out.find('\n'), out.size() - 1) << out;
  EXPECT_NE(out.find(R"("steps":[{"step":"3")"), std::string::npos) << out;
  EXPECT_NE(out.find(R"("eval_loss":1.5)"), std::string::npos) << out;
  EXPECT_NE(out.find(R"("wire_bytes":"1000000")"), std::string::npos) << out;
  EXPECT_EQ(out.find(R"("step":"2")"), std::string::npos) << out;
}

TEST_F(StepsCommandTest, TableIsTheDefault) {
  ASSERT_EQ(Run({"job-1"}), kExitSuccess) << err_.str();
  std::istringstream lines(out_.str());
  std::string header, first;
  std::getline(lines, header);
  std::getline(lines, first);
  EXPECT_EQ(header.rfind("STEP  GEN  LOSS", 0), 0u) << out_.str();
  EXPECT_EQ(first.rfind("1     1    3.0000  -", 0), 0u) << out_.str();
}

TEST_F(StepsCommandTest, AnUnknownJobIsAFailureNamingIt) {
  EXPECT_EQ(Run({"job-9"}), kExitFailure);
  EXPECT_NE(err_.str().find("geotrain: NOT_FOUND: "), std::string::npos) << err_.str();
  EXPECT_NE(err_.str().find("job-9"), std::string::npos) << err_.str();
  EXPECT_EQ(out_.str(), "");
}

TEST_F(StepsCommandTest, ANegativeAfterIsRefusedNamingTheFlag) {
  StepsOptions options{"job-1"};
  options.after_step = -1;
  EXPECT_EQ(Run(options), kExitFailure);
  EXPECT_NE(err_.str().find("--after: must not be negative"), std::string::npos) << err_.str();
}

TEST_F(StepsCommandTest, AStoppedCoordinatorIsUnreachable) {
  server_->Shutdown();
  EXPECT_EQ(Run({"job-1"}), kExitUnreachable);
  EXPECT_NE(err_.str().find("cannot reach the coordinator at " + control_.coordinator),
            std::string::npos)
      << err_.str();
}

}  // namespace
}  // namespace geotrain::cli
