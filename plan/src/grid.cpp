// SPDX-License-Identifier: Apache-2.0
// Scheme 1, GRID and the LP bound: one program over candidate parents and routes
// (docs/routing.md, "Formulation"), with and without aggregation.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <memory>
#include <random>
#include <set>

#include <fmt/format.h>

#include "glpk.hpp"
#include "netagg/error.hpp"
#include "netagg/plan/policies.hpp"

namespace netagg::plan {
namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

// A candidate parent of a node and the route to it.
struct Choice {
  int parent;
  std::vector<int> links;
  std::vector<int> load;  // the links it loads: the route, and the results' way back
};

// The nodes that choose a parent (workers first, then switches farthest from the root first, so
// that a switch comes after every node that may choose it) and their choices.
struct Candidates {
  std::vector<int> nodes;
  std::vector<int> index;  // per topology node: its index in `nodes`, or -1
  std::vector<std::vector<Choice>> choices;
  std::size_t workers = 0;
  std::size_t count() const {
    std::size_t n = 0;
    for (const auto& c : choices) n += c.size();
    return n;
  }
};

// With `aggregate`, every programmable switch on a route is a candidate parent (of a switch:
// only if closer to the root); without, the root is every worker's only parent.
Candidates make_candidates(const Problem& p, const PathSet& paths, bool aggregate) {
  const Topology& t = p.topo();
  Candidates c;
  c.index.assign(t.nodes.size(), -1);
  for (int w : p.workers) c.nodes.push_back(w);
  c.workers = c.nodes.size();
  if (aggregate) {
    std::vector<int> switches;
    for (std::size_t n = 0; n < t.nodes.size(); ++n)
      if (t.nodes[n].programmable() && p.distance[n] > 0) switches.push_back(static_cast<int>(n));
    std::stable_sort(switches.begin(), switches.end(),
                     [&](int a, int b) { return p.distance[a] > p.distance[b]; });
    c.nodes.insert(c.nodes.end(), switches.begin(), switches.end());
  }
  for (std::size_t i = 0; i < c.nodes.size(); ++i) c.index[c.nodes[i]] = static_cast<int>(i);
  c.choices.resize(c.nodes.size());
  for (std::size_t i = 0; i < c.nodes.size(); ++i) {
    const int u = c.nodes[i];
    const bool is_worker = i < c.workers;
    std::set<std::pair<int, std::vector<int>>> seen;
    for (const auto& path : paths.of[u]) {
      for (std::size_t h = 0; h < path.size(); ++h) {
        const int v = t.links[path[h]].to;
        const bool parent = v == p.root || (aggregate && t.nodes[v].programmable() &&
                                            (is_worker || p.distance[v] < p.distance[u]));
        if (!parent) continue;
        std::vector<int> route(path.begin(), path.begin() + static_cast<long>(h) + 1);
        if (seen.insert({v, route}).second) {
          std::vector<int> load = p.loaded_links(route);
          c.choices[i].push_back({v, std::move(route), std::move(load)});
        }
      }
    }
    // Nearest parents first: threshold rounding then gives the workers of one switch the same
    // choice for the same threshold.
    std::stable_sort(c.choices[i].begin(), c.choices[i].end(),
                     [&](const Choice& a, const Choice& b) {
                       if (p.distance[a.parent] != p.distance[b.parent])
                         return p.distance[a.parent] > p.distance[b.parent];
                       if (a.parent != b.parent) return a.parent < b.parent;
                       return a.links.size() < b.links.size();
                     });
  }
  return c;
}

// The program (docs/routing.md, "Formulation"), in the form: minimize lambda = 1/x.
struct Relaxation {
  std::vector<std::vector<int>> y_column;  // per candidate node, per choice
  std::vector<int> z_column;               // per candidate node (switches), else -1
  int lambda_column = -1;
  double lambda = 0;
  std::vector<std::vector<double>> y;
  std::vector<double> z;  // per candidate node
  Usage usage;            // of the fractional solution, per Gbit/s
  nlohmann::json stats;
};

std::unique_ptr<LinearProgram> build(const Problem& p, const Candidates& c, bool integer,
                                     Relaxation& r) {
  const Topology& t = p.topo();
  auto lp = std::make_unique<LinearProgram>(/*maximize=*/false);
  r.lambda_column = lp->add_column(0, kUnlimited, 1);
  r.y_column.resize(c.nodes.size());
  r.z_column.assign(c.nodes.size(), -1);
  for (std::size_t i = c.workers; i < c.nodes.size(); ++i) r.z_column[i] = lp->add_column(0, 1, 0);
  for (std::size_t i = 0; i < c.nodes.size(); ++i)
    for (std::size_t j = 0; j < c.choices[i].size(); ++j)
      r.y_column[i].push_back(lp->add_column(0, 1, 0, integer));

  // A worker sends its whole gradient; a switch sends on what it aggregates (z: the share of the
  // gradient it aggregates any of), and only then.
  for (std::size_t i = 0; i < c.nodes.size(); ++i) {
    const bool is_worker = i < c.workers;
    const int row = lp->add_row_fixed(is_worker ? 1 : 0);
    for (int col : r.y_column[i]) lp->add(row, col, 1);
    if (!is_worker) lp->add(row, r.z_column[i], -1);
    // A switch that a node sends any share to sends at least that share on.
    std::map<int, std::vector<int>> by_parent;
    for (std::size_t j = 0; j < c.choices[i].size(); ++j)
      if (c.choices[i][j].parent != p.root)
        by_parent[c.choices[i][j].parent].push_back(r.y_column[i][j]);
    for (const auto& [parent, cols] : by_parent) {
      const int act = lp->add_row_upper(0);
      for (int col : cols) lp->add(act, col, 1);
      lp->add(act, r.z_column[c.index[parent]], -1);
    }
  }
  // Capacities: links (the streams, and the results on the way back), aggregation, the root's
  // ingress.
  std::vector<std::vector<int>> on_link(t.links.size()), into(t.nodes.size());
  for (std::size_t i = 0; i < c.nodes.size(); ++i)
    for (std::size_t j = 0; j < c.choices[i].size(); ++j) {
      for (int l : c.choices[i][j].load) on_link[l].push_back(r.y_column[i][j]);
      into[c.choices[i][j].parent].push_back(r.y_column[i][j]);
    }
  for (std::size_t l = 0; l < t.links.size(); ++l) {
    if (on_link[l].empty()) continue;
    const int row = lp->add_row_upper(0);
    for (int col : on_link[l]) lp->add(row, col, 1);
    lp->add(row, r.lambda_column, -t.links[l].gbps);
  }
  for (std::size_t n = 0; n < t.nodes.size(); ++n) {
    if (into[n].empty()) continue;
    const double capacity =
        static_cast<int>(n) == p.root ? t.nodes[n].ingress_gbps : t.nodes[n].aggregation_gbps;
    if (!std::isfinite(capacity)) continue;
    const int row = lp->add_row_upper(0);
    for (int col : into[n]) lp->add(row, col, 1);
    lp->add(row, r.lambda_column, -capacity);
  }
  r.stats = {{"rows", lp->rows()}, {"columns", lp->columns()}, {"nonzeros", lp->nonzeros()}};
  return lp;
}

void read_solution(const Problem& p, const Candidates& c, const LinearProgram& lp, Relaxation& r) {
  const Topology& t = p.topo();
  r.lambda = lp.value(r.lambda_column);
  r.y.assign(c.nodes.size(), {});
  r.z.assign(c.nodes.size(), 1);
  r.usage.link.assign(t.links.size(), 0);
  r.usage.agg.assign(t.nodes.size(), 0);
  r.usage.root = 0;
  for (std::size_t i = 0; i < c.nodes.size(); ++i) {
    if (r.z_column[i] >= 0) r.z[i] = std::clamp(lp.value(r.z_column[i]), 0.0, 1.0);
    for (std::size_t j = 0; j < c.choices[i].size(); ++j) {
      const double y = std::clamp(lp.value(r.y_column[i][j]), 0.0, 1.0);
      r.y[i].push_back(y);
      for (int l : c.choices[i][j].load) r.usage.link[l] += y;
      if (c.choices[i][j].parent == p.root)
        r.usage.root += y;
      else
        r.usage.agg[c.choices[i][j].parent] += y;
    }
  }
}

// One tree: a choice (index) per candidate node, -1 for a switch that aggregates nothing.
using Picks = std::vector<int>;

// Draws a tree from the relaxation: `pick(i, weights)` chooses among node i's choices given
// their weights. Workers first; a switch chooses only if something was sent to it.
template <typename Pick>
Picks round_tree(const Problem& p, const Candidates& c, const Relaxation& r, Pick pick) {
  Picks picks(c.nodes.size(), -1);
  std::vector<char> receives(p.topo().nodes.size(), 0);
  for (std::size_t i = 0; i < c.nodes.size(); ++i) {
    if (i >= c.workers && !receives[c.nodes[i]]) continue;
    picks[i] = pick(i, r.y[i]);
    const int parent = c.choices[i][picks[i]].parent;
    receives[parent] = 1;
  }
  return picks;
}

// Index of the choice whose cumulative interval holds `u` in [0, 1); the choice of largest
// weight if the weights are all zero (a switch the relaxation sends nothing to).
int by_threshold(const std::vector<double>& weights, double u) {
  double total = 0;
  for (double w : weights) total += w;
  if (total <= 1e-12)
    return static_cast<int>(std::max_element(weights.begin(), weights.end()) - weights.begin());
  double sum = 0;
  for (std::size_t j = 0; j < weights.size(); ++j) {
    sum += weights[j] / total;
    if (u < sum && weights[j] > 0) return static_cast<int>(j);
  }
  for (std::size_t j = weights.size(); j-- > 0;)
    if (weights[j] > 0) return static_cast<int>(j);
  return 0;
}

Tree to_tree(const Candidates& c, const Picks& picks) {
  Tree tree;
  for (std::size_t i = 0; i < c.nodes.size(); ++i)
    if (picks[i] >= 0)
      tree.streams.push_back(
          {c.nodes[i], c.choices[i][picks[i]].parent, c.choices[i][picks[i]].links});
  return tree;
}

double tree_rate(const Problem& p, const Tree& tree) {
  const WeightedTree wt{tree, 1.0};
  return rate_of(p, usage_of(p, std::span<const WeightedTree>(&wt, 1)));
}

// Randomized rounding: `rounds` trees drawn independently per node, `rounds` with one threshold
// for every node (stratified over [0, 1)), and the most likely choice of every node. Returns the
// distinct trees.
std::vector<Picks> roundings(const Problem& p, const Candidates& c, const Relaxation& r, int rounds,
                             std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> uniform(0, 1);
  std::set<Picks> seen;
  std::vector<Picks> out;
  auto keep = [&](Picks picks) {
    if (seen.insert(picks).second) out.push_back(std::move(picks));
  };
  keep(round_tree(p, c, r, [](std::size_t, const std::vector<double>& w) {
    return static_cast<int>(std::max_element(w.begin(), w.end()) - w.begin());
  }));
  for (int k = 0; k < rounds; ++k) {
    const double theta = (k + uniform(rng)) / rounds;
    keep(round_tree(p, c, r, [&](std::size_t, const std::vector<double>& w) {
      return by_threshold(w, theta);
    }));
  }
  for (int k = 0; k < rounds; ++k)
    keep(round_tree(p, c, r, [&](std::size_t, const std::vector<double>& w) {
      return by_threshold(w, uniform(rng));
    }));
  return out;
}

// Local search on one tree (docs/routing.md, "Rounding"): while some resource is the bottleneck
// (the largest streams-per-capacity ratio M), move one stream through it to another of its
// node's choices, provided no resource the move adds to reaches M. A move may switch a switch
// off (its last child left: its own stream goes) or on (a first child came: it picks the route
// that adds least to the bottleneck). Each move lowers the number of resources at M, or M.
class LocalSearch {
 public:
  LocalSearch(const Problem& p, const Candidates& c, const Relaxation& r)
      : p_(p), c_(c), r_(r), links_(static_cast<int>(p.topo().links.size())) {
    const Topology& t = p.topo();
    capacity_.resize(links_ + t.nodes.size(), kUnlimited);
    for (int l = 0; l < links_; ++l) capacity_[l] = t.links[l].gbps;
    for (std::size_t n = 0; n < t.nodes.size(); ++n)
      capacity_[links_ + n] =
          static_cast<int>(n) == p.root ? t.nodes[n].ingress_gbps : t.nodes[n].aggregation_gbps;
  }

