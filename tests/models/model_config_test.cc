// ParseModelConfig: Hugging Face config.json files of each family, the defaults transformers
// applies, and errors that name the file and the field.
#include "models/model_config.h"

#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

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

// OPT, GPT-NeoX and GPT-J as transformers writes them (tests/golden/models), each family's own
// field names and defaults.
TEST(ModelConfigTest, OptGptNeoXAndGptJFilesWrittenByTransformers) {
  const auto load = [](const std::string& name) {
    StatusOr<ModelConfig> c = LoadModelConfig(kSourceDir + "/tests/golden/models/" + name);
    EXPECT_TRUE(c.ok()) << name << ": " << c.status().ToString();
    return c.ok() ? *c : ModelConfig();
  };
  const ModelConfig opt = load("opt");
  EXPECT_EQ(opt.family, ModelFamily::kOpt);
  EXPECT_EQ(opt.hidden_size, 32);
  EXPECT_EQ(opt.embedding_dim, 24);  // word_embed_proj_dim: project_in / project_out
  EXPECT_EQ(opt.intermediate_size, 72);
  EXPECT_EQ(opt.activation, Activation::kRelu);
  EXPECT_TRUE(opt.attention_bias);
  EXPECT_TRUE(opt.tie_word_embeddings);

  const ModelConfig neox = load("gpt_neox");
  EXPECT_EQ(neox.family, ModelFamily::kGptNeoX);
  EXPECT_EQ(neox.head_dim, 16);
  EXPECT_EQ(neox.rotary_dim, 4);  // rope_parameters.partial_rotary_factor 0.25
  EXPECT_TRUE(neox.parallel_residual);
  EXPECT_EQ(neox.activation, Activation::kGelu);
  EXPECT_FALSE(neox.tie_word_embeddings);
  const ModelConfig neox_variant = load("gpt_neox_variant");
  EXPECT_EQ(neox_variant.rotary_dim, 4);  // 0.5 of 8
  EXPECT_DOUBLE_EQ(neox_variant.rope_theta, 500.0);
  EXPECT_FALSE(neox_variant.parallel_residual);
  EXPECT_FALSE(neox_variant.attention_bias);

  const ModelConfig gptj = load("gptj");
  EXPECT_EQ(gptj.family, ModelFamily::kGptJ);
  EXPECT_EQ(gptj.rotary_dim, 6);
  EXPECT_EQ(gptj.intermediate_size, 128);  // n_inner null: 4 * n_embd
  EXPECT_TRUE(gptj.lm_head_bias);
  EXPECT_EQ(gptj.activation, Activation::kGeluTanh);
}

// Checkpoints from before transformers 5 spell GPT-NeoX's rotary settings rotary_pct and
// rotary_emb_base; OPT, GPT-NeoX and GPT-J settings that geotrain does not implement are refused
// by name.
TEST(ModelConfigTest, OptGptNeoXAndGptJOlderSpellingsAndErrors) {
  const json neox = {{"model_type", "gpt_neox"}, {"hidden_size", 64},
                     {"intermediate_size", 256}, {"num_hidden_layers", 2},
                     {"num_attention_heads", 4}, {"vocab_size", 100},
                     {"rotary_pct", 0.5},        {"rotary_emb_base", 1000}};
  const StatusOr<ModelConfig> old = ParseModelConfig(neox.dump(), "config.json");
  ASSERT_TRUE(old.ok()) << old.status().ToString();
  EXPECT_EQ(old->rotary_dim, 8);
  EXPECT_DOUBLE_EQ(old->rope_theta, 1000.0);
  json bad = neox;
  bad["rotary_pct"] = 0.1;  // int(16 * 0.1) = 1 dimension
  ExpectError(bad,
              "config.json: rotary_pct: rotates 1 dimensions of a head of 16; it must be "
              "even and in [2, head size]");
  bad = neox;
  bad["hidden_act"] = "swish";
  ExpectError(bad,
              "config.json: hidden_act: \"swish\" is not supported (gelu, gelu_new, "
              "gelu_pytorch_tanh, relu)");

  const json opt = {{"model_type", "opt"},    {"hidden_size", 64},        {"ffn_dim", 256},
                    {"num_hidden_layers", 2}, {"num_attention_heads", 4}, {"vocab_size", 100}};
  ASSERT_TRUE(ParseModelConfig(opt.dump(), "config.json").ok());
  bad = opt;
  bad["do_layer_norm_before"] = false;  // OPT-350m
  ExpectError(bad, "config.json: do_layer_norm_before: false is not supported");
  bad = opt;
  bad.erase("ffn_dim");
  ExpectError(bad, "config.json: ffn_dim: missing");

  const json gptj = {{"model_type", "gptj"}, {"n_embd", 64},      {"n_layer", 2},
                     {"n_head", 4},          {"vocab_size", 100}, {"rotary_dim", 4}};
  ASSERT_TRUE(ParseModelConfig(gptj.dump(), "config.json").ok());
  bad = gptj;
  bad["rotary_dim"] = nullptr;
  ExpectError(bad, "config.json: rotary_dim: null (rotating the whole head) is not supported");
  bad = gptj;
  bad.erase("rotary_dim");  // the default, 64, is more than a head of 16
  ExpectError(bad,
              "config.json: rotary_dim: rotates 64 dimensions of a head of 16; it must be "
              "even and in [2, head size]");
}

