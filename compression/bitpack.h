// Dense MSB-first bit packing of small unsigned codes (1..8 bits each).
//
// Code i of a stream occupies bits [i*b, (i+1)*b) counted from the most significant bit of byte 0
// (the convention of AC-SGD's packers, documented in docs/wire-format.md). Streams may be written
// and read in pieces (row by row); the byte-aligned 2-, 4- and 8-bit cases take fast paths.
#pragma once

#include <cstddef>
#include <cstdint>

namespace geotrain::compression {

// Bytes needed for `count` codes of `bits` bits.
inline uint64_t PackedBytes(uint64_t count, int bits) { return (count * bits + 7) / 8; }

// Appends codes to a zero-initialised buffer of PackedBytes(total, bits) bytes.
class BitPacker {
 public:
  BitPacker(uint8_t* out, int bits) : out_(out), bits_(bits) {}
  // Each code must be < 2^bits.
  void Append(const uint8_t* codes, size_t count);

 private:
  uint8_t* out_;
  int bits_;
  uint64_t bit_pos_ = 0;
};

// Reads codes back in the order they were appended. The caller guarantees the buffer holds
// PackedBytes(total, bits) bytes for the total it reads.
class BitUnpacker {
 public:
  BitUnpacker(const uint8_t* in, int bits) : in_(in), bits_(bits) {}
  void Read(uint8_t* codes, size_t count);

 private:
  const uint8_t* in_;
  int bits_;
  uint64_t bit_pos_ = 0;
};

}  // namespace geotrain::compression
