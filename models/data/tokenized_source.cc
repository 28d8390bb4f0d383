#include "models/data/tokenized_source.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string_view>

#include "common/io/mapped_file.h"
#include "models/data/content_fingerprint.h"
#include "models/data/source_documents.h"

namespace geotrain::models::data {
namespace {

// Bump when the way a file becomes ids changes (document splitting, separators), so old caches
// are rebuilt rather than trusted.
constexpr uint64_t kTokenizationScheme = 1;

uint64_t SettingsFingerprint(SourceFormat format, const SourceTokenizeOptions& options) {
  ContentFingerprint fingerprint;
  fingerprint.UpdateU64(kTokenizationScheme);
  fingerprint.Update(SourceFormatName(format));
  fingerprint.UpdateU64(0);
  if (format == SourceFormat::kJsonl) fingerprint.Update(options.jsonl_field);
  fingerprint.UpdateU64(options.end_of_text_id);
  return fingerprint.Finish();
}

std::string CacheFilePath(const std::string& path, const std::string& cache_dir) {
  std::error_code ignored;
  const std::filesystem::path absolute = std::filesystem::absolute(path, ignored);
  ContentFingerprint fingerprint;
  fingerprint.Update(absolute.string());
  char hex[17];
  std::snprintf(hex, sizeof(hex), "%016llx", static_cast<unsigned long long>(fingerprint.Finish()));
  return cache_dir + "/" + absolute.filename().string() + "." + hex + ".tokens";
}

std::vector<uint32_t> Tokenize(std::string_view contents, const std::string& path,
                               SourceFormat format, const SourceTokenizeOptions& options,
                               const Tokenizer& tokenizer, Status* status) {
  std::vector<uint32_t> tokens;
  *status =
      ForEachDocument(contents, path, format, options.jsonl_field, [&](std::string_view document) {
        for (int32_t id : tokenizer.EncodeOrdinary(document)) {
          tokens.push_back(static_cast<uint32_t>(id));
        }
        tokens.push_back(options.end_of_text_id);
      });
  return tokens;
}

}  // namespace

StatusOr<std::unique_ptr<TokenizedSource>> TokenizedSource::Load(
    const std::string& path, const SourceTokenizeOptions& options, const Tokenizer& tokenizer) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) {
    const int err = errno;
    const std::string message = path + ": cannot open: " + std::strerror(err);
    return err == ENOENT ? NotFound(message) : Unavailable(message);
  }
  if (!S_ISREG(st.st_mode)) return InvalidArgument(path + ": not a regular file");
  GEOTRAIN_ASSIGN_OR_RETURN(auto file, io::MappedFile::Open(path));
  const Span<const uint8_t> bytes = file->bytes();
  if (bytes.size() != static_cast<uint64_t>(st.st_size)) {
    return Unavailable(path + ": changed while being opened");
  }
  const std::string_view contents(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  const SourceFormat format = SourceFormatForPath(path);

  TokenCacheKey key;
  key.tokenizer_fingerprint = options.tokenizer_fingerprint;
  key.settings_fingerprint = SettingsFingerprint(format, options);
  key.source_size = bytes.size();
  key.source_mtime_ns = static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
  ContentFingerprint content_fingerprint;
  content_fingerprint.Update(contents);
  key.source_fingerprint = content_fingerprint.Finish();

  std::unique_ptr<TokenizedSource> source(new TokenizedSource());
  source->path_ = path;
  if (!options.cache_dir.empty()) {
    source->cache_path_ = CacheFilePath(path, options.cache_dir);
    auto cached = TokenCacheFile::Open(source->cache_path_);
    // A missing, stale or corrupt cache is simply rebuilt below.
    if (cached.ok() && (*cached)->key() == key) {
      source->cache_ = std::move(cached).value();
      source->tokens_ = source->cache_->tokens();
      source->loaded_from_cache_ = true;
      return source;
    }
  }

  Status status;
  source->owned_tokens_ = Tokenize(contents, path, format, options, tokenizer, &status);
  GEOTRAIN_RETURN_IF_ERROR(status);
  source->tokens_ =
      Span<const uint32_t>(source->owned_tokens_.data(), source->owned_tokens_.size());
  if (!options.cache_dir.empty()) {
    std::error_code error;
    std::filesystem::create_directories(options.cache_dir, error);
    if (error) {
      return Unavailable(options.cache_dir +
                         ": cannot create the token cache directory: " + error.message());
    }
    GEOTRAIN_RETURN_IF_ERROR(WriteTokenCacheFile(source->cache_path_, key, source->tokens_));
  }
  return source;
}

std::unique_ptr<TokenizedSource> TokenizedSource::FromTokens(std::string path,
                                                             std::vector<uint32_t> tokens) {
  std::unique_ptr<TokenizedSource> source(new TokenizedSource());
  source->path_ = std::move(path);
  source->owned_tokens_ = std::move(tokens);
  source->tokens_ =
      Span<const uint32_t>(source->owned_tokens_.data(), source->owned_tokens_.size());
  return source;
}

}  // namespace geotrain::models::data
