// ParseModelConfig: Hugging Face config.json files of each family, the defaults transformers
// applies, and errors that name the file and the field.
#include "models/model_config.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

namespace geotrain::models {
namespace {

using nlohmann::json;

const std::string kSourceDir = GEOTRAIN_SOURCE_DIR;

json Gpt2Json() {
  return json{
      {"model_type", "gpt2"}, {"n_embd", 64}, {"n_layer", 4}, {"n_head", 4}, {"vocab_size", 50257}};
}

json LlamaJson() {
  return json{{"model_type", "llama"},  {"hidden_size", 64},        {"intermediate_size", 172},
              {"num_hidden_layers", 4}, {"num_attention_heads", 4}, {"vocab_size", 1000}};
}

void ExpectError(const json& config, const std::string& message) {
  const StatusOr<ModelConfig> parsed = ParseModelConfig(config.dump(), "config.json");
  ASSERT_FALSE(parsed.ok()) << config.dump();
  EXPECT_EQ(parsed.status().message(), message) << config.dump();
}

TEST(ModelConfigTest, Gpt2WithTransformersDefaults) {
  const StatusOr<ModelConfig> c = ParseModelConfig(Gpt2Json().dump(), "config.json");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->family, ModelFamily::kGpt2);
  EXPECT_EQ(c->hidden_size, 64);
  EXPECT_EQ(c->num_layers, 4);
  EXPECT_EQ(c->num_heads, 4);
  EXPECT_EQ(c->num_kv_heads, 4);
  EXPECT_EQ(c->head_dim, 16);
  EXPECT_EQ(c->intermediate_size, 256);  // n_inner absent: 4 * n_embd
  EXPECT_EQ(c->max_positions, 1024);
  EXPECT_DOUBLE_EQ(c->norm_eps, 1e-5);
  EXPECT_TRUE(c->tie_word_embeddings);
  EXPECT_TRUE(c->attention_bias);
}

TEST(ModelConfigTest, LlamaWithTransformersDefaults) {
  const StatusOr<ModelConfig> c = ParseModelConfig(LlamaJson().dump(), "config.json");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->family, ModelFamily::kLlama);
  EXPECT_EQ(c->num_kv_heads, 4);  // num_key_value_heads absent: plain multi-head attention
  EXPECT_EQ(c->head_dim, 16);
  EXPECT_EQ(c->max_positions, 2048);
  EXPECT_DOUBLE_EQ(c->norm_eps, 1e-6);
  EXPECT_DOUBLE_EQ(c->rope_theta, 10000.0);
  EXPECT_FALSE(c->tie_word_embeddings);
  EXPECT_FALSE(c->attention_bias);
  EXPECT_FALSE(c->mlp_bias);
}

TEST(ModelConfigTest, FilesWrittenByTransformers) {
  // transformers 5 writes rope_theta inside rope_parameters, and layer_types for qwen2.
  const StatusOr<ModelConfig> qwen2 = LoadModelConfig(kSourceDir + "/tests/golden/models/qwen2");
  ASSERT_TRUE(qwen2.ok()) << qwen2.status().ToString();
  EXPECT_EQ(qwen2->family, ModelFamily::kQwen2);
  EXPECT_EQ(qwen2->hidden_size, 48);
  EXPECT_EQ(qwen2->num_heads, 6);
  EXPECT_EQ(qwen2->num_kv_heads, 2);
  EXPECT_DOUBLE_EQ(qwen2->rope_theta, 1e6);
  EXPECT_TRUE(qwen2->tie_word_embeddings);
  EXPECT_TRUE(qwen2->attention_bias);
  EXPECT_FALSE(qwen2->mlp_bias);

  const StatusOr<ModelConfig> variant =
      LoadModelConfig(kSourceDir + "/tests/golden/models/llama_variant");
  ASSERT_TRUE(variant.ok()) << variant.status().ToString();
  EXPECT_EQ(variant->head_dim, 12);  // explicit, not hidden_size / num_attention_heads
  EXPECT_EQ(variant->num_kv_heads, 1);
  EXPECT_TRUE(variant->attention_bias);
  EXPECT_TRUE(variant->mlp_bias);

  const StatusOr<ModelConfig> gpt2 = LoadModelConfig(kSourceDir + "/tests/golden/models/gpt2");
  ASSERT_TRUE(gpt2.ok()) << gpt2.status().ToString();
  EXPECT_EQ(gpt2->max_positions, 64);
}

TEST(ModelConfigTest, BundledPresets) {
  for (const char* preset : {"gpt2-tiny", "llama-tiny"}) {
    const StatusOr<ModelConfig> c = LoadModelConfig(kSourceDir + "/examples/models/" + preset);
    ASSERT_TRUE(c.ok()) << preset << ": " << c.status().ToString();
    EXPECT_EQ(c->vocab_size, 50257) << preset;  // the bundled GPT-2 tokenizer
    EXPECT_EQ(c->hidden_size, 64) << preset;
    EXPECT_EQ(c->num_layers, 4) << preset;
  }
}

TEST(ModelConfigTest, TopLevelRopeThetaOfOlderFiles) {
  json config = LlamaJson();
  config["rope_theta"] = 100000;  // SmolLM2's spelling, an integer
  config["rope_scaling"] = nullptr;
  const StatusOr<ModelConfig> c = ParseModelConfig(config.dump(), "config.json");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_DOUBLE_EQ(c->rope_theta, 100000.0);
}