// BERT as transformers writes BertForSequenceClassification: the classes from id2label; what
// is not implemented (regression, relative positions, a decoder) is refused by name.
TEST(ModelConfigTest, BertClassifier) {
  const StatusOr<ModelConfig> golden = LoadModelConfig(kSourceDir + "/tests/golden/models/bert");
  ASSERT_TRUE(golden.ok()) << golden.status().ToString();
  EXPECT_EQ(golden->family, ModelFamily::kBert);
  EXPECT_EQ(golden->num_labels, 3);
  EXPECT_TRUE(golden->IsClassifier());
  EXPECT_EQ(golden->type_vocab_size, 2);
  EXPECT_DOUBLE_EQ(golden->norm_eps, 1e-12);
  EXPECT_FALSE(golden->tie_word_embeddings);

  const json bert = {{"model_type", "bert"},     {"hidden_size", 64},
                     {"intermediate_size", 256}, {"num_hidden_layers", 2},
                     {"num_attention_heads", 4}, {"vocab_size", 100}};
  const StatusOr<ModelConfig> defaults = ParseModelConfig(bert.dump(), "config.json");
  ASSERT_TRUE(defaults.ok()) << defaults.status().ToString();
  EXPECT_EQ(defaults->num_labels, 2);  // transformers' default
  EXPECT_EQ(defaults->max_positions, 512);
  json bad = bert;
  bad["num_labels"] = 1;
  ExpectError(bad,
              "config.json: num_labels: 1 (regression) is not supported; classification "
              "needs >= 2");
  bad = bert;
  bad["id2label"] = {{"0", "no"}, {"1", "yes"}};
  bad["num_labels"] = 3;
  ExpectError(bad, "config.json: num_labels: 3 disagrees with the 2 entries of id2label");
  bad = bert;
  bad["position_embedding_type"] = "relative_key";
  ExpectError(bad,
              "config.json: position_embedding_type: \"relative_key\" is not supported "
              "(absolute)");
  bad = bert;
  bad["problem_type"] = "multi_label_classification";
  ExpectError(bad,
              "config.json: problem_type: \"multi_label_classification\" is not supported "
              "(single_label_classification)");
}

json DebertaJson() {
  return json{{"model_type", "deberta-v2"}, {"hidden_size", 64},        {"intermediate_size", 256},
              {"num_hidden_layers", 2},     {"num_attention_heads", 4}, {"vocab_size", 100}};
}

