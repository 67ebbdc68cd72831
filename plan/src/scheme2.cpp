// SPDX-License-Identifier: Apache-2.0
// Scheme 2: aggregation at the nearest programmable switch, on shortest paths (docs/routing.md,
// "Scheme 2").
//
// A worker's gradient is the interval [0, 1) of its chunks. Every switch takes, of each stream
// that reaches it, the chunks below one threshold tau common to all of them (water filling:
// as many as its capacity allows at rate x), so a chunk is aggregated at the same switch for all
// the workers whose streams meet there, and what goes on is always a tail [b, 1). The intervals
// between all thresholds are the plan's trees.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>

#include <fmt/format.h>

#include "netagg/plan/policies.hpp"

namespace netagg::plan {
namespace {

struct Segment {
  int worker;  // rank
  int at;      // the node that aggregates chunks [lo, hi) of the worker (the root: none does)
  double lo, hi;
  std::size_t hops;  // links of the worker's route up to `at`
};

struct Outcome {
  std::vector<Segment> segments;
  std::map<int, std::pair<double, double>> aggregated;  // per switch: the chunks it aggregates
  bool feasible = false;
};

class Greedy {
 public:
  explicit Greedy(const Problem& p) : p_(p), t_(p.topo()) {
    for (int w : p.workers) {
      std::vector<int> links = p.shortest_path(w);
      std::vector<int> nodes;
      for (int l : links) nodes.push_back(t_.links[l].to);
      paths_.push_back(std::move(links));
      nodes_.push_back(std::move(nodes));
    }
    passing_.resize(t_.nodes.size());
    for (std::size_t r = 0; r < nodes_.size(); ++r)
      for (std::size_t h = 0; h < nodes_[r].size(); ++h)
        passing_[nodes_[r][h]].push_back({static_cast<int>(r), h + 1});
    for (std::size_t n = 0; n < t_.nodes.size(); ++n)
      if (t_.nodes[n].programmable() && !passing_[n].empty()) order_.push_back(static_cast<int>(n));
    std::stable_sort(order_.begin(), order_.end(),
                     [&](int a, int b) { return p.distance[a] > p.distance[b]; });
  }

  // The links of worker `rank`'s route up to node `at`.
  std::vector<int> prefix(int rank, int at) const {
    std::vector<int> out;
    for (std::size_t h = 0; h < paths_[rank].size(); ++h) {
      out.push_back(paths_[rank][h]);
      if (nodes_[rank][h] == at) break;
    }
    return out;
  }

  Outcome run(double x) const {
    Outcome o;
    const std::size_t workers = p_.workers.size();
    std::vector<double> start(workers, 0);  // each worker's chunks not yet aggregated: [start, 1)
    for (int s : order_) {
      std::vector<int> arriving;
      for (const auto& [r, hops] : passing_[s])
        if (start[r] < 1) arriving.push_back(r);
      if (arriving.empty()) continue;
      const double tau = threshold(arriving, start, t_.nodes[s].aggregation_gbps / x);
      double lowest = 1;
      for (const auto& [r, hops] : passing_[s])
        if (start[r] < tau) {
          lowest = std::min(lowest, start[r]);
          o.segments.push_back({r, s, start[r], tau, hops});
          start[r] = tau;
        }
      if (lowest < tau) o.aggregated[s] = {lowest, tau};
    }
    for (std::size_t r = 0; r < workers; ++r)
      if (start[r] < 1)
        o.segments.push_back({static_cast<int>(r), p_.root, start[r], 1, paths_[r].size()});
    o.feasible = fits(o, x);
    return o;
  }

  std::vector<WeightedTree> trees(const Outcome& o) const {
    std::vector<double> cuts{0, 1};
    for (const Segment& s : o.segments) {
      cuts.push_back(s.lo);
      cuts.push_back(s.hi);
    }
    std::sort(cuts.begin(), cuts.end());
    std::map<std::vector<int>, double> shares;  // each worker's aggregation point -> share
    for (std::size_t i = 0; i + 1 < cuts.size(); ++i) {
      const double lo = cuts[i], hi = cuts[i + 1];
      if (hi - lo <= 1e-12) continue;
      const double mid = (lo + hi) / 2;
      std::vector<int> at(p_.workers.size(), p_.root);
      for (const Segment& s : o.segments)
        if (s.lo <= mid && mid < s.hi) at[s.worker] = s.at;
      shares[at] += hi - lo;
    }
    std::vector<WeightedTree> out;
    for (const auto& [at, share] : shares) {
      WeightedTree wt;
      wt.share = share;
      std::vector<int> active;
      for (std::size_t r = 0; r < at.size(); ++r) {
        wt.tree.streams.push_back({p_.workers[r], at[r], prefix(static_cast<int>(r), at[r])});
        if (at[r] != p_.root && std::find(active.begin(), active.end(), at[r]) == active.end())
          active.push_back(at[r]);
      }
      for (int s : active) wt.tree.streams.push_back({s, p_.root, p_.shortest_path(s)});
      out.push_back(std::move(wt));
    }
    return out;
  }

