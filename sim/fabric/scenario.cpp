// SPDX-License-Identifier: Apache-2.0
#include "scenario.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <initializer_list>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>

#include <fmt/format.h>

#include "netagg/json_in.hpp"

namespace netagg::fabric {

namespace {

using nlohmann::json;

[[noreturn]] void fail(const std::string& field, const std::string& what) {
  json_error("scenario", field, what);
}

void positive(double v, const std::string& field) {
  if (!(v > 0) || !std::isfinite(v)) fail(field, "must be > 0");
}

void in_range(double v, double lo, double hi, const std::string& field) {
  if (!(v >= lo && v <= hi)) fail(field, fmt::format("must be in [{}, {}]", lo, hi));
}

}  // namespace

std::string Scenario::tcp_flavour() const {
  if (ring.tcp != "auto") return ring.tcp;
  return marks() ? "TcpDctcp" : "TcpNewReno";
}

namespace {

json read_json_file(const std::string& base_dir, const std::string& name,
                    const std::string& field) {
  const std::string path =
      name.empty() || name[0] == '/' || base_dir.empty() ? name : base_dir + "/" + name;
  std::ifstream in(path);
  if (!in) fail(field, fmt::format("cannot read '{}'", path));
  std::stringstream text;
  text << in.rdbuf();
  try {
    return json::parse(text.str());
  } catch (const json::exception& e) {
    fail(field, fmt::format("'{}' is not JSON: {}", path, e.what()));
  }
}

// netagg-plan's report (its --json output, docs/routing.md) -> the fabric's plan: each tree's
// streams, an aggregator's to its parent on its route, a worker's to the aggregator that takes
// its stream, on the part of its route up to there.
json plan_of_report(const json& report, const std::string& policy) {
  if (policy.empty()) fail("job.policy", "which policy of netagg-plan's report to run");
  const json& policies = report.at("policies");
  if (!policies.contains(policy)) {
    std::string names;
    for (auto it = policies.begin(); it != policies.end(); ++it)
      names += (names.empty() ? "" : ", ") + it.key();
    fail("job.policy", fmt::format("no policy '{}' in the report ({})", policy, names));
  }
  const json& p = policies.at(policy);
  if (!p.value("executable", false) || !p.contains("trees"))
    fail("job.policy", fmt::format("'{}' has no trees to run (an upper bound only)", policy));
  // Each worker's full route in each tree, to its root.
  std::map<std::pair<std::string, std::size_t>, std::vector<std::string>> route;
  for (const json& w : p.at("workers"))
    for (const json& t : w.at("trees"))
      route[{w.at("name").get<std::string>(), t.at("tree").get<std::size_t>()}] =
          t.at("route").get<std::vector<std::string>>();
  json trees = json::array();
  for (std::size_t t = 0; t < p.at("trees").size(); ++t) {
    const json& tree = p.at("trees")[t];
    json streams = json::array();
    for (const json& a : tree.at("aggregators")) {
      const std::string name = a.at("name").get<std::string>();
      if (a.contains("parent"))
        streams.push_back({{"from", name}, {"to", a.at("parent")}, {"path", a.at("route")}});
      for (const json& w : a.at("workers")) {
        const auto it = route.find({w.get<std::string>(), t});
        if (it == route.end())
          fail("job.plan", fmt::format("tree {}: no route for worker {}", t, w.get<std::string>()));
        std::vector<std::string> path;
        for (const std::string& hop : it->second) {
          path.push_back(hop);
          if (hop == name) break;
        }
        if (path.back() != name)
          fail("job.plan",
               fmt::format("tree {}: {}'s route does not pass {}", t, w.get<std::string>(), name));
        streams.push_back({{"from", w}, {"to", name}, {"path", path}});
      }
    }
    trees.push_back({{"weight", tree.value("weight", 1)}, {"streams", streams}});
  }
  return json{{"trees", trees}, {"policy", policy}, {"predicted_gbps", p.value("rate_gbps", 0.0)}};
}

}  // namespace

Scenario parse_scenario(const json& j, const std::string& base_dir) {
  Scenario s;
  const JsonIn in(j, "scenario");
  in.only({"name", "topology", "queues", "job", "aggregator", "ring", "background", "kill", "modes",
           "start_us", "time_limit_s"});
  in.read("name", s.name);
  in.read("start_us", s.start_us);
  in.read("time_limit_s", s.time_limit_s);
  if (j.contains("modes")) {
    in.read("modes", s.modes);
    if (s.modes.empty()) fail("modes", "empty");
    for (const auto& m : s.modes)
      if (m != "innetwork" && m != "ring")
        fail("modes", fmt::format("unknown mode '{}' (innetwork, ring)", m));
  }
  in_range(s.start_us, 0, 1e6, "start_us");
  positive(s.time_limit_s, "time_limit_s");

  if (j.contains("topology")) {
    const JsonIn o = in["topology"];
    o.only({"kind", "k", "graph", "file", "leaves", "spines", "hosts_per_leaf", "host_gbps",
            "spine_gbps", "oversubscription", "delay_us", "mtu", "ecmp"});
    Topology& t = s.topology;
    o.read("kind", t.kind);
    o.read("k", t.k);
    o.read("file", t.file);
    if (o.has("graph")) t.graph_json = o.json().at("graph");
    if (t.kind != "graph" && (o.has("graph") || o.has("file")))
      fail("topology", "graph and file are for kind \"graph\"");
    if (t.kind == "graph") {
      for (const char* f : {"leaves", "spines", "hosts_per_leaf", "k", "spine_gbps", "host_gbps",
                            "oversubscription"})
        if (o.has(f))
          fail(std::string("topology.") + f, "not a field of a graph (its links have rates)");
      if (o.has("graph") == o.has("file"))
        fail("topology", "a graph needs one of graph (inline) and file");
    } else if (t.kind == "fat-tree") {
      for (const char* f : {"leaves", "spines", "hosts_per_leaf"})
        if (o.has(f)) fail(std::string("topology.") + f, "not a field of a fat tree (k)");
    } else if (o.has("k")) {
      fail("topology.k", "only a fat tree has k");
    }
    o.read("leaves", t.leaves);
    o.read("spines", t.spines);
    o.read("hosts_per_leaf", t.hosts_per_leaf);
    o.read("host_gbps", t.host_gbps);
    o.read("spine_gbps", t.spine_gbps);
    o.read("oversubscription", t.oversubscription);
    o.read("delay_us", t.delay_us);
    o.read("mtu", t.mtu);
    o.read("ecmp", t.ecmp);
    if (o.has("spine_gbps") && o.has("oversubscription"))
      fail("topology", "give spine_gbps or oversubscription, not both");
  }
  Topology& t = s.topology;
  if (t.kind != "leaf-spine" && t.kind != "fat-tree" && t.kind != "graph")
    fail("topology.kind", "\"leaf-spine\", \"fat-tree\" or \"graph\"");
  if (t.kind == "graph") {
    if (!t.file.empty()) t.graph_json = read_json_file(base_dir, t.file, "topology.file");
    try {
      t.graph = parse_graph(t.graph_json.dump(), t.file.empty() ? "topology.graph" : t.file);
    } catch (const std::exception& e) {
      fail("topology", e.what());
    }
    if (t.graph.edges.empty()) fail("topology", "a graph without links");
    // The hosts' link rate (the ideal times, the background's load): the slowest link of a
    // worker.
    t.host_gbps = 0;
    for (const GraphSpec::Edge& e : t.graph.edges)
      for (const std::size_t v : {e.a, e.b})
        if (t.graph.vertices[v].kind == GraphSpec::Kind::kWorker)
          t.host_gbps = t.host_gbps == 0 ? e.gbps : std::min(t.host_gbps, e.gbps);
    if (t.host_gbps == 0) fail("topology", "no worker has a link");
  }
  if (t.kind == "fat-tree" && (t.k < 2 || t.k > 32 || t.k % 2 != 0))
    fail("topology.k", "an even number from 2 to 32");
  in_range(t.leaves, 1, 1024, "topology.leaves");
  in_range(t.spines, 1, 256, "topology.spines");
  in_range(t.hosts_per_leaf, 1, 1024, "topology.hosts_per_leaf");
  positive(t.host_gbps, "topology.host_gbps");
  // A fat tree's edge switch has k/2 hosts and k/2 uplinks, as many as its aggregation switch.
  const double down_gbps =
      t.kind == "fat-tree" ? t.host_gbps : t.hosts_per_leaf * t.host_gbps / t.spines;
  if (t.oversubscription != 0) {
    positive(t.oversubscription, "topology.oversubscription");
    t.spine_gbps = down_gbps / t.oversubscription;
  } else {
    t.oversubscription = down_gbps / t.spine_gbps;
  }
  positive(t.spine_gbps, "topology.spine_gbps");
  in_range(t.delay_us, 0, 1e6, "topology.delay_us");
  in_range(t.mtu, 576, 9000, "topology.mtu");
  if (t.ecmp != "none" && t.ecmp != "per-flow" && t.ecmp != "per-packet")
    fail("topology.ecmp", "\"none\", \"per-flow\" or \"per-packet\"");
  if (s.hosts() > 65535) fail("topology", "more than 65535 hosts");

  if (j.contains("queues")) {
    const JsonIn o = in["queues"];
    o.only({"kind", "ecn_threshold_packets", "capacity_packets", "host_capacity_packets"});
    o.read("kind", s.queues.kind);
    o.read("ecn_threshold_packets", s.queues.ecn_threshold_packets);
    o.read("capacity_packets", s.queues.capacity_packets);
    o.read("host_capacity_packets", s.queues.host_capacity_packets);
  }
  if (s.queues.kind != "red-ecn" && s.queues.kind != "drop-tail")
    fail("queues.kind", "\"red-ecn\" or \"drop-tail\"");
  in_range(s.queues.capacity_packets, 2, 1e7, "queues.capacity_packets");
  in_range(s.queues.host_capacity_packets, 2, 1e7, "queues.host_capacity_packets");
  in_range(s.queues.ecn_threshold_packets, 1, s.queues.capacity_packets,
           "queues.ecn_threshold_packets");

  bool pace_plan = false;  // job.pace_gbps: "plan"
  if (j.contains("job")) {
    const JsonIn o = in["job"];
    o.only({"workers",
            "tensor_bytes",
            "elements_per_packet",
            "window",
            "aggregation",
            "trees",
            "congestion_control",
            "ecn_capable",
            "epoch",
            "retransmit_timeout_us",
            "min_retransmit_timeout_us",
            "max_retransmit_timeout_us",
            "job_timeout_ms",
            "corrupt_rank",
            "plan",
            "plan_file",
            "policy",
            "pace_gbps",
            "fallback_after_ms",
            "fallback_step_us"});
    Job& b = s.job;
    o.read("workers", b.workers);
    o.read("tensor_bytes", b.tensor_bytes);
    o.read("elements_per_packet", b.elements_per_packet);
    o.read("window", b.window);
    o.read("aggregation", b.aggregation);
    o.read("trees", b.trees);
    o.read("plan_file", b.plan_file);
    o.read("policy", b.policy);
    if (o.has("pace_gbps")) {
      if (o.json().at("pace_gbps") == "plan")
        pace_plan = true;
      else
        o.read("pace_gbps", b.pace_gbps);
    }
    if (o.has("plan")) b.plan = o.json().at("plan");
    o.read("congestion_control", b.congestion_control);
    if (o.has("ecn_capable")) {
      bool v = false;
      o.read("ecn_capable", v);
      b.ecn_capable = v;
    }
    o.read("epoch", b.epoch);
    o.read("retransmit_timeout_us", b.retransmit_timeout_us);
    o.read("min_retransmit_timeout_us", b.min_retransmit_timeout_us);
    o.read("max_retransmit_timeout_us", b.max_retransmit_timeout_us);
    o.read("job_timeout_ms", b.job_timeout_ms);
    o.read("corrupt_rank", b.corrupt_rank);
    o.read("fallback_after_ms", b.fallback_after_ms);
    o.read("fallback_step_us", b.fallback_step_us);
  }
  Job& b = s.job;
  if (b.workers > s.hosts())
    fail("job.workers", fmt::format("{} workers, the topology has {} hosts", b.workers, s.hosts()));
  if (s.workers() < 2) fail("job.workers", "at least 2");
  if (b.tensor_bytes < 4 || b.tensor_bytes % 4 != 0)
    fail("job.tensor_bytes", "a positive multiple of 4 (int32 elements)");
  in_range(b.elements_per_packet, 1, 1024, "job.elements_per_packet");
  // One netagg packet per IP datagram: 22 bytes of header, 4 per element, UDP and IPv4 headers.
  if (22 + 4 * b.elements_per_packet + 28 > t.mtu)
    fail("job.elements_per_packet",
         fmt::format("{} elements make a {}-byte datagram, above the MTU of {}",
                     b.elements_per_packet, 22 + 4 * b.elements_per_packet + 28, t.mtu));
  in_range(b.window, 1, 32768, "job.window");
  if (b.aggregation != "single" && b.aggregation != "tree" && b.aggregation != "plan")
    fail("job.aggregation", "\"single\", \"tree\" or \"plan\"");
  if (b.aggregation == "plan") {
    if (t.kind != "graph") fail("job.aggregation", "a plan needs a graph topology");
    if (b.plan.is_null() == b.plan_file.empty())
      fail("job", "a plan needs one of plan (inline) and plan_file");
    if (!b.plan_file.empty()) b.plan = read_json_file(base_dir, b.plan_file, "job.plan_file");
    if (b.plan.contains("policies")) {
      b.plan = plan_of_report(b.plan, b.policy);
    } else if (!b.policy.empty()) {
      fail("job.policy", "for a plan that is netagg-plan's report (with \"policies\")");
    }
    if (pace_plan) {
      if (!b.plan.contains("predicted_gbps"))
        fail("job.pace_gbps", "\"plan\" needs a plan with a predicted rate (netagg-plan's)");
      b.pace_gbps = b.plan.at("predicted_gbps").get<double>();
    }
    if (j.at("job").contains("trees")) fail("job.trees", "a plan has its own trees");
    b.trees = static_cast<unsigned>(b.plan.value("trees", json::array()).size());
  } else if (!b.plan.is_null() || !b.plan_file.empty()) {
    fail("job.plan", "for aggregation \"plan\"");
  } else if (pace_plan) {
    fail("job.pace_gbps", "\"plan\" is for aggregation \"plan\"");
  }
  in_range(b.pace_gbps, 0, 1e6, "job.pace_gbps");
  in_range(b.trees, 1, 64, "job.trees");
  if (std::uint64_t{b.trees} * b.window > 65536)
    fail("job.trees", "trees * window exceeds the 16-bit slot space");
  positive(b.retransmit_timeout_us, "job.retransmit_timeout_us");
  positive(b.min_retransmit_timeout_us, "job.min_retransmit_timeout_us");
  if (b.max_retransmit_timeout_us < b.retransmit_timeout_us)
    fail("job.max_retransmit_timeout_us", "below retransmit_timeout_us");
  positive(b.job_timeout_ms, "job.job_timeout_ms");
  if (b.corrupt_rank >= static_cast<int>(s.workers())) fail("job.corrupt_rank", "no such rank");
  in_range(b.fallback_after_ms, 0, 1e9, "job.fallback_after_ms");
  if (b.fallback_after_ms >= b.job_timeout_ms)
    fail("job.fallback_after_ms",
         "below job_timeout_ms (the job timeout would end the all-reduce before the fallback "
         "starts)");
  in_range(b.fallback_step_us, 0, 1e9, "job.fallback_step_us");

  if (j.contains("kill")) {
    const JsonIn o = in["kill"];
    o.only({"aggregator", "at_us"});
    Kill k;
    o.read("aggregator", k.aggregator);
    o.read("at_us", k.at_us);
    if (k.aggregator.empty()) fail("kill.aggregator", "the name of an aggregator of the job");
    in_range(k.at_us, 0, 1e12, "kill.at_us");
    s.kill = k;
  }

  if (j.contains("aggregator")) {
    const JsonIn o = in["aggregator"];
    o.only({"model", "rate_gbps", "rate_mpps", "queue_packets"});
    o.read("model", s.aggregator.model);
    o.read("rate_gbps", s.aggregator.rate_gbps);
    o.read("rate_mpps", s.aggregator.rate_mpps);
    o.read("queue_packets", s.aggregator.queue_packets);
  }
  if (s.aggregator.model != "switch" && s.aggregator.model != "fpga-hls")
    fail("aggregator.model", "\"switch\" or \"fpga-hls\"");
  in_range(s.aggregator.rate_gbps, 0, 1e6, "aggregator.rate_gbps");
  in_range(s.aggregator.rate_mpps, 0, 1e6, "aggregator.rate_mpps");
  if (s.aggregator.rate_gbps > 0 && s.aggregator.rate_mpps > 0)
    fail("aggregator", "give rate_gbps or rate_mpps, not both");

  if (j.contains("ring")) {
    const JsonIn o = in["ring"];
    o.only({"tcp", "segment_bytes", "buffer_bytes", "min_rto_us"});
    o.read("tcp", s.ring.tcp);
    o.read("segment_bytes", s.ring.segment_bytes);
    o.read("buffer_bytes", s.ring.buffer_bytes);
    o.read("min_rto_us", s.ring.min_rto_us);
  }
  if (s.ring.segment_bytes + 52 > t.mtu || s.ring.segment_bytes < 64)
    fail("ring.segment_bytes", "between 64 and MTU - 52 (IPv4, TCP and its timestamp option)");
  in_range(static_cast<double>(s.ring.buffer_bytes), 4096, 1 << 30, "ring.buffer_bytes");
  positive(s.ring.min_rto_us, "ring.min_rto_us");

  if (j.contains("background")) {
    const JsonIn o = in["background"];
    o.only({"load", "flow_bytes", "long_flows", "seed"});
    o.read("long_flows", s.background.long_flows);
    o.read("load", s.background.load);
    o.read("flow_bytes", s.background.flow_bytes);
    o.read("seed", s.background.seed);
  }
  in_range(s.background.load, 0, 1, "background.load");
  if (s.background.flow_bytes == 0) fail("background.flow_bytes", "must be > 0");
  in_range(s.background.long_flows, 0, 1000, "background.long_flows");
  if (s.background.long_flows > 0 && t.kind == "leaf-spine" && t.leaves < 2)
    fail("background.long_flows", "need two leaves or more (a long flow crosses the fabric)");
  return s;
}

json to_json(const Scenario& s) {
  const Topology& t = s.topology;
  const Job& b = s.job;
  json topology{{"kind", t.kind},
                {"host_gbps", t.host_gbps},
                {"spine_gbps", t.spine_gbps},
                {"oversubscription", t.oversubscription},
                {"delay_us", t.delay_us},
                {"mtu", t.mtu},
                {"ecmp", t.ecmp}};
  if (t.kind == "fat-tree") {
    topology["k"] = t.k;
  } else if (t.kind == "graph") {
    for (const char* f : {"spine_gbps", "oversubscription"}) topology.erase(f);
    topology["graph"] = t.graph_json;
    if (!t.file.empty()) topology["file"] = t.file;
  } else {
    topology["leaves"] = t.leaves;
    topology["spines"] = t.spines;
    topology["hosts_per_leaf"] = t.hosts_per_leaf;
  }
  json out{{"name", s.name},
           {"topology", topology},
           {"queues",
            {{"kind", s.queues.kind},
             {"ecn_threshold_packets", s.queues.ecn_threshold_packets},
             {"capacity_packets", s.queues.capacity_packets},
             {"host_capacity_packets", s.queues.host_capacity_packets}}},
           {"job",
            {{"workers", s.workers()},
             {"tensor_bytes", b.tensor_bytes},
             {"elements_per_packet", b.elements_per_packet},
             {"window", b.window},
             {"aggregation", b.aggregation},
             {"plan", b.plan},
             {"pace_gbps", b.pace_gbps},
             {"trees", b.trees},
             {"congestion_control", b.congestion_control},
             {"ecn_capable", s.ect()},
             {"epoch", b.epoch},
             {"retransmit_timeout_us", b.retransmit_timeout_us},
             {"min_retransmit_timeout_us", b.min_retransmit_timeout_us},
             {"max_retransmit_timeout_us", b.max_retransmit_timeout_us},
             {"job_timeout_ms", b.job_timeout_ms},
             {"corrupt_rank", b.corrupt_rank},
             {"fallback_after_ms", b.fallback_after_ms},
             {"fallback_step_us", b.fallback_step_us}}},
           {"aggregator",
            {{"model", s.aggregator.model},
             {"rate_gbps", s.aggregator.rate_gbps},
             {"rate_mpps", s.aggregator.rate_mpps},
             {"queue_packets", s.aggregator.queue_packets}}},
           {"ring",
            {{"tcp", s.tcp_flavour()},
             {"segment_bytes", s.ring.segment_bytes},
             {"buffer_bytes", s.ring.buffer_bytes},
             {"min_rto_us", s.ring.min_rto_us}}},
           {"background",
            {{"load", s.background.load},
             {"flow_bytes", s.background.flow_bytes},
             {"long_flows", s.background.long_flows},
             {"seed", s.background.seed}}},
           {"modes", s.modes},
           {"start_us", s.start_us},
           {"time_limit_s", s.time_limit_s}};
  if (s.kill) out["kill"] = {{"aggregator", s.kill->aggregator}, {"at_us", s.kill->at_us}};
  return out;
}

}  // namespace netagg::fabric
