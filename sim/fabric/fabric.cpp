// SPDX-License-Identifier: Apache-2.0
// One ns-3 simulation per mode of a scenario: the topology, then either the in-network all-reduce
// (workers running netagg's engine, aggregators running the switch model) or the ring baseline
// over TCP, optional background traffic, and the result document.
#include "fabric.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "ns3/boolean.h"
#include "ns3/config.h"
#include "ns3/ipv4-address-generator.h"
#include "ns3/nstime.h"
#include "ns3/rng-seed-manager.h"
#include "ns3/simulator.h"
#include "ns3/string.h"
#include "ns3/type-id.h"
#include "ns3/uinteger.h"

#include "apps.hpp"
#include "bridge.hpp"
#include "network.hpp"
#include "scenario.hpp"

namespace netagg::fabric {

namespace {

using namespace ns3;
using nlohmann::json;

constexpr std::uint16_t kWorkerPort = 31000;
constexpr std::uint16_t kAggregatorPort = 20033;  // netagg's well-known aggregator port
constexpr std::uint16_t kRingPort = 32000;

// ns-3's TCP for the ring and the background flows. Set before any socket exists.
void configure_tcp(const Scenario& s) {
  TypeId tid;
  const std::string flavour = s.tcp_flavour();
  if (!TypeId::LookupByNameFailSafe("ns3::" + flavour, &tid))
    throw std::runtime_error(
        fmt::format("scenario: ring.tcp: no ns-3 TCP congestion control 'ns3::{}'", flavour));
  Config::SetDefault("ns3::TcpL4Protocol::SocketType", TypeIdValue(tid));
  Config::SetDefault("ns3::TcpSocket::SegmentSize", UintegerValue(s.ring.segment_bytes));
  Config::SetDefault("ns3::TcpSocket::SndBufSize", UintegerValue(s.ring.buffer_bytes));
  Config::SetDefault("ns3::TcpSocket::RcvBufSize", UintegerValue(s.ring.buffer_bytes));
  Config::SetDefault("ns3::TcpSocket::InitialCwnd", UintegerValue(10));
  Config::SetDefault("ns3::TcpSocket::DelAckCount", UintegerValue(2));
  Config::SetDefault("ns3::TcpSocket::DelAckTimeout", TimeValue(MicroSeconds(20)));
  Config::SetDefault("ns3::TcpSocketBase::MinRto",
                     TimeValue(NanoSeconds(std::llround(s.ring.min_rto_us * 1e3))));
  Config::SetDefault("ns3::TcpSocketBase::ClockGranularity", TimeValue(MicroSeconds(1)));
  // DCTCP sets ECN on itself; any other flavour uses it when the queues mark.
  Config::SetDefault("ns3::TcpSocketBase::UseEcn", StringValue(s.marks() ? "On" : "Off"));
}

struct Measure {
  bool completed = false;
  double completion_s = 0;  // slowest worker, from the start
  double fastest_s = 0;
  double mean_s = 0;
};

Measure measure(const std::vector<double>& finish, double start_s, bool all_finished) {
  Measure m;
  m.completed = all_finished && !finish.empty();
  if (finish.empty()) return m;
  double sum = 0;
  m.completion_s = 0;
  m.fastest_s = 1e300;
  for (const double f : finish) {
    m.completion_s = std::max(m.completion_s, f - start_s);
    m.fastest_s = std::min(m.fastest_s, f - start_s);
    sum += f - start_s;
  }
  m.mean_s = sum / static_cast<double>(finish.size());
  return m;
}

json queue_json(const QueueSummary& q) {
  return json{{"switch_queues", q.queues},      {"max_packets", q.max_packets},
              {"mean_packets", q.mean_packets}, {"busiest_mean_packets", q.busiest_mean_packets},
              {"ecn_marks", q.ecn_marks},       {"drops", q.drops},
              {"enqueued", q.enqueued}};
}

// What every mode reports about the simulation itself.
struct SimRun {
  double wall_s = 0;
  std::uint64_t events = 0;
  double simulated_s = 0;
};

SimRun run_simulation(double time_limit_s) {
  Simulator::Stop(Seconds(time_limit_s));
  const std::uint64_t events_before = Simulator::GetEventCount();
  const auto t0 = std::chrono::steady_clock::now();
  Simulator::Run();
  SimRun r;
  r.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  r.events = Simulator::GetEventCount() - events_before;
  r.simulated_s = Simulator::Now().GetSeconds();
  return r;
}

void add_sim_stats(json& out, const SimRun& r, const Network& net) {
  // Packets each switch forwarded (its own aggregator's traffic not included), where traffic went.
  json forwarded = json::object();
  for (std::size_t v = net.graph.hosts; v < net.graph.names.size(); ++v)
    forwarded[net.graph.names[v]] = net.routing[v]->forwarded();
  out["forwarded"] = forwarded;
  out["simulated_s"] = r.simulated_s;
  out["simulated_packets"] = net.link_packets();
  out["events"] = r.events;
  out["wall_s"] = r.wall_s;
  out["simulated_packets_per_wall_s"] =
      r.wall_s > 0 ? static_cast<double>(net.link_packets()) / r.wall_s : 0.0;
}

// Every mode's simulation starts from a clean ns-3 state: a fresh simulator, node list and
// address allocator.
void reset_ns3(std::uint64_t seed) {
  Simulator::Destroy();
  Ipv4AddressGenerator::Reset();
  RngSeedManager::SetSeed(static_cast<std::uint32_t>(seed == 0 ? 1 : seed));
  RngSeedManager::SetRun(1);
}

// Background traffic and what it measures: the long flows' bytes at the all-reduce's start, and
// halfway between time 0 and the start (their rate before the all-reduce).
struct Background {
  std::unique_ptr<BackgroundTraffic> traffic;
  std::vector<std::uint64_t> at_half, at_start;
  double half_s = 0, start_s = 0;
};

std::unique_ptr<Background> start_background(const Scenario& s, const Network& net, Time start) {
  if (s.background.load <= 0 && s.background.long_flows == 0) return nullptr;
  BackgroundOptions o;
  o.load = s.background.load;
  o.host_bps = s.topology.host_gbps * 1e9;
  o.flow_bytes = s.background.flow_bytes;
  o.long_flows = s.background.long_flows;
  o.seed = s.background.seed;
  auto bg = std::make_unique<Background>();
  bg->traffic =
      std::make_unique<BackgroundTraffic>(net.hosts, net.host_ip, net.graph.host_edge, o, start);
  bg->half_s = start.GetSeconds() / 2;
  bg->start_s = start.GetSeconds();
  Background* raw = bg.get();
  Simulator::Schedule(start / 2, [raw] { raw->at_half = raw->traffic->long_flow_bytes(); });
  Simulator::Schedule(start, [raw] { raw->at_start = raw->traffic->long_flow_bytes(); });
  return bg;
}

// Jain's fairness index of x: (sum x)^2 / (n sum x^2), 1 when all are equal.
double jain(const std::vector<double>& x) {
  double sum = 0, squares = 0;
  for (const double v : x) {
    sum += v;
    squares += v * v;
  }
  return squares > 0 ? sum * sum / (static_cast<double>(x.size()) * squares) : 0.0;
}

void add_background(json& out, const Background* bg) {
  if (!bg) return;
  const BackgroundTraffic& t = *bg->traffic;
  json b{{"flows_started", t.flows_started()}, {"bytes_received", t.bytes_received()}};
  const std::vector<double>& fct = t.completion_times();
  if (t.flows_started() > 0) {
    double sum = 0, worst = 0;
    for (const double f : fct) {
      sum += f;
      worst = std::max(worst, f);
    }
    b["short_flows"] = {{"completed", fct.size()},
                        {"unfinished", t.flows_unfinished()},
                        {"mean_completion_s", fct.empty() ? 0.0 : sum / fct.size()},
                        {"max_completion_s", worst}};
  }
  if (!t.long_flow_pairs().empty()) {
    // Rates before the all-reduce (from half the start time to the start) and while it ran (from
    // its start to the end of the mode's simulation).
    const std::vector<std::uint64_t> now = t.long_flow_bytes();
    const double end_s = Simulator::Now().GetSeconds();
    std::vector<double> before, during;
    json flows = json::array();
    for (std::size_t f = 0; f < now.size(); ++f) {
      const double b0 = f < bg->at_half.size() ? static_cast<double>(bg->at_half[f]) : 0;
      const double b1 = f < bg->at_start.size() ? static_cast<double>(bg->at_start[f]) : 0;
      before.push_back(bg->start_s > bg->half_s ? (b1 - b0) * 8 / (bg->start_s - bg->half_s) / 1e9
                                                : 0.0);
      during.push_back(end_s > bg->start_s
                           ? (static_cast<double>(now[f]) - b1) * 8 / (end_s - bg->start_s) / 1e9
                           : 0.0);
      flows.push_back({{"source", t.long_flow_pairs()[f].first},
                       {"destination", t.long_flow_pairs()[f].second},
                       {"gbps_before", before.back()},
                       {"gbps_during", during.back()}});
    }
    auto stats = [](const std::vector<double>& x) {
      double sum = 0, lo = x.empty() ? 0 : x.front();
      for (const double v : x) {
        sum += v;
        lo = std::min(lo, v);
      }
      return json{{"total_gbps", sum},
                  {"mean_gbps", x.empty() ? 0.0 : sum / x.size()},
                  {"min_gbps", lo},
                  {"jain", jain(x)}};
    };
    b["long_flows"] = {{"before", stats(before)}, {"during", stats(during)}, {"flows", flows}};
  }
  out["background"] = b;
}

// What both modes do once their applications are in place: the background traffic, the queue
// statistics from the all-reduce's start, the simulation itself.
std::pair<std::unique_ptr<Background>, SimRun> run_mode(const Scenario& s, Network& net,
                                                        Time start) {
  auto background = start_background(s, net, start);
  Simulator::Schedule(start, [&net] { restart_queue_stats(net); });
  const SimRun sim = run_simulation(s.time_limit_s);
  return {std::move(background), sim};
}

// Tree t is rooted at the top-tier switch t mod tops. "single": every worker sends to the root.
// "tree": every switch on the (first) shortest path from a worker's edge switch to the root
// aggregates, and sends to the next one on that path: leaf -> spine on a leaf-spine, edge ->
// aggregation -> core on a fat tree.
// A plan's trees (docs/fabric.md, "Plans"): each stream from a worker or an aggregator to its
// parent aggregator along a route of node names. Returns the spec; `routes` gets each tree's
// streams as vertex paths, to pin.
PlanSpec plan_from_streams(const Scenario& s, const Network& net,
                           std::vector<std::vector<std::vector<unsigned>>>* routes) {
  PlanSpec spec;
  spec.job_id = 1;
  spec.window = static_cast<std::uint16_t>(s.job.window);
  spec.elements_per_packet = static_cast<std::uint16_t>(s.job.elements_per_packet);
  spec.aggregator_port = kAggregatorPort;
  const Graph& g = net.graph;
  const unsigned n = s.workers();
  for (unsigned r = 0; r < n; ++r) spec.workers.emplace_back(net.host_ip[r].Get(), kWorkerPort);
  auto vertex = [&](const json& name, const std::string& where) {
    if (!name.is_string()) throw std::runtime_error(fmt::format("{}: expected a node name", where));
    const auto it = std::find(g.names.begin(), g.names.end(), name.get<std::string>());
    if (it == g.names.end())
      throw std::runtime_error(fmt::format("{}: no node '{}'", where, name.get<std::string>()));
    return static_cast<unsigned>(it - g.names.begin());
  };
  const json& trees = s.job.plan.at("trees");
  if (!trees.is_array() || trees.empty())
    throw std::runtime_error("job.plan.trees: a non-empty array");
  for (std::size_t t = 0; t < trees.size(); ++t) {
    const std::string where = fmt::format("job.plan.trees[{}]", t);
    const json& tj = trees[t];
    PlanTree tree;
    tree.weight = tj.value("weight", 1u);
    std::map<unsigned, std::size_t> index;
    auto node_of = [&](unsigned v) {
      const auto it = index.find(v);
      if (it != index.end()) return it->second;
      PlanNode node;
      node.name = g.names[v];
      node.ip = net.ip[v].Get();
      tree.nodes.push_back(node);
      index[v] = tree.nodes.size() - 1;
      return tree.nodes.size() - 1;
    };
    std::vector<std::vector<unsigned>> paths;
    std::vector<std::pair<unsigned, unsigned>> edges;  // (from, to) aggregators
    for (std::size_t i = 0; i < tj.at("streams").size(); ++i) {
      const json& st = tj.at("streams")[i];
      const std::string sw = fmt::format("{}.streams[{}]", where, i);
      const unsigned from = vertex(st.at("from"), sw + ".from");
      const unsigned to = vertex(st.at("to"), sw + ".to");
      std::vector<unsigned> path;
      for (const json& hop : st.at("path")) path.push_back(vertex(hop, sw + ".path"));
      if (path.size() < 2 || path.front() != from || path.back() != to)
        throw std::runtime_error(
            fmt::format("{}.path: must go from {} to {}", sw, g.names[from], g.names[to]));
      const std::size_t to_node = node_of(to);
      if (from < n) {
        tree.nodes[to_node].workers.push_back(static_cast<std::uint16_t>(from));
      } else if (from < g.hosts && from >= s.workers() &&
                 std::find(g.tops.begin(), g.tops.end(), from) == g.tops.end()) {
        throw std::runtime_error(
            fmt::format("{}.from: {} is not one of the job's {} workers", sw, g.names[from], n));
      } else {
        edges.emplace_back(from, to);
      }
      paths.push_back(std::move(path));
    }
    for (const auto& [from, to] : edges) {
      const std::size_t child = node_of(from);
      if (tree.nodes[child].parent)
        throw std::runtime_error(fmt::format("{}: {} has two parents", where, g.names[from]));
      tree.nodes[child].parent = node_of(to);
    }
    // The root first, as netagg's job format lists it.
    std::size_t roots = 0, root = 0;
    for (std::size_t i = 0; i < tree.nodes.size(); ++i)
      if (!tree.nodes[i].parent) {
        ++roots;
        root = i;
      }
    if (roots != 1)
      throw std::runtime_error(fmt::format("{}: {} roots (a tree has one)", where, roots));
    if (root != 0) {
      std::vector<std::size_t> order{root};
      for (std::size_t i = 0; i < tree.nodes.size(); ++i)
        if (i != root) order.push_back(i);
      std::vector<std::size_t> new_index(tree.nodes.size());
      for (std::size_t i = 0; i < order.size(); ++i) new_index[order[i]] = i;
      std::vector<PlanNode> nodes;
      for (const std::size_t i : order) {
        PlanNode node = tree.nodes[i];
        if (node.parent) node.parent = new_index[*node.parent];
        nodes.push_back(std::move(node));
      }
      tree.nodes = std::move(nodes);
    }
    spec.trees.push_back(std::move(tree));
    if (routes) routes->push_back(std::move(paths));
  }
  return spec;
}

PlanSpec make_plan(const Scenario& s, const Network& net) {
  PlanSpec spec;
  spec.job_id = 1;
  spec.window = static_cast<std::uint16_t>(s.job.window);
  spec.elements_per_packet = static_cast<std::uint16_t>(s.job.elements_per_packet);
  spec.aggregator_port = kAggregatorPort;
  const Graph& g = net.graph;
  const unsigned n = s.workers();
  for (unsigned r = 0; r < n; ++r) spec.workers.emplace_back(net.host_ip[r].Get(), kWorkerPort);
  for (unsigned t = 0; t < s.job.trees; ++t) {
    const unsigned root = g.tops[t % g.tops.size()];
    PlanTree tree;
    std::map<unsigned, std::size_t> index;  // vertex -> node in the tree
    auto node_of = [&](unsigned v) {
      const auto it = index.find(v);
      if (it != index.end()) return it->second;
      PlanNode node;
      node.name = g.names[v];
      node.ip = net.ip[v].Get();
      tree.nodes.push_back(node);
      index[v] = tree.nodes.size() - 1;
      return tree.nodes.size() - 1;
    };
    node_of(root);
    for (unsigned r = 0; r < n; ++r) {
      if (s.job.aggregation == "single") {
        tree.nodes[0].workers.push_back(static_cast<std::uint16_t>(r));
        continue;
      }
      const std::vector<unsigned> path = net.routes->first_path(g.host_edge[r], root);
      if (path.empty())
        throw std::runtime_error(
            fmt::format("fabric: no path from {} to {}", g.names[g.host_edge[r]], g.names[root]));
      tree.nodes[node_of(path.front())].workers.push_back(static_cast<std::uint16_t>(r));
      for (std::size_t i = 0; i + 1 < path.size(); ++i) {
        const std::size_t child = node_of(path[i]);
        const std::size_t parent = node_of(path[i + 1]);
        tree.nodes[child].parent = parent;
      }
    }
    spec.trees.push_back(std::move(tree));
  }
  return spec;
}

json run_innetwork(const Scenario& s, bool quiet, bool& ok, std::string& line) {
  reset_ns3(s.background.seed);
  configure_tcp(s);  // the background flows
  std::unique_ptr<Network> net = build_network(s);
  // A plan's streams are pinned to their routes (tree t's job id is 1 + t).
  std::vector<std::vector<std::vector<unsigned>>> routes;
  const PlanSpec spec =
      s.job.aggregation == "plan" ? plan_from_streams(s, *net, &routes) : make_plan(s, *net);
  for (std::size_t t = 0; t < routes.size(); ++t)
    for (const auto& path : routes[t]) net->routes->pin(static_cast<std::uint16_t>(1 + t), path);
  const JobPlan plan(spec);
  const Time start = NanoSeconds(std::llround(s.start_us * 1e3));
  const unsigned n = s.workers();

  // Aggregators: one per switch in the plan, holding its part of every tree.
  std::vector<std::string> used;
  for (const PlanTree& t : spec.trees)
    for (const PlanNode& node : t.nodes)
      if (std::find(used.begin(), used.end(), node.name) == used.end()) used.push_back(node.name);
  std::vector<std::unique_ptr<AggregatorCore>> aggregator_cores;
  std::vector<Ptr<AggregatorApp>> aggregator_apps;
  const Time per_packet = s.aggregator.rate_mpps > 0
                              ? NanoSeconds(std::llround(1e3 / s.aggregator.rate_mpps))
                              : Time(0);
  const double per_byte_ns = s.aggregator.rate_gbps > 0 ? 8.0 / s.aggregator.rate_gbps : 0;
  // A graph's switches and roots have their own capacities (aggregation, ingress), which hold
  // for their aggregators' UDP payload bits; elsewhere the scenario's one limit holds for all.
  auto own_gbps = [&s](const std::string& name) {
    for (const GraphSpec::Vertex& v : s.topology.graph.vertices)
      if (v.name == name)
        return v.kind == GraphSpec::Kind::kRoot ? v.ingress_gbps : v.aggregation_gbps;
    return 0.0;
  };
  json capacities = json::object();
  for (const std::string& name : used) {
    const unsigned v = net->vertex(name);
    aggregator_cores.push_back(std::make_unique<AggregatorCore>(plan, name, s.aggregator.model,
                                                                net->ip[v].Get(), kAggregatorPort));
    Ptr<AggregatorApp> app = CreateObject<AggregatorApp>();
    const double own = own_gbps(name);
    if (own > 0) capacities[name] = own;
    app->Setup(aggregator_cores.back().get(), net->ip[v], kAggregatorPort,
               own > 0 ? Time(0) : per_packet, own > 0 ? 8.0 / own : per_byte_ns,
               s.aggregator.queue_packets);
    net->node[v]->AddApplication(app);
    app->SetStartTime(Seconds(0));
    aggregator_apps.push_back(app);
  }

  WorkerOptions wo;
  wo.elements = s.elements();
  wo.epoch = s.job.epoch;
  wo.congestion_control = s.job.congestion_control;
  wo.retransmit_timeout_ns = std::llround(s.job.retransmit_timeout_us * 1e3);
  wo.min_retransmit_timeout_ns = std::llround(s.job.min_retransmit_timeout_us * 1e3);
  wo.max_retransmit_timeout_ns = std::llround(s.job.max_retransmit_timeout_us * 1e3);
  wo.job_timeout_ns = std::llround(s.job.job_timeout_ms * 1e6);
  wo.corrupt_rank = s.job.corrupt_rank;
  wo.pace_gbps = s.job.pace_gbps;
  wo.fallback_after_ns = std::llround(s.job.fallback_after_ms * 1e6);
  std::vector<std::unique_ptr<WorkerCore>> cores;
  std::vector<Ptr<WorkerApp>> apps;
  for (unsigned r = 0; r < n; ++r)
    cores.push_back(std::make_unique<WorkerCore>(plan, static_cast<std::uint16_t>(r), wo));

  // The host fallback: a session when every worker has stalled or finished (one stalled); each
  // stalled worker goes on when the session's modeled exchange ends.
  std::unique_ptr<FallbackGroup> fallback;
  if (wo.fallback_after_ns > 0) {
    std::vector<WorkerCore*> members;
    for (const auto& c : cores) members.push_back(c.get());
    FallbackCost cost;
    cost.host_gbps = s.topology.host_gbps;
    cost.step_ns = std::llround(s.job.fallback_step_us * 1e3);
    fallback = std::make_unique<FallbackGroup>(std::move(members), cost);
  }
  json sessions = json::array();
  std::string fallback_error;
  const auto try_fallback = [&] {
    if (!fallback || !fallback->ready()) return;
    const FallbackRun run = fallback->run(Simulator::Now().GetNanoSeconds());
    sessions.push_back({{"at_s", Simulator::Now().GetSeconds() - start.GetSeconds()},
                        {"stalled_workers", run.stalled.size()},
                        {"calls", run.calls},
                        {"bytes", run.bytes},
                        {"modeled_s", static_cast<double>(run.duration_ns) * 1e-9},
                        {"error", run.error}});
    if (!run.error.empty()) {
      fallback_error = run.error;
      return;
    }
    for (const std::uint16_t r : run.stalled)
      Simulator::Schedule(NanoSeconds(run.duration_ns), &WorkerApp::FinishFallback, apps[r]);
  };
  unsigned remaining = n;
  for (unsigned r = 0; r < n; ++r) {
    Ptr<WorkerApp> app = CreateObject<WorkerApp>();
    app->Setup(
        cores[r].get(), net->host_ip[r], kWorkerPort, start, s.ect(),
        [&remaining, &try_fallback] {
          if (--remaining == 0) {
            Simulator::Stop();
            return;
          }
          try_fallback();  // the others may wait for this one
        },
        try_fallback);
    net->hosts.Get(r)->AddApplication(app);
    app->SetStartTime(Seconds(0));
    apps.push_back(app);
  }

  // An aggregator killed for good.
  if (s.kill) {
    const auto it = std::find(used.begin(), used.end(), s.kill->aggregator);
    if (it == used.end()) {
      std::string names;
      for (const std::string& u : used) names += (names.empty() ? "" : ", ") + u;
      throw std::runtime_error(fmt::format("kill.aggregator: '{}' is no aggregator of the job ({})",
                                           s.kill->aggregator, names));
    }
    aggregator_apps[static_cast<std::size_t>(it - used.begin())]->KillAt(
        NanoSeconds(std::llround(s.kill->at_us * 1e3)));
  }
  const auto [background, sim] = run_mode(s, *net, start);

  // Collect.
  std::vector<double> finish;
  bool all_done = true;
  std::uint64_t mismatches = 0, checked = 0, retransmissions = 0, packets_sent = 0, ce = 0,
                cuts = 0, duplicates = 0, rejected = 0, spurious = 0, fb_shared = 0, fb_host = 0,
                fb_resumed = 0;
  json per_worker_retx = json::array();
  json failures = json::array();
  json per_worker = json::array();
  for (unsigned r = 0; r < n; ++r) {
    const WorkerCounters c = cores[r]->counters();
    const WorkerCore::State st = cores[r]->state();
    if (st != WorkerCore::State::kDone) {
      all_done = false;
      failures.push_back({{"rank", r},
                          {"state", st == WorkerCore::State::kFailed ? "failed" : "unfinished"},
                          {"failure", cores[r]->failure()}});
    }
    if (apps[r]->finished() && st == WorkerCore::State::kDone)
      finish.push_back(apps[r]->finished_at().GetSeconds());
    mismatches += c.mismatches;
    checked += c.elements_checked;
    retransmissions += c.retransmissions;
    packets_sent += c.packets_sent;
    ce += c.ce_results;
    cuts += c.window_cuts;
    duplicates += c.duplicates;
    rejected += c.rejected;
    spurious += c.spurious_retransmissions;
    fb_shared += c.fallback_shared_results;
    fb_host = std::max(fb_host, c.fallback_host_packets);  // every rank counts the same packets
    fb_resumed = std::max(fb_resumed, c.fallback_resumed);
    per_worker_retx.push_back(c.retransmissions);
    per_worker.push_back(
        {{"rank", r},
         {"completion_s",
          apps[r]->finished() ? apps[r]->finished_at().GetSeconds() - start.GetSeconds() : -1.0},
         {"packets_sent", c.packets_sent},
         {"retransmissions", c.retransmissions},
         {"ce_results", c.ce_results},
         {"window_cuts", c.window_cuts},
         {"cwnd", c.cwnd},
         {"srtt_us", c.srtt_us},
         {"mismatches", c.mismatches},
         {"fallback_sessions", c.fallback_sessions},
         {"fallback_shared_results", c.fallback_shared_results}});
  }
  const Measure m = measure(finish, start.GetSeconds(), all_done);
  const std::uint64_t expected_checked = static_cast<std::uint64_t>(n) * s.elements();
  const bool verified = m.completed && mismatches == 0 && checked == expected_checked;

  std::map<std::string, std::uint64_t> switch_sum;
  std::size_t open_rounds = 0;
  std::uint64_t fpga_cycles = 0;
  for (const auto& a : aggregator_cores) {
    for (const auto& [k, v] : a->counters()) switch_sum[k] += v;
    open_rounds += a->open_rounds();
    fpga_cycles += a->cycles();
  }
  std::uint64_t rate_drops = 0, backlog = 0;
  for (const auto& a : aggregator_apps) {
    rate_drops += a->rate_limit_drops();
    backlog = std::max(backlog, a->max_backlog());
  }
  const QueueSummary q = summarize_queues(*net);

  json out{{"completed", m.completed},
           {"verified", verified},
           {"completion_s", m.completion_s},
           {"fastest_s", m.fastest_s},
           {"mean_s", m.mean_s},
           {"algorithm_gbps",
            m.completion_s > 0 ? static_cast<double>(s.job.tensor_bytes) * 8 / m.completion_s / 1e9
                               : 0.0},
           {"mismatches", mismatches},
           {"elements_checked", checked},
           {"elements_expected", expected_checked},
           {"packets_sent", packets_sent},
           {"retransmissions", retransmissions},
           {"spurious_retransmissions", spurious},
           {"retransmissions_per_worker", per_worker_retx},
           {"duplicates", duplicates},
           {"rejected", rejected},
           {"ce_results", ce},
           {"window_cuts", cuts},
           {"failures", failures},
           {"aggregators", used},
           {"switch", switch_sum},
           {"aggregator_model", s.aggregator.model},
           {"fpga_cycles", fpga_cycles},
           {"open_rounds", open_rounds},
           {"aggregator_rate_limit",
            {{"drops", rate_drops}, {"max_backlog", backlog}, {"gbps", capacities}}},
           {"queues", queue_json(q)},
           {"fallback",
            {{"enabled", fallback != nullptr},
             {"after_ms", s.job.fallback_after_ms},
             {"sessions", sessions},
             {"host_packets", fb_host},
             {"shared_results", fb_shared},
             {"resumed", fb_resumed},
             {"error", fallback_error}}},
           {"job", json::parse(plan.to_json())},
           {"per_worker", per_worker}};
  if (s.kill) {
    const auto it = std::find(used.begin(), used.end(), s.kill->aggregator);
    const AggregatorApp& a = *aggregator_apps[static_cast<std::size_t>(it - used.begin())];
    out["killed"] = {{"aggregator", s.kill->aggregator},
                     {"at_s", s.kill->at_us * 1e-6 - start.GetSeconds()},
                     {"dead", a.dead()},
                     {"dropped", a.dead_drops()}};
  }
  if (s.job.plan.contains("predicted_gbps")) {
    // A plan's predicted rate per worker against the measured one: the tensor over the slowest
    // worker's time (payload only: the links also carry the headers).
    const double predicted = s.job.plan.at("predicted_gbps").get<double>();
    out["plan"] = {{"policy", s.job.plan.value("policy", "")},
                   {"predicted_gbps", predicted},
                   {"measured_over_predicted",
                    predicted > 0 ? out["algorithm_gbps"].get<double>() / predicted : 0.0}};
  }
  add_sim_stats(out, sim, *net);
  add_background(out, background.get());
  ok = verified;
  line = fmt::format(
      "innetwork ({}, {} tree{}): {} in {:.3f} ms, {} mismatches, {} retransmissions, "
      "{} CE marks, {} link packets in {:.2f} s wall ({:.0f}/s)",
      s.job.aggregation, s.job.trees, s.job.trees == 1 ? "" : "s",
      verified ? "verified" : (m.completed ? "WRONG RESULT" : "DID NOT COMPLETE"),
      m.completion_s * 1e3, mismatches, retransmissions, q.ecn_marks, net->link_packets(),
      sim.wall_s, sim.wall_s > 0 ? net->link_packets() / sim.wall_s : 0.0);
  if (s.kill)
    line += fmt::format("; aggregator {} killed at {:.3f} ms", s.kill->aggregator,
                        out["killed"]["at_s"].get<double>() * 1e3);
  if (!sessions.empty())
    line += fmt::format("; host fallback: {} session{}, {} packets computed on the hosts{}",
                        sessions.size(), sessions.size() == 1 ? "" : "s", fb_host,
                        fallback_error.empty() ? "" : ", failed: " + fallback_error);
  if (!quiet) std::fprintf(stderr, "netagg-fabric: %s\n", line.c_str());

  Simulator::Destroy();
  return out;
}

json run_ring(const Scenario& s, bool quiet, bool& ok, std::string& line) {
  reset_ns3(s.background.seed);
  configure_tcp(s);
  std::unique_ptr<Network> net = build_network(s);
  const Time start = NanoSeconds(std::llround(s.start_us * 1e3));
  const unsigned n = s.workers();
  std::vector<std::uint64_t> chunks(n);
  for (unsigned c = 0; c < n; ++c)
    chunks[c] = s.job.tensor_bytes / n + (c < s.job.tensor_bytes % n ? 1 : 0);

  std::vector<Ptr<RingApp>> apps;
  unsigned remaining = n;
  for (unsigned r = 0; r < n; ++r) {
    Ptr<RingApp> app = CreateObject<RingApp>();
    app->Setup(r, n, net->host_ip[(r + 1) % n], kRingPort, chunks, start, [&remaining] {
      if (--remaining == 0) Simulator::Stop();
    });
    net->hosts.Get(r)->AddApplication(app);
    app->SetStartTime(Seconds(0));
    apps.push_back(app);
  }
  const auto [background, sim] = run_mode(s, *net, start);

  std::vector<double> finish;
  bool all_done = true;
  std::uint64_t sent = 0;
  for (const auto& a : apps) {
    if (a->finished())
      finish.push_back(a->finished_at().GetSeconds());
    else
      all_done = false;
    sent += a->bytes_sent();
  }
  const Measure m = measure(finish, start.GetSeconds(), all_done);
  const QueueSummary q = summarize_queues(*net);
  json out{{"completed", m.completed},
           {"completion_s", m.completion_s},
           {"fastest_s", m.fastest_s},
           {"mean_s", m.mean_s},
           {"algorithm_gbps",
            m.completion_s > 0 ? static_cast<double>(s.job.tensor_bytes) * 8 / m.completion_s / 1e9
                               : 0.0},
           {"tcp", s.tcp_flavour()},
           {"steps", 2 * (n - 1)},
           {"bytes_sent_per_worker", n ? sent / n : 0},
           {"unfinished_workers", n - finish.size()},
           {"queues", queue_json(q)}};
  add_sim_stats(out, sim, *net);
  add_background(out, background.get());
  ok = m.completed;
  line = fmt::format(
      "ring ({}): {} in {:.3f} ms, {} CE marks, {} drops, {} link packets in "
      "{:.2f} s wall ({:.0f}/s)",
      s.tcp_flavour(), m.completed ? "completed" : "DID NOT COMPLETE", m.completion_s * 1e3,
      q.ecn_marks, q.drops, net->link_packets(), sim.wall_s,
      sim.wall_s > 0 ? net->link_packets() / sim.wall_s : 0.0);
  if (!quiet) std::fprintf(stderr, "netagg-fabric: %s\n", line.c_str());

  Simulator::Destroy();
  return out;
}

}  // namespace

RunOutput run_scenario(const std::string& scenario_json, bool quiet, const std::string& base_dir) {
  json doc;
  try {
    doc = json::parse(scenario_json);
  } catch (const json::exception& e) {
    throw std::runtime_error(fmt::format("scenario: not JSON: {}", e.what()));
  }
  const Scenario s = parse_scenario(doc, base_dir);
  const unsigned n = s.workers();
  const double bytes = static_cast<double>(s.job.tensor_bytes);
  const double host_bps = s.topology.host_gbps * 1e9;

  json result{{"scenario", to_json(s)},
              {"workers", n},
              {"tensor_bytes", s.job.tensor_bytes},
              // Each worker's bytes sent (and received), over the in-network all-reduce's:
              // ring all-reduce moves 2(N-1)/N times the tensor, in-network the tensor once.
              {"bound", 2.0 * (n - 1) / n},
              {"ideal",
               {{"innetwork_s", bytes * 8 / host_bps},
                {"ring_s", 2.0 * (n - 1) / n * bytes * 8 / host_bps}}}};
  RunOutput out;
  out.ok = true;
  for (const std::string& mode : s.modes) {
    bool ok = false;
    std::string line;
    result[mode] =
        mode == "innetwork" ? run_innetwork(s, quiet, ok, line) : run_ring(s, quiet, ok, line);
    out.ok = out.ok && ok;
    out.summary += line + "\n";
  }
  if (result.contains("innetwork") && result.contains("ring") &&
      result["innetwork"]["completion_s"].get<double>() > 0)
    result["ring_over_innetwork"] = result["ring"]["completion_s"].get<double>() /
                                    result["innetwork"]["completion_s"].get<double>();
  result["ok"] = out.ok;
  out.result_json = result.dump(2);
  return out;
}

}  // namespace netagg::fabric