// DeBERTa-v2/v3 as transformers writes DebertaV2ForSequenceClassification, with DebertaV2Config's
// defaults (and the getattr defaults of the settings the config class does not declare).
TEST(ModelConfigTest, DebertaV2Classifier) {
  const StatusOr<ModelConfig> golden =
      LoadModelConfig(kSourceDir + "/tests/golden/models/deberta_v2");
  ASSERT_TRUE(golden.ok()) << golden.status().ToString();
  EXPECT_EQ(golden->family, ModelFamily::kDebertaV2);
  EXPECT_TRUE(golden->IsEncoder());
  EXPECT_TRUE(golden->IsClassifier());
  EXPECT_EQ(golden->num_labels, 3);
  EXPECT_EQ(golden->type_vocab_size, 0);
  EXPECT_DOUBLE_EQ(golden->norm_eps, 1e-7);
  EXPECT_TRUE(golden->relative_attention);
  EXPECT_EQ(golden->max_relative_positions, 64);  // -1: max_position_embeddings
  EXPECT_EQ(golden->position_buckets, 8);
  EXPECT_EQ(golden->RelativeAttentionSpan(), 8);
  EXPECT_TRUE(golden->attention_c2p);
  EXPECT_TRUE(golden->attention_p2c);
  EXPECT_TRUE(golden->share_attention_key);
  EXPECT_TRUE(golden->norm_relative_embeddings);
  EXPECT_FALSE(golden->position_biased_input);
  EXPECT_FALSE(golden->HasLearnedPositions());
  EXPECT_EQ(golden->embedding_dim, 32);
  EXPECT_EQ(golden->pooler_activation, Activation::kGelu);
  EXPECT_FALSE(golden->tie_word_embeddings);

  const StatusOr<ModelConfig> variant =
      LoadModelConfig(kSourceDir + "/tests/golden/models/deberta_v2_variant");
  ASSERT_TRUE(variant.ok()) << variant.status().ToString();
  EXPECT_EQ(variant->num_labels, 2);
  EXPECT_EQ(variant->embedding_dim, 24);
  EXPECT_EQ(variant->type_vocab_size, 2);
  EXPECT_TRUE(variant->position_biased_input);
  EXPECT_TRUE(variant->HasLearnedPositions());
  EXPECT_EQ(variant->position_buckets, 0);  // -1
  EXPECT_EQ(variant->RelativeAttentionSpan(), 6);
  EXPECT_TRUE(variant->attention_c2p);
  EXPECT_FALSE(variant->attention_p2c);
  EXPECT_FALSE(variant->share_attention_key);
  EXPECT_FALSE(variant->norm_relative_embeddings);
  EXPECT_EQ(variant->activation, Activation::kGeluTanh);
  EXPECT_EQ(variant->pooler_activation, Activation::kRelu);

  const StatusOr<ModelConfig> defaults = ParseModelConfig(DebertaJson().dump(), "config.json");
  ASSERT_TRUE(defaults.ok()) << defaults.status().ToString();
  EXPECT_EQ(defaults->num_labels, 2);
  EXPECT_EQ(defaults->max_positions, 512);
  EXPECT_EQ(defaults->type_vocab_size, 0);
  EXPECT_DOUBLE_EQ(defaults->norm_eps, 1e-7);
  EXPECT_EQ(defaults->activation, Activation::kGelu);
  EXPECT_FALSE(defaults->relative_attention);  // DebertaV2Config's default
  EXPECT_EQ(defaults->RelativeAttentionSpan(), 0);
  EXPECT_EQ(defaults->max_relative_positions, 512);
  EXPECT_EQ(defaults->position_buckets, 0);
  EXPECT_FALSE(defaults->attention_c2p);
  EXPECT_FALSE(defaults->attention_p2c);
  EXPECT_FALSE(defaults->share_attention_key);
  EXPECT_FALSE(defaults->norm_relative_embeddings);
  EXPECT_TRUE(defaults->position_biased_input);
  EXPECT_EQ(defaults->embedding_dim, 64);
  EXPECT_EQ(defaults->pooler_activation, Activation::kGelu);
  EXPECT_EQ(defaults->conv_kernel_size, 0);  // no ConvLayer
  EXPECT_EQ(defaults->conv_groups, 1);
  EXPECT_EQ(golden->conv_kernel_size, 0);

  // deberta-v2-xlarge's ConvLayer.
  const StatusOr<ModelConfig> conv =
      LoadModelConfig(kSourceDir + "/tests/golden/models/deberta_v2_conv");
  ASSERT_TRUE(conv.ok()) << conv.status().ToString();
  EXPECT_EQ(conv->conv_kernel_size, 3);
  EXPECT_EQ(conv->conv_groups, 1);
  EXPECT_EQ(conv->conv_activation, Activation::kGelu);
  const StatusOr<ModelConfig> grouped =
      LoadModelConfig(kSourceDir + "/tests/golden/models/deberta_v2_conv_groups");
  ASSERT_TRUE(grouped.ok()) << grouped.status().ToString();
  EXPECT_EQ(grouped->conv_kernel_size, 5);
  EXPECT_EQ(grouped->conv_groups, 2);
  EXPECT_EQ(grouped->conv_activation, Activation::kGeluTanh);

  // DeBERTa-v3's own files spell pos_att_type and norm_rel_ebd as "|"-separated strings, which
  // transformers lower-cases and strips.
  json v3 = DebertaJson();
  v3["relative_attention"] = true;
  v3["position_buckets"] = 256;
  v3["pos_att_type"] = "P2C | c2p";
  v3["norm_rel_ebd"] = "layer_norm";
  v3["max_relative_positions"] = -1;
  v3["pooler_hidden_size"] = 64;
  v3["conv_kernel_size"] = 0;
  const StatusOr<ModelConfig> parsed = ParseModelConfig(v3.dump(), "config.json");
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_TRUE(parsed->attention_c2p);
  EXPECT_TRUE(parsed->attention_p2c);
  EXPECT_TRUE(parsed->norm_relative_embeddings);
  EXPECT_EQ(parsed->RelativeAttentionSpan(), 256);

  json with_conv = v3;
  with_conv["conv_kernel_size"] = 3;
  with_conv["conv_act"] = "gelu";
  const StatusOr<ModelConfig> convolved = ParseModelConfig(with_conv.dump(), "config.json");
  ASSERT_TRUE(convolved.ok()) << convolved.status().ToString();
  EXPECT_EQ(convolved->conv_kernel_size, 3);
  EXPECT_EQ(convolved->conv_groups, 1);  // transformers' getattr default
  EXPECT_EQ(convolved->conv_activation, Activation::kGelu);
  // conv_groups and conv_act are read only with a convolution.
  json unused = v3;
  unused["conv_groups"] = 5;
  unused["conv_act"] = "tanh";
  ASSERT_TRUE(ParseModelConfig(unused.dump(), "config.json").ok());

  json bad = with_conv;
  bad.erase("conv_act");  // transformers' default "tanh"
  ExpectError(bad,
              "config.json: conv_act: \"tanh\" is not supported (gelu, gelu_new, "
              "gelu_pytorch_tanh, relu)");
  bad = with_conv;
  bad["conv_act"] = "swish";
  ExpectError(bad,
              "config.json: conv_act: \"swish\" is not supported (gelu, gelu_new, "
              "gelu_pytorch_tanh, relu)");
  bad = with_conv;
  bad["conv_kernel_size"] = 4;
  ExpectError(bad, "config.json: conv_kernel_size: 4 is not supported (only odd sizes)");
  bad = with_conv;
  bad["conv_groups"] = 3;
  ExpectError(bad, "config.json: conv_groups: 3 does not divide hidden_size 64");
  bad = with_conv;
  bad["conv_groups"] = 0;
  EXPECT_FALSE(ParseModelConfig(bad.dump(), "config.json").ok());
  ModelConfig even = *convolved;
  even.conv_kernel_size = 2;
  EXPECT_EQ(ValidateModelConfig(even, "model config").message(),
            "model config: conv_kernel_size: 2 must be odd and positive");
  ModelConfig ungrouped = *convolved;
  ungrouped.conv_groups = 7;
  EXPECT_EQ(ValidateModelConfig(ungrouped, "model config").message(),
            "model config: conv_groups: 7 does not divide hidden_size 64");
  bad = v3;
  bad["pooler_hidden_size"] = 32;
  ExpectError(bad, "config.json: pooler_hidden_size: 32 is not supported (only hidden_size 64)");
  bad = v3;
  bad["pos_att_type"] = {"c2p", "p2p"};
  ExpectError(bad, "config.json: pos_att_type: \"p2p\" is not supported (c2p, p2c)");
  bad = v3;
  bad["pos_att_type"] = "p2c|c2p|p2p";
  ExpectError(bad, "config.json: pos_att_type: \"p2p\" is not supported (c2p, p2c)");
  bad = v3;
  bad["pos_att_type"] = {"c2p", 1};
  ExpectError(bad, "config.json: pos_att_type[1]: expected a string, got an integer");
  bad = v3;
  bad["norm_rel_ebd"] = "batch_norm";
  ExpectError(bad,
              "config.json: norm_rel_ebd: \"batch_norm\" is not supported (layer_norm, "
              "none)");
  bad = v3;
  bad["relative_attention"] = false;
  ExpectError(bad,
              "config.json: norm_rel_ebd: \"layer_norm\" without relative_attention is not "
              "supported");
  bad = v3;
  bad["attention_head_size"] = 8;
  ExpectError(bad,
              "config.json: attention_head_size: 8 is not supported (only hidden_size / "
              "num_attention_heads = 16)");
  bad = v3;
  bad["position_buckets"] = 1;
  ExpectError(bad, "config.json: position_buckets: 1 is not supported (log buckets need >= 2)");
  bad = v3;
  bad["position_buckets"] = 8;
  bad["max_relative_positions"] = 5;
  ExpectError(bad,
              "config.json: max_relative_positions: 5 must exceed position_buckets / 2 + 1 "
              "= 5");
  bad = v3;
  bad["max_relative_positions"] = "512";
  ExpectError(bad, "config.json: max_relative_positions: expected an integer, got a string");
  bad = v3;
  bad["pooler_hidden_act"] = "tanh";
  ExpectError(bad,
              "config.json: pooler_hidden_act: \"tanh\" is not supported (gelu, gelu_new, "
              "gelu_pytorch_tanh, relu)");
  bad = v3;
  bad["num_labels"] = 1;
  ExpectError(bad,
              "config.json: num_labels: 1 (regression) is not supported; classification "
              "needs >= 2");

  // A hand-built DeBERTa config must classify, like BERT's.
  ModelConfig unlabelled = *defaults;
  unlabelled.num_labels = 0;
  EXPECT_EQ(ValidateModelConfig(unlabelled, "model config").message(),
            "model config: num_labels: 0 (a classifier needs >= 2)");
}

