// SPDX-License-Identifier: Apache-2.0
// Frame-level model of the netagg switch pipeline: Ethernet frames in on a port, frames out on
// ports, configured by the same simple_switch_CLI lines that configure the BMv2 program (the P4
// control-plane contract, sim/switch/pipeline.md). Around SwitchModel (the registers) it models
// what the P4 does with whole frames:
//
//   parser        Ethernet; ARP; IPv4 to the switch's IP: ICMP echo, or UDP to 20033 (netagg)
//   switch_identity  the switch's MAC and IP (keyless table, default action)
//   ARP           a request for the switch's IP: reply out of the ingress port
//   ICMP          an echo request to the switch's IP: reply out of the ingress port
//   job_table, worker_table   the checks of SwitchModel::process (unknown_job, rank_out_of_range,
//                 foreign_source, ...); frame-level errors of a frame to the switch's IP are
//                 dropped as malformed with the decoder's reason
//   registers     SwitchModel
//   multicast     on completion, one copy per node of the job's multicast group; egress
//                 result_destination (by the node's rid) rewrites each copy for its worker
//   unicast       a retransmission to a completed round: the stored result out of the ingress
//                 port, MAC/IP/UDP port swapped
//   trees         parent_table (a job's parent) and parent_source (results from a parent):
//                 a child's completed round goes to the parent as one contribution (out of the
//                 parent's port), a retransmission while it waits sends it again, the parent's
//                 result is multicast; a recovery copy to an answered round also sends the
//                 kept partial sum up, out of the port of the job's mirroring session
//   forward       anything else: L2 by destination MAC; a miss is dropped
//
// Frames the switch originates carry a fresh IPv4 header (TOS 0, identification 0, DF, TTL 64,
// checksum computed) and UDP checksum 0, exactly wire::encode_frame's.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "netagg/wire.hpp"
#include "switch_model.hpp"

namespace netagg::sim {

// ---- the control plane: simple_switch_CLI lines ------------------------------------------

// Table and action names of the contract (BMv2 control names NetaggIngress / NetaggEgress).
namespace bmv2 {
inline constexpr std::string_view kSwitchIdentity = "NetaggIngress.switch_identity";
inline constexpr std::string_view kForward = "NetaggIngress.forward";
inline constexpr std::string_view kJobTable = "NetaggIngress.job_table";
inline constexpr std::string_view kWorkerTable = "NetaggIngress.worker_table";
inline constexpr std::string_view kResultDestination = "NetaggEgress.result_destination";
inline constexpr std::string_view kParentTable = "NetaggIngress.parent_table";
inline constexpr std::string_view kParentSource = "NetaggIngress.parent_source";
}  // namespace bmv2

// The switch's configuration as the CLI lines leave it. Each entry remembers its line, so that
// errors found when the tables are put together can name it.
struct Bmv2Config {
  struct Line {
    std::size_t number = 0;  // 1-based line of the text
    std::string text;
  };
  struct Identity {
    wire::Mac mac{};
    std::uint32_t ip = 0;
    Line line;
  };
  struct JobEntry {
    std::uint16_t job_id = 0;
    std::uint8_t worker_count = 0;
    std::uint16_t slot_base = 0, slot_count = 0, elements_per_packet = 0, mcast_grp = 0;
    Line line;
  };
  struct WorkerEntry {
    std::uint16_t job_id = 0;
    std::uint32_t ip = 0;
    std::uint16_t udp_port = 0;
    std::uint8_t rank = 0;
    Line line;
  };
  struct ResultDestination {
    wire::Mac mac{};
    std::uint32_t ip = 0;
    std::uint16_t udp_port = 0;
    std::uint8_t rank = 0;
    Line line;
  };
  // Trees: the parent of a job (parent_table, keyed by the job's id) and where the parent's
  // results come from (parent_source: the parent's job id and address, the child job's id).
  struct ParentEntry {
    std::uint16_t job_id = 0;
    wire::Mac mac{};
    std::uint32_t ip = 0;
    std::uint16_t udp_port = 0;
    std::uint16_t port = 0;           // bit<9>: the switch port towards the parent
    std::uint16_t parent_job_id = 0;  // the job's id at the parent
    std::uint16_t rank = 0;           // this switch's rank among the parent's members
    std::uint16_t slot_base = 0;      // the job's first slot at the parent
    Line line;
  };
  struct ParentSourceEntry {
    std::uint16_t parent_job_id = 0;
    std::uint32_t ip = 0;
    std::uint16_t udp_port = 0;
    std::uint16_t job_id = 0;  // the child job the results belong to
    Line line;
  };
  struct MirrorSession {
    std::uint16_t port = 0;
    Line line;
  };
  struct McNode {
    std::uint16_t rid = 0;
    std::vector<std::uint16_t> ports;  // bit<9> each
    std::optional<std::uint16_t> group;
    Line line;
  };

