// FrameSealer: AES-256-GCM over one direction of one stream of data-plane frames.
//
// Gloo's TCP transport has no TLS, so geotrain seals the frames themselves with a per-job key
// (delivered by the coordinator over its TLS session, or read from a file by geotrain-run). Each
// group incarnation derives its own subkey from the job key (DeriveSealKey: HKDF-SHA256 over the
// group name), so nonces never repeat across groups that share the job key.
//
// Sealed frame (docs/wire-format.md):
//   u8 version (1) | 8 bytes key id | u64 sequence (LE) | ciphertext | 16-byte tag
// key id: the first 8 bytes of SHA-256(subkey): lets a receiver tell "another job or group" from
//   "tampered" without revealing anything about the key.
// nonce (96 bit): u16 sender rank | u16 receiver rank | u8 channel | 7 low bytes of the sequence
//   (all LE), unique per (subkey, stream, frame).
// associated data: version | key id | u16 sender | u16 receiver | u8 channel | u64 sequence |
//   u64 plaintext length, so a frame cannot be moved to another link, direction or channel.
//
// A stream is (sender, receiver, channel); its frames are numbered from 0 and the opener accepts
// exactly the next number, so a replayed, dropped or reordered frame is refused. Knows nothing
// of transports: SealedPeerExchange (sealed_peer_exchange.h) applies it to every exchange step.
//
// Thread-safety: none; one FrameSealer per stream and direction, used by one thread at a time.
// The cipher context is created once and reused for every frame (only the nonce changes).
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>

#include "common/span.h"
#include "common/status.h"

struct evp_cipher_ctx_st;

namespace geotrain::net {

constexpr size_t kFrameKeyBytes = 32;  // the job key
constexpr uint8_t kSealVersion = 1;
constexpr size_t kSealHeaderBytes = 1 + 8 + 8;
constexpr size_t kSealTagBytes = 16;
// What sealing adds to every frame.
constexpr size_t kSealOverhead = kSealHeaderBytes + kSealTagBytes;

// A group's subkey and its public id.
struct SealKey {
  std::array<uint8_t, 32> key{};
  std::array<uint8_t, 8> id{};
};

// HKDF-SHA256(job_key, info = "geotrain frame v1" + group_name). INVALID_ARGUMENT unless the job
// key has kFrameKeyBytes bytes (the message gives only its length, never its bytes).
StatusOr<SealKey> DeriveSealKey(const std::string& job_key, const std::string& group_name);

// Which frames a sealer handles; bound into every nonce and the associated data.
struct FrameStream {
  uint16_t sender = 0;
  uint16_t receiver = 0;
  uint8_t channel = 0;
};

class FrameSealer {
 public:
  static StatusOr<std::unique_ptr<FrameSealer>> Create(const SealKey& key, FrameStream stream);
  ~FrameSealer();

  FrameSealer(const FrameSealer&) = delete;
  FrameSealer& operator=(const FrameSealer&) = delete;

  // Seals `plaintext` as the stream's next frame into out[0, plaintext.size() + kSealOverhead).
  Status Seal(Span<const uint8_t> plaintext, uint8_t* out);

  // Opens `sealed`, which must be the stream's next frame, into
  // out[0, sealed.size() - kSealOverhead). DATA_LOSS, with the sequence number moving on only on
  // success: "frame sealed with another key (another job or group, or a stale rank)", "frame 7
  // replayed (expected 9)", "frame 12 out of order (expected 9)", "authentication failed (frame
  // altered in transit)", or a frame too short or of another version. On failure `out` holds
  // unauthenticated bytes the caller must discard.
  Status Open(Span<const uint8_t> sealed, uint8_t* out);

  // The sequence number of the next frame sealed or expected.
  uint64_t next_sequence() const { return next_sequence_; }

 private:
  FrameSealer(const std::array<uint8_t, 8>& key_id, FrameStream stream, evp_cipher_ctx_st* ctx);
  // Fills the nonce and associated data of frame `sequence` of `length` plaintext bytes.
  void Bind(uint64_t sequence, uint64_t length, uint8_t* nonce, uint8_t* aad) const;

  const std::array<uint8_t, 8> key_id_;  // the key itself lives only in ctx_
  const FrameStream stream_;
  evp_cipher_ctx_st* const ctx_;  // owned; keyed once
  uint64_t next_sequence_ = 0;
};

}  // namespace geotrain::net
