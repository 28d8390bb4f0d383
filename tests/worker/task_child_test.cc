// The real task child, `geotrain-worker task`, run as the daemon runs it. The binary is looked
// up next to this test binary (both land in the build's bin/); the tests skip when it has not
// been built (`ninja geotrain-worker`).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "tests/testing/temp_dir.h"
#include "tests/worker/worker_test_util.h"
#include "worker/assignment_file.h"
#include "worker/task_process.h"
#include "worker/task_supervisor.h"

namespace geotrain::worker {
namespace {

namespace fs = std::filesystem;
using testing::Eventually;
using testing::ProcessOutput;

std::string WorkerBinary() {
  std::error_code ec;
  const fs::path path = fs::read_symlink("/proc/self/exe", ec).parent_path() / "geotrain-worker";
  return fs::exists(path, ec) ? path.string() : std::string();
}

std::string SourcePath(const std::string& relative) {
  return std::string(GEOTRAIN_SOURCE_DIR) + "/" + relative;
}

// Runs `geotrain-worker task` on an assignment file; returns its output once it ended.
void RunTask(const std::string& binary, const std::string& assignment_path, ProcessOutput* output) {
  ProcessSpec spec{{binary, "task", "--coordinator", "127.0.0.1:1", "--assignment", assignment_path,
                    "--bind", "127.0.0.1"},
                   {},
                   {}};
  auto process = TaskProcess::Start(spec, output->OnLine(), output->OnExit());
  ASSERT_TRUE(process.ok()) << process.status().ToString();
  (*process)->Wait();
}

bool AnyLineHas(const std::vector<std::string>& lines, const std::string& text) {
  for (const std::string& line : lines) {
    if (line.find(text) != std::string::npos) return true;
  }
  return false;
}

class TaskChildTest : public ::testing::Test {
 protected:
  void SetUp() override {
    binary_ = WorkerBinary();
    if (binary_.empty()) GTEST_SKIP() << "geotrain-worker is not built next to worker_tests";
  }
  std::string binary_;
  geotrain::testing::TempDir dir_;
};

TEST_F(TaskChildTest, AnUnreadableAssignmentExitsTwoNamingTheFile) {
  const std::string path = dir_.Write("assignment.pb", "\xff\xff\xff garbage");
  ProcessOutput output;
  RunTask(binary_, path, &output);
  EXPECT_EQ(output.exit().code(), 2);
  EXPECT_TRUE(AnyLineHas(output.err(), path + ": not a serialised geotrain.v1.Assignment"));
}

TEST_F(TaskChildTest, ABadJobSpecExitsTwoNamingTheKey) {
  geotrain::v1::Assignment assignment;
  assignment.set_job_id("job-1");
  assignment.set_generation(1);
  assignment.set_spec_yaml(
      "name: x\nmodel:\n  dir: m\ndata:\n  train: [a.txt]\ntraining:\n  stepz: 3\n");
  const std::string path = dir_.File("assignment.pb");
  ASSERT_TRUE(WriteAssignmentFile(path, assignment).ok());
  ProcessOutput output;
  RunTask(binary_, path, &output);
  EXPECT_EQ(output.exit().code(), 2);
  EXPECT_TRUE(AnyLineHas(output.err(), "[error] assignment.spec_yaml: training.stepz"))
      << ::testing::PrintToString(output.err());
}

// A job path outside --data-root fails the task before it reads anything: exit 2, the field, the
// path and the reason on stderr (the daemon forwards that line to the coordinator).
TEST_F(TaskChildTest, APathOutsideTheDataRootExitsTwoNamingTheField) {
  const std::string data_root = dir_.File("data");
  fs::create_directories(data_root);
  dir_.Write("secret.txt", "not the job's");
  geotrain::v1::Assignment assignment;
  assignment.set_job_id("job-1");
  assignment.set_generation(1);
  assignment.set_spec_yaml(
      "name: x\nmodel:\n  dir: m\ndata:\n  train: [../secret.txt]\ntraining:\n"
      "  checkpoint_every: 1\n  checkpoint_dir: " +
      dir_.File("ckpt") + "\n");
  const std::string path = dir_.File("assignment.pb");
  ASSERT_TRUE(WriteAssignmentFile(path, assignment).ok());
  ProcessOutput output;
  ProcessSpec spec{{binary_, "task", "--coordinator", "127.0.0.1:1", "--assignment", path, "--bind",
                    "127.0.0.1", "--data-root", data_root},
                   {},
                   {}};
  auto process = TaskProcess::Start(spec, output.OnLine(), output.OnExit());
  ASSERT_TRUE(process.ok()) << process.status().ToString();
  (*process)->Wait();
  EXPECT_EQ(output.exit().code(), 2);
  const std::string root = fs::canonical(data_root).string();
  EXPECT_TRUE(AnyLineHas(output.err(), "data.train[0]: ../secret.txt resolves to " +
                                           fs::canonical(dir_.path()).string() +
                                           "/secret.txt, outside the data root " + root))
      << ::testing::PrintToString(output.err());
  EXPECT_TRUE(AnyLineHas(output.err(), "training.checkpoint_dir: " + dir_.File("ckpt")))
      << ::testing::PrintToString(output.err());
  EXPECT_FALSE(fs::exists(dir_.File("ckpt")));
}

// A one-rank job (no rendezvous needed) trained to its end through the supervisor, with the
// job's relative paths resolved against the data root.
TEST_F(TaskChildTest, TrainsAOneRankJobAndReportsEveryStep) {
  const std::string data_root = dir_.File("data");
  fs::create_directories(data_root + "/model");
  {
    std::ofstream config(data_root + "/model/config.json");
    config << R"({"model_type": "gpt2", "n_embd": 32, "n_head": 2, "n_layer": 2,
      "n_positions": 64, "vocab_size": 50257, "tie_word_embeddings": true,
      "activation_function": "gelu_new", "layer_norm_epsilon": 1e-5})";
    std::ifstream corpus(SourcePath("examples/data/shakespeare/train.txt"));
    std::string text(20000, '\0');
    corpus.read(text.data(), static_cast<std::streamsize>(text.size()));
    std::ofstream(data_root + "/train.txt") << text.substr(0, static_cast<size_t>(corpus.gcount()));
  }
  geotrain::v1::Assignment assignment;
  assignment.set_job_id("job-1");
  assignment.set_generation(1);
  assignment.set_spec_yaml(
      "name: worker-child-test\n"
      "model:\n  dir: model\n  init_seed: 1\n"
      "data:\n  train: [train.txt]\n  tokenizer: " +
      SourcePath("examples/tokenizers/gpt2") +
      "\n  seq_length: 16\n"
      "pipeline:\n  micro_batch_size: 2\n  micro_batches: 1\n"
      "training:\n  steps: 2\n  timeout_seconds: 60\n");

