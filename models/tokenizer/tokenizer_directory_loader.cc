// LoadTokenizerDirectory (tokenizer_loaders.h): which files of a model directory to read.
#include <sys/stat.h>

#include "common/io/file_contents.h"
#include "common/io/strict_json.h"
#include "models/tokenizer/tokenizer_loaders.h"

namespace geotrain::models {
namespace {

constexpr size_t kMaxConfigBytes = 16 << 20;

bool Exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

// The settings of transformers' tokenizer_config.json that change how BertTokenizerFast built
// from vocab.txt normalizes; other keys are about the Python wrapper and are not read.
Status ApplyTokenizerConfig(const std::string& path, WordPieceVocabOptions* options) {
  GEOTRAIN_ASSIGN_OR_RETURN(const std::string text, io::ReadFileContents(path, kMaxConfigBytes));
  GEOTRAIN_ASSIGN_OR_RETURN(const nlohmann::json config, io::ParseStrictJson(text, path));
  if (!config.is_object()) {
    return InvalidArgument(path + ": expected a JSON object, got " + io::JsonKindName(config));
  }
  BertNormalizerOptions& normalizer = options->tokenizer.normalizer;
  const auto read_bool = [&](const char* key, bool* value) -> Status {
    auto it = config.find(key);
    if (it == config.end() || it->is_null()) return OkStatus();
    if (!it->is_boolean()) {
      return InvalidArgument(path + ": " + key + ": expected a boolean, got " +
                             io::JsonKindName(*it));
    }
    *value = it->get<bool>();
    return OkStatus();
  };
  GEOTRAIN_RETURN_IF_ERROR(read_bool("do_lower_case", &normalizer.lowercase));
  GEOTRAIN_RETURN_IF_ERROR(read_bool("tokenize_chinese_chars", &normalizer.handle_chinese_chars));
  // strip_accents null (or absent) follows lowercasing, as in the library.
  normalizer.strip_accents = normalizer.lowercase;
  GEOTRAIN_RETURN_IF_ERROR(read_bool("strip_accents", &normalizer.strip_accents));
  return OkStatus();
}

}  // namespace

StatusOr<std::unique_ptr<Tokenizer>> LoadTokenizerDirectory(const std::string& dir) {
  const std::string json_path = dir + "/tokenizer.json";
  if (Exists(json_path)) return LoadAnyTokenizerJson(json_path);
  const std::string vocab_path = dir + "/vocab.json";
  const std::string merges_path = dir + "/merges.txt";
  if (Exists(vocab_path) && Exists(merges_path)) {
    return AsTokenizer(LoadVocabMergesTokenizer(vocab_path, merges_path));
  }
  const std::string wordpiece_path = dir + "/vocab.txt";
  if (Exists(wordpiece_path)) {
    WordPieceVocabOptions options;
    const std::string config_path = dir + "/tokenizer_config.json";
    if (Exists(config_path)) GEOTRAIN_RETURN_IF_ERROR(ApplyTokenizerConfig(config_path, &options));
    return AsTokenizer(LoadWordPieceVocab(wordpiece_path, options));
  }
  return NotFound(dir + ": neither tokenizer.json, vocab.json + merges.txt nor vocab.txt");
}

}  // namespace geotrain::models
