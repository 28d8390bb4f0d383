#include "coordinator/planner/group_orders.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <utility>

namespace geotrain::planner {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// Lower by more than rounding noise.
bool Lower(double a, double b) { return a < b - 1e-9 * std::max(1.0, std::fabs(b)); }

// Kuhn's augmenting paths over the edges with cost <= limit; fills match_of_col.
bool TryAugment(const std::vector<double>& cost, size_t n, double limit, size_t row,
                std::vector<char>& seen, std::vector<size_t>& match_of_col) {
  for (size_t col = 0; col < n; ++col) {
    if (seen[col] || cost[row * n + col] > limit) continue;
    seen[col] = 1;
    if (match_of_col[col] == n ||
        TryAugment(cost, n, limit, match_of_col[col], seen, match_of_col)) {
      match_of_col[col] = row;
      return true;
    }
  }
  return false;
}

bool PerfectMatching(const std::vector<double>& cost, size_t n, double limit,
                     std::vector<size_t>& match_of_col) {
  match_of_col.assign(n, n);
  std::vector<char> seen;
  for (size_t row = 0; row < n; ++row) {
    seen.assign(n, 0);
    if (!TryAugment(cost, n, limit, row, seen, match_of_col)) return false;
  }
  return true;
}

std::vector<double> DistinctOffDiagonal(const std::vector<double>& cost, size_t n) {
  std::vector<double> values;
  for (size_t a = 0; a < n; ++a) {
    for (size_t b = 0; b < n; ++b) {
      if (a != b) values.push_back(cost[a * n + b]);
    }
  }
  std::sort(values.begin(), values.end());
  values.erase(std::unique(values.begin(), values.end()), values.end());
  return values;
}

// A one-way-and-back transfer between a stage's worker `up` and the next stage's worker `down`.
double HopSeconds(const LinkCosts& links, size_t up, size_t down, double forward_bytes,
                  double backward_bytes, const CostOptions& options) {
  const LinkCost f = EffectiveLink(links, up, down, options);
  const LinkCost b = EffectiveLink(links, down, up, options);
  return f.latency_seconds + forward_bytes / f.bytes_per_second + b.latency_seconds +
         backward_bytes / b.bytes_per_second;
}

double Mean(const std::vector<double>& v) {
  return v.empty() ? 0 : std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
}

// The step's sync part when the replicas are numbered in `order` (order[i] = old replica).
double RingsSeconds(const JobShape& shape, const LinkCosts& links, const Grid& grid,
                    const std::vector<size_t>& order, const CostOptions& options) {
  const size_t s_count = static_cast<size_t>(shape.num_stages);
  const size_t d = order.size();
  double worst = 0;
  for (size_t s = 0; s < s_count; ++s) {
    if (shape.sync_bytes[s] <= 0) continue;
    double min_bw = kInf, max_lat = 0;
    for (size_t i = 0; i < d; ++i) {
      const LinkCost l = EffectiveLink(links, grid[order[i] * s_count + s],
                                       grid[order[(i + 1) % d] * s_count + s], options);
      min_bw = std::min(min_bw, l.bytes_per_second);
      max_lat = std::max(max_lat, l.latency_seconds);
    }
    const double steps = 2.0 * static_cast<double>(d - 1);
    worst = std::max(
        worst, steps / static_cast<double>(d) * shape.sync_bytes[s] / min_bw + steps * max_lat);
  }
  return worst;
}

Grid Renumbered(const Grid& grid, size_t s_count, const std::vector<size_t>& order) {
  Grid out(grid.size());
  for (size_t r = 0; r < order.size(); ++r) {
    std::copy_n(grid.begin() + static_cast<long>(order[r] * s_count), s_count,
                out.begin() + static_cast<long>(r * s_count));
  }
  return out;
}

}  // namespace

