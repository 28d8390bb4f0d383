// The three kinds of part a stage chains, which each model family implements.
//
//   token ids [B, S] ──StageInput──► hidden [B, S, H] ──TransformerBlock × n──► hidden
//       ──StageOutput──► logits [B, S, vocab] (language models) or [B, labels] (classifiers)
//
// Every part also sees the batch's SequenceContext: decoders (causal) ignore it, encoders take the
// padding mask and segment ids from it.
//
// A part holds (shared) references to its parameter tensors, taken from a ParameterTable, and
// computes with functional ATen ops, so autograd records every step and a stage can backpropagate
// a gradient that arrives from the next stage. Parts are immutable after construction; Forward
// may be called from several threads at once.
#pragma once

#include <ATen/ATen.h>

#include <memory>
#include <vector>

namespace geotrain::models {

// What a batch carries besides its tokens or hidden states. Undefined tensors mean "none".
struct SequenceContext {
  at::Tensor attention_mask;  // [B, S]: nonzero = a token, 0 = padding (never attended to)
  at::Tensor token_type_ids;  // [B, S] int64 segment ids (BERT's sentence A / B); none: all 0
};

// Token (and position, segment) embeddings: int64 ids [B, S] -> hidden [B, S, H].
class StageInput {
 public:
  virtual ~StageInput() = default;
  virtual at::Tensor Forward(const at::Tensor& token_ids, const SequenceContext& context) const = 0;
};

// One transformer layer: hidden [B, S, H] -> hidden [B, S, H]; causal over S in decoders.
class TransformerBlock {
 public:
  virtual ~TransformerBlock() = default;
  virtual at::Tensor Forward(const at::Tensor& hidden, const SequenceContext& context) const = 0;
};

// Final norm and LM head: hidden [B, S, H] -> logits [B, S, vocab]; or a classifier's pooler and
// head: -> logits [B, labels].
class StageOutput {
 public:
  virtual ~StageOutput() = default;
  virtual at::Tensor Forward(const at::Tensor& hidden, const SequenceContext& context) const = 0;
};

// What one stage computes; input and output are null unless the stage is first / last.
struct StageParts {
  std::unique_ptr<StageInput> input;
  std::vector<std::unique_ptr<TransformerBlock>> blocks;
  std::unique_ptr<StageOutput> output;
};

}  // namespace geotrain::models
