// SPDX-License-Identifier: Apache-2.0
// Control plane of the P4 switch (p4/bmv2, p4/tofino): the table entries and multicast groups
// one or more jobs need, as simple_switch_CLI commands for BMv2 and as a bfrt_python script for
// the Tofino SDE. The names, keys and action parameters are the contract of
// docs/control-plane.md; both P4 programs declare them (tests/driver/p4_consistency_test.cpp
// checks the P4 text against p4_schema()).
//
// Numbering: the k-th job (k = 0, 1, .. over all job files in order) gets multicast group k + 1;
// rank r of job k gets the replication id 1 + 32 k + r and one multicast node with that rid on
// its switch_port. On BMv2 the nodes are numbered by simple_switch itself (0, 1, 2, .. in the
// order of mc_node_create on a fresh switch); on Tofino the node id is the rid. A job with a
// parent (a child in an aggregation tree) also gets BMv2 mirroring session k + 1 on the parent's
// switch_port (the recovery clones of its partial sums).
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "netagg/address.hpp"
#include "netagg/job.hpp"
#include "netagg/wire.hpp"
#include "switch_format.hpp"

namespace netagg::p4 {

enum class Target { kBmv2, kTofino };

// ---- Limits of the P4 programs (p4/common/switch_format.hpp, generated like constants.p4) ----
inline constexpr std::uint32_t kPoolSlots = pipeline::kPoolSlots;
inline constexpr std::uint32_t kLanesPerPass = pipeline::kLanesPerPass;
inline constexpr std::uint32_t kBmv2MaxPasses = pipeline::kBmv2MaxPasses;
inline constexpr std::uint32_t kTofinoMaxPasses = pipeline::kTofinoMaxPasses;
inline constexpr std::uint32_t kMaxWorkersPerJob = pipeline::kMaxWorkers;
inline constexpr std::uint32_t kMaxPort = 511;  // ports are bit<9> in both targets
// Tofino: a dev port's pipe is port >> 7. Registers are per pipe, and a packet recirculates in
// its own pipe, so all workers of a job must be on ports of one pipe.
inline constexpr unsigned kTofinoPipeShift = 7;
// The largest elements_per_packet a job may use: the value lanes one packet's passes add.
constexpr std::uint32_t max_elements_per_packet(Target target) {
  return kLanesPerPass * (target == Target::kBmv2 ? kBmv2MaxPasses : kTofinoMaxPasses);
}
// Replication ids are bit<16>: rid 1 + 32 k + 31 <= 65535 gives k <= 2046.
inline constexpr std::uint32_t kRidsPerJob = kMaxWorkersPerJob;
inline constexpr std::uint32_t kMaxJobs = (0xFFFF - 1) / kRidsPerJob;  // 2047 jobs: k = 0..2046
// A locally administered MAC spelling "nag" "sw"; used when --switch-mac is not given.
inline constexpr wire::Mac kDefaultSwitchMac{0x02, 0x6e, 0x61, 0x67, 0x73, 0x77};

// A job and where it came from, so an error can name the file and the job's place in it.
struct JobInput {
  JobSpec spec;
  std::string origin;  // "jobs.json" or "jobs.json: jobs[1]"; empty if not from a file
};

// Reads every file with load_jobs(); a file's k-th job of a {"jobs": [..]} file gets the origin
// "<file>: jobs[k]". Parse errors are load_jobs()'s (Error(kConfig) naming file and field).
std::vector<JobInput> load_job_inputs(std::span<const std::filesystem::path> files);

// Trees: replaces every job that has trees by this switch's part of each of its trees
// (jobs_at_aggregator: the aggregator named `name`, else the one at `address`), with the origin
// "<origin>: tree t (<name>)". Jobs without trees stay as they are. Error(kConfig) as
// jobs_at_aggregator's (a job with trees none of which has this switch), naming the origin, or
// if a job has trees and neither a name nor an address is given.
std::vector<JobInput> expand_trees(std::span<const JobInput> jobs, std::string_view name,
                                   const std::optional<Endpoint>& address);

// A host the job files give no MAC or switch port for: a job's parent, or a member that is a
// child aggregator of a tree (the tree format names aggregators by address only).
struct Peer {
  std::uint32_t ip = 0;  // host order
  wire::Mac mac{};
  std::uint16_t switch_port = 0;
};
// "IP=MAC,PORT" (--peer); Error(kConfig) naming `what` otherwise.
Peer parse_peer(std::string_view text, std::string_view what);
// Fills in the MAC and switch_port of every member and parent at a peer's IP that lacks them
// (what the job gives wins). Error(kConfig) if two peers name one IP.
void apply_peers(std::vector<JobInput>& jobs, std::span<const Peer> peers);

struct SwitchIdentity {
  wire::Mac mac = kDefaultSwitchMac;
  // The switch's IPv4 address (host order). If empty, the jobs' "aggregator" address, which
  // then every job must give, all the same.
  std::optional<std::uint32_t> ip;
};

// ---- The entries, as data (what the two printers below write) --------------------------------
struct ForwardEntry {  // NetaggIngress.forward: L2 forwarding to a worker
  wire::Mac mac{};
  std::uint16_t port = 0;
};
struct WorkerEntry {  // NetaggIngress.worker_table + NetaggEgress.result_destination + mc node
  std::uint8_t rank = 0;
  wire::Mac mac{};
  std::uint32_t ip = 0;  // host order
  std::uint16_t udp_port = 0;
  std::uint16_t switch_port = 0;
  std::uint16_t rid = 0;        // replication id of the worker's multicast node
  std::uint32_t bmv2_node = 0;  // the node handle simple_switch assigns (fresh switch)
};
// Trees: NetaggIngress.parent_table (the partial sums go there) + parent_source (the parent's
// results come from there) + on BMv2 a mirroring session (recovery clones leave there).
struct ParentEntry {
  wire::Mac mac{};
  std::uint32_t ip = 0;  // host order
  std::uint16_t udp_port = 0;
  std::uint16_t switch_port = 0;
  std::uint16_t job_id = 0;          // the job's id at the parent
  std::uint16_t rank = 0;            // this switch's rank among the parent's members
  std::uint16_t slot_base = 0;       // the job's first slot at the parent
  std::uint16_t mirror_session = 0;  // BMv2: the job's multicast group number
};
struct JobEntry {  // NetaggIngress.job_table + one multicast group
  std::uint16_t job_id = 0;
  std::uint16_t slot_base = 0;
  std::uint16_t slot_count = 0;
  std::uint16_t elements_per_packet = 0;
  std::uint16_t mcast_grp = 0;
  std::vector<WorkerEntry> workers;  // index == rank
  std::optional<ParentEntry> parent;
};
struct SwitchConfig {
  Target target = Target::kBmv2;  // the limits it was checked against
  wire::Mac switch_mac{};
  std::uint32_t switch_ip = 0;        // host order
  std::vector<ForwardEntry> forward;  // one per distinct worker or parent MAC, in job/rank order
  std::vector<JobEntry> jobs;         // in input order
};

// Checks the jobs against the target's program and numbers groups, rids and nodes. Throws
// Error(kConfig) whose message names the job (origin and job id) and the field: a worker without
// mac or switch_port, a switch_port beyond bit<9>, no switch IP (neither --switch-ip nor
// "aggregator"), an aggregator port other than 20033 or an aggregator IP other than the
// switch's, more than 32 workers, slots outside the pool, elements_per_packet beyond what one
// packet's passes add (max_elements_per_packet), job ids twice, slot ranges that overlap, one MAC
// on two switch ports, a worker with the switch's MAC or IP, more jobs than replication ids;
// Tofino: a job's workers on ports of different pipes. Trees (a job with a parent): a parent
// without mac or switch_port, a switch_port beyond bit<9>, the parent at the switch's MAC or IP,
// the parent's slots beyond 65535, two jobs with one parent job id and address (their results
// could not be told apart); Tofino: the parent on a port of another pipe than the workers'.
SwitchConfig plan_switch(std::span<const JobInput> jobs, const SwitchIdentity& identity,
                         Target target);

// simple_switch_CLI commands, one per line, in the order of docs/control-plane.md. Meant for a
// freshly started simple_switch: the mc_node_associate lines use the handles it hands out then.
// Error(kInvalidArgument) if `config` was planned for another target.
std::string bmv2_commands(const SwitchConfig& config);
// A bfrt_python script (bfshell -b FILE) for the Tofino program loaded as "netagg".
// Error(kInvalidArgument) if `config` was planned for another target.
std::string tofino_script(const SwitchConfig& config, std::string_view header_comment = {});

// ---- What the generator uses of the P4 programs ---------------------------------------------
// One (table, action) pair the generator writes, with the largest value it ever puts into each
// key and parameter; the consistency test checks names, order and widths against the P4 text
// (of both programs: parent_table and parent_source included).
struct P4Field {
  std::string_view name;        // action parameter name, or the key expression
  std::uint64_t max_value = 0;  // largest value the generator emits
};
struct P4TableUse {
  std::string_view bmv2_control;    // "NetaggIngress" / "NetaggEgress"
  std::string_view tofino_control;  // "Ingress" / "Egress"
  std::string_view table;
  std::string_view action;
  bool default_action = false;       // set as the table's default (keyless table)
  std::vector<P4Field> bmv2_keys;    // in key order (the CLI's match fields are positional)
  std::vector<P4Field> tofino_keys;  // bfrt_python names them: '.' replaced by '_'
  std::vector<P4Field> params;       // in declaration order (the CLI's are positional)
};
const std::vector<P4TableUse>& p4_schema();
// "hdr.netagg.job_id" -> "hdr_netagg_job_id": how bfrt_python names a key field.
std::string bfrt_key_name(std::string_view key_expression);

}  // namespace netagg::p4