std::vector<size_t> BottleneckMatching(const std::vector<double>& cost, size_t n) {
  std::vector<double> values = cost;
  std::sort(values.begin(), values.end());
  values.erase(std::unique(values.begin(), values.end()), values.end());
  // The smallest limit that still admits a perfect matching (the largest always does).
  size_t lo = 0, hi = values.size() - 1;
  std::vector<size_t> match_of_col;
  while (lo < hi) {
    const size_t mid = (lo + hi) / 2;
    if (PerfectMatching(cost, n, values[mid], match_of_col)) {
      hi = mid;
    } else {
      lo = mid + 1;
    }
  }
  PerfectMatching(cost, n, values[lo], match_of_col);
  std::vector<size_t> match(n);
  for (size_t col = 0; col < n; ++col) match[match_of_col[col]] = col;
  return match;
}

std::vector<size_t> BestPath(const std::vector<double>& cost, size_t n, double extra_per_max) {
  std::vector<size_t> identity(n);
  std::iota(identity.begin(), identity.end(), 0);
  if (n < 2 || n > static_cast<size_t>(kMaxExactUnits)) return identity;
  const size_t full = (size_t{1} << n) - 1;
  std::vector<double> dp((full + 1) * n);
  std::vector<unsigned char> from((full + 1) * n);
  // The cheapest path (sum of hops) using only hops <= cap, by Held-Karp; false when none.
  auto cheapest_under = [&](double cap, std::vector<size_t>& path, double& sum) {
    std::fill(dp.begin(), dp.end(), kInf);
    for (size_t u = 0; u < n; ++u) dp[(size_t{1} << u) * n + u] = 0;
    for (size_t mask = 1; mask <= full; ++mask) {
      for (size_t last = 0; last < n; ++last) {
        const double here = dp[mask * n + last];
        if (here == kInf) continue;
        for (size_t next = 0; next < n; ++next) {
          if (mask & (size_t{1} << next)) continue;
          const double c = cost[last * n + next];
          if (c > cap) continue;
          const size_t to = (mask | (size_t{1} << next)) * n + next;
          if (here + c < dp[to]) {
            dp[to] = here + c;
            from[to] = static_cast<unsigned char>(last);
          }
        }
      }
    }
    size_t end = n;
    for (size_t u = 0; u < n; ++u) {
      if (dp[full * n + u] < kInf && (end == n || dp[full * n + u] < dp[full * n + end])) end = u;
    }
    if (end == n) return false;
    path.clear();
    for (size_t mask = full, u = end; path.size() < n;) {
      path.push_back(u);
      const size_t prev = from[mask * n + u];
      mask &= ~(size_t{1} << u);
      u = prev;
    }
    std::reverse(path.begin(), path.end());
    sum = dp[full * n + end];
    return true;
  };
  auto largest_hop = [&](const std::vector<size_t>& path) {
    double largest = 0;
    for (size_t i = 0; i + 1 < n; ++i) largest = std::max(largest, cost[path[i] * n + path[i + 1]]);
    return largest;
  };
  std::vector<size_t> best, path;
  double cheapest = 0, sum = 0;
  if (!cheapest_under(kInf, best, cheapest)) return identity;
  double best_score = cheapest + extra_per_max * largest_hop(best);
  // For each cap on the largest hop, the cheapest path under it. A path first found under cap c
  // has its largest hop equal to c (the caps are the distinct hop costs, ascending), so it
  // scores at least cheapest + extra * c: once that reaches the best score no later cap can win,
  // and the best over the caps tried is the optimum.
  for (double cap : DistinctOffDiagonal(cost, n)) {
    if (cheapest + extra_per_max * cap >= best_score) break;
    if (!cheapest_under(cap, path, sum)) continue;
    const double score = sum + extra_per_max * largest_hop(path);
    if (score < best_score) {
      best_score = score;
      best = path;
    }
  }
  return best;
}