TEST(ModelConfigTest, ErrorsNameTheField) {
  json config = Gpt2Json();
  config["n_head"] = 5;
  ExpectError(config, "config.json: n_head: 5 does not divide n_embd 64");

  config = Gpt2Json();
  config.erase("n_layer");
  ExpectError(config, "config.json: n_layer: missing");

  config = Gpt2Json();
  config["n_embd"] = "64";
  ExpectError(config, "config.json: n_embd: expected an integer, got a string");

  config = Gpt2Json();
  config["n_embd"] = 0;
  ExpectError(config, "config.json: n_embd: must be positive");

  config = Gpt2Json();
  config["activation_function"] = "relu";
  ExpectError(config,
              "config.json: activation_function: \"relu\" is not supported (only gelu_new)");

  config = Gpt2Json();
  config["scale_attn_by_inverse_layer_idx"] = true;
  ExpectError(config, "config.json: scale_attn_by_inverse_layer_idx: true is not supported");

  config = Gpt2Json();
  config["layer_norm_epsilon"] = -1;
  ExpectError(config, "config.json: layer_norm_epsilon: -1 must be a positive finite number");

  config = LlamaJson();
  config["num_key_value_heads"] = 3;
  ExpectError(config, "config.json: num_key_value_heads: 3 does not divide num_attention_heads 4");

  config = LlamaJson();
  config["num_attention_heads"] = 6;
  ExpectError(config, "config.json: num_attention_heads: 6 does not divide hidden_size 64");

  config = LlamaJson();
  config["hidden_act"] = "gelu";
  ExpectError(config, "config.json: hidden_act: \"gelu\" is not supported (only silu)");

  config = LlamaJson();
  config["rope_scaling"] = {{"type", "linear"}, {"factor", 2.0}};
  ExpectError(config,
              "config.json: rope_scaling: {\"factor\":2.0,\"type\":\"linear\"} is not supported");

  config = LlamaJson();
  config["rope_parameters"] = {{"rope_type", "yarn"}, {"rope_theta", 10000.0}};
  ExpectError(config, "config.json: rope_parameters.rope_type: \"yarn\" is not supported");

  config = LlamaJson();
  config["model_type"] = "qwen2";
  config["use_sliding_window"] = true;
  ExpectError(config, "config.json: use_sliding_window: true is not supported");

  config = LlamaJson();
  config["model_type"] = "qwen2";
  config["layer_types"] = {"full_attention", "sliding_attention"};
  ExpectError(config,
              "config.json: layer_types[1]: \"sliding_attention\" is not supported (only "
              "full_attention)");

  config = LlamaJson();
  config["model_type"] = "mistral";
  ExpectError(config, "config.json: model_type: \"mistral\" is not supported (gpt2, llama, qwen2)");

  config = LlamaJson();
  config.erase("model_type");
  ExpectError(config, "config.json: model_type: missing");

  const StatusOr<ModelConfig> not_json = ParseModelConfig("{\"n_embd\": ", "config.json");
  ASSERT_FALSE(not_json.ok());
  EXPECT_NE(not_json.status().message().find("config.json: invalid JSON"), std::string::npos);

  EXPECT_EQ(LoadModelConfig("/nonexistent/model").status().code(), StatusCode::kNotFound);
}

TEST(ModelConfigTest, JsonRoundTripForEveryFamily) {
  json qwen2 = LlamaJson();
  qwen2["model_type"] = "qwen2";
  qwen2["num_key_value_heads"] = 2;
  qwen2["tie_word_embeddings"] = true;
  json llama = LlamaJson();
  llama["head_dim"] = 8;
  llama["attention_bias"] = true;
  llama["rope_theta"] = 5e5;
  json gpt2 = Gpt2Json();
  gpt2["n_inner"] = 100;
  gpt2["tie_word_embeddings"] = false;
  for (const json& original : {Gpt2Json(), gpt2, LlamaJson(), llama, qwen2}) {
    const StatusOr<ModelConfig> first = ParseModelConfig(original.dump(), "original");
    ASSERT_TRUE(first.ok()) << first.status().ToString();
    const std::string written = ModelConfigToJson(*first);
    const StatusOr<ModelConfig> second = ParseModelConfig(written, "written");
    ASSERT_TRUE(second.ok()) << second.status().ToString() << "\n" << written;
    EXPECT_EQ(second->family, first->family);
    EXPECT_EQ(second->vocab_size, first->vocab_size);
    EXPECT_EQ(second->hidden_size, first->hidden_size);
    EXPECT_EQ(second->num_layers, first->num_layers);
    EXPECT_EQ(second->num_heads, first->num_heads);
    EXPECT_EQ(second->num_kv_heads, first->num_kv_heads);
    EXPECT_EQ(second->head_dim, first->head_dim);
    EXPECT_EQ(second->intermediate_size, first->intermediate_size);
    EXPECT_EQ(second->max_positions, first->max_positions);
    EXPECT_EQ(second->norm_eps, first->norm_eps);
    EXPECT_EQ(second->rope_theta, first->rope_theta);
    EXPECT_EQ(second->tie_word_embeddings, first->tie_word_embeddings);
    EXPECT_EQ(second->attention_bias, first->attention_bias);
    EXPECT_EQ(second->mlp_bias, first->mlp_bias);
  }
}

}  // namespace
}  // namespace geotrain::models
