#include "common/parallel_for.h"

#include <algorithm>
#include <thread>
#include <vector>

namespace geotrain {

int ParallelFor(int64_t n, int chunks, int64_t grain,
                const std::function<void(int, int64_t, int64_t)>& fn) {
  grain = std::max<int64_t>(grain, 1);
  const int64_t units = (n + grain - 1) / grain;
  chunks = static_cast<int>(std::max<int64_t>(1, std::min<int64_t>(chunks, units)));
  if (chunks == 1) {
    fn(0, 0, n);
    return 1;
  }
  const int64_t per_chunk = (units + chunks - 1) / chunks * grain;
  std::vector<std::thread> threads;
  threads.reserve(chunks - 1);
  int used = 0;
  for (int c = 1; c < chunks; ++c) {
    const int64_t begin = c * per_chunk;
    if (begin >= n) break;
    threads.emplace_back(fn, c, begin, std::min(n, begin + per_chunk));
    used = c;
  }
  fn(0, 0, std::min(n, per_chunk));
  for (auto& t : threads) t.join();
  return used + 1;
}

}  // namespace geotrain
