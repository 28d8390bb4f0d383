// ImportGgufModel (gguf_import.h).
#include "models/gguf/gguf_import.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <regex>

#include "common/io/atomic_file_writer.h"
#include "models/gguf/gguf_tokenizer_json.h"
#include "models/model_layout.h"
#include "models/safetensors_writer.h"

namespace geotrain::models {
namespace {

// llama.cpp tensor names (gguf-py constants.py, MODEL_TENSOR) -> Hugging Face Llama names.
const std::map<std::string, std::string>& GlobalNames() {
  static const auto* names = new std::map<std::string, std::string>{
      {"token_embd.weight", "model.embed_tokens.weight"},
      {"output_norm.weight", "model.norm.weight"},
      {"output.weight", "lm_head.weight"},
  };
  return *names;
}

const std::map<std::string, std::string>& LayerNames() {
  static const auto* names = new std::map<std::string, std::string>{
      {"attn_norm.weight", "input_layernorm.weight"},
      {"attn_q.weight", "self_attn.q_proj.weight"},
      {"attn_k.weight", "self_attn.k_proj.weight"},
      {"attn_v.weight", "self_attn.v_proj.weight"},
      {"attn_output.weight", "self_attn.o_proj.weight"},
      {"ffn_norm.weight", "post_attention_layernorm.weight"},
      {"ffn_gate.weight", "mlp.gate_proj.weight"},
      {"ffn_up.weight", "mlp.up_proj.weight"},
      {"ffn_down.weight", "mlp.down_proj.weight"},
  };
  return *names;
}

StatusOr<int64_t> GetInt(const GgufFile& file, const std::string& key) {
  GEOTRAIN_ASSIGN_OR_RETURN(const GgufValue* value, file.GetMetadata(key));
  if (value->is_array) return InvalidArgument(file.path() + ": " + key + ": expected a scalar");
  auto result = value->Int64(key);
  if (!result.ok()) return result.status().WithContext(file.path());
  return result;
}

StatusOr<double> GetDouble(const GgufFile& file, const std::string& key) {
  GEOTRAIN_ASSIGN_OR_RETURN(const GgufValue* value, file.GetMetadata(key));
  if (value->is_array) return InvalidArgument(file.path() + ": " + key + ": expected a scalar");
  auto result = value->Double(key);
  if (!result.ok()) return result.status().WithContext(file.path());
  return result;
}

Status MakeDirectory(const std::string& dir) {
  if (mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
    return Unavailable(dir + ": cannot create directory: " + std::strerror(errno));
  }
  return OkStatus();
}

Status WriteTextFile(const std::string& path, const std::string& text) {
  GEOTRAIN_ASSIGN_OR_RETURN(std::unique_ptr<io::AtomicFileWriter> writer,
                            io::AtomicFileWriter::Create(path));
  GEOTRAIN_RETURN_IF_ERROR(writer->Append(text.data(), text.size()));
  return writer->Commit();
}

bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

StatusOr<std::string> GgufToHuggingFaceTensorName(const std::string& gguf_name) {
  auto global = GlobalNames().find(gguf_name);
  if (global != GlobalNames().end()) return global->second;
  static const std::regex kLayerName(R"(blk\.(0|[1-9][0-9]{0,5})\.(.+))");
  std::smatch match;
  if (std::regex_match(gguf_name, match, kLayerName)) {
    auto layer = LayerNames().find(match[2].str());
    if (layer != LayerNames().end()) return "model.layers." + match[1].str() + "." + layer->second;
  }
  return NotFound("tensor " + gguf_name + " has no Hugging Face llama equivalent");
}

StatusOr<std::vector<float>> UnpermuteRotaryRows(Span<const float> values, int64_t rows,
                                                 int64_t cols, int64_t n_head) {
  if (n_head <= 0 || rows % n_head != 0 || (rows / n_head) % 2 != 0 ||
      values.size() != static_cast<size_t>(rows * cols)) {
    return InvalidArgument("cannot undo the rotary permutation of a [" + std::to_string(rows) +
                           ", " + std::to_string(cols) + "] matrix over " + std::to_string(n_head) +
                           " heads");
  }
  const int64_t head_dim = rows / n_head;
  const int64_t half = head_dim / 2;
  std::vector<float> out(values.size());
  for (int64_t h = 0; h < n_head; ++h) {
    for (int64_t s = 0; s < 2; ++s) {
      for (int64_t j = 0; j < half; ++j) {
        const float* src = values.data() + (h * head_dim + 2 * j + s) * cols;
        std::copy(src, src + cols, out.data() + (h * head_dim + s * half + j) * cols);
      }
    }
  }
  return out;
}

StatusOr<ModelConfig> GgufLlamaConfig(const GgufFile& file) {
  GEOTRAIN_ASSIGN_OR_RETURN(const GgufValue* arch_value, file.GetMetadata("general.architecture"));
  GEOTRAIN_ASSIGN_OR_RETURN(std::string arch, arch_value->String("general.architecture"));
  if (arch != "llama") {
    return InvalidArgument(file.path() + ": general.architecture: " + arch +
                           " is not supported (geotrain imports llama)");
  }
  if (const GgufValue* scaling = file.FindMetadata("llama.rope.scaling.type")) {
    auto type = scaling->String("llama.rope.scaling.type");
    if (!type.ok() || *type != "none") {
      return InvalidArgument(
          file.path() + ": llama.rope.scaling.type: " + (type.ok() ? *type : scaling->TypeName()) +
          " is not supported (geotrain implements plain RoPE)");
    }
  }
  ModelConfig config;
  config.family = ModelFamily::kLlama;
  GEOTRAIN_ASSIGN_OR_RETURN(config.hidden_size, GetInt(file, "llama.embedding_length"));
  GEOTRAIN_ASSIGN_OR_RETURN(config.num_layers, GetInt(file, "llama.block_count"));
  GEOTRAIN_ASSIGN_OR_RETURN(config.intermediate_size, GetInt(file, "llama.feed_forward_length"));
  GEOTRAIN_ASSIGN_OR_RETURN(config.num_heads, GetInt(file, "llama.attention.head_count"));
  config.num_kv_heads = config.num_heads;  // llama.cpp's default when the key is absent
  if (file.FindMetadata("llama.attention.head_count_kv") != nullptr) {
    GEOTRAIN_ASSIGN_OR_RETURN(config.num_kv_heads, GetInt(file, "llama.attention.head_count_kv"));
  }
  GEOTRAIN_ASSIGN_OR_RETURN(config.norm_eps,
                            GetDouble(file, "llama.attention.layer_norm_rms_epsilon"));
  if (file.FindMetadata("llama.rope.freq_base") != nullptr) {
    GEOTRAIN_ASSIGN_OR_RETURN(config.rope_theta, GetDouble(file, "llama.rope.freq_base"));
  }
  GEOTRAIN_ASSIGN_OR_RETURN(config.max_positions, GetInt(file, "llama.context_length"));
  if (config.num_heads <= 0 || config.hidden_size % config.num_heads != 0) {
    return InvalidArgument(
        file.path() + ": llama.attention.head_count: " + std::to_string(config.num_heads) +
        " does not divide " + "llama.embedding_length " + std::to_string(config.hidden_size));
  }
  config.head_dim = config.hidden_size / config.num_heads;
  if (file.FindMetadata("llama.attention.key_length") != nullptr) {
    GEOTRAIN_ASSIGN_OR_RETURN(config.head_dim, GetInt(file, "llama.attention.key_length"));
  }
  if (file.FindMetadata("llama.rope.dimension_count") != nullptr) {
    GEOTRAIN_ASSIGN_OR_RETURN(const int64_t rotary_dims,
                              GetInt(file, "llama.rope.dimension_count"));
    if (rotary_dims != config.head_dim) {
      return InvalidArgument(file.path() +
                             ": llama.rope.dimension_count: " + std::to_string(rotary_dims) +
                             " differs from the head size " + std::to_string(config.head_dim) +
                             " (partial rotary embeddings are not supported)");
    }
  }
  GEOTRAIN_ASSIGN_OR_RETURN(const GgufValue* tokens, file.GetMetadata("tokenizer.ggml.tokens"));
  config.vocab_size = static_cast<int64_t>(tokens->size());
  config.tie_word_embeddings = file.FindTensor("output.weight") == nullptr;
  GEOTRAIN_RETURN_IF_ERROR(ValidateModelConfig(config, file.path()));
  return config;
}

Status ImportGgufModel(const std::string& gguf_path, const std::string& out_dir) {
  GEOTRAIN_ASSIGN_OR_RETURN(std::unique_ptr<GgufFile> file, GgufFile::Open(gguf_path));
  GEOTRAIN_ASSIGN_OR_RETURN(const ModelConfig config, GgufLlamaConfig(*file));
  GEOTRAIN_ASSIGN_OR_RETURN(const std::string tokenizer_json, GgufTokenizerToJson(*file));

  // Every tensor must map to a Hugging Face name with the shape the layout expects, and every
  // tensor the layout expects must be present.
  std::map<std::string, std::vector<int64_t>> expected;
  for (const TensorSpec& spec : ModelTensorSpecs(config)) expected[spec.name] = spec.shape;
  std::map<std::string, std::vector<float>> values;
  SafetensorsWriter writer;
  writer.SetMetadata("format", "pt");
  for (const GgufTensorInfo& tensor : file->tensors()) {
    auto hf_name = GgufToHuggingFaceTensorName(tensor.name);
    if (!hf_name.ok()) return hf_name.status().WithContext(gguf_path);
    auto spec = expected.find(*hf_name);
    if (spec == expected.end()) {
      return InvalidArgument(gguf_path + ": tensor " + tensor.name + " (" + *hf_name +
                             ") is not part of the model the metadata describes");
    }
    const std::vector<int64_t> shape = tensor.Shape();
    if (shape != spec->second) {
      std::string got, want;
      for (int64_t d : shape) got += (got.empty() ? "" : ", ") + std::to_string(d);
      for (int64_t d : spec->second) want += (want.empty() ? "" : ", ") + std::to_string(d);
      return InvalidArgument(gguf_path + ": tensor " + tensor.name + ": shape [" + got +
                             "] (PyTorch order), expected [" + want + "]");
    }
    GEOTRAIN_ASSIGN_OR_RETURN(std::vector<float> data, file->Dequantize(tensor));
    const bool is_q = EndsWith(tensor.name, ".attn_q.weight");
    const bool is_k = EndsWith(tensor.name, ".attn_k.weight");
    if (is_q || is_k) {
      GEOTRAIN_ASSIGN_OR_RETURN(data,
                                UnpermuteRotaryRows(Span<const float>(data), shape[0], shape[1],
                                                    is_q ? config.num_heads : config.num_kv_heads));
    }
    std::vector<float>& stored = values[*hf_name] = std::move(data);
    GEOTRAIN_RETURN_IF_ERROR(
        writer.AddFloat32(*hf_name, shape, Span<const float>(stored), SafetensorsDType::kF32));
    expected.erase(spec);
  }
  if (!expected.empty()) {
    return InvalidArgument(gguf_path + ": tensor for " + expected.begin()->first + " is missing (" +
                           std::to_string(expected.size()) + " missing)");
  }
  GEOTRAIN_RETURN_IF_ERROR(MakeDirectory(out_dir));
  GEOTRAIN_RETURN_IF_ERROR(writer.Write(out_dir + "/model.safetensors"));
  GEOTRAIN_RETURN_IF_ERROR(WriteTextFile(out_dir + "/config.json", ModelConfigToJson(config)));
  return WriteTextFile(out_dir + "/tokenizer.json", tokenizer_json);
}

}  // namespace geotrain::models
