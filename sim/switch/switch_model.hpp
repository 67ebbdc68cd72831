// SPDX-License-Identifier: Apache-2.0
// Register-level model of the SwitchML switch pipeline (Sapio et al., NSDI 2021, Algorithm 2 with
// shadow copies), with one addition: every (slot, set) knows the seq of its round, so a late
// copy of an old packet cannot be taken for a new round. The P4 programs under p4/ mirror it
// register for register (docs/switch-pipeline.md); netagg-switchd serves it on UDP.
//
// Per slot of the pool and per set (the slot's two copies) the switch keeps:
//   values     int32 lanes, added with wrap-around as Tofino's ALUs do
//   bitmap     one bit per worker rank: "this worker contributed to this copy"
//   remaining  workers still to contribute to the current round; 0 = complete (or no round)
//   count      element count of the round (set by its first contribution)
//   exponent   max of the contributions' block exponents (int16, kExponentNone = identity)
//   seq        seq of the round: the one its first contribution carried, echoed in its results
//   has_round  the set holds a round (in progress or complete); false after add_job
//   epoch      the epoch of the round's contributions (the run's token), echoed in its results
//
// A contribution from rank r to (slot, set s) that passed the job table, first by its epoch:
//   s holds a round of another epoch and the packet is fresh (its sender's first packet on s in
//       its run): a takeover, a new round as if s held none, with bitmap = bit r alone
//       (counted in epoch_takeovers as well as in aggregated).
//   s holds a round of another epoch and the packet is not fresh, or is a recovery copy:
//       dropped (kStaleEpoch).
// A recovery copy (flag `recovery`: a packet whose result its sender has, sent again after an
// aggregator restart for the workers still waiting on its round) never starts a round: to a set
// with no round, or with a seq newer than the set's, it is dropped (kNoRound).
// Then, with S = s's seq and "newer"/"older" in serial-number arithmetic
// ((int32_t)(seq - S) > 0 / < 0):
//   s holds no round, or seq is newer than S:
//       a new round: the registers are overwritten with the packet, seq and epoch = the
//       packet's. A newer packet ends s's round even if it is in progress: no correct worker
//       sends one before every worker has had that round's result, so the round is over (after
//       a restart a round can be left unfinished, re-formed by a worker whose old result then
//       arrived).
//   s's round is in progress and seq == S:
//       bit r clear: the packet is added. bit r set: dropped (kDuplicate).
//   s's round is complete and seq == S:
//       a retransmission: the stored result is sent to r alone (unicast), whatever bit r says.
//   seq older than S: dropped (kStale), a late copy of a packet whose round is over.
// A packet that starts a round sets s's bitmap to bit r alone; one that joins sets bit r. The
// other set's bitmap is not touched (SwitchML clears bit r there; see sim/switch/README.md). The
// bitmap of a complete round is never looked at. The contribution that brings `remaining` to 0
// completes the round: a result goes to every worker of the job (multicast). A contribution whose
// count differs from its round's is dropped (kCountMismatch). Before touching any register a packet
// is checked against the job table; what fails is dropped and counted by reason, and never changes
// slot state. sim/switch/README.md explains why no packet of a correct worker group is dropped,
// including across the seq wrap.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <utility>
#include <vector>

#include "netagg/job.hpp"
#include "netagg/wire.hpp"
#include "switch_format.hpp"

