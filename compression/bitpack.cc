#include "compression/bitpack.h"

#include <cstring>

namespace geotrain::compression {

void BitPacker::Append(const uint8_t* codes, size_t count) {
  if (bit_pos_ % 8 == 0) {
    uint8_t* out = out_ + bit_pos_ / 8;
    if (bits_ == 8) {
      if (count) std::memcpy(out, codes, count);
      bit_pos_ += 8 * count;
      return;
    }
    if (bits_ == 4) {
      const size_t pairs = count / 2;
      for (size_t i = 0; i < pairs; ++i) {
        out[i] = static_cast<uint8_t>((codes[2 * i] << 4) | codes[2 * i + 1]);
      }
      bit_pos_ += 8 * pairs;
      codes += 2 * pairs;
      count -= 2 * pairs;
    } else if (bits_ == 2) {
      const size_t quads = count / 4;
      for (size_t i = 0; i < quads; ++i) {
        const uint8_t* c = codes + 4 * i;
        out[i] = static_cast<uint8_t>((c[0] << 6) | (c[1] << 4) | (c[2] << 2) | c[3]);
      }
      bit_pos_ += 8 * quads;
      codes += 4 * quads;
      count -= 4 * quads;
    }
  }
  // Any width, byte-aligned: 8 codes of b bits fill exactly b bytes.
  if (bit_pos_ % 8 == 0 && count >= 8) {
    uint8_t* out = out_ + bit_pos_ / 8;
    const size_t groups = count / 8;
    for (size_t g = 0; g < groups; ++g, codes += 8, out += bits_) {
      uint64_t word = 0;
      for (int k = 0; k < 8; ++k) word = (word << bits_) | codes[k];
      for (int byte = bits_ - 1; byte >= 0; --byte, word >>= 8)
        out[byte] = static_cast<uint8_t>(word);
    }
    bit_pos_ += static_cast<uint64_t>(groups) * 8 * bits_;
    count -= groups * 8;
  }
  // General path: OR each code into place, most significant bits first.
  for (size_t i = 0; i < count; ++i) {
    const uint32_t code = codes[i];
    uint64_t byte = bit_pos_ >> 3;
    const int offset = static_cast<int>(bit_pos_ & 7);  // bits already used in this byte
    const int first = 8 - offset;                       // room in this byte
    if (bits_ <= first) {
      out_[byte] |= static_cast<uint8_t>(code << (first - bits_));
    } else {
      const int rest = bits_ - first;
      out_[byte] |= static_cast<uint8_t>(code >> rest);
      out_[byte + 1] |= static_cast<uint8_t>(code << (8 - rest));
    }
    bit_pos_ += bits_;
  }
}

void BitUnpacker::Read(uint8_t* codes, size_t count) {
  if (bit_pos_ % 8 == 0) {
    const uint8_t* in = in_ + bit_pos_ / 8;
    if (bits_ == 8) {
      if (count) std::memcpy(codes, in, count);
      bit_pos_ += 8 * count;
      return;
    }
    if (bits_ == 4) {
      const size_t pairs = count / 2;
      for (size_t i = 0; i < pairs; ++i) {
        codes[2 * i] = in[i] >> 4;
        codes[2 * i + 1] = in[i] & 0xf;
      }
      bit_pos_ += 8 * pairs;
      codes += 2 * pairs;
      count -= 2 * pairs;
    } else if (bits_ == 2) {
      const size_t quads = count / 4;
      for (size_t i = 0; i < quads; ++i) {
        const uint8_t b = in[i];
        codes[4 * i] = b >> 6;
        codes[4 * i + 1] = (b >> 4) & 3;
        codes[4 * i + 2] = (b >> 2) & 3;
        codes[4 * i + 3] = b & 3;
      }
      bit_pos_ += 8 * quads;
      codes += 4 * quads;
      count -= 4 * quads;
    }
  }
  const uint32_t mask = (1u << bits_) - 1;
  if (bit_pos_ % 8 == 0 && count >= 8) {
    const uint8_t* in = in_ + bit_pos_ / 8;
    const size_t groups = count / 8;
    for (size_t g = 0; g < groups; ++g, codes += 8, in += bits_) {
      uint64_t word = 0;
      for (int byte = 0; byte < bits_; ++byte) word = (word << 8) | in[byte];
      for (int k = 7; k >= 0; --k, word >>= bits_) codes[k] = static_cast<uint8_t>(word & mask);
    }
    bit_pos_ += static_cast<uint64_t>(groups) * 8 * bits_;
    count -= groups * 8;
  }
  for (size_t i = 0; i < count; ++i) {
    const uint64_t byte = bit_pos_ >> 3;
    const int offset = static_cast<int>(bit_pos_ & 7);
    const int first = 8 - offset;
    uint32_t code;
    if (bits_ <= first) {
      code = (in_[byte] >> (first - bits_)) & mask;
    } else {
      const int rest = bits_ - first;
      code = ((in_[byte] << rest) | (in_[byte + 1] >> (8 - rest))) & mask;
    }
    codes[i] = static_cast<uint8_t>(code);
    bit_pos_ += bits_;
  }
}

}  // namespace geotrain::compression
