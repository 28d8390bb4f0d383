#include "cli/eval_command.h"

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>

#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "common/io/file_contents.h"
#include "models/model_config.h"
#include "models/stage_plan.h"
#include "models/tokenizer/tokenizer_loaders.h"
#include "models/transformer/stage.h"

namespace geotrain::cli {

namespace {

// Eval corpora are held in memory whole; beyond this a streaming reader would be needed.
constexpr size_t kMaxDataBytes = size_t{4} << 30;

Status CheckArguments(int64_t seq_length, int64_t batch_size) {
  if (seq_length < 2) {
    return InvalidArgument("--seq-length: " + std::to_string(seq_length) +
                           " must be at least 2 (one prediction per block needs two tokens)");
  }
  if (batch_size < 1) {
    return InvalidArgument("--batch-size: " + std::to_string(batch_size) + " must be at least 1");
  }
  return OkStatus();
}

}  // namespace

StatusOr<EvalResult> EvaluateTokens(const models::Stage& stage,
                                    const std::vector<int32_t>& token_ids, int64_t seq_length,
                                    int64_t batch_size) {
  GEOTRAIN_RETURN_IF_ERROR(CheckArguments(seq_length, batch_size));
  if (!stage.plan().is_first || !stage.plan().is_last) {
    return InvalidArgument("eval needs the whole model as one stage, got " +
                           stage.plan().ToString());
  }
  const int64_t num_blocks = static_cast<int64_t>(token_ids.size()) / seq_length;
  if (num_blocks == 0) {
    return InvalidArgument("--data: " + std::to_string(token_ids.size()) +
                           " tokens are fewer than one block of --seq-length " +
                           std::to_string(seq_length));
  }
  const int64_t vocab_size = stage.config().vocab_size;
  for (size_t i = 0; i < token_ids.size(); ++i) {
    if (token_ids[i] < 0 || token_ids[i] >= vocab_size) {
      return InvalidArgument("--data: token " + std::to_string(i) + " has id " +
                             std::to_string(token_ids[i]) + ", outside the model's vocab_size " +
                             std::to_string(vocab_size) + " (tokenizer and model do not match)");
    }
  }

  at::NoGradGuard no_grad;
  const at::Tensor all_blocks =
      at::tensor(at::ArrayRef<int32_t>(token_ids.data(), num_blocks * seq_length), at::kInt)
          .to(at::kLong)
          .view({num_blocks, seq_length});
  // Every block contributes seq_length - 1 predictions, so the overall mean is the mean of the
  // per-batch means weighted by their block counts; the sum is kept in double.
  double loss_sum = 0;
  for (int64_t start = 0; start < num_blocks; start += batch_size) {
    const int64_t count = std::min(batch_size, num_blocks - start);
    const at::Tensor blocks = all_blocks.narrow(0, start, count);
    GEOTRAIN_ASSIGN_OR_RETURN(at::Tensor logits, stage.Forward(blocks));
    GEOTRAIN_ASSIGN_OR_RETURN(at::Tensor loss, stage.Loss(logits, blocks));
    loss_sum += loss.item<double>() * static_cast<double>(count);
  }
  EvalResult result;
  result.loss = loss_sum / static_cast<double>(num_blocks);
  result.perplexity = std::exp(result.loss);
  result.tokens = num_blocks * (seq_length - 1);
  return result;
}

StatusOr<EvalResult> RunEval(const EvalOptions& options) {
  GEOTRAIN_RETURN_IF_ERROR(CheckArguments(options.seq_length, options.batch_size));
  GEOTRAIN_ASSIGN_OR_RETURN(auto tokenizer, models::LoadTokenizerDirectory(options.tokenizer_dir));
  GEOTRAIN_ASSIGN_OR_RETURN(std::string text,
                            io::ReadFileContents(options.data_path, kMaxDataBytes));
  GEOTRAIN_ASSIGN_OR_RETURN(models::ModelConfig config, models::LoadModelConfig(options.model_dir));
  GEOTRAIN_ASSIGN_OR_RETURN(
      std::unique_ptr<models::Stage> stage,
      models::LoadStage(options.model_dir, models::WholeModelPlan(config), at::kCPU, at::kFloat));
  return EvaluateTokens(*stage, tokenizer->EncodeOrdinary(text), options.seq_length,
                        options.batch_size);
}

std::string FormatEvalResult(const EvalResult& result, OutputFormat format) {
  if (format == OutputFormat::kJson) {
    return nlohmann::json{
        {"loss", result.loss}, {"perplexity", result.perplexity}, {"tokens", result.tokens}}
        .dump();
  }
  char line[160];
  std::snprintf(line, sizeof(line), "loss %.6f  perplexity %.4f  tokens %lld", result.loss,
                result.perplexity, static_cast<long long>(result.tokens));
  return line;
}

}  // namespace geotrain::cli