namespace netagg::sim {

// The pipeline's limits (p4/common/switch_format.hpp, generated like p4/common/constants.p4).
namespace limits = pipeline;
inline constexpr unsigned kTofinoMaxLanesPerPacket =
    limits::kLanesPerPass * limits::kTofinoMaxPasses;
inline constexpr unsigned kBmv2MaxLanesPerPacket = limits::kLanesPerPass * limits::kBmv2MaxPasses;

inline constexpr std::size_t kMaxWorkersPerJob = limits::kMaxWorkers;  // one bitmap bit each
inline constexpr std::size_t kMaxLanes = wire::kMaxCount;  // lanes a slot can hold, all passes
inline constexpr std::size_t kMaxPoolSlots = std::size_t{1} << 16;  // 16-bit slot field
static_assert(kMaxLanes % limits::kLanesPerPass == 0);
static_assert(kBmv2MaxLanesPerPacket <= kMaxLanes && limits::kPoolSlots <= kMaxPoolSlots);

// Register widths of one (slot, set). Do not change: the P4 registers have these widths.
using ValueRegister = std::int32_t;
using BitmapRegister = std::uint32_t;
using CountdownRegister = std::uint8_t;  // 0..kMaxWorkersPerJob
using CountRegister = std::uint16_t;     // 0..kMaxLanes
using ExponentRegister = std::int16_t;
using SeqRegister = std::uint32_t;
using EpochRegister = std::uint32_t;
static_assert(sizeof(ValueRegister) * 8 == limits::kValueBits);
static_assert(sizeof(BitmapRegister) * 8 == limits::kBitmapBits);
static_assert((1u << (sizeof(CountdownRegister) * 8)) > kMaxWorkersPerJob);

struct SlotRegisters {
  BitmapRegister bitmap = 0;
  CountdownRegister remaining = 0;
  CountRegister count = 0;
  ExponentRegister exponent = wire::kExponentNone;
  SeqRegister seq = 0;
  bool has_round = false;  // P4: a round state per (slot, set), paired with the epoch on Tofino
  EpochRegister epoch = 0;
  std::uint8_t ecn = 0;  // OR of the contributions' IPv4 ECN bits, sent with the results
  // Trees (a job with a parent): the round is complete here and its partial sum went to the
  // parent; the result is the parent's, not yet here. `fresh`: the round's packets were fresh
  // (the partial sum goes up fresh, so the parent takes a set over for a new run too).
  bool upstream = false;
  bool fresh = false;
};

// Why the switch dropped a packet (p4/common/switch_format.hpp). A malformed packet's
// wire::Error is counted as well.
using pipeline::counter_name;
using pipeline::DropReason;
using pipeline::kDropReasonCount;
using pipeline::to_string;

struct SwitchCounters {
  std::uint64_t packets_in = 0;         // every packet handed to process()
  std::uint64_t aggregated = 0;         // contributions added to a slot (includes completing ones)
  std::uint64_t epoch_takeovers = 0;    // sets taken over from a round of another epoch
  std::uint64_t completions = 0;        // rounds completed
  std::uint64_t results_multicast = 0;  // result packets sent on completion (one per worker)
  std::uint64_t results_resent = 0;     // stored results sent again to a retransmitting worker
  // Trees: partial sums sent to the parent (one per round), sent again (a member retransmitted
  // while the round waited for the parent, or a recovery copy), results taken from the parent.
  std::uint64_t sent_to_parent = 0;
  std::uint64_t resent_to_parent = 0;
  std::uint64_t results_from_parent = 0;
  std::uint64_t notices = 0;  // notices sent to the sources of dropped contributions
  std::array<std::uint64_t, kDropReasonCount> dropped{};     // by DropReason
  std::array<std::uint64_t, wire::kErrorCount> malformed{};  // by wire::Error (kOk unused)

  std::uint64_t dropped_total() const;
  std::uint64_t drops(DropReason r) const { return dropped[static_cast<std::size_t>(r)]; }
  std::uint64_t malformed_by(wire::Error e) const { return malformed[static_cast<std::size_t>(e)]; }
  // Every counter with a stable snake_case name ("packets_in", "dropped_unknown_job",
  // "malformed_truncated", ...), for printing and JSON. Frame-level wire errors are left out:
  // the model sees UDP payloads only.
  std::vector<std::pair<std::string_view, std::uint64_t>> named() const;
};

// What process() did with one packet.
enum class Action : std::uint8_t {
  kAggregated,    // added to its slot; the round is still waiting for other workers
  kCompleted,     // added and completed the round; results multicast
  kResultResent,  // packet of a completed round (same seq) again; stored result unicast
  kDropped,
  kSentToParent,  // trees: the round's partial sum went (again) to the parent
};

// `reason` and `malformed` mean something only when action == kDropped.
struct Outcome {
  Action action = Action::kDropped;
  DropReason reason = DropReason::kMalformed;
  wire::Error malformed = wire::Error::kOk;  // the decoder's reason when reason == kMalformed
  friend bool operator==(const Outcome&, const Outcome&) = default;
};

// Receives the switch's output packets. `packet` is valid only during the call: copy it.
class PacketSink {
 public:
  virtual ~PacketSink() = default;
  // `ecn`: the IPv4 ECN bits the packet should leave with (a result: its round's OR).
  virtual void send(const Endpoint& destination, std::span<const std::byte> packet,
                    std::uint8_t ecn) = 0;
};

// A sink that keeps copies, for tests and in-process networks (allocates; not for hot paths).
class CollectingSink : public PacketSink {
 public:
  struct Packet {
    Endpoint destination;
    std::vector<std::byte> bytes;
    std::uint8_t ecn = 0;
  };
  void send(const Endpoint& destination, std::span<const std::byte> packet,
            std::uint8_t ecn) override {
    packets.push_back({destination, {packet.begin(), packet.end()}, ecn});
  }
  std::vector<Packet> packets;
};

// A round that some but not all workers of its job have joined: what a stalled job waits for.
struct OpenRound {
  std::uint16_t job_id = 0;
  std::uint16_t slot = 0;
  std::uint8_t set = 0;
  std::uint32_t seq = 0;
  std::vector<std::uint16_t> missing_ranks;  // the ranks whose bit is not set, ascending
  bool waits_for_parent = false;             // trees: complete here, the parent's result not
};

class SwitchModel {
 public:
  // pool_slots: slots in the pool (each with two sets), 1..kMaxPoolSlots.
  // max_elements_per_packet: value lanes per slot, 1..kMaxLanes; jobs may not exceed it.
  // Throws Error(kConfig) on bad sizes.
  SwitchModel(std::size_t pool_slots, std::size_t max_elements_per_packet);
  ~SwitchModel();
  SwitchModel(const SwitchModel&) = delete;
  SwitchModel& operator=(const SwitchModel&) = delete;

