// SPDX-License-Identifier: Apache-2.0
// The fabric's bridge to netagg: the job, a worker's protocol engines and an aggregator's switch
// model behind an interface of plain types. ns-3 3.37's headers do not compile as C++20 and
// netagg's do not compile as C++17, so the ns-3 side of the fabric (C++17) sees only this header
// and bridge.cpp (C++20) is the only file that sees both this header and netagg's.
//
// Time is ns-3's simulated time in nanoseconds; addresses are IPv4 addresses in host order.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace netagg::fabric {

// A datagram to send. `data` is valid only during the call.
struct Outgoing {
  std::uint32_t ip = 0;
  std::uint16_t port = 0;
  const std::uint8_t* data = nullptr;
  std::size_t size = 0;
  std::uint8_t ecn = 0;  // the IPv4 ECN bits the datagram should leave with (aggregators)
};
using SendFn = std::function<void(const Outgoing&)>;

// One aggregator of a tree, as the topology places it.
struct PlanNode {
  std::string name;  // unique in its tree; an aggregator in several trees has one name
  std::uint32_t ip = 0;
  std::optional<std::size_t> parent;   // index into the tree's nodes; none: the root
  std::vector<std::uint16_t> workers;  // the job's ranks that send to it
};

struct PlanTree {
  std::vector<PlanNode> nodes;
  std::uint32_t weight = 1;  // its share of the chunks (netagg's ChunkSplit)
};

struct PlanSpec {
  std::uint16_t job_id = 1;
  std::uint16_t window = 64;  // slots of each tree at each of its aggregators
  std::uint16_t elements_per_packet = 256;
  std::uint16_t aggregator_port = 20033;
  std::vector<std::pair<std::uint32_t, std::uint16_t>> workers;  // rank -> (ip, port)
  std::vector<PlanTree> trees;  // tree t has job id job_id + t and slots [t*window, (t+1)*window)
};

// A topology in netagg-plan's format (docs/routing.md, "Topology files"), read by netagg-plan's
// own parser, as plain types. Links are full duplex (the fabric's links are).
struct GraphSpec {
  enum class Kind { kWorker, kSwitch, kRoot };
  struct Vertex {
    std::string name;
    Kind kind = Kind::kSwitch;
    double aggregation_gbps = 0;  // a switch's aggregation capacity; 0: it only forwards
    double ingress_gbps = 0;      // a root's ingress capacity; 0: unlimited
  };
  struct Edge {
    std::size_t a = 0, b = 0;  // vertices
    double gbps = 0;
    std::string name;
  };
  std::vector<Vertex> vertices;
  std::vector<Edge> edges;
};
// Throws std::runtime_error naming the problem (also when netagg-plan was not built: it needs
// GLPK). One-way links are refused.
GraphSpec parse_graph(const std::string& json_text, const std::string& source);

// Where netagg's header keeps the job id (big-endian, 16 bits), from the start of the UDP payload;
// the fabric's routing reads it to pin a tree's streams to their routes (checked against the
// wire format in bridge.cpp).
inline constexpr std::size_t kJobIdOffset = 4;
// Where it keeps the message type, and a result's type (a contribution is 1).
inline constexpr std::size_t kTypeOffset = 1;
inline constexpr std::uint8_t kResultType = 2;

// The whole job, built and checked by netagg's job code (host/src/job.cpp).
class JobPlan {
 public:
  // Throws std::runtime_error (netagg::Error) naming the problem, e.g. an aggregator with more
  // members than the switch model's bitmap holds.
  explicit JobPlan(const PlanSpec& spec);
  ~JobPlan();
  JobPlan(const JobPlan&) = delete;
  JobPlan& operator=(const JobPlan&) = delete;

  std::size_t world_size() const;
  std::size_t trees() const;
  std::uint16_t elements_per_packet() const;
  std::string to_json() const;  // netagg's job format (docs/job-format.md)

  struct Impl;
  const Impl& impl() const { return *impl_; }

 private:
  std::unique_ptr<Impl> impl_;
};

struct WorkerOptions {
  std::uint64_t elements = 0;  // int32 elements of the tensor
  std::uint32_t epoch = 1;
  bool congestion_control = false;
  std::int64_t retransmit_timeout_ns = 1'000'000;
  std::int64_t min_retransmit_timeout_ns = 100'000;
  std::int64_t max_retransmit_timeout_ns = 50'000'000;
  std::int64_t job_timeout_ns = 1'000'000'000;
  // The worker's pace (EngineParams::pace_gbps), split over the trees by weight; 0: none.
  double pace_gbps = 0;
  // Fault injection for the tests: this rank sends element 0 off by one, so that every worker's
  // check must find a mismatch. -1: none.
  int corrupt_rank = -1;
  // The host fallback (docs/fallback.md): a worker whose running engines made no progress for
  // this long takes its operation over and waits for the job's session (FallbackGroup). 0: none.
  std::int64_t fallback_after_ns = 0;
};

