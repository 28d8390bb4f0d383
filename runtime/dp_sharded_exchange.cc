#include "runtime/dp_sharded_exchange.h"

#include <algorithm>
#include <string>

#include "compression/frame.h"

namespace geotrain::runtime {
namespace {

// Splits a message of concatenated frames into exactly `count` frames.
StatusOr<std::vector<Span<const uint8_t>>> SplitFrames(Span<const uint8_t> message, size_t count) {
  std::vector<Span<const uint8_t>> frames;
  size_t at = 0;
  while (at < message.size()) {
    const Span<const uint8_t> rest = message.subspan(at, message.size() - at);
    GEOTRAIN_ASSIGN_OR_RETURN(const uint64_t size, compression::FrameSize(rest));
    if (size > rest.size()) {
      return DataLoss("frame " + std::to_string(frames.size()) + ": declares " +
                      std::to_string(size) + " bytes, " + std::to_string(rest.size()) + " left");
    }
    frames.push_back(rest.subspan(0, size));
    at += size;
  }
  if (frames.size() != count) {
    return DataLoss(std::to_string(frames.size()) + " frames where " + std::to_string(count) +
                    " were expected");
  }
  return frames;
}

// Appends `frame` to `message`.
void Append(const std::vector<uint8_t>& frame, std::vector<uint8_t>* message) {
  message->insert(message->end(), frame.begin(), frame.end());
}

}  // namespace

ShardedExchange::ShardedExchange(net::Transport* transport, net::Timeout timeout,
                                 std::vector<int64_t> bucket_elements,
                                 std::vector<ShardCodecs> codecs, ShardedExchangeOptions options)
    : transport_(transport),
      timeout_(timeout),
      rank_(transport->rank()),
      size_(transport->size()),
      bucket_elements_(std::move(bucket_elements)),
      codecs_(std::move(codecs)),
      options_(options),
      worker_error_(bucket_elements_.size()),
      server_error_(bucket_elements_.size()),
      decoder_(compression::CodecConfig{}),
      server_inputs_(bucket_elements_.size()) {
  for (size_t b = 0; b < bucket_elements_.size(); ++b) {
    if (options_.worker_error_feedback) worker_error_[b].assign(bucket_elements_[b], 0.0f);
    if (options_.server_error_feedback) server_error_[b].assign(chunk(b, rank_).size, 0.0f);
  }
}

ChunkRange ShardedExchange::chunk(size_t bucket, int index) const {
  return ChunkOf(bucket_elements_[bucket], size_, index);
}

Status ShardedExchange::Run(uint64_t step, const std::vector<at::Tensor>& inputs,
                            std::vector<Result>* results) {
  results->assign(bucket_elements_.size(), Result{});
  for (size_t b = 0; b < bucket_elements_.size(); ++b) {
    (*results)[b].average = at::zeros({bucket_elements_[b]}, at::kFloat);
    (*results)[b].sent = at::zeros({bucket_elements_[b]}, at::kFloat);
  }
  std::vector<std::vector<uint8_t>> to_owner(size_);
  for (int j = 0; j < size_; ++j) {
    GEOTRAIN_RETURN_IF_ERROR(EncodeWorkerChunks(step, j, inputs, results, &to_owner[j]));
  }
  auto received = transport_->AllToAll(to_owner, timeout_);
  if (!received.ok()) return received.status().WithContext("all-to-all");

  std::vector<uint8_t> mine;
  GEOTRAIN_RETURN_IF_ERROR(EncodeServerChunks(step, *received, &mine));
  auto gathered = transport_->AllGather(mine, timeout_);
  if (!gathered.ok()) return gathered.status().WithContext("all-gather");
  for (int r = 0; r < size_; ++r) {
    GEOTRAIN_RETURN_IF_ERROR(DecodeServerChunks(r, (*gathered)[r], results));
  }
  return OkStatus();
}

Status ShardedExchange::EncodeWorkerChunks(uint64_t step, int index,
                                           const std::vector<at::Tensor>& inputs,
                                           std::vector<Result>* results,
                                           std::vector<uint8_t>* out) {
  for (size_t b = 0; b < bucket_elements_.size(); ++b) {
    const ChunkRange range = chunk(b, index);
    if (range.size == 0) continue;
    const float* x = inputs[b].data_ptr<float>() + range.begin;
    const float* v = x;
    if (options_.worker_error_feedback) {
      float* e = worker_error_[b].data() + range.begin;
      scratch_.resize(range.size);
      for (int64_t i = 0; i < range.size; ++i) scratch_[i] = x[i] + e[i];
      v = scratch_.data();
    }
    compression::TensorView view;
    view.data = v;
    view.shape = {range.size};
    view.step = step;
    GEOTRAIN_RETURN_IF_ERROR(compression::EncodeFrame(*codecs_[b].workers[index], view, &frame_)
                                 .WithContext("encoding chunk " + std::to_string(index) +
                                              " of group " + std::to_string(b)));
    Append(frame_, out);
    GEOTRAIN_RETURN_IF_ERROR(DecodeChunk(frame_, b, index));
    float* sent = (*results)[b].sent.data_ptr<float>() + range.begin;
    std::copy(decoded_.values.begin(), decoded_.values.end(), sent);
    if (options_.worker_error_feedback) {
      float* e = worker_error_[b].data() + range.begin;
      for (int64_t i = 0; i < range.size; ++i) e[i] = v[i] - sent[i];
    }
  }
  return OkStatus();
}

Status ShardedExchange::EncodeServerChunks(uint64_t step,
                                           const std::vector<std::vector<uint8_t>>& received,
                                           std::vector<uint8_t>* out) {
  size_t frames_per_sender = 0;
  for (size_t b = 0; b < bucket_elements_.size(); ++b)
    frames_per_sender += chunk(b, rank_).size > 0;
  std::vector<std::vector<Span<const uint8_t>>> frames(size_);
  for (int r = 0; r < size_; ++r) {
    auto split = SplitFrames(received[r], frames_per_sender);
    if (!split.ok()) return split.status().WithContext("all-to-all from rank " + std::to_string(r));
    frames[r] = std::move(*split);
  }
  size_t next = 0;  // index of the current bucket's frame in every sender's message
  for (size_t b = 0; b < bucket_elements_.size(); ++b) {
    const ChunkRange range = chunk(b, rank_);
    if (range.size == 0) continue;
    std::vector<float>& v = server_inputs_[b];
    v.assign(range.size, 0.0f);
    for (int r = 0; r < size_; ++r) {
      GEOTRAIN_RETURN_IF_ERROR(DecodeChunk(frames[r][next], b, rank_)
                                   .WithContext("all-to-all from rank " + std::to_string(r)));
      for (int64_t i = 0; i < range.size; ++i) v[i] += decoded_.values[i];
    }
    ++next;
    for (int64_t i = 0; i < range.size; ++i) v[i] /= static_cast<float>(size_);
    if (options_.server_error_feedback) {
      for (int64_t i = 0; i < range.size; ++i) v[i] += server_error_[b][i];
    }
    compression::TensorView view;
    view.data = v.data();
    view.shape = {range.size};
    view.step = step;
    GEOTRAIN_RETURN_IF_ERROR(
        compression::EncodeFrame(*codecs_[b].server, view, &frame_)
            .WithContext("encoding the average of group " + std::to_string(b)));
    Append(frame_, out);
  }
  return OkStatus();
}

Status ShardedExchange::DecodeServerChunks(int index, Span<const uint8_t> frames,
                                           std::vector<Result>* results) {
  size_t count = 0;
  for (size_t b = 0; b < bucket_elements_.size(); ++b) count += chunk(b, index).size > 0;
  auto split = SplitFrames(frames, count);
  if (!split.ok())
    return split.status().WithContext("all-gather from rank " + std::to_string(index));
  size_t next = 0;
  for (size_t b = 0; b < bucket_elements_.size(); ++b) {
    const ChunkRange range = chunk(b, index);
    if (range.size == 0) continue;
    GEOTRAIN_RETURN_IF_ERROR(DecodeChunk((*split)[next++], b, index)
                                 .WithContext("all-gather from rank " + std::to_string(index)));
    float* average = (*results)[b].average.data_ptr<float>() + range.begin;
    std::copy(decoded_.values.begin(), decoded_.values.end(), average);
    if (options_.server_error_feedback && index == rank_) {
      const std::vector<float>& v = server_inputs_[b];
      for (int64_t i = 0; i < range.size; ++i) server_error_[b][i] = v[i] - average[i];
    }
  }
  return OkStatus();
}

Status ShardedExchange::DecodeChunk(Span<const uint8_t> frame, size_t bucket, int index) {
  const std::string what = "chunk " + std::to_string(index) + " of group " + std::to_string(bucket);
  GEOTRAIN_RETURN_IF_ERROR(decoder_.Decode(frame, &decoded_).WithContext("decoding " + what));
  const int64_t expected = chunk(bucket, index).size;
  if (decoded_.shape != compression::Shape{expected}) {
    return DataLoss("decoding " + what + ": shape " + compression::ShapeString(decoded_.shape) +
                    " where [" + std::to_string(expected) + "] was expected");
  }
  return OkStatus();
}

}  // namespace geotrain::runtime
