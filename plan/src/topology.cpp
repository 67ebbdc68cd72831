// SPDX-License-Identifier: Apache-2.0
#include "netagg/plan/topology.hpp"

#include <cmath>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "netagg/error.hpp"
#include "netagg/json_in.hpp"

namespace netagg::plan {
namespace {

using json = nlohmann::json;

[[noreturn]] void fail(std::string_view source, std::string_view field, std::string_view what) {
  json_error(source, field, what);
}

// A capacity in Gbit/s: a finite number >= 0 (> 0 if `positive`).
std::optional<double> get_gbps(const JsonIn& object, std::string_view key, bool positive) {
  const auto v = object.find(key);
  if (!v) return std::nullopt;
  if (!v->json().is_number()) v->fail("must be a number (Gbit/s)");
  const double d = v->number();
  if (d < 0) v->fail(fmt::format("{} is negative", d));
  if (positive && d == 0) v->fail("must be positive");
  return d;
}

NodeKind parse_kind(const std::string& text, std::string_view source, const std::string& field) {
  if (text == "worker") return NodeKind::kWorker;
  if (text == "switch") return NodeKind::kSwitch;
  if (text == "root") return NodeKind::kRoot;
  fail(source, field, fmt::format("'{}' is not a node kind (worker, switch or root)", text));
}

}  // namespace

std::string_view to_string(NodeKind kind) {
  switch (kind) {
    case NodeKind::kWorker:
      return "worker";
    case NodeKind::kSwitch:
      return "switch";
    case NodeKind::kRoot:
      return "root";
  }
  return "?";
}

int Topology::find(std::string_view name) const {
  for (std::size_t i = 0; i < nodes.size(); ++i)
    if (nodes[i].name == name) return static_cast<int>(i);
  return -1;
}

std::vector<int> Topology::nodes_of(NodeKind kind) const {
  std::vector<int> out;
  for (std::size_t i = 0; i < nodes.size(); ++i)
    if (nodes[i].kind == kind) out.push_back(static_cast<int>(i));
  return out;
}

void Topology::index() {
  out_links.assign(nodes.size(), {});
  in_links.assign(nodes.size(), {});
  for (std::size_t l = 0; l < links.size(); ++l) {
    out_links[links[l].from].push_back(static_cast<int>(l));
    in_links[links[l].to].push_back(static_cast<int>(l));
  }
}

Topology parse_topology(std::string_view json_text, std::string_view source) {
  const json j = JsonIn::parse(json_text, source);
  const JsonIn in(j, std::string(source));
  if (!j.is_object()) fail(source, "(top level)", "must be an object");
  in.only({"name", "description", "nodes", "links"});
  Topology t;
  in.read("name", t.name);
  in.read("description", t.description);

  std::map<std::string, int> by_name;
  const std::vector<JsonIn> nodes = in["nodes"].elements(1);
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    const JsonIn& n = nodes[i];
    n.only({"name", "kind", "aggregation_gbps", "ingress_gbps", "address", "layer"});
    Node node;
    node.name = n["name"].nonempty_string();
    if (by_name.count(node.name)) n.fail_at("name", fmt::format("'{}' twice", node.name));
    node.kind = parse_kind(n["kind"].nonempty_string(), source, n.path_of("kind"));
    if (auto v = get_gbps(n, "aggregation_gbps", false)) {
      if (node.kind != NodeKind::kSwitch)
        n.fail_at("aggregation_gbps", fmt::format("only a switch aggregates ('{}' is a {})",
                                                  node.name, to_string(node.kind)));
      node.aggregation_gbps = *v;
    }
    if (auto v = get_gbps(n, "ingress_gbps", true)) {
      if (node.kind != NodeKind::kRoot)
        n.fail_at("ingress_gbps", fmt::format("only a root has an ingress capacity ('{}' is a {})",
                                              node.name, to_string(node.kind)));
      node.ingress_gbps = *v;
    }
    if (const auto a = n.find("address")) {
      const std::string text = a->nonempty_string();
      try {
        node.address = Endpoint::parse(text, a->path());
        check_host_address(*node.address, a->path());
      } catch (const Error& e) {
        throw Error(Errc::kConfig, fmt::format("{}: {}", source, e.what()));
      }
    }
    if (const auto l = n.find("layer")) node.layer = l->nonempty_string();
    by_name[node.name] = static_cast<int>(i);
    t.nodes.push_back(std::move(node));
  }