struct WorkerCounters {
  std::uint64_t packets_sent = 0;
  std::uint64_t retransmissions = 0;
  std::uint64_t results = 0;
  std::uint64_t duplicates = 0;
  std::uint64_t rejected = 0;
  std::uint64_t foreign_epoch = 0;
  std::uint64_t notices = 0;  // notices taken (the aggregator said why it dropped a packet)
  std::uint64_t recovery_resends = 0;
  std::uint64_t ce_results = 0;
  std::uint64_t window_cuts = 0;
  std::uint64_t rtt_samples = 0;
  std::uint64_t spurious_retransmissions = 0;
  double cwnd = 0;     // tree 0's
  double srtt_us = 0;  // tree 0's
  std::uint64_t elements_checked = 0;
  std::uint64_t mismatches = 0;  // result elements that differ from the expected sum
  std::uint64_t unroutable = 0;  // datagrams whose job id belongs to no tree of this worker
  // The host fallback's (netagg::FallbackStats).
  std::uint64_t fallback_sessions = 0;
  std::uint64_t fallback_shared_results = 0;
  std::uint64_t fallback_host_packets = 0;
  std::uint64_t fallback_resumed = 0;
};

class FallbackGroup;

// A worker: one netagg::Engine per tree of the job, fed by a source that computes its tensor
// from a formula (element i of rank r is (r + 1) * ((i mod 251) + 1), as int32) instead of
// storing it, and checks every element of the result against the formula's sum over the ranks.
class WorkerCore {
 public:
  // kStalled: no progress for WorkerOptions::fallback_after_ns; the engines are taken over and
  // wait for the job's fallback session (FallbackGroup::run, then finish_fallback).
  enum class State { kIdle, kRunning, kDone, kFailed, kStalled };

  WorkerCore(const JobPlan& plan, std::uint16_t rank, const WorkerOptions& options);
  ~WorkerCore();
  WorkerCore(const WorkerCore&) = delete;
  WorkerCore& operator=(const WorkerCore&) = delete;

  // Where tree t's packets of this worker go.
  std::pair<std::uint32_t, std::uint16_t> aggregator(std::size_t tree) const;

  // Each call hands the datagrams to send to `send` before returning.
  void start(std::int64_t now_ns, const SendFn& send);
  void on_packet(const std::uint8_t* data, std::size_t size, std::uint8_t ecn, std::int64_t now_ns,
                 const SendFn& send);
  void on_timer(std::int64_t now_ns, const SendFn& send);
  // The earliest deadline of a running engine; none when no engine runs.
  std::optional<std::int64_t> next_deadline_ns() const;

  // After the job's fallback session: at the moment the session's exchange ends, the worker is
  // done, or (the workers gave the operation back to the network) runs again from here.
  void finish_fallback(std::int64_t now_ns, const SendFn& send);

  State state() const;
  std::string failure() const;
  WorkerCounters counters() const;

 private:
  friend class FallbackGroup;
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The job's host fallback in the fabric. Its sessions run netagg's own (netagg::HostFallback),
// every worker a thread over an in-process peer group, at one instant of simulated time: when the
// last worker has stalled or finished. Their exchange is not simulated packet by packet; it is
// given a modeled duration: each collective call takes `step_ns` plus the most bytes any worker
// sends or receives in it at `host_gbps` (the workers' links, with no other traffic).
struct FallbackCost {
  double host_gbps = 100;
  std::int64_t step_ns = 10'000;
};

struct FallbackRun {
  std::int64_t duration_ns = 0;        // modeled
  std::uint64_t calls = 0;             // collective calls each worker made
  std::uint64_t bytes = 0;             // bytes the workers sent each other
  std::vector<std::uint16_t> stalled;  // the ranks that were stalled (to finish_fallback)
  std::string error;                   // the session failed: why (the workers stay stalled)
};

class FallbackGroup {
 public:
  // `workers`: the whole job, in rank order; each gets a host fallback. Throws
  // std::runtime_error if one has no fallback_after_ns.
  FallbackGroup(std::vector<WorkerCore*> workers, const FallbackCost& cost);
  ~FallbackGroup();
  FallbackGroup(const FallbackGroup&) = delete;
  FallbackGroup& operator=(const FallbackGroup&) = delete;

  // Every worker is stalled or done, and one is stalled: a session can run.
  bool ready() const;
  // Runs the session at `now_ns`: the stalled workers as stuck, the done ones as closing (they
  // hold results the others may lack).
  FallbackRun run(std::int64_t now_ns);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// An aggregator: netagg::sim::SwitchModel holding this switch's part of every tree it is in.
class AggregatorCore {
 public:
  // Throws if `name` is in no tree of the plan. `model`: "switch" (netagg's switch model) or
  // "fpga-hls" (the FPGA aggregator's HLS C++ model behind frames, as netagg-fpgad drives it,
  // programmed through driver/fpga); `ip`/`port` the aggregator's address (the FPGA's results
  // say they come from it).
  AggregatorCore(const JobPlan& plan, const std::string& name, const std::string& model = "switch",
                 std::uint32_t ip = 0, std::uint16_t port = 20033);
  ~AggregatorCore();
  AggregatorCore(const AggregatorCore&) = delete;
  AggregatorCore& operator=(const AggregatorCore&) = delete;

  void process(std::uint32_t src_ip, std::uint16_t src_port, const std::uint8_t* data,
               std::size_t size, std::uint8_t ecn, const SendFn& send);
  // SwitchCounters::named(): snake_case name, value.
  std::vector<std::pair<std::string, std::uint64_t>> counters() const;
  // Rounds started and not complete (a stalled job's evidence); the FPGA's are not read: 0.
  std::size_t open_rounds() const;
  // The FPGA model's clock cycles so far (0 for the switch model).
  std::uint64_t cycles() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace netagg::fabric