  std::string source;  // where the lines came from (the first apply_bmv2_cli's source)
  std::optional<Identity> identity;
  std::map<wire::Mac, std::pair<std::uint16_t, Line>> forward;     // dst MAC -> egress port
  std::map<std::uint16_t, JobEntry> jobs;                          // by job_id
  std::vector<WorkerEntry> workers;                                // in line order
  std::map<std::uint16_t, ResultDestination> result_destinations;  // by rid
  std::map<std::uint16_t, std::vector<std::size_t>> groups;  // group -> node handles, in order
  std::vector<McNode> nodes;                                 // index = node handle
  std::map<std::uint16_t, ParentEntry> parents;              // by the child job's id
  std::vector<ParentSourceEntry> parent_sources;             // in line order
  std::map<std::uint16_t, MirrorSession> mirror_sessions;    // by session id (mirroring_add)
};

// Parses simple_switch_CLI lines (the contract's commands, plus `reset_state`; blank lines are
// skipped). Lines apply in order on top of `config`, as the CLI applies them to a running
// switch. Throws Error(kConfig) "SOURCE:LINE: 'TEXT': PROBLEM" for anything else: unknown
// command, table or action, wrong number of keys or parameters, a value that does not fit its
// field, a duplicate entry, an unknown group or node handle.
void apply_bmv2_cli(Bmv2Config& config, std::string_view text, std::string_view source = "cli");
Bmv2Config parse_bmv2_cli(std::string_view text, std::string_view source = "cli");

// ---- the pipeline ------------------------------------------------------------------------------

struct FrameOut {
  std::uint16_t port = 0;
  std::vector<std::byte> bytes;
  friend bool operator==(const FrameOut&, const FrameOut&) = default;
};

// What the pipeline did with one frame.
enum class FrameAction : std::uint8_t {
  kAggregated,     // netagg: added, round in progress
  kCompleted,      // netagg: added, round complete, results multicast
  kResultResent,   // netagg: stored result unicast back
  kDropped,        // see reason
  kArpReply,       // ARP request for the switch's IP answered
  kIcmpEchoReply,  // ICMP echo request to the switch's IP answered
  kForwarded,      // L2-forwarded unchanged
  kSentToParent,   // netagg, trees: the round's partial sum went (again) to the parent
};

// Drops outside the netagg check (they have no sim::DropReason).
enum class FrameDrop : std::uint8_t {
  kNone,            // the drop is a netagg one: see Outcome
  kNoForwardEntry,  // not for the switch, and no forward entry for its destination MAC
  kRunt,            // shorter than an Ethernet header
};

struct FrameOutcome {
  FrameAction action = FrameAction::kDropped;
  FrameDrop frame_drop = FrameDrop::kNone;
  DropReason reason = DropReason::kMalformed;  // netagg drops
  wire::Error malformed = wire::Error::kOk;    // when reason == kMalformed
  // The words the switch vectors use: "aggregated", "dropped duplicate",
  // "dropped malformed bad_version", "dropped no_forward_entry", "arp_reply", ...
  std::string to_string() const;
};

struct PipelineLimits {
  std::size_t pool_slots = 1024;         // SwitchModel's pool (the P4's NETAGG_POOL_SLOTS)
  std::size_t max_elements = kMaxLanes;  // value lanes per slot
};

class SwitchPipeline {
 public:
  // Checks the tables against each other and installs the jobs. Throws Error(kConfig) naming
  // the line at fault: no switch identity; a job whose worker_table entries do not give each
  // rank 0..n-1 exactly one address, or whose multicast group was not created; a multicast node
  // whose rid has no result_destination entry; a parent_table entry of a job not in the
  // job_table, without its parent_source entry (the same parent job id and address), or without
  // a mirroring session numbered like the job's multicast group on the parent's port; a
  // parent_source entry that matches no parent_table entry; a job the model cannot hold
  // (SwitchModel::add_job).
  explicit SwitchPipeline(const Bmv2Config& config, PipelineLimits limits = {});

  // One frame in on `port`. The frames out are returned (valid until the next call).
  const std::vector<FrameOut>& process(std::uint16_t port, std::span<const std::byte> frame);
  const FrameOutcome& last_outcome() const { return outcome_; }

  // Every counter, the model's (packets_in, aggregated, dropped_<reason>, malformed_<error>,
  // ...) with the frame-level malformed frames added, plus frames_in, frames_out, arp_replies,
  // icmp_echo_replies, forwarded, dropped_no_forward_entry, dropped_runt.
  std::vector<std::pair<std::string, std::uint64_t>> counters() const;

  const SwitchModel& model() const { return model_; }

 private:
  struct JobRoute {
    std::vector<std::size_t> nodes;                 // node handles of the job's multicast group
    std::optional<Bmv2Config::ParentEntry> parent;  // trees: the job's parent, if any
    std::uint16_t mirror_port = 0;                  // trees: its mirroring session's port
  };

  void reply_arp(std::uint16_t port, std::span<const std::byte> frame);
  void reply_icmp(std::uint16_t port, std::span<const std::byte> frame, std::size_t ip_len);
  void netagg(std::uint16_t port, std::span<const std::byte> frame);
  void emit(std::uint16_t port, const wire::FrameAddress& address,
            std::span<const std::byte> packet);
  // Trees: a partial sum the model sent to the parent of job `job_id`, out of `port`.
  void emit_to_parent(std::uint16_t job_id, std::uint16_t port, const CollectingSink::Packet& p);

  Bmv2Config config_;
  SwitchModel model_;
  std::map<std::uint16_t, JobRoute> routes_;  // by job_id
  CollectingSink sink_;
  std::vector<FrameOut> out_;
  FrameOutcome outcome_;
  // Frame-level counters.
  std::uint64_t frames_in_ = 0, frames_out_ = 0, arp_replies_ = 0, icmp_echo_replies_ = 0,
                forwarded_ = 0, no_forward_entry_ = 0, runts_ = 0;
  std::array<std::uint64_t, wire::kErrorCount> frame_malformed_{};  // before the model
};

}  // namespace netagg::sim
