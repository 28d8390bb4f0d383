// ShardedExchange: the compressed sharded parameter server that CocktailSGD (model differences)
// and AC-SGD's end-to-end mode (Adam's first moment) both use to average a vector over the D
// replicas of a stage without any float32 all-reduce.
//
// Every bucket is cut into D chunks; replica i owns chunk i of every bucket. One Run at step t:
//   1. each replica encodes chunk j of every bucket with its worker codec for (bucket, j) and
//      sends it to replica j: one all-to-all, the frames of all buckets for one owner travelling
//      as one message (frames are self-describing, so they are simply concatenated);
//   2. each owner decodes the D frames of each of its chunks, averages them (in rank order, so
//      the result does not depend on timing) and encodes the average with its server codec;
//   3. one all-gather of the server frames; every replica decodes every chunk.
// Two collectives per Run whatever the number of buckets: each is a WAN round trip.
//
// Error feedback. Explicit buffers when asked (quantized momentum: the fixpoint codec keeps
// none): the worker encodes x + e_w and keeps e_w = (x + e_w) - decoded; the owner encodes
// avg + e_s and keeps e_s likewise. Cocktail needs neither: its workers' unsent part stays in
// local - global, and its server codec keeps its own residual (cocktail_codec.h).
//
// Chunks of a bucket smaller than D values can be empty: both ends know the sizes, so empty
// chunks send no frame at all rather than ask a codec to encode nothing.
//
// Not thread-safe: one thread at a time (the cocktail exchange thread, or the runtime thread).
#pragma once

#include <ATen/ATen.h>

#include <memory>
#include <vector>

#include "common/status.h"
#include "compression/codec.h"
#include "compression/link_decoder.h"
#include "net/transport.h"
#include "runtime/dp_buckets.h"

namespace geotrain::runtime {

// The codecs of one bucket on this replica.
struct ShardCodecs {
  std::vector<std::unique_ptr<compression::Codec>> workers;  // one per chunk (D)
  std::unique_ptr<compression::Codec> server;                // for this replica's own chunk
};

struct ShardedExchangeOptions {
  bool worker_error_feedback = false;  // explicit e_w per bucket ([elements])
  bool server_error_feedback = false;  // explicit e_s per bucket ([own chunk size])
};

class ShardedExchange {
 public:
  // One entry of `codecs` per bucket of `bucket_elements` values.
  ShardedExchange(net::Transport* transport, net::Timeout timeout,
                  std::vector<int64_t> bucket_elements, std::vector<ShardCodecs> codecs,
                  ShardedExchangeOptions options);

  // What a Run leaves for each bucket (CPU float32 [elements]).
  struct Result {
    at::Tensor average;  // the decoded average of every replica's input: equal on all replicas
    at::Tensor sent;     // what this replica's worker frames decode to (before averaging)
  };

  // Averages `inputs` (one CPU float32 contiguous [elements] tensor per bucket) over the
  // replicas at codec step `step`. Errors name the collective ("all-to-all: ...") or the frame.
  Status Run(uint64_t step, const std::vector<at::Tensor>& inputs, std::vector<Result>* results);

  ChunkRange chunk(size_t bucket, int index) const;
  // The explicit error buffers (empty unless enabled in the options).
  std::vector<float>& worker_error(size_t bucket) { return worker_error_[bucket]; }
  std::vector<float>& server_error(size_t bucket) { return server_error_[bucket]; }

 private:
  // Step 1: encodes chunk `index` of every bucket into `out` (concatenated frames) and writes
  // what the frames decode to into the results' `sent`.
  Status EncodeWorkerChunks(uint64_t step, int index, const std::vector<at::Tensor>& inputs,
                            std::vector<Result>* results, std::vector<uint8_t>* out);
  // Step 2: averages the owned chunks of what every replica sent and encodes them into `out`.
  Status EncodeServerChunks(uint64_t step, const std::vector<std::vector<uint8_t>>& received,
                            std::vector<uint8_t>* out);
  // Step 3: decodes the server frames of chunk `index` of every bucket into the averages.
  Status DecodeServerChunks(int index, Span<const uint8_t> frames, std::vector<Result>* results);
  // Decodes `frame`, which must hold chunk `index` of `bucket`, into decoded_.
  Status DecodeChunk(Span<const uint8_t> frame, size_t bucket, int index);

  net::Transport* transport_;
  net::Timeout timeout_;
  int rank_;
  int size_;
  std::vector<int64_t> bucket_elements_;
  std::vector<ShardCodecs> codecs_;
  ShardedExchangeOptions options_;
  std::vector<std::vector<float>> worker_error_;
  std::vector<std::vector<float>> server_error_;

  compression::LinkDecoder decoder_;
  compression::DecodedTensor decoded_;             // scratch
  std::vector<float> scratch_;                     // x + error before an encode
  std::vector<uint8_t> frame_;                     // one encoded frame
  std::vector<std::vector<float>> server_inputs_;  // per bucket: what the server encoded
};

}  // namespace geotrain::runtime