  std::map<std::pair<int, int>, std::size_t> seen;  // (from, to) -> the entry that has it
  const std::vector<JsonIn> links = in["links"].elements(1);
  for (std::size_t i = 0; i < links.size(); ++i) {
    const JsonIn& l = links[i];
    const std::string& path = l.path();
    l.only({"name", "ends", "gbps", "directed"});
    const JsonIn ends_in = l["ends"];
    if (!ends_in.json().is_array() || ends_in.json().size() != 2)
      ends_in.fail("must be an array of two node names");
    const std::vector<JsonIn> ends = ends_in.elements();
    int end[2];
    for (int e = 0; e < 2; ++e) {
      if (!ends[e].json().is_string()) ends[e].fail("must be a node name");
      const std::string name = ends[e].string();
      auto it = by_name.find(name);
      if (it == by_name.end()) ends[e].fail(fmt::format("no node '{}'", name));
      end[e] = it->second;
    }
    if (end[0] == end[1])
      ends_in.fail(fmt::format("a link from '{}' to itself", t.nodes[end[0]].name));
    auto gbps = get_gbps(l, "gbps", true);
    if (!gbps) l.fail_at("gbps", "missing");
    bool directed = false;
    l.read("directed", directed);
    std::string name = l.has("name")
                           ? l["name"].nonempty_string()
                           : fmt::format("{}-{}", t.nodes[end[0]].name, t.nodes[end[1]].name);
    const int first = static_cast<int>(t.links.size());
    for (int dir = 0; dir < (directed ? 1 : 2); ++dir) {
      const int from = end[dir], to = end[1 - dir];
      if (auto it = seen.find({from, to}); it != seen.end())
        fail(source, path,
             fmt::format("a second link from '{}' to '{}' (links[{}] has one; give one link the "
                         "sum of the capacities)",
                         t.nodes[from].name, t.nodes[to].name, it->second));
      seen[{from, to}] = i;
      t.links.push_back(Link{name, from, to, *gbps, -1});
    }
    if (!directed) {
      t.links[first].twin = first + 1;
      t.links[first + 1].twin = first;
    }
  }
  t.index();
  return t;
}

Topology load_topology(const std::filesystem::path& file) {
  const std::string source = file.string();
  if (std::filesystem::is_directory(file))
    throw Error(Errc::kConfig, fmt::format("{}: is a directory, not a topology file", source));
  std::ifstream in(file);
  if (!in) throw Error(Errc::kConfig, fmt::format("{}: cannot open", source));
  std::stringstream text;
  text << in.rdbuf();
  return parse_topology(text.str(), source);
}

nlohmann::json to_json(const Topology& t) {
  json j;
  if (!t.name.empty()) j["name"] = t.name;
  if (!t.description.empty()) j["description"] = t.description;
  j["nodes"] = json::array();
  for (const Node& n : t.nodes) {
    json o{{"name", n.name}, {"kind", to_string(n.kind)}};
    if (n.kind == NodeKind::kSwitch) o["aggregation_gbps"] = n.aggregation_gbps;
    if (n.kind == NodeKind::kRoot && std::isfinite(n.ingress_gbps))
      o["ingress_gbps"] = n.ingress_gbps;
    if (n.address) o["address"] = n.address->to_string();
    if (!n.layer.empty()) o["layer"] = n.layer;
    j["nodes"].push_back(o);
  }
  j["links"] = json::array();
  for (std::size_t l = 0; l < t.links.size(); ++l) {
    const Link& k = t.links[l];
    if (k.twin >= 0 && k.twin < static_cast<int>(l)) continue;  // written with its twin
    json o{
        {"name", k.name}, {"ends", {t.nodes[k.from].name, t.nodes[k.to].name}}, {"gbps", k.gbps}};
    if (k.twin < 0) o["directed"] = true;
    j["links"].push_back(o);
  }
  return j;
}

