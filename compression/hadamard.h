// The fast Walsh-Hadamard transform, which tah uses to spread a tile's outlier over the tile.
//
// OrthonormalHadamard(x, n) replaces the row vector x by x·H_n/√n, where H_n is the
// Sylvester-ordered Hadamard matrix (H_1 = [1], H_2m = [[H_m, H_m], [H_m, -H_m]]). H_n is
// symmetric and H_n·H_n = n·I, so the transform is orthonormal and is its own inverse (exactly in
// real arithmetic, to float rounding in practice). It costs n·log2(n) additions and n products.
//
// The AVX2 path performs the same additions on the same operands as the scalar path, so both give
// bit-identical results: a sender and a receiver built for different CPUs agree. Stateless and
// thread-safe.
#pragma once

#include <cstdint>

namespace geotrain::compression {

// The factor 1/√n as a float, applied after the butterflies.
float HadamardNormalizer(int64_t n);

// x ← x·H_n/√n in place. `n` must be a power of two (1, 2, 4, ...).
void OrthonormalHadamard(float* x, int64_t n);

// The portable reference path of OrthonormalHadamard (tests check the two agree bit for bit).
void OrthonormalHadamardScalar(float* x, int64_t n);

}  // namespace geotrain::compression
