#include "bench/stage_bench.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <c10/core/GradMode.h>
#include <stdlib.h>

#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>

#include "bench/bench_clock.h"
#include "bench/scratch_dir.h"
#include "common/io/file_contents.h"
#include "models/init_random_model.h"
#include "models/model_config.h"
#include "models/stage_plan.h"
#include "models/transformer/stage.h"

namespace geotrain::bench {

namespace {

int Fail(const Status& status) {
  std::cerr << "geotrain-bench stage: " << status.ToString() << "\n";
  return 1;
}

// The stage's input: token ids for a first stage, else hidden states that need a gradient (as
// a received activation does in the pipeline).
at::Tensor MakeInput(const models::Stage& stage, int batch, int seq_length, bool grad) {
  if (stage.plan().is_first) {
    return at::randint(stage.config().vocab_size, {batch, seq_length}, at::kLong);
  }
  return at::randn({batch, seq_length, stage.config().hidden_size}).set_requires_grad(grad);
}

Status ForwardBackward(const models::Stage& stage, const at::Tensor& input,
                       const at::Tensor& labels) {
  for (const models::NamedParameter& parameter : stage.Parameters()) {
    at::Tensor grad = parameter.tensor.mutable_grad();
    if (grad.defined()) grad.zero_();
  }
  GEOTRAIN_ASSIGN_OR_RETURN(at::Tensor output, stage.Forward(input));
  if (stage.plan().is_last) {
    GEOTRAIN_ASSIGN_OR_RETURN(at::Tensor loss, stage.Loss(output, labels));
    loss.backward();
  } else {
    output.backward(at::ones_like(output));
  }
  return OkStatus();
}

}  // namespace

int RunStageBench(const StageBenchOptions& options) {
  const int reps = options.quick ? 2 : options.reps;
  const int seq_length = options.quick ? 32 : options.seq_length;
  const std::string config_path =
      options.config_path.empty()
          ? std::string(GEOTRAIN_SOURCE_DIR) + "/examples/models/gpt2-tiny/config.json"
          : options.config_path;
  if (options.threads > 0) at::set_num_threads(options.threads);

  StatusOr<std::string> text = io::ReadFileContents(config_path, 1 << 20);
  if (!text.ok()) return Fail(text.status());
  StatusOr<models::ModelConfig> config = models::ParseModelConfig(*text, config_path);
  if (!config.ok()) return Fail(config.status());
  StatusOr<std::vector<models::StagePlan>> plans =
      models::SplitLayersEvenly(*config, options.stages);
  if (!plans.ok()) return Fail(plans.status().WithContext("--stages"));
  if (options.stage < 0 || options.stage >= options.stages) {
    return Fail(InvalidArgument("--stage: " + std::to_string(options.stage) + " is not in [0, " +
                                std::to_string(options.stages) + ")"));
  }
  ScratchDir dir;
  if (dir.path().empty()) return Fail(Unavailable("cannot create a temporary directory"));
  const Status init = models::InitRandomModel(*config, dir.path(), 1);
  if (!init.ok()) return Fail(init);
  auto stage = models::LoadStage(dir.path(), (*plans)[options.stage], at::kCPU, at::kFloat);
  if (!stage.ok()) return Fail(stage.status());

  at::manual_seed(1);
  const at::Tensor labels = at::randint(config->vocab_size, {options.batch, seq_length}, at::kLong);
  const at::Tensor train_input = MakeInput(**stage, options.batch, seq_length, true);
  const at::Tensor eval_input = train_input.detach();

  Status status;
  auto forward = [&] {
    at::NoGradGuard no_grad;
    StatusOr<at::Tensor> out = (*stage)->Forward(eval_input);
    if (!out.ok()) status = out.status();
  };
  auto forward_backward = [&] {
    const Status step = ForwardBackward(**stage, train_input, labels);
    if (!step.ok()) status = step;
  };
  forward();  // warm-up: allocator, thread pool
  forward_backward();
  if (!status.ok()) return Fail(status);
  const double forward_seconds = BestSeconds(reps, forward);
  const double train_seconds = BestSeconds(reps, forward_backward);
  if (!status.ok()) return Fail(status);

  const double tokens = static_cast<double>(options.batch) * seq_length;
  nlohmann::json line = {{"bench", "stage"},
                         {"model", config_path},
                         {"stage", (*plans)[options.stage].ToString()},
                         {"threads", at::get_num_threads()},
                         {"seq_length", seq_length},
                         {"batch", options.batch}};
  line["setting"] = "forward";
  line["tokens_per_second"] = tokens / forward_seconds;
  std::cout << line.dump() << "\n";
  line["setting"] = "forward+backward";
  line["tokens_per_second"] = tokens / train_seconds;
  line["ratio"] = forward_seconds / train_seconds;  // forward+backward tokens/s over forward's
  std::cout << line.dump() << std::endl;
  return 0;
}

}  // namespace geotrain::bench