  // An upper bound on x: every worker's whole gradient crosses its first link (and its results
  // the way back).
  double bound() const {
    double b = kUnlimited;
    for (const auto& path : paths_) b = std::min(b, t_.links[path.front()].gbps);
    return b;
  }

 private:
  // The largest tau in [0, 1] with sum over the arriving streams of max(0, tau - start) <= budget.
  static double threshold(const std::vector<int>& arriving, const std::vector<double>& start,
                          double budget) {
    std::vector<double> b;
    for (int r : arriving) b.push_back(start[r]);
    std::sort(b.begin(), b.end());
    double below = 0;  // sum of the k smallest starts
    for (std::size_t k = 1; k <= b.size(); ++k) {
      below += b[k - 1];
      const double next = k < b.size() ? b[k] : 1.0;
      const double tau = (budget + below) / static_cast<double>(k);
      if (tau <= next) return std::min(tau, 1.0);
    }
    return 1;
  }

  bool fits(const Outcome& o, double x) const {
    std::vector<double> load(t_.links.size(), 0);
    // A stream over `link`, and its results back over the twin (make_problem allows only
    // full-duplex links then).
    const bool results = p_.traffic == Traffic::kAllReduce;
    auto carry = [&](int link, double rate) {
      load[link] += rate;
      if (results) load[t_.links[link].twin] += rate;
    };
    double root = 0;
    for (const Segment& s : o.segments) {
      for (std::size_t h = 0; h < s.hops; ++h) carry(paths_[s.worker][h], (s.hi - s.lo) * x);
      if (s.at == p_.root) root += (s.hi - s.lo) * x;
    }
    for (const auto& [s, range] : o.aggregated) {
      const double rate = (range.second - range.first) * x;
      for (int l = p_.next_link[s]; l >= 0; l = p_.next_link[t_.links[l].to]) carry(l, rate);
      root += rate;
    }
    constexpr double kSlack = 1 + 1e-12;
    for (std::size_t l = 0; l < load.size(); ++l)
      if (load[l] > t_.links[l].gbps * kSlack) return false;
    return root <= t_.nodes[p_.root].ingress_gbps * kSlack;
  }

  const Problem& p_;
  const Topology& t_;
  std::vector<std::vector<int>> paths_;  // per rank: links to the root
  std::vector<std::vector<int>> nodes_;  // per rank: the nodes those links reach
  // per node: the workers whose routes pass it (rank, links up to it)
  std::vector<std::vector<std::pair<int, std::size_t>>> passing_;
  std::vector<int> order_;  // programmable switches, farthest from the root first
};

}  // namespace

PlanResult scheme2(const Problem& p) {
  const auto start = std::chrono::steady_clock::now();
  Greedy greedy(p);
  double lo = 0, hi = greedy.bound();
  Outcome best;
  if (Outcome o = greedy.run(hi); o.feasible) {
    lo = hi;
    best = std::move(o);
  } else {
    // The loads grow with x (every threshold falls, every tail grows), so feasibility is a
    // threshold in x.
    for (int i = 0; i < 200 && hi - lo > 1e-13 * hi; ++i) {
      const double mid = (lo + hi) / 2;
      if (Outcome o = greedy.run(mid); o.feasible) {
        lo = mid;
        best = std::move(o);
      } else {
        hi = mid;
      }
    }
    if (lo == 0) best = greedy.run(hi * 1e-9);
  }
  PlanResult plan;
  plan.policy = "scheme2";
  plan.status = "greedy";
  plan.trees = greedy.trees(best);
  plan.rate_gbps = lo;
  finish_plan(p, plan, /*keep_rate=*/true);
  // Integer weights may shift the shares by about 1e-6: the job runs at the lower of the two.
  plan.rate_gbps = std::min(plan.rate_gbps, rate_of(p, plan.usage));
  for (const auto& [s, range] : best.aggregated)
    plan.details["aggregated_chunks"][p.topo().nodes[s].name] = {range.first, range.second};
  plan.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return plan;
}

}  // namespace netagg::plan
