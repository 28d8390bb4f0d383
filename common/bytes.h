// ByteWriter and ByteReader: little-endian serialisation of wire and file formats.
//
// ByteReader never reads past its span: every read returns a Status naming the field it was
// reading, so a truncated or hostile input becomes a clear error rather than an out-of-bounds read.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "common/span.h"
#include "common/status.h"

namespace geotrain {

class ByteWriter {
 public:
  explicit ByteWriter(std::vector<uint8_t>* out) : out_(out) {}

  template <typename T>
  void Put(T value) {
    static_assert(std::is_trivially_copyable<T>::value, "plain values only");
    const size_t at = out_->size();
    out_->resize(at + sizeof(T));
    std::memcpy(out_->data() + at, &value,
                sizeof(T));  // little-endian hosts only (checked in CMake)
  }
  void PutBytes(const void* data, size_t n) {
    const size_t at = out_->size();
    out_->resize(at + n);
    if (n) std::memcpy(out_->data() + at, data, n);
  }
  // Appends `n` zero bytes and returns where they start; valid until the next write.
  uint8_t* Extend(size_t n) {
    const size_t at = out_->size();
    out_->resize(at + n);
    return out_->data() + at;
  }
  size_t size() const { return out_->size(); }

 private:
  std::vector<uint8_t>* out_;
};

class ByteReader {
 public:
  explicit ByteReader(Span<const uint8_t> bytes) : bytes_(bytes) {}

  template <typename T>
  Status Get(T* value, const char* field) {
    static_assert(std::is_trivially_copyable<T>::value, "plain values only");
    if (remaining() < sizeof(T)) return Truncated(field, sizeof(T));
    std::memcpy(value, bytes_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return OkStatus();
  }
  // Hands out a view of the next `n` bytes.
  Status GetSpan(size_t n, Span<const uint8_t>* out, const char* field) {
    if (remaining() < n) return Truncated(field, n);
    *out = bytes_.subspan(pos_, n);
    pos_ += n;
    return OkStatus();
  }
  size_t remaining() const { return bytes_.size() - pos_; }
  size_t position() const { return pos_; }
  // An error unless every byte has been consumed (trailing garbage is corruption too).
  Status ExpectEnd(const char* what) const {
    if (remaining() == 0) return OkStatus();
    return DataLoss(std::string(what) + ": " + std::to_string(remaining()) +
                    " unexpected trailing bytes");
  }

 private:
  Status Truncated(const char* field, size_t wanted) const {
    return DataLoss(std::string(field) + ": truncated (needs " + std::to_string(wanted) +
                    " bytes, " + std::to_string(remaining()) + " left)");
  }

  Span<const uint8_t> bytes_;
  size_t pos_ = 0;
};

}  // namespace geotrain
