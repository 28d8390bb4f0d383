// ContentFingerprint: a fast 64-bit fingerprint of a byte stream, for cache invalidation.
//
// It detects accidental change (an edited corpus, another tokenizer), not tampering: it is not a
// cryptographic hash. Words of 8 bytes go through SplitMix64's bijective finaliser, so hashing
// runs at a few GB/s and a multi-GB corpus costs about a second to fingerprint. The result
// depends only on the bytes and their order, not on how they were split into Update calls.
// A value type; not thread-safe (use one per thread).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace geotrain::models::data {

class ContentFingerprint {
 public:
  void Update(const void* data, size_t size);
  void Update(std::string_view bytes) { Update(bytes.data(), bytes.size()); }
  // Appends a little-endian integer (lengths, ids) as 8 bytes.
  void UpdateU64(uint64_t value) { Update(&value, sizeof(value)); }
  // The fingerprint of everything so far (the object may keep accepting bytes).
  uint64_t Finish() const;

 private:
  void Absorb(uint64_t word);

  uint64_t state_ = 0x6a09e667f3bcc908ull;
  uint64_t length_ = 0;
  uint8_t pending_[8] = {};
  size_t pending_size_ = 0;
};

}  // namespace geotrain::models::data
