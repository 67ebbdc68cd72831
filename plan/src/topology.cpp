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

namespace netagg::plan {
namespace {

using json = nlohmann::json;

[[noreturn]] void fail(std::string_view source, std::string_view field, std::string_view what) {
  throw Error(Errc::kConfig, fmt::format("{}: {}: {}", source, field, what));
}

// Unknown keys are errors: a misspelt optional field would otherwise change the plan silently.
void check_fields(const json& object, std::string_view source, const std::string& path,
                  std::initializer_list<std::string_view> known) {
  for (const auto& [key, value] : object.items()) {
    bool ok = false;
    for (std::string_view k : known) ok = ok || key == k;
    if (!ok) fail(source, path.empty() ? key : path + "." + key, "unknown field");
  }
}

std::string get_string(const json& object, std::string_view key, std::string_view source,
                       const std::string& path, bool required) {
  auto it = object.find(key);
  if (it == object.end()) {
    if (required) fail(source, fmt::format("{}.{}", path, key), "missing");
    return {};
  }
  if (!it->is_string() || it->get<std::string>().empty())
    fail(source, fmt::format("{}.{}", path, key), "must be a non-empty string");
  return it->get<std::string>();
}

// A capacity in Gbit/s: a finite number >= 0 (> 0 if `positive`).
std::optional<double> get_gbps(const json& object, std::string_view key, std::string_view source,
                               const std::string& path, bool positive) {
  auto it = object.find(key);
  if (it == object.end()) return std::nullopt;
  const std::string field = fmt::format("{}.{}", path, key);
  if (!it->is_number()) fail(source, field, "must be a number (Gbit/s)");
  const double v = it->get<double>();
  if (!std::isfinite(v)) fail(source, field, "must be finite");
  if (v < 0) fail(source, field, fmt::format("{} is negative", v));
  if (positive && v == 0) fail(source, field, "must be positive");
  return v;
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
  json j;
  try {
    j = json::parse(json_text);
  } catch (const json::parse_error& e) {
    throw Error(Errc::kConfig, fmt::format("{}: not valid JSON: {}", source, e.what()));
  }
  if (!j.is_object()) fail(source, "(top level)", "must be an object");
  check_fields(j, source, "", {"name", "description", "nodes", "links"});
  Topology t;
  if (auto it = j.find("name"); it != j.end()) {
    if (!it->is_string()) fail(source, "name", "must be a string");
    t.name = it->get<std::string>();
  }
  if (auto it = j.find("description"); it != j.end()) {
    if (!it->is_string()) fail(source, "description", "must be a string");
    t.description = it->get<std::string>();
  }

  auto nodes = j.find("nodes");
  if (nodes == j.end()) fail(source, "nodes", "missing");
  if (!nodes->is_array() || nodes->empty()) fail(source, "nodes", "must be a non-empty array");
  std::map<std::string, int> by_name;
  for (std::size_t i = 0; i < nodes->size(); ++i) {
    const json& n = (*nodes)[i];
    const std::string path = fmt::format("nodes[{}]", i);
    if (!n.is_object()) fail(source, path, "must be an object");
    check_fields(n, source, path,
                 {"name", "kind", "aggregation_gbps", "ingress_gbps", "address", "layer"});
    Node node;
    node.name = get_string(n, "name", source, path, true);
    if (by_name.count(node.name))
      fail(source, path + ".name", fmt::format("'{}' twice", node.name));
    node.kind = parse_kind(get_string(n, "kind", source, path, true), source, path + ".kind");
    if (auto v = get_gbps(n, "aggregation_gbps", source, path, false)) {
      if (node.kind != NodeKind::kSwitch)
        fail(source, path + ".aggregation_gbps",
             fmt::format("only a switch aggregates ('{}' is a {})", node.name,
                         to_string(node.kind)));
      node.aggregation_gbps = *v;
    }
    if (auto v = get_gbps(n, "ingress_gbps", source, path, true)) {
      if (node.kind != NodeKind::kRoot)
        fail(source, path + ".ingress_gbps",
             fmt::format("only a root has an ingress capacity ('{}' is a {})", node.name,
                         to_string(node.kind)));
      node.ingress_gbps = *v;
    }
    if (n.contains("address")) {
      const std::string text = get_string(n, "address", source, path, true);
      try {
        node.address = Endpoint::parse(text, path + ".address");
        check_host_address(*node.address, path + ".address");
      } catch (const Error& e) {
        throw Error(Errc::kConfig, fmt::format("{}: {}", source, e.what()));
      }
    }
    if (n.contains("layer")) node.layer = get_string(n, "layer", source, path, true);
    by_name[node.name] = static_cast<int>(i);
    t.nodes.push_back(std::move(node));
  }

  auto links = j.find("links");
  if (links == j.end()) fail(source, "links", "missing");
  if (!links->is_array() || links->empty()) fail(source, "links", "must be a non-empty array");
  std::map<std::pair<int, int>, std::size_t> seen;  // (from, to) -> the entry that has it
  for (std::size_t i = 0; i < links->size(); ++i) {
    const json& l = (*links)[i];
    const std::string path = fmt::format("links[{}]", i);
    if (!l.is_object()) fail(source, path, "must be an object");
    check_fields(l, source, path, {"name", "ends", "gbps", "directed"});
    auto ends = l.find("ends");
    if (ends == l.end()) fail(source, path + ".ends", "missing");
    if (!ends->is_array() || ends->size() != 2)
      fail(source, path + ".ends", "must be an array of two node names");
    int end[2];
    for (int e = 0; e < 2; ++e) {
      const json& v = (*ends)[e];
      const std::string field = fmt::format("{}.ends[{}]", path, e);
      if (!v.is_string()) fail(source, field, "must be a node name");
      auto it = by_name.find(v.get<std::string>());
      if (it == by_name.end())
        fail(source, field, fmt::format("no node '{}'", v.get<std::string>()));
      end[e] = it->second;
    }
    if (end[0] == end[1])
      fail(source, path + ".ends", fmt::format("a link from '{}' to itself", t.nodes[end[0]].name));
    auto gbps = get_gbps(l, "gbps", source, path, true);
    if (!gbps) fail(source, path + ".gbps", "missing");
    bool directed = false;
    if (auto d = l.find("directed"); d != l.end()) {
      if (!d->is_boolean()) fail(source, path + ".directed", "must be true or false");
      directed = d->get<bool>();
    }
    std::string name = l.contains("name")
                           ? get_string(l, "name", source, path, true)
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