  Picks improve(Picks picks, std::mt19937_64& rng, int max_moves) {
    picks_ = std::move(picks);
    count_.assign(capacity_.size(), 0);
    children_.assign(p_.topo().nodes.size(), 0);
    for (std::size_t i = 0; i < picks_.size(); ++i)
      if (picks_[i] >= 0) apply_stream(static_cast<int>(i), picks_[i], +1);
    for (int moves = 0; moves < max_moves; ++moves)
      if (!step(rng)) break;
    return picks_;
  }

 private:
  struct Move {
    std::map<int, int> count;     // resource -> change
    std::map<int, int> children;  // node -> change
    std::map<int, int> picks;     // candidate index -> new choice (-1: off)
  };

  double ratio(int res, int count) const { return count / capacity_[res]; }

  void apply_stream(int i, int j, int sign) {
    const Choice& ch = c_.choices[i][j];
    for (int l : ch.load) count_[l] += sign;
    count_[links_ + ch.parent] += sign;
    children_[ch.parent] += sign;
  }

  int pick_of(const Move& m, int i) const {
    auto it = m.picks.find(i);
    return it == m.picks.end() ? picks_[i] : it->second;
  }
  int children_of(const Move& m, int node) const {
    auto it = m.children.find(node);
    return children_[node] + (it == m.children.end() ? 0 : it->second);
  }
  int count_of(const Move& m, int res) const {
    auto it = m.count.find(res);
    return count_[res] + (it == m.count.end() ? 0 : it->second);
  }

