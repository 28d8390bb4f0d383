// TensorSender / TensorReceiver: one direction of one pipeline link, tensors in and out.
//
// The sender encodes a micro-batch's tensor with the link's codec (or, during the uncompressed
// warm-up and for evaluation, with the plain float32 codec), prefixes the MicroBatchHeader and
// hands the message to a background thread that sends it, so the stage computes its next
// micro-batch while the bytes travel. Sends keep their order. A failed send is reported by the next
// Send or by Flush, never lost; Flush waits until every queued message has been taken by the peer.
//
// The receiver takes the next message, checks it is the one the schedule expects, and decodes it
// with a LinkDecoder (which follows whatever codec and bits each frame names).
//
// A stage on a CUDA device sends device tensors and receives them on its device. Where the build
// has the CUDA codecs and the link's codec has kernels (fixpoint, delta, tah, cocktail), both
// ends run it on the device (compression/torch/device_codecs.h): only the compressed frame
// crosses to or from the host. Otherwise (and for the uncompressed warm-up) the sender copies
// each tensor to the host and the receiver each to the device, through a pinned buffer per link
// direction (host_staging.h).
//
// Both keep the TrafficCount (traffic_counter.h) of their frames for the step reports: raw and
// wire bytes, and the seconds the calling thread spent encoding / decoding and waiting. Neither is
// thread-safe beyond that one background thread; each link end belongs to the stage's training
// thread.
#pragma once

#include <ATen/ATen.h>

#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "compression/codec.h"
#include "compression/link_decoder.h"
#include "compression/torch/device_codecs.h"
#include "net/transport.h"
#include "runtime/host_staging.h"
#include "runtime/micro_batch_message.h"
#include "runtime/trace_writer.h"
#include "runtime/traffic_counter.h"

namespace geotrain::runtime {

class TensorSender {
 public:
  // `compressed` is the link's codec; frames go to `peer` of `transport`. `peer_name` ("stage 2,
  // global rank 5") prefixes errors, since the transport knows only ranks within its group.
  static StatusOr<std::unique_ptr<TensorSender>> Create(net::Transport* transport, int peer,
                                                        std::string peer_name,
                                                        const compression::CodecConfig& compressed,
                                                        net::Timeout timeout);
  ~TensorSender();

  // Encodes `tensor` (compressed, or float32 as it is; on the CPU or a CUDA device, whose copy
  // to the host it waits for) and queues it. Returns an encode error or the failure of an
  // earlier send.
  Status Send(const MicroBatchHeader& header, const at::Tensor& tensor, bool compress);
  // Waits until every queued message has been sent; the first send error if any.
  Status Flush();

  // Adaptive compression: replaces the link codec's tunable parameters (bits) for the next
  // Send on, keeping its state (a delta codec's activation cache). Only `config`'s codec id may
  // not change. Encoding happens on the caller's thread, so this is safe between two Sends even
  // while earlier messages are still queued: they were encoded already.
  Status Reconfigure(const compression::CodecConfig& config) {
    return device_encoder_ ? device_encoder_->Reconfigure(config)
                           : compressed_->Reconfigure(config);
  }
  // The link codec's settings as they are now (the warm-up's plain float32 codec aside).
  const compression::CodecConfig& codec_config() const {
    return device_encoder_ ? device_encoder_->config() : compressed_->config();
  }

  // The device of the tensors Send will get; before the first Send. On a CUDA device, the link
  // codec runs there when it has kernels in this build.
  Status set_device(const at::Device& device);

  const TrafficCount& totals() const { return totals_; }
  // Records "encode" and (on the send thread) "send" spans per message in `trace`, which must
  // outlive us.
  void set_trace(TraceWriter* trace) { trace_ = trace; }

 private:
  TensorSender(net::Transport* transport, int peer, std::string peer_name, net::Timeout timeout,
               std::unique_ptr<compression::Codec> compressed,
               std::unique_ptr<compression::Codec> plain);
  void SendLoop();

  net::Transport* transport_;
  int peer_;
  std::string peer_name_;
  net::Timeout timeout_;
  std::unique_ptr<compression::Codec> compressed_;
  std::unique_ptr<compression::Codec> plain_;
  std::unique_ptr<compression::DeviceTensorEncoder> device_encoder_;  // set_device's, or null
  DeviceToHostStaging staging_;
  std::vector<uint8_t> frame_;
  TrafficCount totals_;
  TraceWriter* trace_ = nullptr;

  struct Queued {
    std::vector<uint8_t> message;
    uint64_t raw_bytes;
    uint32_t micro_batch;
  };
  std::mutex mu_;
  std::condition_variable changed_;
  std::deque<Queued> queue_;  // guarded by mu_
  bool sending_ = false;      // guarded by mu_: the thread holds a message it took
  bool stopping_ = false;     // guarded by mu_
  Status error_;              // guarded by mu_: the first send failure
  std::thread thread_;
};

class TensorReceiver {
 public:
  // `receiver_config` supplies what frames do not carry (the delta cache's bounds and directory).
  TensorReceiver(net::Transport* transport, int peer, std::string peer_name,
                 compression::CodecConfig receiver_config, net::Timeout timeout);

  // Receives the next message, which must be `kind` of `step` / `micro_batch`, and decodes it
  // into a tensor on the receiver's device (set_device; the CPU unless set) with the sender's
  // dtype and shape; *header gets its header. A device tensor's copy may still be queued on the
  // current CUDA stream when this returns.
  StatusOr<at::Tensor> Recv(MessageKind kind, uint64_t step, uint32_t micro_batch,
                            MicroBatchHeader* header);

  // Where Recv puts the tensors from now on; on a CUDA device, frames of codecs with kernels
  // are decoded there (device_codecs.h), the others on the host and copied.
  Status set_device(at::Device device);

  const TrafficCount& totals() const { return totals_; }
  // Records "recv" and "decode" spans per message in `trace`, which must outlive us.
  void set_trace(TraceWriter* trace) { trace_ = trace; }

 private:
  StatusOr<at::Tensor> Receive(MessageKind kind, uint64_t step, uint32_t micro_batch,
                               MicroBatchHeader* header);

  net::Transport* transport_;
  int peer_;
  std::string peer_name_;
  net::Timeout timeout_;
  compression::LinkDecoder decoder_;
  compression::CodecConfig receiver_config_;
  std::unique_ptr<compression::DeviceTensorDecoder> device_decoder_;  // set_device's, or null
  std::unique_ptr<HostToDeviceStaging> staging_;                      // set_device's; null: the CPU
  std::vector<uint8_t> message_;
  TrafficCount totals_;
  TraceWriter* trace_ = nullptr;
};

}  // namespace geotrain::runtime