std::vector<size_t> BottleneckCycle(const std::vector<double>& cost, size_t n) {
  std::vector<size_t> cycle(n);
  std::iota(cycle.begin(), cycle.end(), 0);
  if (n < 3) return cycle;
  if (n > static_cast<size_t>(kMaxExactUnits)) {
    // Greedy: always on over the cheapest hop to a unit not yet in the cycle.
    std::vector<char> used(n, 0);
    used[0] = 1;
    for (size_t i = 1; i < n; ++i) {
      size_t best = n;
      for (size_t u = 0; u < n; ++u) {
        if (!used[u] && (best == n || cost[cycle[i - 1] * n + u] < cost[cycle[i - 1] * n + best]))
          best = u;
      }
      used[best] = 1;
      cycle[i] = best;
    }
    return cycle;
  }
  // dp over subsets containing unit 0 (the cycle's start): (largest hop, sum), lexicographic.
  using Value = std::pair<double, double>;
  const size_t full = (size_t{1} << n) - 1;
  std::vector<Value> dp((full + 1) * n, {kInf, kInf});
  std::vector<unsigned char> from((full + 1) * n);
  dp[1 * n + 0] = {0, 0};
  for (size_t mask = 1; mask <= full; mask += 2) {  // odd masks: unit 0 is in
    for (size_t last = 0; last < n; ++last) {
      const Value here = dp[mask * n + last];
      if (here.first == kInf) continue;
      for (size_t next = 1; next < n; ++next) {
        if (mask & (size_t{1} << next)) continue;
        const double c = cost[last * n + next];
        const Value v{std::max(here.first, c), here.second + c};
        const size_t to = (mask | (size_t{1} << next)) * n + next;
        if (v < dp[to]) {
          dp[to] = v;
          from[to] = static_cast<unsigned char>(last);
        }
      }
    }
  }
  size_t end = 1;
  Value best{kInf, kInf};
  for (size_t u = 1; u < n; ++u) {
    const Value here = dp[full * n + u];
    const Value closed{std::max(here.first, cost[u * n + 0]), here.second + cost[u * n + 0]};
    if (closed < best) {
      best = closed;
      end = u;
    }
  }
  if (best.first == kInf) return cycle;  // no cycle over finite hops
  std::vector<size_t> path;
  for (size_t mask = full, u = end; u != 0;) {
    path.push_back(u);
    const size_t prev = from[mask * n + u];
    mask &= ~(size_t{1} << u);
    u = prev;
  }
  path.push_back(0);
  std::reverse(path.begin(), path.end());
  return path;
}

Grid OrderStageGroups(const JobShape& shape, const std::vector<WorkerInfo>& workers,
                      const LinkCosts& links, const Grid& grid, const CostOptions& options) {
  const size_t s_count = static_cast<size_t>(shape.num_stages);
  const size_t d = static_cast<size_t>(shape.replicas);
  if (s_count < 2 || s_count > static_cast<size_t>(kMaxExactUnits)) return grid;
  const double forward_bytes = Mean(shape.activation_bytes);
  const double backward_bytes = Mean(shape.gradient_bytes);
  auto member = [&](size_t group, size_t r) { return grid[r * s_count + group]; };

  // Group g before group h costs the slowest hop of their best matching.
  std::vector<double> group_cost(s_count * s_count, 0);
  std::vector<double> hop(d * d);
  for (size_t g = 0; g < s_count; ++g) {
    for (size_t h = 0; h < s_count; ++h) {
      if (g == h) continue;
      for (size_t i = 0; i < d; ++i) {
        for (size_t j = 0; j < d; ++j) {
          hop[i * d + j] =
              HopSeconds(links, member(g, i), member(h, j), forward_bytes, backward_bytes, options);
        }
      }
      const std::vector<size_t> match = BottleneckMatching(hop, d);
      double slowest = 0;
      for (size_t i = 0; i < d; ++i) slowest = std::max(slowest, hop[i * d + match[i]]);
      group_cost[g * s_count + h] = slowest;
    }
  }
  // Every hop runs once per phase for the first micro-batch; the slowest paces the other M-1.
  const std::vector<size_t> order =
      BestPath(group_cost, s_count, static_cast<double>(shape.micro_batches - 1));

  // Lay the groups out in that order, each matched to the replicas of the one before it.
  Grid out(grid.size());
  for (size_t r = 0; r < d; ++r) out[r * s_count] = member(order[0], r);
  for (size_t s = 1; s < s_count; ++s) {
    for (size_t i = 0; i < d; ++i) {
      for (size_t j = 0; j < d; ++j) {
        hop[i * d + j] =
            HopSeconds(links, out[i * s_count + s - 1], member(order[s], j),
                       shape.activation_bytes[s - 1], shape.gradient_bytes[s - 1], options);
      }
    }
    const std::vector<size_t> match = BottleneckMatching(hop, d);
    for (size_t r = 0; r < d; ++r) out[r * s_count + s] = member(order[s], match[r]);
  }
  const double before = EstimateStepCost(shape, workers, links, grid, options).step_seconds;
  const double after = EstimateStepCost(shape, workers, links, out, options).step_seconds;
  return Lower(after, before) ? out : grid;
}