  void remove(Move& m, int i) {
    const int j = pick_of(m, i);
    const Choice& ch = c_.choices[i][j];
    for (int l : ch.load) --m.count[l];
    --m.count[links_ + ch.parent];
    --m.children[ch.parent];
    m.picks[i] = -1;
    if (ch.parent != p_.root && children_of(m, ch.parent) == 0) remove(m, c_.index[ch.parent]);
  }

  void add(Move& m, int i, int j) {
    const Choice& ch = c_.choices[i][j];
    for (int l : ch.load) ++m.count[l];
    ++m.count[links_ + ch.parent];
    const bool was_off = children_of(m, ch.parent) == 0;
    ++m.children[ch.parent];
    m.picks[i] = j;
    if (ch.parent != p_.root && was_off) {
      const int k = c_.index[ch.parent];
      add(m, k, cheapest(m, k, /*avoid=*/-1));
    }
  }

  // The choice of node i whose route and parent would be least loaded after adding it; ties go
  // to the relaxation's favourite. Never a choice with parent `avoid`; -1 if there is no other.
  int cheapest(const Move& m, int i, int avoid = -1) const {
    int best = -1;
    double best_load = kUnlimited, best_y = -1;
    for (std::size_t j = 0; j < c_.choices[i].size(); ++j) {
      const Choice& ch = c_.choices[i][j];
      if (ch.parent == avoid) continue;
      double load = ratio(links_ + ch.parent, count_of(m, links_ + ch.parent) + 1);
      for (int l : ch.load) load = std::max(load, ratio(l, count_of(m, l) + 1));
      if (load < best_load - 1e-12 || (load < best_load + 1e-12 && r_.y[i][j] > best_y)) {
        best = static_cast<int>(j);
        best_load = load;
        best_y = r_.y[i][j];
      }
    }
    return best;
  }

