#include "runtime/tensor_link.h"

#include <chrono>

#include "compression/torch/tensor_frames.h"

namespace geotrain::runtime {
namespace {

using Clock = std::chrono::steady_clock;
double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

}  // namespace

StatusOr<std::unique_ptr<TensorSender>> TensorSender::Create(
    net::Transport* transport, int peer, std::string peer_name,
    const compression::CodecConfig& compressed, net::Timeout timeout) {
  GEOTRAIN_ASSIGN_OR_RETURN(auto codec, compression::MakeCodec(compressed));
  GEOTRAIN_ASSIGN_OR_RETURN(auto plain, compression::MakeCodec(compression::CodecConfig{}));
  return std::unique_ptr<TensorSender>(new TensorSender(
      transport, peer, std::move(peer_name), timeout, std::move(codec), std::move(plain)));
}

TensorSender::TensorSender(net::Transport* transport, int peer, std::string peer_name,
                           net::Timeout timeout, std::unique_ptr<compression::Codec> compressed,
                           std::unique_ptr<compression::Codec> plain)
    : transport_(transport),
      peer_(peer),
      peer_name_(std::move(peer_name)),
      timeout_(timeout),
      compressed_(std::move(compressed)),
      plain_(std::move(plain)),
      thread_([this] { SendLoop(); }) {}

TensorSender::~TensorSender() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  changed_.notify_all();
  thread_.join();
}

Status TensorSender::Send(const MicroBatchHeader& header, const at::Tensor& tensor, bool compress) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!error_.ok()) return error_;
  }
  const Clock::time_point start = Clock::now();
  const TraceWriter::Clock::time_point encode = TraceWriter::Clock::now();
  compression::EncodeStats stats;
  if (compress && device_encoder_) {
    GEOTRAIN_RETURN_IF_ERROR(
        device_encoder_->Encode(tensor, header.sample_ids, header.step, &frame_, &stats));
  } else {
    at::Tensor host;
    try {
      host = staging_.ToHost(tensor);
    } catch (const c10::Error& e) {
      return Internal("copying the tensor to the host: " + std::string(e.what_without_backtrace()));
    }
    GEOTRAIN_RETURN_IF_ERROR(compression::EncodeTensor(
        compress ? *compressed_ : *plain_, host, header.sample_ids, header.step, &frame_, &stats));
  }
  Queued queued{{}, stats.raw_bytes, header.micro_batch};
  WriteMicroBatchHeader(header, &queued.message);
  queued.message.insert(queued.message.end(), frame_.begin(), frame_.end());
  totals_.codec_seconds += SecondsSince(start);
  totals_.raw_bytes += stats.raw_bytes;
  totals_.wire_bytes += queued.message.size();
  totals_.relative_error_sum += stats.rel_error;
  ++totals_.frames;
  if (trace_) {
    trace_->Complete(
        "encode", "codec", encode, TraceWriter::Clock::now(),
        {{"to", peer_name_}, {"micro_batch", header.micro_batch}, {"compressed", compress}});
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.push_back(std::move(queued));
  }
  changed_.notify_all();
  return OkStatus();
}

Status TensorSender::set_device(const at::Device& device) {
  if (!compression::DeviceCodecsFor(device) ||
      !compression::DeviceCodecHasKernels(compressed_->id())) {
    return OkStatus();
  }
  GEOTRAIN_ASSIGN_OR_RETURN(
      device_encoder_, compression::DeviceTensorEncoder::Create(compressed_->config(), device));
  return OkStatus();
}

Status TensorSender::Flush() {
  const Clock::time_point start = Clock::now();
  std::unique_lock<std::mutex> lock(mu_);
  changed_.wait(lock, [this] { return (queue_.empty() && !sending_) || !error_.ok(); });
  totals_.wait_seconds += SecondsSince(start);
  return error_;
}

