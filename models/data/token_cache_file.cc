#include "models/data/token_cache_file.h"

#include <cstring>
#include <vector>

#include "common/bytes.h"
#include "common/io/atomic_file_writer.h"
#include "models/data/content_fingerprint.h"

namespace geotrain::models::data {
namespace {

constexpr char kMagic[8] = {'G', 'T', 'T', 'O', 'K', 'E', 'N', 'S'};
constexpr uint32_t kVersion = 1;
constexpr uint32_t kHeaderSize = 64;

uint64_t TokensFingerprint(Span<const uint32_t> tokens) {
  ContentFingerprint fingerprint;
  fingerprint.Update(tokens.data(), tokens.size() * sizeof(uint32_t));
  return fingerprint.Finish();
}

}  // namespace

Status WriteTokenCacheFile(const std::string& path, const TokenCacheKey& key,
                           Span<const uint32_t> tokens) {
  std::vector<uint8_t> header;
  ByteWriter writer(&header);
  writer.PutBytes(kMagic, sizeof(kMagic));
  writer.Put<uint32_t>(kVersion);
  writer.Put<uint32_t>(kHeaderSize);
  writer.Put<uint64_t>(key.tokenizer_fingerprint);
  writer.Put<uint64_t>(key.settings_fingerprint);
  writer.Put<uint64_t>(key.source_size);
  writer.Put<int64_t>(key.source_mtime_ns);
  writer.Put<uint64_t>(key.source_fingerprint);
  writer.Put<uint64_t>(tokens.size());
  if (header.size() != kHeaderSize) return Internal("token cache header size mismatch");
  const uint64_t checksum = TokensFingerprint(tokens);

  GEOTRAIN_ASSIGN_OR_RETURN(auto file, io::AtomicFileWriter::Create(path));
  GEOTRAIN_RETURN_IF_ERROR(file->Append(header.data(), header.size()));
  GEOTRAIN_RETURN_IF_ERROR(file->Append(tokens.data(), tokens.size() * sizeof(uint32_t)));
  GEOTRAIN_RETURN_IF_ERROR(file->Append(&checksum, sizeof(checksum)));
  return file->Commit();
}

StatusOr<std::unique_ptr<TokenCacheFile>> TokenCacheFile::Open(const std::string& path) {
  GEOTRAIN_ASSIGN_OR_RETURN(auto file, io::MappedFile::Open(path));
  const Span<const uint8_t> bytes = file->bytes();
  ByteReader reader(bytes);
  auto fail = [&](const Status& status) { return status.WithContext(path + ": token cache"); };

  Span<const uint8_t> magic;
  uint32_t version = 0, header_size = 0;
  uint64_t token_count = 0;
  TokenCacheKey key;
  Status status = reader.GetSpan(sizeof(kMagic), &magic, "magic");
  if (status.ok() && std::memcmp(magic.data(), kMagic, sizeof(kMagic)) != 0) {
    status = DataLoss("magic: not a geotrain token cache");
  }
  if (status.ok()) status = reader.Get(&version, "version");
  if (status.ok() && version != kVersion) {
    status = DataLoss("version: " + std::to_string(version) + " is not the supported " +
                      std::to_string(kVersion));
  }
  if (status.ok()) status = reader.Get(&header_size, "header_size");
  if (status.ok() && header_size != kHeaderSize) {
    status = DataLoss("header_size: " + std::to_string(header_size) + ", expected " +
                      std::to_string(kHeaderSize));
  }
  if (status.ok()) status = reader.Get(&key.tokenizer_fingerprint, "tokenizer_fingerprint");
  if (status.ok()) status = reader.Get(&key.settings_fingerprint, "settings_fingerprint");
  if (status.ok()) status = reader.Get(&key.source_size, "source_size");
  if (status.ok()) status = reader.Get(&key.source_mtime_ns, "source_mtime_ns");
  if (status.ok()) status = reader.Get(&key.source_fingerprint, "source_fingerprint");
  if (status.ok()) status = reader.Get(&token_count, "token_count");
  if (!status.ok()) return fail(status);
  // Division keeps a hostile count from overflowing the size computation.
  if (reader.remaining() < sizeof(uint64_t) ||
      (reader.remaining() - sizeof(uint64_t)) / sizeof(uint32_t) != token_count ||
      (reader.remaining() - sizeof(uint64_t)) % sizeof(uint32_t) != 0) {
    return fail(DataLoss("token_count: " + std::to_string(token_count) + " does not match the " +
                         std::to_string(bytes.size()) + "-byte file"));
  }
  // The mapping is page-aligned and the header 64 bytes, so the ids are 4-byte aligned.
  const auto* ids = reinterpret_cast<const uint32_t*>(bytes.data() + kHeaderSize);
  const Span<const uint32_t> tokens(ids, token_count);
  uint64_t checksum = 0;
  std::memcpy(&checksum, bytes.data() + kHeaderSize + token_count * sizeof(uint32_t),
              sizeof(checksum));
  if (checksum != TokensFingerprint(tokens)) {
    return fail(DataLoss("checksum: the token ids do not match their fingerprint"));
  }
  return std::unique_ptr<TokenCacheFile>(new TokenCacheFile(std::move(file), key, tokens));
}

}  // namespace geotrain::models::data
