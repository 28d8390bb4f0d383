// The three kinds of part a stage chains, which each model family implements.
//
//   token ids [B, S] ──StageInput──► hidden [B, S, H] ──TransformerBlock × n──► hidden
//       ──StageOutput──► logits [B, S, vocab]
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

// Token (and, for GPT-2, position) embeddings: int64 ids [B, S] -> hidden [B, S, H].
class StageInput {
 public:
  virtual ~StageInput() = default;
  virtual at::Tensor Forward(const at::Tensor& token_ids) const = 0;
};

// One transformer layer: hidden [B, S, H] -> hidden [B, S, H], causal over S.
class TransformerBlock {
 public:
  virtual ~TransformerBlock() = default;
  virtual at::Tensor Forward(const at::Tensor& hidden) const = 0;
};

// Final norm and LM head: hidden [B, S, H] -> logits [B, S, vocab].
class StageOutput {
 public:
  virtual ~StageOutput() = default;
  virtual at::Tensor Forward(const at::Tensor& hidden) const = 0;
};

// What one stage computes; input and output are null unless the stage is first / last.
struct StageParts {
  std::unique_ptr<StageInput> input;
  std::vector<std::unique_ptr<TransformerBlock>> blocks;
  std::unique_ptr<StageOutput> output;
};

}  // namespace geotrain::models
