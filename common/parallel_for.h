// ParallelFor: splits a range over a few short-lived threads.
//
// For codec kernels on large tensors (millions of values), where a thread start (~20 µs) is
// negligible next to the work and a persistent pool would be state to own and shut down.
#pragma once

#include <cstdint>
#include <functional>

namespace geotrain {

// Calls fn(chunk, begin, end) for `chunks` contiguous pieces of [0, n) and returns when all are
// done. Every piece but the last starts at a multiple of `grain`. The calling thread runs piece 0;
// `chunks` <= 1 (or n <= grain) runs everything inline. Returns the number of pieces used.
int ParallelFor(int64_t n, int chunks, int64_t grain,
                const std::function<void(int chunk, int64_t begin, int64_t end)>& fn);

}  // namespace geotrain
