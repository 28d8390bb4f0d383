// Synchronisation of tied embeddings split between the first and the last stage.
//
// With tied input/output embeddings, the first stage's token embedding and the last stage's copy
// used as LM head get different gradient parts (lookup vs head); both copies must receive their
// sum, averaged over the replicas.
// - SyncTiedEmbeddingGradient: Optimus-CC fuses the usual two all-reduces (data-parallel, then
//   first <-> last) into one over the group of every replica's first and last stage, divided by
//   the replica count (fused); otherwise the pair of one replica sums its two parts (divisor 1)
//   and the data-parallel sync averages the result like any other gradient.
// - CompressedEmbeddingSync (compression.compress_embedding_sync, CocktailSGD mode): the pair's
//   exchange compressed too, for models whose embedding dwarfs the rest: each end all-gathers C(g +
//   e) from the cocktail codec with error feedback, and both set the gradient to the sum of the two
//   decoded parts in rank order, so the copies receive bit-identical gradients while each end's
//   unsent part waits in e for later steps. e is not checkpointed: a resumed run restarts it at
//   zero on both ends.
#pragma once

#include <ATen/ATen.h>

#include <memory>
#include <vector>

#include "common/status.h"
#include "compression/codec.h"
#include "compression/link_decoder.h"
#include "net/transport.h"

namespace geotrain::runtime {

// Replaces `parameter`'s gradient by the group sum divided by `divisor`. An undefined gradient
// counts as zeros.
Status SyncTiedEmbeddingGradient(net::Transport& group, const at::Tensor& parameter, double divisor,
                                 net::Timeout timeout);

class CompressedEmbeddingSync {
 public:
  // `config`: the cocktail codec settings (error feedback is switched on).
  static StatusOr<std::unique_ptr<CompressedEmbeddingSync>> Create(compression::CodecConfig config);

  // Replaces `parameter`'s gradient on both ends of `pair` by the sum of the two compressed
  // parts of step `step`; adds the bytes this end sent to *wire_bytes.
  Status Sync(net::Transport& pair, const at::Tensor& parameter, uint64_t step,
              net::Timeout timeout, uint64_t* wire_bytes);

 private:
  CompressedEmbeddingSync(std::unique_ptr<compression::Codec> codec,
                          compression::CodecConfig config)
      : codec_(std::move(codec)), decoder_(std::move(config)) {}

  std::unique_ptr<compression::Codec> codec_;
  compression::LinkDecoder decoder_;
  std::vector<uint8_t> frame_;
};

}  // namespace geotrain::runtime