void TensorSender::SendLoop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    changed_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stopping with nothing left to send
    Queued queued = std::move(queue_.front());
    queue_.pop_front();
    sending_ = true;
    const bool failed = !error_.ok();
    lock.unlock();
    Status status;
    if (!failed) {
      const TraceWriter::Clock::time_point start = TraceWriter::Clock::now();
      status = transport_->Send(peer_, queued.message, timeout_, queued.raw_bytes);
      if (trace_) {
        trace_->SetThreadName("send to " + peer_name_);
        trace_->Complete("send", "comm", start, TraceWriter::Clock::now(),
                         {{"to", peer_name_},
                          {"micro_batch", queued.micro_batch},
                          {"bytes", queued.message.size()}});
      }
    }
    lock.lock();
    sending_ = false;
    if (!status.ok() && error_.ok()) error_ = status.WithContext("sending to " + peer_name_);
    if (!error_.ok()) queue_.clear();  // nothing after a failure can arrive in order
    changed_.notify_all();
    if (stopping_ && queue_.empty()) return;
  }
}

TensorReceiver::TensorReceiver(net::Transport* transport, int peer, std::string peer_name,
                               compression::CodecConfig receiver_config, net::Timeout timeout)
    : transport_(transport),
      peer_(peer),
      peer_name_(std::move(peer_name)),
      timeout_(timeout),
      decoder_(receiver_config),
      receiver_config_(std::move(receiver_config)) {}

Status TensorReceiver::set_device(at::Device device) {
  staging_ = device.is_cpu() ? nullptr : std::make_unique<HostToDeviceStaging>(device);
  device_decoder_ = nullptr;
  if (compression::DeviceCodecsFor(device)) {
    GEOTRAIN_ASSIGN_OR_RETURN(device_decoder_,
                              compression::DeviceTensorDecoder::Create(receiver_config_, device));
  }
  return OkStatus();
}

StatusOr<at::Tensor> TensorReceiver::Recv(MessageKind kind, uint64_t step, uint32_t micro_batch,
                                          MicroBatchHeader* header) {
  auto received = Receive(kind, step, micro_batch, header);
  if (!received.ok()) return received.status().WithContext("receiving from " + peer_name_);
  return received;
}

StatusOr<at::Tensor> TensorReceiver::Receive(MessageKind kind, uint64_t step, uint32_t micro_batch,
                                             MicroBatchHeader* header) {
  const TraceWriter::Clock::time_point wait = TraceWriter::Clock::now();
  Clock::time_point start = Clock::now();
  GEOTRAIN_RETURN_IF_ERROR(transport_->Recv(peer_, &message_, timeout_));
  totals_.wait_seconds += SecondsSince(start);
  totals_.wire_bytes += message_.size();
  ++totals_.frames;
  const TraceWriter::Clock::time_point decode = TraceWriter::Clock::now();
  if (trace_) {
    trace_->Complete(
        "recv", "comm", wait, decode,
        {{"from", peer_name_}, {"micro_batch", micro_batch}, {"bytes", message_.size()}});
  }

  start = Clock::now();
  Span<const uint8_t> frame;
  GEOTRAIN_RETURN_IF_ERROR(ParseMicroBatchMessage(message_, header, &frame));
  GEOTRAIN_RETURN_IF_ERROR(CheckExpected(*header, kind, step, micro_batch));
  at::Tensor tensor;
  if (device_decoder_) {
    GEOTRAIN_ASSIGN_OR_RETURN(tensor, device_decoder_->Decode(frame));
  } else {
    GEOTRAIN_ASSIGN_OR_RETURN(tensor, compression::DecodeTensor(decoder_, frame));
  }
  if (staging_ && tensor.is_cpu()) {
    try {
      tensor = staging_->ToDevice(tensor);
    } catch (const c10::Error& e) {
      return Internal("copying the tensor to the device: " +
                      std::string(e.what_without_backtrace()));
    }
  }
  const uint64_t raw_bytes = static_cast<uint64_t>(tensor.numel()) * tensor.element_size();
  totals_.raw_bytes += raw_bytes;
  transport_->link_stats().AddRawBytesReceived(peer_, raw_bytes);
  totals_.codec_seconds += SecondsSince(start);
  if (trace_) {
    trace_->Complete("decode", "codec", decode, TraceWriter::Clock::now(),
                     {{"micro_batch", micro_batch}});
  }
  return tensor;
}

}  // namespace geotrain::runtime
