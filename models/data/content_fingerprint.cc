#include "models/data/content_fingerprint.h"

#include <algorithm>
#include <cstring>

#include "common/hash_random.h"

namespace geotrain::models::data {

void ContentFingerprint::Absorb(uint64_t word) {
  // The added constant keeps an all-zero input from staying at a fixed point of the chain.
  state_ = Mix64(state_ ^ word) + 0x9e3779b97f4a7c15ull;
}

void ContentFingerprint::Update(const void* data, size_t size) {
  const auto* bytes = static_cast<const uint8_t*>(data);
  length_ += size;
  if (pending_size_ > 0) {
    const size_t take = std::min(size, sizeof(pending_) - pending_size_);
    std::memcpy(pending_ + pending_size_, bytes, take);
    pending_size_ += take;
    bytes += take;
    size -= take;
    if (pending_size_ < sizeof(pending_)) return;
    uint64_t word;
    std::memcpy(&word, pending_, sizeof(word));
    Absorb(word);
    pending_size_ = 0;
  }
  for (; size >= 8; bytes += 8, size -= 8) {
    uint64_t word;
    std::memcpy(&word, bytes, sizeof(word));
    Absorb(word);
  }
  if (size > 0) std::memcpy(pending_, bytes, size);
  pending_size_ = size;
}

uint64_t ContentFingerprint::Finish() const {
  // The tail is zero-padded; mixing in the total length tells "ab" from "ab\0".
  uint64_t tail = 0;
  std::memcpy(&tail, pending_, pending_size_);
  return Mix64(Mix64(state_ ^ tail) ^ length_);
}

}  // namespace geotrain::models::data
