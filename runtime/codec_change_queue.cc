#include "runtime/codec_change_queue.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <sstream>
#include <utility>

namespace geotrain::runtime {
namespace {

// The width adaptive compression changes: tah's high_bits, every other codec's bits.
int WidthOf(const compression::CodecConfig& config) {
  return config.codec == compression::CodecId::kTah ? config.high_bits : config.bits;
}

std::string Number(double value) {
  std::ostringstream s;
  s << value;
  return s.str();
}

}  // namespace

CodecChangeQueue::CodecChangeQueue(const StageAssignment& assignment, TensorSender* to_next,
                                   TensorSender* to_prev, DataParallelSync* data_parallel)
    : stage_(assignment.stage),
      dp_size_(assignment.dp_size),
      to_next_(to_next),
      to_prev_(to_prev),
      data_parallel_(data_parallel),
      data_parallel_settings_(assignment.compression.data_parallel) {}

void CodecChangeQueue::Schedule(const CodecChange& change) {
  const auto at = std::upper_bound(
      scheduled_.begin(), scheduled_.end(), change.effective_step,
      [](int64_t step, const CodecChange& queued) { return step < queued.effective_step; });
  scheduled_.insert(at, change);
}

void CodecChangeQueue::ApplyDue(int64_t step) {
  auto due = scheduled_.begin();
  for (; due != scheduled_.end() && due->effective_step <= step; ++due) {
    const CodecChange& change = *due;
    const std::string when = change.effective_step < step
                                 ? "step " + std::to_string(step) + " (late: announced for step " +
                                       std::to_string(change.effective_step) + ")"
                                 : "step " + std::to_string(step);
    const std::string why = change.reason.empty() ? "" : " (" + change.reason + ")";
    if (change.forward_bits != 0) {
      AdjustPipelineLink(to_next_, "forward", change.forward_bits, when, why);
    }
    if (change.backward_bits != 0) {
      AdjustPipelineLink(to_prev_, "backward", change.backward_bits, when, why);
    }
    if (change.dp_bits != 0 || change.dp_topk_ratio != 0) AdjustDataParallel(change, when, why);
  }
  scheduled_.erase(scheduled_.begin(), due);
}

void CodecChangeQueue::AdjustPipelineLink(TensorSender* sender, const char* direction,
                                          uint32_t bits, const std::string& when,
                                          const std::string& why) {
  if (sender == nullptr) {
    spdlog::warn("{}: {} bits {} not applied: stage {} has no {} link{}", when, direction, bits,
                 stage_, direction, why);
    return;
  }
  const compression::CodecConfig before = sender->codec_config();
  StatusOr<compression::CodecConfig> after = WithPipelineBits(before, bits);
  const Status applied = after.ok() ? sender->Reconfigure(*after) : after.status();
  if (!applied.ok()) {
    spdlog::warn("{}: {} bits {} not applied, the link keeps {}: {}{}", when, direction, bits,
                 before.Describe(), applied.message(), why);
    return;
  }
  std::string low;
  if (before.codec == compression::CodecId::kTah && before.low_bits != after->low_bits) {
    low = ", tah low_bits " + std::to_string(before.low_bits) + " -> " +
          std::to_string(after->low_bits);
  }
  spdlog::info("{}: {} bits {} -> {}{}{}", when, direction, WidthOf(before), WidthOf(*after), low,
               why);
}

void CodecChangeQueue::AdjustDataParallel(const CodecChange& change, const std::string& when,
                                          const std::string& why) {
  const DataParallelSettings& before = data_parallel_settings_;
  StatusOr<DataParallelSettings> after =
      WithDataParallelChange(before, change.dp_bits, change.dp_topk_ratio);
  // One replica has no exchange whose codecs could change; its settings still follow.
  Status applied = after.status();
  if (after.ok() && dp_size_ > 1) {
    applied = data_parallel_->AdjustCodec(change.dp_bits, change.dp_topk_ratio);
  }
  if (!applied.ok()) {
    spdlog::warn("{}: data-parallel change (bits {}, topk_ratio {}) not applied: {}{}", when,
                 change.dp_bits, Number(change.dp_topk_ratio), applied.message(), why);
    return;
  }
  std::string what;
  if (change.dp_bits != 0) {
    what = " bits " + std::to_string(before.codec.quant_bits) + " -> " +
           std::to_string(after->codec.quant_bits);
  }
  if (change.dp_topk_ratio != 0) {
    what += std::string(what.empty() ? "" : ",") + " topk_ratio " +
            Number(before.codec.topk_ratio) + " -> " + Number(after->codec.topk_ratio);
  }
  spdlog::info("{}: data-parallel{}{}", when, what, why);
  data_parallel_settings_ = std::move(after).value();
}

}  // namespace geotrain::runtime