Grid OrderReplicaRing(const JobShape& shape, const std::vector<WorkerInfo>& workers,
                      const LinkCosts& links, const Grid& grid, const CostOptions& options) {
  const size_t s_count = static_cast<size_t>(shape.num_stages);
  const size_t d = static_cast<size_t>(shape.replicas);
  if (d < 3) return grid;
  // A ring costs 2(D-1)/D * bytes over its narrowest link plus 2(D-1) x its longest latency, two
  // bottlenecks that may sit on different hops. So for every cap on the latency (each hop's worst
  // over the stages), the cycle with the widest narrowest link among the hops under the cap, each
  // judged by the exact ring cost; the best of them is optimal for one stage group and close for
  // several.
  const double steps = 2.0 * static_cast<double>(d - 1);
  std::vector<double> transfer(d * d, 0), latency(d * d, 0);
  for (size_t a = 0; a < d; ++a) {
    for (size_t b = 0; b < d; ++b) {
      if (a == b) continue;
      for (size_t s = 0; s < s_count; ++s) {
        if (shape.sync_bytes[s] <= 0) continue;
        const LinkCost l =
            EffectiveLink(links, grid[a * s_count + s], grid[b * s_count + s], options);
        transfer[a * d + b] =
            std::max(transfer[a * d + b],
                     steps / static_cast<double>(d) * shape.sync_bytes[s] / l.bytes_per_second);
        latency[a * d + b] = std::max(latency[a * d + b], l.latency_seconds);
      }
    }
  }
  std::vector<size_t> order(d);
  std::iota(order.begin(), order.end(), 0);
  double current = RingsSeconds(shape, links, grid, order, options);
  std::vector<double> capped(d * d);
  std::vector<double> caps = DistinctOffDiagonal(latency, d);
  // Above the exact size the cycles are greedy: one pass over every hop is enough.
  if (d > static_cast<size_t>(kMaxExactUnits)) caps = {caps.back()};
  for (double cap : caps) {
    for (size_t i = 0; i < d * d; ++i) capped[i] = latency[i] <= cap ? transfer[i] : kInf;
    const std::vector<size_t> cycle = BottleneckCycle(capped, d);
    const double t = RingsSeconds(shape, links, grid, cycle, options);
    if (Lower(t, current)) {
      current = t;
      order = cycle;
    }
  }
  // Polish with the exact ring cost: swap two positions while that helps.
  for (bool improved = true; improved;) {
    improved = false;
    for (size_t i = 1; i < d; ++i) {
      for (size_t j = i + 1; j < d; ++j) {
        std::swap(order[i], order[j]);
        const double t = RingsSeconds(shape, links, grid, order, options);
        if (Lower(t, current)) {
          current = t;
          improved = true;
        } else {
          std::swap(order[i], order[j]);
        }
      }
    }
  }
  const Grid out = Renumbered(grid, s_count, order);
  const double before = EstimateStepCost(shape, workers, links, grid, options).step_seconds;
  const double after = EstimateStepCost(shape, workers, links, out, options).step_seconds;
  return Lower(after, before) ? out : grid;
}

}  // namespace geotrain::planner