  // Installs a job and clears the registers of its slot range. Throws Error(kConfig) naming the
  // problem: job_id installed already, no workers or more than kMaxWorkersPerJob, ranks not
  // 0..n-1 in order, two ranks with one address, slot range empty, outside the pool or
  // overlapping another job's, elements_per_packet 0 or above max_elements_per_packet().
  void add_job(const JobSpec& job);
  // Uninstalls a job and clears its slots. Throws Error(kConfig) if the job is not installed.
  void remove_job(std::uint16_t job_id);
  // Makes `jobs` the whole job table: every installed job is removed and every job of `jobs`
  // installed, the slots of both cleared (a job that stays the same starts afresh too). All or
  // nothing: throws Error(kConfig) as add_job would, or naming a job_id listed twice, and then
  // changes nothing.
  void replace_jobs(std::span<const JobSpec> jobs);
  const JobSpec* find_job(std::uint16_t job_id) const;
  std::vector<std::uint16_t> job_ids() const;

  // One packet (a UDP payload) from `source`. Results go to `out` (0, 1 or n packets). Does not
  // allocate.
  //
  // Trees: for a job with a parent (JobSpec::parent) a completed round is not answered: its
  // partial sum goes to the parent as one contribution (this switch's rank there, the parent's
  // slot), and the round waits. A retransmission meanwhile sends the partial sum again (the
  // parent answers it from its stored result if only the result was lost). The parent's result
  // (a result packet from the parent's address) completes the round: stored, and multicast to
  // the members. The partial sum is kept, so that a recovery copy can send it to a restarted
  // parent again (flagged recovery).
  // `ecn`: the IPv4 ECN bits the packet arrived with; a round ORs its contributions' and its
  // results carry the OR (PANAMA: every worker of the job sees the same marks).
  Outcome process(const Endpoint& source, std::span<const std::byte> packet, PacketSink& out,
                  std::uint8_t ecn = 0);

  const SwitchCounters& counters() const { return counters_; }
  void reset_counters() { counters_ = {}; }

  // Read-only register view, for tests and for the P4 conformance vectors. Throws
  // Error(kInvalidArgument) unless slot < pool_slots() and set is 0 or 1.
  const SlotRegisters& registers(std::size_t slot, unsigned set) const;
  std::span<const ValueRegister> values(std::size_t slot, unsigned set) const;

  // Every round in progress (started, not complete) of every installed job, by job and slot.
  std::vector<OpenRound> open_rounds() const;

  std::size_t pool_slots() const { return pool_slots_; }
  std::size_t max_elements_per_packet() const { return lanes_; }

 private:
  struct Job;

  std::size_t index(std::size_t slot, unsigned set) const { return slot * 2 + set; }
  // Throws Error(kConfig) unless `job` fits this switch and overlaps no slot of `others`.
  void check_job(const JobSpec& job, std::span<const JobSpec* const> others) const;
  void clear_slots(std::size_t base, std::size_t count);
  void index_children();  // child_jobs_ from jobs_; partials_ once a job has a parent
  Outcome drop(DropReason r);
  // Drops the contribution h from source and, when due (wire::notice_due), answers it with a
  // notice of the reason; `waiting`: the ranks a duplicate's round waits for.
  Outcome drop(DropReason r, const Endpoint& source, const wire::Header& h, PacketSink& out,
               BitmapRegister waiting = 0);
  // Encodes the stored result of registers_[at] into result_, addressed to request.rank (the
  // multicast rewrites the rank field per destination).
  void build_result(const Job& job, const wire::Header& request, std::size_t at);
  // Trees: sends the partial sum of registers_[at] (kept in partials_) to the job's parent.
  void send_to_parent(const Job& job, std::size_t slot, unsigned set, bool recovery,
                      PacketSink& out);
  Outcome result_from_parent(const Endpoint& source, const wire::Header& h,
                             std::span<const std::byte> payload, PacketSink& out, std::uint8_t ecn);
  void multicast(const Job& job, const wire::Header& request, std::size_t at, PacketSink& out);

  std::size_t pool_slots_;
  std::size_t lanes_;
  std::vector<SlotRegisters> registers_;  // pool_slots_ * 2
  std::vector<ValueRegister> values_;     // pool_slots_ * 2 * lanes_
  // Trees: the partial sums sent to a parent, like values_; allocated with the first job that
  // has a parent.
  std::vector<ValueRegister> partials_;
  std::vector<std::unique_ptr<Job>> jobs_;  // indexed by job_id (the job table)
  std::vector<std::uint16_t> child_jobs_;   // ids of the installed jobs that have a parent
  std::vector<std::byte> result_;           // scratch for the outgoing packet
  // Drops by reason and rank (low 5 bits), for the notices' rate (wire::notice_due).
  std::array<std::array<std::uint32_t, wire::kNoticeRanks>, kDropReasonCount> notice_drops_{};
  SwitchCounters counters_;
};

}  // namespace netagg::sim