TEST(ModelConfigTest, BundledPresets) {
  for (const char* preset : {"gpt2-tiny", "llama-tiny", "opt-tiny", "gpt-neox-tiny", "gptj-tiny"}) {
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
  ExpectError(config,
              "config.json: model_type: \"mistral\" is not supported (gpt2, llama, qwen2, "
              "opt, gpt_neox, gptj, bert, deberta-v2)");

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
  std::vector<json> originals = {Gpt2Json(), gpt2, LlamaJson(), llama, qwen2, DebertaJson()};
  for (const char* golden :
       {"opt", "gpt_neox", "gpt_neox_variant", "gptj", "bert", "deberta_v2", "deberta_v2_variant",
        "deberta_v2_p2c", "deberta_v2_conv", "deberta_v2_conv_groups"}) {
    std::ifstream file(kSourceDir + "/tests/golden/models/" + golden + "/config.json");
    originals.push_back(json::parse(file));
  }
  for (const json& original : originals) {
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
    EXPECT_EQ(second->activation, first->activation);
    EXPECT_EQ(second->embedding_dim, first->embedding_dim);
    EXPECT_EQ(second->rotary_dim, first->rotary_dim);
    EXPECT_EQ(second->parallel_residual, first->parallel_residual);
    EXPECT_EQ(second->lm_head_bias, first->lm_head_bias);
    EXPECT_EQ(second->initializer_range, first->initializer_range);
    EXPECT_EQ(second->type_vocab_size, first->type_vocab_size);
    EXPECT_EQ(second->num_labels, first->num_labels);
    EXPECT_EQ(second->pooler_activation, first->pooler_activation);
    EXPECT_EQ(second->position_biased_input, first->position_biased_input);
    EXPECT_EQ(second->relative_attention, first->relative_attention);
    EXPECT_EQ(second->max_relative_positions, first->max_relative_positions);
    EXPECT_EQ(second->position_buckets, first->position_buckets);
    EXPECT_EQ(second->attention_c2p, first->attention_c2p);
    EXPECT_EQ(second->attention_p2c, first->attention_p2c);
    EXPECT_EQ(second->share_attention_key, first->share_attention_key);
    EXPECT_EQ(second->norm_relative_embeddings, first->norm_relative_embeddings);
    EXPECT_EQ(second->conv_kernel_size, first->conv_kernel_size);
    EXPECT_EQ(second->conv_groups, first->conv_groups);
    EXPECT_EQ(second->conv_activation, first->conv_activation);
  }
}

}  // namespace
}  // namespace geotrain::models
