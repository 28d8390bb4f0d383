#include "net/frame_sealer.h"

#include <openssl/evp.h>
#include <openssl/kdf.h>
#include <openssl/sha.h>

#include <algorithm>
#include <climits>
#include <cstring>

namespace geotrain::net {
namespace {

constexpr size_t kNonceBytes = 12;
constexpr size_t kAadBytes = 1 + 8 + 2 + 2 + 1 + 8 + 8;
constexpr uint64_t kMaxSequence = (uint64_t{1} << 56) - 1;  // 7 bytes of it go into the nonce
constexpr const char* kHkdfInfo = "geotrain frame v1";
// EVP's update calls take an int length.
constexpr size_t kMaxChunk = size_t{1} << 30;

void PutLe(uint64_t value, size_t bytes, uint8_t* out) {
  for (size_t i = 0; i < bytes; ++i) out[i] = static_cast<uint8_t>(value >> (8 * i));
}

uint64_t GetLe64(const uint8_t* in) {
  uint64_t value = 0;
  for (size_t i = 0; i < 8; ++i) value |= static_cast<uint64_t>(in[i]) << (8 * i);
  return value;
}

// Runs EVP_CipherUpdate over `length` bytes in chunks an int can count.
bool UpdateAll(EVP_CIPHER_CTX* ctx, const uint8_t* in, size_t length, uint8_t* out) {
  for (size_t done = 0; done < length;) {
    const size_t chunk = std::min(length - done, kMaxChunk);
    int written = 0;
    if (EVP_CipherUpdate(ctx, out + done, &written, in + done, static_cast<int>(chunk)) != 1 ||
        static_cast<size_t>(written) != chunk) {
      return false;
    }
    done += chunk;
  }
  return true;
}

}  // namespace

StatusOr<SealKey> DeriveSealKey(const std::string& job_key, const std::string& group_name) {
  if (job_key.size() != kFrameKeyBytes) {
    return InvalidArgument("frame key: " + std::to_string(job_key.size()) + " bytes, expected " +
                           std::to_string(kFrameKeyBytes));
  }
  const std::string info = kHkdfInfo + group_name;
  SealKey sealed;
  EVP_PKEY_CTX* ctx = EVP_PKEY_CTX_new_id(EVP_PKEY_HKDF, nullptr);
  size_t length = sealed.key.size();
  const bool derived =
      ctx != nullptr && EVP_PKEY_derive_init(ctx) == 1 &&
      EVP_PKEY_CTX_set_hkdf_md(ctx, EVP_sha256()) == 1 &&
      EVP_PKEY_CTX_set1_hkdf_key(ctx, reinterpret_cast<const unsigned char*>(job_key.data()),
                                 static_cast<int>(job_key.size())) == 1 &&
      EVP_PKEY_CTX_add1_hkdf_info(ctx, reinterpret_cast<const unsigned char*>(info.data()),
                                  static_cast<int>(info.size())) == 1 &&
      EVP_PKEY_derive(ctx, sealed.key.data(), &length) == 1 && length == sealed.key.size();
  EVP_PKEY_CTX_free(ctx);
  if (!derived) {
    return Internal("frame key: deriving the key of group '" + group_name +
                    "' failed (HKDF-SHA256; group name of " + std::to_string(group_name.size()) +
                    " bytes)");
  }
  uint8_t digest[SHA256_DIGEST_LENGTH];
  SHA256(sealed.key.data(), sealed.key.size(), digest);
  std::memcpy(sealed.id.data(), digest, sealed.id.size());
  return sealed;
}

StatusOr<std::unique_ptr<FrameSealer>> FrameSealer::Create(const SealKey& key, FrameStream stream) {
  EVP_CIPHER_CTX* ctx = EVP_CIPHER_CTX_new();
  // Keyed once here: every frame only sets its nonce, so the AES key schedule is not redone.
  if (ctx == nullptr ||
      EVP_CipherInit_ex(ctx, EVP_aes_256_gcm(), nullptr, nullptr, nullptr, 1) != 1 ||
      EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_IVLEN, kNonceBytes, nullptr) != 1 ||
      EVP_CipherInit_ex(ctx, nullptr, nullptr, key.key.data(), nullptr, 1) != 1) {
    EVP_CIPHER_CTX_free(ctx);
    return Internal("frame sealer: cannot set up AES-256-GCM");
  }
  return std::unique_ptr<FrameSealer>(new FrameSealer(key.id, stream, ctx));
}

FrameSealer::FrameSealer(const std::array<uint8_t, 8>& key_id, FrameStream stream,
                         evp_cipher_ctx_st* ctx)
    : key_id_(key_id), stream_(stream), ctx_(ctx) {}

FrameSealer::~FrameSealer() { EVP_CIPHER_CTX_free(ctx_); }