  Outbox outbox;
  SupervisorOptions options;
  options.coordinator = "127.0.0.1:1";  // never contacted: one rank joins no group
  options.advertise = "127.0.0.1";
  options.work_dir = dir_.File("work");
  options.data_root = data_root;
  // The tokenizer is read from the source tree, outside the data root: allowed by the operator.
  options.allowed_paths = {SourcePath("examples/tokenizers")};
  options.threads = 1;
  options.task_binary = binary_;
  TaskSupervisor supervisor(options, &outbox, nullptr);
  geotrain::v1::CoordinatorMessage message;
  *message.mutable_assign() = assignment;
  supervisor.Handle(message);
  ASSERT_TRUE(Eventually([&] { return !supervisor.AnyActive(); }));

  std::vector<geotrain::v1::TaskState> states;
  std::vector<geotrain::v1::StepReport> steps;
  std::vector<std::string> logs;
  for (const auto& m : outbox.Peek(1000)) {
    if (m.message.has_task()) states.push_back(m.message.task().state());
    for (const auto& step : m.message.steps().reports()) steps.push_back(step);
    for (const auto& line : m.message.logs().lines()) logs.push_back(line.text());
  }
  EXPECT_EQ(states, (std::vector<geotrain::v1::TaskState>{geotrain::v1::TASK_STATE_STARTING,
                                                          geotrain::v1::TASK_STATE_RUNNING,
                                                          geotrain::v1::TASK_STATE_SUCCEEDED}))
      << ::testing::PrintToString(logs);
  ASSERT_EQ(steps.size(), 2u) << ::testing::PrintToString(logs);
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(steps[i].step(), i + 1);
    EXPECT_EQ(steps[i].total_steps(), 2);
    EXPECT_EQ(steps[i].job_id(), "job-1");
    ASSERT_TRUE(steps[i].has_loss());  // the only stage is the last
    EXPECT_GT(steps[i].loss(), 0);
  }
  EXPECT_TRUE(AnyLineHas(logs, "trained to the end"));
  // The seeded weights went to the task's own directory.
  EXPECT_TRUE(fs::exists(dir_.File("work/tasks/job-1-g1-s0-r0/init")));
}

}  // namespace
}  // namespace geotrain::worker
