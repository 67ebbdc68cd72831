// SPDX-License-Identifier: Apache-2.0
#include "netagg/plan/output.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "netagg/error.hpp"

namespace netagg::plan {
namespace {

using json = nlohmann::json;

constexpr double kBinding = 1 - 1e-6;  // a constraint this close to its capacity binds

std::string name_of(const Problem& p, int node) { return p.topo().nodes[node].name; }

// The nodes a stream visits, from its source to its parent.
std::vector<std::string> route_nodes(const Problem& p, const Stream& s) {
  std::vector<std::string> out{name_of(p, s.from)};
  for (int l : s.links) out.push_back(name_of(p, p.topo().links[l].to));
  return out;
}

// Per tree: the stream leaving each node.
std::map<int, const Stream*> streams_by_source(const Tree& tree) {
  std::map<int, const Stream*> out;
  for (const Stream& s : tree.streams) out[s.from] = &s;
  return out;
}

std::string gbps(double v) { return fmt::format("{:.4f}", v); }

struct Load {
  std::string kind;  // "link", "aggregation", "root ingress"
  std::string name;
  double load, capacity;
};

std::vector<Load> binding_constraints(const Problem& p, const PlanResult& plan) {
  const Topology& t = p.topo();
  const double x = plan.rate_gbps;
  std::vector<Load> out;
  for (std::size_t l = 0; l < t.links.size(); ++l) {
    const double load = plan.usage.link[l] * x;
    if (load >= t.links[l].gbps * kBinding)
      out.push_back({"link",
                     fmt::format("{} {}->{}", t.links[l].name, t.nodes[t.links[l].from].name,
                                 t.nodes[t.links[l].to].name),
                     load, t.links[l].gbps});
  }
  for (std::size_t n = 0; n < t.nodes.size(); ++n) {
    const double load = plan.usage.agg[n] * x;
    if (load > 0 && load >= t.nodes[n].aggregation_gbps * kBinding)
      out.push_back({"aggregation", t.nodes[n].name, load, t.nodes[n].aggregation_gbps});
  }
  const double ingress = t.nodes[p.root].ingress_gbps;
  if (std::isfinite(ingress) && plan.usage.root * x >= ingress * kBinding)
    out.push_back({"root ingress", t.nodes[p.root].name, plan.usage.root * x, ingress});
  return out;
}

}  // namespace

Endpoint node_address(const Topology& t, int node) {
  const Node& n = t.nodes[node];
  if (n.address) return *n.address;
  Endpoint e;
  e.ip = (10u << 24) | ((static_cast<std::uint32_t>(node) / 256 % 256) << 16) |
         ((static_cast<std::uint32_t>(node) % 256) << 8) | 1u;
  e.port = n.kind == NodeKind::kWorker ? 31000 : 20033;
  return e;
}

JobSpec make_job(const Problem& p, const PlanResult& plan, const JobOptions& o) {
  if (!plan.executable || plan.trees.empty())
    throw Error(Errc::kConfig, fmt::format("the {} result is not a plan of trees", plan.policy));
  const Topology& t = p.topo();
  if (p.workers.size() > 0xFFFF) throw Error(Errc::kConfig, "a job holds at most 65535 workers");
  if (static_cast<std::size_t>(o.job_id) + plan.trees.size() > 0x10000)
    throw Error(Errc::kConfig,
                fmt::format("job id {} + {} trees exceeds 65535", o.job_id, plan.trees.size()));
  if ((plan.trees.size()) * o.window > 0x10000)
    throw Error(Errc::kConfig, fmt::format("{} trees of window {} exceed the 16-bit slot space",
                                           plan.trees.size(), o.window));
  JobSpec job;
  job.job_id = o.job_id;
  job.elements_per_packet = o.elements_per_packet;
  for (std::size_t r = 0; r < p.workers.size(); ++r) {
    WorkerSpec w;
    w.rank = static_cast<std::uint16_t>(r);
    w.address = node_address(t, p.workers[r]);
    job.workers.push_back(w);
  }
  for (std::size_t k = 0; k < plan.trees.size(); ++k) {
    TreeSpec tree;
    tree.job_id = static_cast<std::uint16_t>(o.job_id + k);
    tree.weight = plan.weights.at(k);
    tree.window = o.window;
    std::map<int, std::size_t> index;  // node -> its aggregator entry
    auto entry = [&](int node) {
      if (auto it = index.find(node); it != index.end()) return it->second;
      TreeNode a;
      a.name = t.nodes[node].name;
      a.address = node_address(t, node);
      a.slot_base = static_cast<std::uint16_t>(k * o.window);
      tree.aggregators.push_back(a);
      return index[node] = tree.aggregators.size() - 1;
    };
    entry(p.root);
    for (const Stream& s : plan.trees[k].tree.streams) {
      const std::size_t parent = entry(s.to);
      if (p.rank[s.from] >= 0)
        tree.aggregators[parent].workers.push_back(static_cast<std::uint16_t>(p.rank[s.from]));
      else
        tree.aggregators[entry(s.from)].parent = parent;
    }
    job.trees.push_back(std::move(tree));
  }
  // What the runtime would read: written out and parsed back.
  return parse_job(to_json(job), fmt::format("the {} plan's job", plan.policy));
}

json report(const Problem& p, const PlanResult& plan, const JobSpec* job) {
  const Topology& t = p.topo();
  const double x = plan.rate_gbps;
  json j{{"policy", plan.policy},         {"rate_gbps", x},
         {"status", plan.status},         {"seconds", plan.seconds},
         {"executable", plan.executable}, {"details", plan.details}};

  if (plan.executable) {
    j["trees"] = json::array();
    std::vector<json> workers(p.workers.size());
    for (std::size_t r = 0; r < p.workers.size(); ++r)
      workers[r] = {{"name", name_of(p, p.workers[r])},
                    {"rank", r},
                    {"rate_gbps", x},
                    {"trees", json::array()}};
    for (std::size_t k = 0; k < plan.trees.size(); ++k) {
      const WeightedTree& wt = plan.trees[k];
      const auto from = streams_by_source(wt.tree);
      json tj{{"share", wt.share},
              {"weight", plan.weights.at(k)},
              {"rate_gbps", wt.share * x},
              {"aggregators", json::array()}};
      std::map<int, std::vector<std::string>> workers_at, children_at;
      for (const Stream& s : wt.tree.streams)
        (p.rank[s.from] >= 0 ? workers_at : children_at)[s.to].push_back(name_of(p, s.from));
      std::vector<int> aggregators{p.root};
      for (const Stream& s : wt.tree.streams)
        if (p.rank[s.from] < 0) aggregators.push_back(s.from);
      for (int a : aggregators) {
        json aj{{"name", name_of(p, a)},
                {"workers", workers_at[a]},
                {"children", children_at[a]},
                {"aggregates_gbps", (workers_at[a].size() + children_at[a].size()) * wt.share * x}};
        if (a != p.root) {
          aj["parent"] = name_of(p, from.at(a)->to);
          aj["route"] = route_nodes(p, *from.at(a));
        }
        tj["aggregators"].push_back(aj);
      }
      j["trees"].push_back(tj);
      // Each worker's whole way to the root in this tree, and where it is aggregated.
      for (std::size_t r = 0; r < p.workers.size(); ++r) {
        std::vector<std::string> route{name_of(p, p.workers[r])}, at;
        for (int node = p.workers[r]; node != p.root;) {
          const Stream& s = *from.at(node);
          for (int l : s.links) route.push_back(name_of(p, t.links[l].to));
          if (s.to != p.root) at.push_back(name_of(p, s.to));
          node = s.to;
        }
        workers[r]["trees"].push_back(
            {{"tree", k}, {"rate_gbps", wt.share * x}, {"route", route}, {"aggregated_at", at}});
      }
    }
    j["workers"] = workers;
  }

  j["links"] = json::array();
  for (std::size_t l = 0; l < t.links.size(); ++l) {
    const double load = plan.usage.link[l] * x;
    if (load <= 0) continue;
    j["links"].push_back({{"name", t.links[l].name},
                          {"from", name_of(p, t.links[l].from)},
                          {"to", name_of(p, t.links[l].to)},
                          {"capacity_gbps", t.links[l].gbps},
                          {"load_gbps", load},
                          {"binding", load >= t.links[l].gbps * kBinding}});
  }
  j["switches"] = json::array();
  for (std::size_t n = 0; n < t.nodes.size(); ++n) {
    const double load = plan.usage.agg[n] * x;
    if (load <= 0) continue;
    j["switches"].push_back({{"name", t.nodes[n].name},
                             {"capacity_gbps", t.nodes[n].aggregation_gbps},
                             {"aggregates_gbps", load},
                             {"binding", load >= t.nodes[n].aggregation_gbps * kBinding}});
  }
  const double ingress = t.nodes[p.root].ingress_gbps;
  j["root"] = {{"name", name_of(p, p.root)}, {"ingress_gbps", plan.usage.root * x}};
  if (std::isfinite(ingress)) {
    j["root"]["capacity_gbps"] = ingress;
    j["root"]["binding"] = plan.usage.root * x >= ingress * kBinding;
  }
  j["binding"] = json::array();
  for (const Load& b : binding_constraints(p, plan))
    j["binding"].push_back(
        {{"kind", b.kind}, {"name", b.name}, {"load_gbps", b.load}, {"capacity_gbps", b.capacity}});
  if (job) j["job"] = json::parse(to_json(*job));
  return j;
}

std::string table(const Problem& p, const std::vector<PlanResult>& plans, bool details) {
  const Topology& t = p.topo();
  std::ostringstream out;
  out << fmt::format(
      "{}: {} workers, root {}, {} switches ({} programmable), {} links; {}\n",
      t.name.empty() ? "topology" : t.name, p.workers.size(), name_of(p, p.root),
      t.nodes_of(NodeKind::kSwitch).size(),
      std::count_if(t.nodes.begin(), t.nodes.end(), [](const Node& n) { return n.programmable(); }),
      t.links.size(),
      p.traffic == Traffic::kAllReduce
          ? "all-reduce: the results are counted on every stream's route reversed"
          : "upward only: the streams towards the root, not the results");
  double bound = 0;
  for (const PlanResult& plan : plans)
    if (plan.policy == "lp") bound = plan.rate_gbps;
  out << fmt::format("{:<8} {:>12} {:>7} {:>6} {:>9}  {}\n", "policy", "rate Gbit/s", "of LP",
                     "trees", "time s", "status");
  for (const PlanResult& plan : plans)
    out << fmt::format("{:<8} {:>12.4f} {:>7} {:>6} {:>9.3f}  {}\n", plan.policy, plan.rate_gbps,
                       bound > 0 ? fmt::format("{:.3f}", plan.rate_gbps / bound) : "-",
                       plan.executable ? std::to_string(plan.trees.size()) : "-", plan.seconds,
                       plan.status);
  for (const PlanResult& plan : plans) {
    out << fmt::format("\n{}: {} Gbit/s per worker", plan.policy, gbps(plan.rate_gbps));
    if (plan.executable) out << fmt::format(", {} tree(s)", plan.trees.size());
    out << "\n";
    if (plan.executable && details) {
      for (std::size_t k = 0; k < plan.trees.size(); ++k) {
        const WeightedTree& wt = plan.trees[k];
        out << fmt::format("  tree {} (weight {}, {} Gbit/s):\n", k, plan.weights.at(k),
                           gbps(wt.share * plan.rate_gbps));
        std::map<int, std::vector<std::string>> into;
        for (const Stream& s : wt.tree.streams) {
          std::string who = name_of(p, s.from);
          const auto nodes = route_nodes(p, s);
          if (nodes.size() > 2)  // name the switches it passes without being aggregated
            who += fmt::format(
                " (via {})",
                fmt::join(std::vector<std::string>(nodes.begin() + 1, nodes.end() - 1), " "));
          into[s.to].push_back(who);
        }
        for (const auto& [node, senders] : into)
          out << fmt::format("    {:<6} <- {}\n", name_of(p, node), fmt::join(senders, ", "));
      }
    }
    const std::vector<Load> binding = binding_constraints(p, plan);
    // The constraints at capacity, load/capacity in Gbit/s, wrapped at 100 columns.
    std::string line = "  at capacity (load/capacity, Gbit/s):";
    if (binding.empty()) line += " none";
    const std::size_t shown = details ? binding.size() : std::min<std::size_t>(binding.size(), 8);
    for (std::size_t i = 0; i < shown; ++i) {
      std::string item =
          fmt::format(" {} {} {}/{}{}", binding[i].kind, binding[i].name, gbps(binding[i].load),
                      binding[i].capacity, i + 1 < shown || shown < binding.size() ? "," : "");
      if (line.size() + item.size() > 100) {
        out << line << "\n";
        line = "   ";
      }
      line += item;
    }
    if (shown < binding.size()) line += fmt::format(" and {} more", binding.size() - shown);
    out << line << "\n";
  }
  return out.str();
}

std::string dot(const Problem& p, const PlanResult& plan) {
  const Topology& t = p.topo();
  const double x = plan.rate_gbps;
  std::ostringstream out;
  out << "digraph plan {\n  rankdir=BT;\n  node [fontname=\"Helvetica\", fontsize=10];\n"
      << "  edge [fontname=\"Helvetica\", fontsize=9];\n";
  out << fmt::format(
      "  labelloc=t; label=\"{}: {}, {} Gbit/s per worker (loads/capacities in Gbit/s)\";\n",
      t.name.empty() ? "plan" : t.name, plan.policy, gbps(x));
  for (std::size_t n = 0; n < t.nodes.size(); ++n) {
    const Node& node = t.nodes[n];
    std::string label = node.name, attrs;
    if (node.kind == NodeKind::kWorker) attrs = "shape=box";
    if (node.kind == NodeKind::kRoot) {
      attrs = "shape=house, style=filled, fillcolor=\"#dddddd\"";
      label += fmt::format("\\ningress {:.3g}", plan.usage.root * x);
      if (std::isfinite(node.ingress_gbps)) label += fmt::format("/{:.3g}", node.ingress_gbps);
      if (std::isfinite(node.ingress_gbps) && plan.usage.root * x >= node.ingress_gbps * kBinding)
        attrs += ", color=red, fontcolor=red";
    }
    if (node.kind == NodeKind::kSwitch) {
      attrs = node.programmable() ? "shape=ellipse, peripheries=2" : "shape=ellipse";
      if (node.programmable()) {
        const double load = plan.usage.agg[n] * x;
        label += fmt::format("\\nagg {:.3g}/{:.3g}", load, node.aggregation_gbps);
        if (load > 0 && load >= node.aggregation_gbps * kBinding)
          attrs += ", color=red, fontcolor=red";
      }
    }
    out << fmt::format("  \"{}\" [label=\"{}\", {}];\n", node.name, label, attrs);
  }
  // With the results counted both directions of a full-duplex link carry the same load (each
  // one's streams plus the other's results): such a link is drawn once, in the direction its
  // streams take.
  const bool results = p.traffic == Traffic::kAllReduce;
  std::vector<char> streams(t.links.size(), 0);
  for (const WeightedTree& wt : plan.trees)
    for (const Stream& st : wt.tree.streams)
      for (int l : st.links) streams[l] = 1;
  for (std::size_t l = 0; l < t.links.size(); ++l) {
    const Link& k = t.links[l];
    const double load = plan.usage.link[l] * x;
    if (results && k.twin >= 0 && load > 0) {
      const bool mine = streams[l] || (!streams[k.twin] && static_cast<int>(l) < k.twin);
      if (!mine) continue;
    }
    const bool twin_loaded = k.twin >= 0 && plan.usage.link[k.twin] * x > 0;
    if (load <= 0) {
      // An unused link is drawn once, grey, without direction.
      if (twin_loaded || (k.twin >= 0 && k.twin < static_cast<int>(l))) continue;
      out << fmt::format("  \"{}\" -> \"{}\" [dir=none, color=grey, style=dashed, label=\"{}\"];\n",
                         t.nodes[k.from].name, t.nodes[k.to].name,
                         k.name.find('-') == std::string::npos ? k.name : "");
      continue;
    }
    const bool binding = load >= k.gbps * kBinding;
    out << fmt::format(
        "  \"{}\" -> \"{}\" [label=\"{}{:.3g}/{:.3g}{}\", penwidth={:.2f}, color={}, "
        "fontcolor={}];\n",
        t.nodes[k.from].name, t.nodes[k.to].name,
        k.name.find('-') == std::string::npos ? k.name + " " : "", load, k.gbps,
        results && k.twin >= 0 ? " each way" : "", 1 + 3 * std::min(1.0, load / k.gbps),
        binding ? "red" : "blue", binding ? "red" : "blue");
  }
  out << "}\n";
  return out.str();
}

}  // namespace netagg::plan