void FrameSealer::Bind(uint64_t sequence, uint64_t length, uint8_t* nonce, uint8_t* aad) const {
  PutLe(stream_.sender, 2, nonce);
  PutLe(stream_.receiver, 2, nonce + 2);
  nonce[4] = stream_.channel;
  PutLe(sequence, 7, nonce + 5);

  uint8_t* at = aad;
  *at++ = kSealVersion;
  std::memcpy(at, key_id_.data(), key_id_.size());
  at += key_id_.size();
  PutLe(stream_.sender, 2, at);
  at += 2;
  PutLe(stream_.receiver, 2, at);
  at += 2;
  *at++ = stream_.channel;
  PutLe(sequence, 8, at);
  at += 8;
  PutLe(length, 8, at);
}

Status FrameSealer::Seal(Span<const uint8_t> plaintext, uint8_t* out) {
  const uint64_t sequence = next_sequence_;
  if (sequence > kMaxSequence) {
    return FailedPrecondition("frame sealer: 2^56 frames sealed on one stream; rebuild the group");
  }
  uint8_t nonce[kNonceBytes];
  uint8_t aad[kAadBytes];
  Bind(sequence, plaintext.size(), nonce, aad);
  out[0] = kSealVersion;
  std::memcpy(out + 1, key_id_.data(), key_id_.size());
  PutLe(sequence, 8, out + 1 + key_id_.size());
  uint8_t* ciphertext = out + kSealHeaderBytes;
  int ignored = 0;
  int final_bytes = 0;
  if (EVP_CipherInit_ex(ctx_, nullptr, nullptr, nullptr, nonce, 1) != 1 ||
      EVP_CipherUpdate(ctx_, nullptr, &ignored, aad, sizeof(aad)) != 1 ||
      !UpdateAll(ctx_, plaintext.data(), plaintext.size(), ciphertext) ||
      EVP_CipherFinal_ex(ctx_, ciphertext + plaintext.size(), &final_bytes) != 1 ||
      EVP_CIPHER_CTX_ctrl(ctx_, EVP_CTRL_GCM_GET_TAG, kSealTagBytes,
                          ciphertext + plaintext.size()) != 1) {
    return Internal("frame sealer: AES-256-GCM encryption failed");
  }
  ++next_sequence_;
  return OkStatus();
}

Status FrameSealer::Open(Span<const uint8_t> sealed, uint8_t* out) {
  if (sealed.size() < kSealOverhead) {
    return DataLoss("frame of " + std::to_string(sealed.size()) +
                    " bytes is shorter than a sealed frame's " + std::to_string(kSealOverhead) +
                    " (is the peer sending frames in the clear?)");
  }
  const uint8_t* header = sealed.data();
  if (header[0] != kSealVersion) {
    return DataLoss("frame of seal version " + std::to_string(header[0]) + ", expected " +
                    std::to_string(kSealVersion) + " (is the peer sending frames in the clear?)");
  }
  if (std::memcmp(header + 1, key_id_.data(), key_id_.size()) != 0) {
    return DataLoss("frame sealed with another key (another job or group, or a stale rank)");
  }
  const uint64_t sequence = GetLe64(header + 1 + key_id_.size());
  if (sequence != next_sequence_) {
    return DataLoss("frame " + std::to_string(sequence) +
                    (sequence < next_sequence_ ? " replayed" : " out of order") + " (expected " +
                    std::to_string(next_sequence_) + ")");
  }
  const size_t length = sealed.size() - kSealOverhead;
  uint8_t nonce[kNonceBytes];
  uint8_t aad[kAadBytes];
  Bind(sequence, length, nonce, aad);
  const uint8_t* ciphertext = header + kSealHeaderBytes;
  // The tag is only read, but EVP's ctrl takes a non-const pointer.
  uint8_t tag[kSealTagBytes];
  std::memcpy(tag, ciphertext + length, kSealTagBytes);
  int ignored = 0;
  if (EVP_CipherInit_ex(ctx_, nullptr, nullptr, nullptr, nonce, 0) != 1 ||
      EVP_CipherUpdate(ctx_, nullptr, &ignored, aad, sizeof(aad)) != 1 ||
      !UpdateAll(ctx_, ciphertext, length, out) ||
      EVP_CIPHER_CTX_ctrl(ctx_, EVP_CTRL_GCM_SET_TAG, kSealTagBytes, tag) != 1) {
    return Internal("frame sealer: AES-256-GCM decryption failed");
  }
  if (EVP_CipherFinal_ex(ctx_, out + length, &ignored) != 1) {
    return DataLoss("frame " + std::to_string(sequence) +
                    ": authentication failed (frame altered in transit)");
  }
  ++next_sequence_;
  return OkStatus();
}

}  // namespace geotrain::net
