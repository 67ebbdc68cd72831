// SPDX-License-Identifier: Apache-2.0
#include "netagg/plan/model.hpp"

#include <algorithm>
#include <cmath>
#include <deque>
#include <functional>
#include <limits>
#include <numeric>
#include <queue>

#include <fmt/format.h>

#include "netagg/error.hpp"

namespace netagg::plan {
namespace {

bool forwards(const Topology& t, int node) { return t.nodes[node].kind == NodeKind::kSwitch; }

std::uint64_t splitmix(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

struct Dijkstra {
  const Topology& t;
  const std::vector<double>& weight;
  const std::vector<char>& usable;  // per link
  std::vector<double> dist;
  std::vector<int> via;  // link into the node

  // The cheapest path from `from` to `to` avoiding the blocked nodes and links, through
  // switches only; empty if none.
  std::vector<int> run(int from, int to, const std::vector<char>& blocked_node,
                       const std::vector<char>& blocked_link) {
    const double inf = std::numeric_limits<double>::infinity();
    dist.assign(t.nodes.size(), inf);
    via.assign(t.nodes.size(), -1);
    using Item = std::pair<double, int>;
    std::priority_queue<Item, std::vector<Item>, std::greater<>> queue;
    dist[from] = 0;
    queue.push({0, from});
    while (!queue.empty()) {
      auto [d, n] = queue.top();
      queue.pop();
      if (d > dist[n]) continue;
      if (n == to) break;
      if (n != from && !forwards(t, n)) continue;  // hosts do not forward
      for (int l : t.out_links[n]) {
        const int m = t.links[l].to;
        if (!usable[l] || blocked_link[l] || blocked_node[m]) continue;
        const double nd = d + weight[l];
        if (nd < dist[m]) {
          dist[m] = nd;
          via[m] = l;
          queue.push({nd, m});
        }
      }
    }
    std::vector<int> path;
    if (!std::isfinite(dist[to])) return path;
    for (int n = to; n != from; n = t.links[via[n]].from) path.push_back(via[n]);
    std::reverse(path.begin(), path.end());
    return path;
  }
};

// Breadth-first from the root against the links' direction over the links `usable` allows; only
// switches relay. Per node its hop count (-1: no path) and its next link towards the root.
void hops_to_root(const Topology& t, int root, const std::function<bool(int)>& usable,
                  std::vector<int>& distance, std::vector<int>& next_link) {
  distance.assign(t.nodes.size(), -1);
  next_link.assign(t.nodes.size(), -1);
  std::deque<int> queue{root};
  distance[root] = 0;
  while (!queue.empty()) {
    const int v = queue.front();
    queue.pop_front();
    if (v != root && !forwards(t, v)) continue;
    for (int l : t.in_links[v]) {
      const int u = t.links[l].from;
      if (!usable(l) || distance[u] >= 0) continue;
      distance[u] = distance[v] + 1;
      next_link[u] = l;
      queue.push_back(u);
    }
  }
}

}  // namespace

std::string_view to_string(Traffic traffic) {
  return traffic == Traffic::kAllReduce ? "all-reduce" : "upward-only";
}

bool Problem::usable(int link) const {
  return traffic == Traffic::kUpwardOnly || topology->links[link].twin >= 0;
}

std::vector<int> Problem::loaded_links(const std::vector<int>& route) const {
  std::vector<int> out(route);
  if (traffic == Traffic::kAllReduce)
    for (int l : route) {
      const int twin = topology->links[l].twin;
      if (twin < 0)
        throw Error(
            Errc::kConfig,
            fmt::format("a stream uses the one-way link {} {}->{}: an all-reduce's results "
                        "have no way back",
                        topology->links[l].name, topology->nodes[topology->links[l].from].name,
                        topology->nodes[topology->links[l].to].name));
      out.push_back(twin);
    }
  return out;
}

std::vector<int> Problem::shortest_path(int node) const {
  std::vector<int> path;
  for (int n = node; n != root; n = topology->links[next_link[n]].to) {
    if (next_link[n] < 0) return {};
    path.push_back(next_link[n]);
  }
  return path;
}

Problem make_problem(const Topology& t, std::string_view root_name, Traffic traffic) {
  Problem p;
  p.topology = &t;
  p.traffic = traffic;
  if (!root_name.empty()) {
    p.root = t.find(root_name);
    if (p.root < 0) throw Error(Errc::kConfig, fmt::format("root: no node '{}'", root_name));
    if (t.nodes[p.root].kind != NodeKind::kRoot)
      throw Error(Errc::kConfig, fmt::format("root: '{}' is a {}, not a root", root_name,
                                             to_string(t.nodes[p.root].kind)));
  } else {
    const auto roots = t.nodes_of(NodeKind::kRoot);
    if (roots.empty()) throw Error(Errc::kConfig, "the topology has no root (a node of kind root)");
    if (roots.size() > 1)
      throw Error(
          Errc::kConfig,
          fmt::format("the topology has {} roots: name the job's root (--root)", roots.size()));
    p.root = roots.front();
  }
  p.workers = t.nodes_of(NodeKind::kWorker);
  if (p.workers.empty()) throw Error(Errc::kConfig, "the topology has no worker");
  p.rank.assign(t.nodes.size(), -1);
  for (std::size_t r = 0; r < p.workers.size(); ++r) p.rank[p.workers[r]] = static_cast<int>(r);

  hops_to_root(
      t, p.root, [&](int l) { return p.usable(l); }, p.distance, p.next_link);
  std::vector<int> any_distance, any_next;  // over one-way links too: to explain an error
  for (int w : p.workers) {
    if (p.distance[w] >= 0) continue;
    if (any_distance.empty())
      hops_to_root(
          t, p.root, [](int) { return true; }, any_distance, any_next);
    if (any_distance[w] >= 0)
      throw Error(Errc::kConfig,
                  fmt::format("worker '{}' reaches the root '{}' only over one-way links: an "
                              "all-reduce's results come back on the reverse route, so its "
                              "streams use full-duplex links only (--upward-only plans the "
                              "streams towards the root alone)",
                              t.nodes[w].name, t.nodes[p.root].name));
    throw Error(Errc::kConfig,
                fmt::format("worker '{}' has no path to the root '{}' (paths run through "
                            "switches only)",
                            t.nodes[w].name, t.nodes[p.root].name));
  }
  return p;
}

std::vector<std::vector<int>> shortest_paths(const Problem& p, int from, int to, int count,
                                             std::uint64_t seed) {
  const Topology& t = p.topo();
  // Hop counts plus a perturbation whose sum over any simple path stays below one hop: it only
  // orders paths of equal length.
  const double epsilon = 0.5 / static_cast<double>(t.nodes.size() + 1);
  std::vector<double> weight(t.links.size());
  for (std::size_t l = 0; l < t.links.size(); ++l) {
    const std::uint64_t h = splitmix(seed ^ splitmix(static_cast<std::uint64_t>(from) << 32 | l));
    weight[l] = 1 + epsilon * static_cast<double>(h >> 11) * 0x1.0p-53;
  }
  auto cost = [&](const std::vector<int>& path) {
    double c = 0;
    for (int l : path) c += weight[l];
    return c;
  };
  std::vector<char> usable(t.links.size());
  for (std::size_t l = 0; l < t.links.size(); ++l) usable[l] = p.usable(static_cast<int>(l));
  Dijkstra dijkstra{t, weight, usable, {}, {}};
  std::vector<char> blocked_node(t.nodes.size(), 0), blocked_link(t.links.size(), 0);
  std::vector<std::vector<int>> found;
  std::vector<int> first = dijkstra.run(from, to, blocked_node, blocked_link);
  if (first.empty()) return found;
  found.push_back(std::move(first));
  std::vector<std::pair<double, std::vector<int>>> candidates;
  while (static_cast<int>(found.size()) < count) {
    const std::vector<int>& last = found.back();
    std::vector<int> nodes{from};
    for (int l : last) nodes.push_back(t.links[l].to);
    for (std::size_t i = 0; i < last.size(); ++i) {
      const int spur = nodes[i];
      std::fill(blocked_node.begin(), blocked_node.end(), 0);
      std::fill(blocked_link.begin(), blocked_link.end(), 0);
      for (std::size_t j = 0; j < i; ++j) blocked_node[nodes[j]] = 1;
      for (const auto& p : found)
        if (p.size() > i && std::equal(p.begin(), p.begin() + i, last.begin()))
          blocked_link[p[i]] = 1;
      std::vector<int> tail = dijkstra.run(spur, to, blocked_node, blocked_link);
      if (tail.empty()) continue;
      std::vector<int> path(last.begin(), last.begin() + i);
      path.insert(path.end(), tail.begin(), tail.end());
      const bool known = std::find(found.begin(), found.end(), path) != found.end() ||
                         std::any_of(candidates.begin(), candidates.end(),
                                     [&](const auto& c) { return c.second == path; });
      if (!known) candidates.push_back({cost(path), std::move(path)});
    }
    if (candidates.empty()) break;
    auto best = std::min_element(candidates.begin(), candidates.end(),
                                 [](const auto& a, const auto& b) { return a.first < b.first; });
    found.push_back(std::move(best->second));
    candidates.erase(best);
  }
  return found;
}

Usage usage_of(const Problem& p, std::span<const WeightedTree> trees) {
  const Topology& t = p.topo();
  Usage u;
  u.link.assign(t.links.size(), 0);
  u.agg.assign(t.nodes.size(), 0);
  for (const WeightedTree& wt : trees)
    for (const Stream& s : wt.tree.streams) {
      for (int l : p.loaded_links(s.links)) u.link[l] += wt.share;
      if (s.to == p.root)
        u.root += wt.share;
      else
        u.agg[s.to] += wt.share;
    }
  return u;
}

double rate_of(const Problem& p, const Usage& u) {
  const Topology& t = p.topo();
  double rate = std::numeric_limits<double>::infinity();
  constexpr double kTiny = 1e-12;
  for (std::size_t l = 0; l < t.links.size(); ++l)
    if (u.link[l] > kTiny) rate = std::min(rate, t.links[l].gbps / u.link[l]);
  for (std::size_t n = 0; n < t.nodes.size(); ++n)
    if (u.agg[n] > kTiny) rate = std::min(rate, t.nodes[n].aggregation_gbps / u.agg[n]);
  if (u.root > kTiny) rate = std::min(rate, t.nodes[p.root].ingress_gbps / u.root);
  return rate;
}

std::string check_tree(const Problem& p, const Tree& tree) {
  const Topology& t = p.topo();
  std::vector<int> out(t.nodes.size(), -1);  // the stream leaving each node
  std::vector<int> in(t.nodes.size(), 0);
  for (std::size_t i = 0; i < tree.streams.size(); ++i) {
    const Stream& s = tree.streams[i];
    if (s.from < 0 || s.from >= static_cast<int>(t.nodes.size()) || s.to < 0 ||
        s.to >= static_cast<int>(t.nodes.size()))
      return fmt::format("stream {}: no such node", i);
    const std::string& name = t.nodes[s.from].name;
    if (out[s.from] >= 0) return fmt::format("'{}' sends two streams", name);
    out[s.from] = static_cast<int>(i);
    if (s.from == p.root) return "the root sends a stream";
    if (t.nodes[s.from].kind == NodeKind::kSwitch && !t.nodes[s.from].programmable())
      return fmt::format("'{}' does not aggregate but sends a stream of its own", name);
    if (s.to != p.root && !t.nodes[s.to].programmable())
      return fmt::format("'{}' sends to '{}', which neither aggregates nor is the root", name,
                         t.nodes[s.to].name);
    ++in[s.to];
    int at = s.from;
    for (std::size_t h = 0; h < s.links.size(); ++h) {
      const int l = s.links[h];
      if (l < 0 || l >= static_cast<int>(t.links.size()) || t.links[l].from != at)
        return fmt::format("the route of '{}' is not a path", name);
      if (h > 0 && t.nodes[at].kind != NodeKind::kSwitch)
        return fmt::format("the route of '{}' passes through host '{}'", name, t.nodes[at].name);
      if (!p.usable(l))
        return fmt::format(
            "the route of '{}' uses the one-way link '{}': the results have no way "
            "back",
            name, t.links[l].name);
      at = t.links[l].to;
    }
    if (at != s.to) return fmt::format("the route of '{}' does not end at its parent", name);
  }
  for (int w : p.workers)
    if (out[w] < 0) return fmt::format("worker '{}' sends no stream", t.nodes[w].name);
  for (std::size_t n = 0; n < t.nodes.size(); ++n) {
    const bool is_switch = t.nodes[n].kind == NodeKind::kSwitch;
    if (is_switch && in[n] > 0 && out[n] < 0)
      return fmt::format("'{}' aggregates but sends nothing on", t.nodes[n].name);
    if (is_switch && in[n] == 0 && out[n] >= 0)
      return fmt::format("'{}' sends a stream but aggregates none", t.nodes[n].name);
  }
  for (int w : p.workers) {  // every chain of parents reaches the root
    int at = w;
    for (std::size_t steps = 0; at != p.root; ++steps) {
      if (steps > t.nodes.size()) return "the parents form a cycle";
      at = tree.streams[out[at]].to;
    }
  }
  return {};
}

std::vector<std::uint32_t> integer_weights(std::span<const double> shares) {
  std::vector<std::uint32_t> w(shares.size(), 0);
  if (shares.empty()) return w;
  for (std::uint32_t d = 1; d <= 4096; ++d) {
    bool exact = true;
    for (double s : shares) exact = exact && std::abs(s * d - std::round(s * d)) <= 1e-6;
    if (!exact) continue;
    for (std::size_t i = 0; i < shares.size(); ++i)
      w[i] = static_cast<std::uint32_t>(std::llround(shares[i] * d));
    return w;
  }
  const double largest = *std::max_element(shares.begin(), shares.end());
  for (std::size_t i = 0; i < shares.size(); ++i)
    w[i] = static_cast<std::uint32_t>(std::llround(shares[i] / largest * double(1u << 20)));
  return w;
}

void finish_plan(const Problem& p, PlanResult& plan, bool keep_rate) {
  std::vector<double> shares;
  for (const auto& t : plan.trees) shares.push_back(t.share);
  std::vector<std::uint32_t> w = integer_weights(shares);
  std::vector<WeightedTree> kept;
  plan.weights.clear();
  double total = 0;
  for (std::size_t i = 0; i < w.size(); ++i) total += w[i];
  for (std::size_t i = 0; i < w.size(); ++i) {
    if (w[i] == 0) continue;
    kept.push_back(std::move(plan.trees[i]));
    kept.back().share = w[i] / total;
    plan.weights.push_back(w[i]);
  }
  plan.trees = std::move(kept);
  plan.usage = usage_of(p, plan.trees);
  if (!keep_rate) plan.rate_gbps = rate_of(p, plan.usage);
}

}  // namespace netagg::plan