  bool step(std::mt19937_64& rng) {
    double top = 0;
    for (std::size_t res = 0; res < count_.size(); ++res)
      if (count_[res] > 0) top = std::max(top, ratio(static_cast<int>(res), count_[res]));
    std::vector<int> bottlenecks;
    for (std::size_t res = 0; res < count_.size(); ++res)
      if (count_[res] > 0 && ratio(static_cast<int>(res), count_[res]) >= top * (1 - 1e-12))
        bottlenecks.push_back(static_cast<int>(res));
    std::shuffle(bottlenecks.begin(), bottlenecks.end(), rng);
    for (int b : bottlenecks) {
      std::vector<int> through;  // the nodes whose streams use b
      for (std::size_t i = 0; i < picks_.size(); ++i) {
        if (picks_[i] < 0) continue;
        const Choice& ch = c_.choices[i][picks_[i]];
        if (links_ + ch.parent == b ||
            std::find(ch.load.begin(), ch.load.end(), b) != ch.load.end())
          through.push_back(static_cast<int>(i));
      }
      std::shuffle(through.begin(), through.end(), rng);
      for (int i : through) {
        for (std::size_t j = 0; j < c_.choices[i].size(); ++j) {
          if (static_cast<int>(j) == picks_[i]) continue;
          Move m;
          remove(m, i);
          add(m, i, static_cast<int>(j));
          if (accept(m, b, top)) return true;
        }
        // A switch's stream: send all its children elsewhere, so that it is off.
        if (i >= static_cast<int>(c_.workers) && dissolve(c_.nodes[i], b, top)) return true;
      }
    }
    return false;
  }

