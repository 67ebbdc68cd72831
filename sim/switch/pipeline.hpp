// SPDX-License-Identifier: Apache-2.0
// Frame-level model of the netagg switch pipeline: Ethernet frames in on a port, frames out on
// ports, configured by the same simple_switch_CLI lines that configure the BMv2 program (the P4
// control-plane contract, sim/switch/pipeline.md; read by bmv2_cli.hpp). Around SwitchModel (the
// registers) it models what the P4 does with whole frames:
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
#include <utility>
#include <vector>

#include "bmv2_cli.hpp"
#include "netagg/wire.hpp"
#include "switch_model.hpp"

namespace netagg::sim {

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