Topology fat_tree(const FatTreeOptions& o) {
  if (o.k < 2 || o.k % 2 != 0 || o.k > 64)
    throw Error(Errc::kConfig, fmt::format("fat tree: k = {} must be even, 2..64", o.k));
  if (!(o.link_gbps > 0) || !std::isfinite(o.link_gbps))
    throw Error(Errc::kConfig, "fat tree: the link capacity must be positive");
  if (!(o.aggregation_gbps >= 0) || !std::isfinite(o.aggregation_gbps))
    throw Error(Errc::kConfig, "fat tree: the aggregation capacity must be >= 0");
  if (!(o.root_ingress_gbps > 0))
    throw Error(Errc::kConfig, "fat tree: the root's ingress capacity must be positive");
  std::set<std::string> programmable;
  for (const std::string& layer : o.programmable) {
    if (layer != "edge" && layer != "aggregation" && layer != "core")
      throw Error(Errc::kConfig,
                  fmt::format("fat tree: '{}' is not a layer (edge, aggregation, core)", layer));
    programmable.insert(layer);
  }
  const int k = o.k, half = k / 2;
  const int hosts = k * k * k / 4;
  if (o.workers == 0 || o.workers > hosts - 1)
    throw Error(Errc::kConfig, fmt::format("fat tree: {} workers; k = {} has {} hosts besides the "
                                           "root",
                                           o.workers, k, hosts - 1));
  const int workers = o.workers < 0 ? hosts - 1 : o.workers;

  Topology t;
  t.name = fmt::format("fat-tree-k{}", k);
  t.description = fmt::format(
      "k = {} fat tree: {} hosts (host h0 the root, {} workers), {} Gbit/s links, switches in {} "
      "aggregate {} Gbit/s",
      k, hosts, workers, o.link_gbps, fmt::join(o.programmable, ", "), o.aggregation_gbps);
  auto add_switch = [&](std::string name, const char* layer) {
    Node n;
    n.name = std::move(name);
    n.kind = NodeKind::kSwitch;
    n.layer = layer;
    n.aggregation_gbps = programmable.count(layer) ? o.aggregation_gbps : 0;
    t.nodes.push_back(std::move(n));
    return static_cast<int>(t.nodes.size() - 1);
  };
  auto add_link = [&](int a, int b) {
    const int first = static_cast<int>(t.links.size());
    const std::string name = fmt::format("{}-{}", t.nodes[a].name, t.nodes[b].name);
    t.links.push_back(Link{name, a, b, o.link_gbps, first + 1});
    t.links.push_back(Link{name, b, a, o.link_gbps, first});
  };
  // Hosts that are workers: evenly spread over h1..h(hosts-1).
  std::vector<bool> is_worker(hosts, false);
  for (int i = 0; i < workers; ++i)
    is_worker[1 + static_cast<int>(static_cast<long long>(i) * (hosts - 1) / workers)] = true;

  std::vector<int> core(half * half);
  for (int i = 0; i < half * half; ++i) core[i] = add_switch(fmt::format("c{}", i), "core");
  int host = 0;
  for (int p = 0; p < k; ++p) {
    std::vector<int> agg(half), edge(half);
    for (int a = 0; a < half; ++a) agg[a] = add_switch(fmt::format("p{}a{}", p, a), "aggregation");
    for (int e = 0; e < half; ++e) edge[e] = add_switch(fmt::format("p{}e{}", p, e), "edge");
    for (int a = 0; a < half; ++a) {
      for (int e = 0; e < half; ++e) add_link(edge[e], agg[a]);
      for (int c = 0; c < half; ++c) add_link(agg[a], core[a * half + c]);
    }
    for (int e = 0; e < half; ++e)
      for (int h = 0; h < half; ++h, ++host) {
        if (host != 0 && !is_worker[host]) continue;  // a host without a job: not in the model
        Node n;
        n.name = fmt::format("h{}", host);
        n.kind = host == 0 ? NodeKind::kRoot : NodeKind::kWorker;
        n.layer = "host";
        if (host == 0) n.ingress_gbps = o.root_ingress_gbps;
        t.nodes.push_back(std::move(n));
        add_link(static_cast<int>(t.nodes.size() - 1), edge[e]);
      }
  }
  t.index();
  return t;
}

}  // namespace netagg::plan