  // Applies the move if it lowers resource b and brings no resource to the level `top`.
  bool accept(const Move& m, int b, double top) {
    if (count_of(m, b) >= count_[b]) return false;
    for (const auto& [res, d] : m.count)
      if (d > 0 && ratio(res, count_[res] + d) >= top * (1 - 1e-12)) return false;
    for (const auto& [res, d] : m.count) count_[res] += d;
    for (const auto& [node, d] : m.children) children_[node] += d;
    for (const auto& [k, pick] : m.picks) picks_[k] = pick;
    return true;
  }

  bool dissolve(int node, int b, double top) {
    std::vector<int> children;
    for (std::size_t i = 0; i < picks_.size(); ++i)
      if (picks_[i] >= 0 && c_.choices[i][picks_[i]].parent == node)
        children.push_back(static_cast<int>(i));
    Move m;
    for (int i : children) remove(m, i);
    for (int i : children) {
      const int j = cheapest(m, i, node);
      if (j < 0) return false;
      add(m, i, j);
    }
    return accept(m, b, top);
  }

  const Problem& p_;
  const Candidates& c_;
  const Relaxation& r_;
  const int links_;
  std::vector<double> capacity_;  // links, then per node (aggregation; the root's ingress)
  std::vector<int> count_;
  std::vector<int> children_;
  Picks picks_;
};

// The roundings, and the best `kImproved` of them after local search (added if new).
std::vector<Picks> improved_roundings(const Problem& p, const Candidates& c, const Relaxation& r,
                                      const SolverOptions& o) {
  constexpr std::size_t kImproved = 8;
  std::vector<Picks> trees = roundings(p, c, r, o.rounds, o.seed);
  std::vector<std::pair<double, std::size_t>> ranked;
  for (std::size_t k = 0; k < trees.size(); ++k)
    ranked.push_back({tree_rate(p, to_tree(c, trees[k])), k});
  std::stable_sort(ranked.begin(), ranked.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  std::set<Picks> seen(trees.begin(), trees.end());
  std::mt19937_64 rng(o.seed + 1);
  LocalSearch search(p, c, r);
  const int max_moves = 20 * static_cast<int>(c.nodes.size()) + 100;
  for (std::size_t k = 0; k < std::min(kImproved, ranked.size()); ++k) {
    Picks better = search.improve(trees[ranked[k].second], rng, max_moves);
    if (seen.insert(better).second) trees.push_back(std::move(better));
  }
  return trees;
}

// The best mix of the trees: maximize the sum of their rates within every capacity. Returns the
// rates (Gbit/s) per tree.
std::vector<double> mix(const Problem& p, const std::vector<Tree>& trees, bool verbose) {
  const Topology& t = p.topo();
  const int links = static_cast<int>(t.links.size());
  // Resources: links, then switches' aggregation (links + node), then the root's ingress.
  auto capacity = [&](int res) {
    if (res < links) return t.links[res].gbps;
    const int n = res - links;
    return n == p.root ? t.nodes[n].ingress_gbps : t.nodes[n].aggregation_gbps;
  };
  std::map<int, std::vector<std::pair<int, double>>> rows;
  LinearProgram lp(/*maximize=*/true);
  std::vector<int> cols;
  for (std::size_t k = 0; k < trees.size(); ++k) {
    cols.push_back(lp.add_column(0, kUnlimited, 1));
    std::map<int, double> count;
    for (const Stream& s : trees[k].streams) {
      for (int l : p.loaded_links(s.links)) count[l] += 1;
      count[links + s.to] += 1;
    }
    for (const auto& [res, n] : count) rows[res].push_back({cols.back(), n});
  }
  for (const auto& [res, entries] : rows) {
    if (!std::isfinite(capacity(res))) continue;
    const int row = lp.add_row_upper(capacity(res));
    for (const auto& [col, n] : entries) lp.add(row, col, n);
  }
  if (!lp.solve(verbose))
    throw Error(Errc::kUnsupported, fmt::format("GLPK: the mix of trees: {}", lp.error()));
  std::vector<double> rates;
  for (int col : cols) rates.push_back(std::max(0.0, lp.value(col)));
  return rates;
}

}  // namespace

std::size_t PathSet::count() const {
  std::size_t n = 0;
  for (const auto& p : of) n += p.size();
  return n;
}

PathSet make_paths(const Problem& p, const SolverOptions& o) {
  const auto start = Clock::now();
  const Topology& t = p.topo();
  PathSet set;
  set.of.resize(t.nodes.size());
  for (std::size_t n = 0; n < t.nodes.size(); ++n) {
    const bool wanted =
        t.nodes[n].kind == NodeKind::kWorker || (t.nodes[n].programmable() && p.distance[n] > 0);
    if (!wanted) continue;
    auto& paths = set.of[n];
    paths.push_back(p.shortest_path(static_cast<int>(n)));
    for (auto& path : shortest_paths(p, static_cast<int>(n), p.root, o.paths, o.seed))
      if (std::find(paths.begin(), paths.end(), path) == paths.end())
        paths.push_back(std::move(path));
  }
  set.seconds = since(start);
  return set;
}

PlanResult scheme1(const Problem& p, const PathSet& paths, const SolverOptions& o) {
  const auto start = Clock::now();
  const Candidates c = make_candidates(p, paths, /*aggregate=*/false);
  Relaxation r;
  auto lp = build(p, c, /*integer=*/true, r);
  if (!lp->solve(o.verbose))
    throw Error(Errc::kUnsupported, fmt::format("GLPK: Scheme 1's relaxation: {}", lp->error()));
  read_solution(p, c, *lp, r);
  const double splittable = 1 / r.lambda;

  // The best rounding seeds the branch and bound.
  Picks best;
  double best_rate = 0;
  for (Picks& picks : improved_roundings(p, c, r, o)) {
    const double rate = tree_rate(p, to_tree(c, picks));
    if (rate > best_rate) best_rate = rate, best = std::move(picks);
  }
  std::vector<double> incumbent(lp->columns(), 0);
  incumbent[r.lambda_column] = 1 / best_rate;
  for (std::size_t i = 0; i < c.nodes.size(); ++i) incumbent[r.y_column[i][best[i]]] = 1;

  PlanResult plan;
  plan.policy = "scheme1";
  const auto bb_start = Clock::now();
  std::string status;
  if (best_rate >= splittable * (1 - 1e-9)) {
    status = "optimal (a rounding reaches the relaxation's bound)";
  } else if (lp->solve_integer(o.time_limit, incumbent, o.verbose)) {
    Picks picks(c.nodes.size(), 0);
    for (std::size_t i = 0; i < c.nodes.size(); ++i)
      for (std::size_t j = 0; j < c.choices[i].size(); ++j)
        if (lp->value(r.y_column[i][j]) > 0.5) picks[i] = static_cast<int>(j);
    const double rate = tree_rate(p, to_tree(c, picks));
    if (rate > best_rate) best_rate = rate, best = std::move(picks);
    status = lp->optimal() ? "optimal (branch and bound)"
                           : fmt::format(
                                 "best found: branch and bound stopped ({}) with the "
                                 "relaxation's bound {:.6g} Gbit/s",
                                 lp->error(), splittable);
  } else {
    status = fmt::format("best rounding: branch and bound found nothing better ({})", lp->error());
  }
  plan.status = status;
  plan.trees.push_back({to_tree(c, best), 1.0});
  finish_plan(p, plan);
  plan.details = {{"splittable_gbps", splittable},
                  {"routes", c.count()},
                  {"milp", r.stats},
                  {"branch_and_bound_seconds", since(bb_start)}};
  plan.seconds = since(start);
  return plan;
}

GridResult grid(const Problem& p, const PathSet& paths, const SolverOptions& o) {
  const auto start = Clock::now();
  const Candidates c = make_candidates(p, paths, /*aggregate=*/true);
  Relaxation r;
  auto lp = build(p, c, /*integer=*/false, r);
  const auto lp_start = Clock::now();
  if (!lp->solve(o.verbose))
    throw Error(Errc::kUnsupported, fmt::format("GLPK: GRID's relaxation: {}", lp->error()));
  read_solution(p, c, *lp, r);
  const double lp_seconds = since(lp_start);

  GridResult out;
  out.lp.policy = "lp";
  out.lp.executable = false;
  out.lp.rate_gbps = 1 / r.lambda;
  out.lp.usage = r.usage;
  out.lp.status = "optimal (LP relaxation over the candidate routes)";
  out.lp.details = {{"lp", r.stats},
                    {"candidate_parents", c.count()},
                    {"candidate_routes", paths.count()},
                    {"route_seconds", paths.seconds},
                    {"lp_seconds", lp_seconds}};
  out.lp.seconds = since(start);

  const auto rounding_start = Clock::now();
  std::vector<Tree> trees;
  std::vector<double> single;
  for (const Picks& picks : improved_roundings(p, c, r, o)) {
    trees.push_back(to_tree(c, picks));
    single.push_back(tree_rate(p, trees.back()));
  }
  const std::size_t best =
      static_cast<std::size_t>(std::max_element(single.begin(), single.end()) - single.begin());

  PlanResult& plan = out.grid;
  plan.policy = "grid";
  plan.status = "randomized rounding";
  if (o.max_trees <= 1) {
    plan.trees.push_back({trees[best], 1.0});
  } else {
    // The best mix; if it uses more trees than allowed, the heaviest ones mixed again.
    std::vector<double> rates = mix(p, trees, o.verbose);
    std::vector<std::size_t> used;
    for (std::size_t k = 0; k < trees.size(); ++k)
      if (rates[k] > 1e-9) used.push_back(k);
    std::stable_sort(used.begin(), used.end(),
                     [&](std::size_t a, std::size_t b) { return rates[a] > rates[b]; });
    if (used.size() > static_cast<std::size_t>(o.max_trees)) {
      used.resize(o.max_trees);
      std::vector<Tree> subset;
      for (std::size_t k : used) subset.push_back(trees[k]);
      const std::vector<double> again = mix(p, subset, o.verbose);
      for (std::size_t i = 0; i < used.size(); ++i) rates[used[i]] = again[i];
      for (std::size_t k = 0; k < trees.size(); ++k)
        if (std::find(used.begin(), used.end(), k) == used.end()) rates[k] = 0;
    }
    double total = 0;
    for (std::size_t k : used) total += rates[k];
    if (total > single[best] * (1 + 1e-12)) {
      for (std::size_t k : used)
        if (rates[k] > 0) plan.trees.push_back({trees[k], rates[k] / total});
    } else {
      plan.trees.push_back({trees[best], 1.0});
    }
  }
  finish_plan(p, plan);
  plan.details = {{"lp_gbps", out.lp.rate_gbps},    {"single_tree_gbps", single[best]},
                  {"distinct_trees", trees.size()}, {"rounding_seconds", since(rounding_start)},
                  {"lp_seconds", lp_seconds},       {"lp", r.stats}};
  plan.seconds = since(start);
  return out;
}

}  // namespace netagg::plan
