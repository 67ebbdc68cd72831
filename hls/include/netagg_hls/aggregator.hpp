// SPDX-License-Identifier: Apache-2.0
// The FPGA aggregator in Vitis HLS C++ (docs/fpga-aggregator.md): the kernel's whole state and
// behaviour in one class, so the C simulation can own as many independent instances as it likes;
// the synthesized top (hls/src/netagg_aggregator.cpp) is a thin wrapper over one static instance,
// which is the hardware's state. It is also the bit-exact reference model the RTL is tested
// against (through reference.hpp).
//
// The class holds the CSRs (hw/rtl/netagg_csr.sv, the commands of netagg_control.sv) and the
// counters, and composes the stages, each in the header named after the RTL it mirrors
// (hw/rtl/netagg_core.sv walks the same path):
//   1. admit.hpp: the frame stored whole (up to 1 + MAX_BEATS beats) and checked: frame,
//      netagg header, job table. The first failing check is the drop reason; a dropped frame
//      touches no slot.
//   2. round.hpp: the round decision of sim/switch (new round / join / duplicate / resend /
//      stale / ahead), plus count_mismatch and dtype_mismatch, and the round state.
//   3. accumulate.hpp: the frames of one cycle ("group") that join or start the same round of a
//      (slot, set) are summed by PANAMA's adder tree in port order, and that sum is stored (new
//      round) or added to the accumulators, accumulator first: acc <- acc + tree.
//   4. replicate.hpp: a completed round sends one result frame to every worker of the job, on
//      the worker's egress port, in rank order; a resend sends the stored result to the
//      requester alone.
//   Trees (a job with a parent, JOB_PARENT_*): a completed round instead sends its sum to the
//   parent as one contribution and waits; a member's retransmission meanwhile sends it again;
//   the parent's result frame (from the parent's address, for this job at the parent) replaces
//   the sum, completes the round and goes to every worker as in 4.
//   notice.hpp: a contribution dropped in 1 or 2 for a reason its sender can act on is answered
//   with a notice out of the port it came in on, rate-limited by reason and rank.
// Kernel code: C++14, no dynamic memory, every loop bounded.
#ifndef NETAGG_HLS_AGGREGATOR_HPP
#define NETAGG_HLS_AGGREGATOR_HPP

#include <hls_stream.h>
#include <stdint.h>

#include "netagg_hls/accumulate.hpp"
#include "netagg_hls/admit.hpp"
#include "netagg_hls/csr14.hpp"
#include "netagg_hls/frame.hpp"
#include "netagg_hls/notice.hpp"
#include "netagg_hls/params.hpp"
#include "netagg_hls/replicate.hpp"
#include "netagg_hls/round.hpp"

namespace netagg {
namespace fpga {

constexpr uint32_t kDesignVersion = 1;

// The values of the s_axilite registers the kernel reads (rw in the CSR map) and writes (ro),
// for the synthesized top; the C simulation uses csr_read/csr_write instead.
// The registers of the top's ports (netagg_hls/csr14.hpp, generated from formats/csr.json).
struct CsrInputs {
  uint32_t NETAGG_HLS_CSR_INPUT_FIELDS;
};
struct CsrOutputs {
  uint32_t NETAGG_HLS_CSR_OUTPUT_FIELDS;
};

template <class P = DefaultParams>
class Aggregator {
 public:
  static constexpr int kNumPorts = P::kNumPorts;
  static constexpr int kLanes = P::kLanes;
  static constexpr int kSlots = P::kSlots;
  static constexpr int kMaxBeats = P::kMaxBeats;
  static constexpr int kMaxJobs = P::kMaxJobs;
  static constexpr int kMaxWorkers = P::kMaxWorkers;
  static constexpr int kMaxFrameBeats = P::kMaxFrameBeats;
  static constexpr int kMaxElements = P::kMaxElements;
  static constexpr int kTreeLeaves = P::kTreeLeaves;

  // One ingress frame as stored in its port's buffer.
  using Frame = pipeline::Frame<P>;

  Aggregator() { hard_reset(); }

  // ap_rst_n: every register to its power-on value, the job table, slots and counters cleared.
  void hard_reset() {
    for (int i = 0; i < kRegWords; ++i) reg_[i] = 0;
    reg_[csr14::kAggUdpPort / 4] = csr14::kAggUdpPortReset;
    commit_seq_seen_ = 0;
    control_seq_seen_ = 0;
    counter_latch_ = 0;
    clear_state();
    acc_.clear();
  }

  // ---- AXI4-Lite CSRs (formats/csr.json) ----------------------------------------------
  // Byte address, 32-bit registers; the address is taken modulo 2^kAddrBits and aligned down.
  // Writes to read-only or unmapped addresses are ignored; COMMIT and CONTROL act at once when
  // their sequence field changed.
  void csr_write(uint32_t address, uint32_t value) {
    const uint32_t off = align(address);
    if (!writable(off)) return;
    reg_[off / 4] = value;
    act_on_sequences();
  }
  // Reading COUNTER_LO latches the selected 64-bit counter; COUNTER_HI returns the latched half.
  // JOB_ENTRY_* read the entry JOB_INDEX selects. Unmapped addresses read 0.
  uint32_t csr_read(uint32_t address) {
    const uint32_t off = align(address);
    switch (off) {
      case csr14::kVersion:
        return version_register();
      case csr14::kFeatures:
        return features_register();
      case csr14::kStatus:
        return 0;  // commits and resets finish within the access that triggers them
      case csr14::kCounterLo:
        counter_latch_ = counter(reg_[csr14::kCounterIndex / 4]);
        return static_cast<uint32_t>(counter_latch_);
      case csr14::kCounterHi:
        return static_cast<uint32_t>(counter_latch_ >> 32);
      case csr14::kJobEntryId:
      case csr14::kJobEntryWorkers:
      case csr14::kJobEntrySlots:
      case csr14::kJobEntryElements:
      case csr14::kJobEntryParentId:
        return entry_register(off);
      default:
        return writable(off) ? reg_[off / 4] : 0;
    }
  }
  // The synthesized top's view: the s_axilite input registers as the host last wrote them
  // (COMMIT and CONTROL act when their sequence changed) ...
  void apply_csr_inputs(const CsrInputs& in) {
    reg_[csr14::kControl / 4] = in.control;
    reg_[csr14::kAggMacLo / 4] = in.agg_mac_lo;
    reg_[csr14::kAggMacHi / 4] = in.agg_mac_hi;
    reg_[csr14::kAggIp / 4] = in.agg_ip;
    reg_[csr14::kAggUdpPort / 4] = in.agg_udp_port;
    reg_[csr14::kJobIndex / 4] = in.job_index;
    reg_[csr14::kJobId / 4] = in.job_id;
    reg_[csr14::kJobWorkers / 4] = in.job_workers;
    reg_[csr14::kJobSlots / 4] = in.job_slots;
    reg_[csr14::kJobElements / 4] = in.job_elements;
    reg_[csr14::kWorkerIndex / 4] = in.worker_index;
    reg_[csr14::kWorkerIp / 4] = in.worker_ip;
    reg_[csr14::kWorkerUdpPort / 4] = in.worker_udp_port;
    reg_[csr14::kWorkerMacLo / 4] = in.worker_mac_lo;
    reg_[csr14::kWorkerMacHi / 4] = in.worker_mac_hi;
    reg_[csr14::kCommit / 4] = in.commit;
    reg_[csr14::kCounterIndex / 4] = in.counter_index;
    reg_[csr14::kJobParentId / 4] = in.job_parent_id;
    reg_[csr14::kJobParentRank / 4] = in.job_parent_rank;
    reg_[csr14::kJobParentSlots / 4] = in.job_parent_slots;
    reg_[csr14::kJobParentIp / 4] = in.job_parent_ip;
    reg_[csr14::kJobParentUdpPort / 4] = in.job_parent_udp_port;
    reg_[csr14::kJobParentMacLo / 4] = in.job_parent_mac_lo;
    reg_[csr14::kJobParentMacHi / 4] = in.job_parent_mac_hi;
    act_on_sequences();
  }
  // ... and the output registers. The kernel cannot see AXI reads, so COUNTER_LO/HI show the
  // selected counter live rather than latched (read HI, LO, HI again for a consistent value).
  void csr_outputs(CsrOutputs& out) const {
    const uint64_t c = counter(reg(csr14::kCounterIndex));
    out.version = version_register();
    out.features = features_register();
    out.status = 0;
    out.counter_lo = static_cast<uint32_t>(c);
    out.counter_hi = static_cast<uint32_t>(c >> 32);
    out.job_entry_id = entry_register(csr14::kJobEntryId);
    out.job_entry_workers = entry_register(csr14::kJobEntryWorkers);
    out.job_entry_slots = entry_register(csr14::kJobEntrySlots);
    out.job_entry_elements = entry_register(csr14::kJobEntryElements);
    out.job_entry_parent_id = entry_register(csr14::kJobEntryParentId);
  }

  uint64_t counter(uint32_t index) const {
    return index < static_cast<uint32_t>(csr14::kCounterCount) ? counters_[index] : 0;
  }

  // ---- Traffic ----------------------------------------------------------------------------
  // One kernel iteration on the streams: the head frame of every port that has a beat waiting
  // is read (all ports in parallel, one beat each per cycle) and the frames go through
  // process_group() as one group; result beats are written to tx. A frame that stalls halfway
  // stalls the iteration (blocking reads), as a MAC delivers a frame's beats back to back.
  void step(hls::stream<AxisBeat> rx[kNumPorts], hls::stream<AxisBeat> tx[kNumPorts]) {
    Frame frames[kNumPorts];
    bool present[kNumPorts];
    bool done[kNumPorts];
    bool busy = false;
    for (int p = 0; p < kNumPorts; ++p) {
#pragma HLS UNROLL
      present[p] = !rx[p].empty();
      done[p] = !present[p];
      frames[p].beats = 0;
      frames[p].bytes = 0;
      busy = busy || present[p];
    }
  ingest:
    for (uint32_t b = 0; busy; ++b) {
#pragma HLS PIPELINE II = 1
#pragma HLS LOOP_TRIPCOUNT max = 17
      busy = false;
      for (int p = 0; p < kNumPorts; ++p) {
#pragma HLS UNROLL
        if (done[p]) continue;
        const AxisBeat w = rx[p].read();
        if (b < static_cast<uint32_t>(kMaxFrameBeats)) frames[p].beat[b] = w.data;
        if (w.last) {
          done[p] = true;
          frames[p].beats = b + 1;
          frames[p].bytes = 64 * b + pipeline::keep_bytes(w.keep.to_uint64());
        } else {
          busy = true;
        }
      }
    }
    StreamSink sink{tx};
    process_group(frames, present, sink);
  }

  // The frames of one cycle: present[p] says whether port p presents frames[p]. Frames are
  // checked and decided one by one in port order; the values of the frames that start or join
  // the same round of a (slot, set) are combined by the adder tree (port order, absent ports
  // pass through) and that sum is stored or added to the accumulators, accumulator first. A
  // round completes with the last of its frames in port order; results are written to
  // sink.write(port, beat) in the order their rounds complete, in rank order per round, and a
  // notice where its frame is dropped (the drops of the checks first, then those of the rounds).
  template <class Sink>
  void process_group(const Frame frames[kNumPorts], const bool present[kNumPorts], Sink& sink) {
    Contribution c[kNumPorts] = {};  // filled in by admit() for the frames that pass
    bool ok[kNumPorts];
  check:
    for (int p = 0; p < kNumPorts; ++p) {
      ok[p] = false;
      if (!present[p]) continue;
      ++counters_[csr14::kFramesIn];
      const int reason = pipeline::admit(frames[p], reg(csr14::kAggUdpPort), table_, c[p]);
      if (reason >= 0)
        drop(reason, p, frames[p].beat[0], 0, sink);
      else
        ok[p] = true;
    }

    Run runs[kNumPorts];
    for (int r = 0; r < kNumPorts; ++r) runs[r].open = false;
  decide:
    for (int p = 0; p < kNumPorts; ++p) {
      if (!ok[p]) continue;
      const Contribution& k = c[p];
      const int at = 2 * k.slot + k.set;
      RoundState& round = rounds_.at(at);
      const int decision = pipeline::decide(round, k);
      if (decision >= 0) {  // a drop reason; a duplicate's notice names the ranks still due
        drop(decision, p, frames[p].beat[0], all_ranks(table_.job(k.job).workers) & ~round.bitmap,
             sink);
        continue;
      }
      if (decision == pipeline::kResend) {
        emit_result(k.job, k.rank, at, sink);
        ++counters_[csr14::kResultsResent];
        continue;
      }
      if (decision ==
          pipeline::kResendToParent) {  // the first copy or the parent's result was lost
        emit_to_parent(k.job, at, sink);
        ++counters_[csr14::kResentToParent];
        continue;
      }
      if (decision == pipeline::kParentResult) {
        // The parent's values replace the round's sum: a run of this frame alone, stored as a
        // new round's (a round waiting for the parent has no run open: it takes no member).
        const int r = pipeline::free_run<P>(runs);
        runs[r].open_at(at);
        runs[r].open = false;
        runs[r].first = true;
        runs[r].member[p] = true;
        pipeline::take_parent_result(round, k);  // (an exact round: the words are rounded)
        apply(runs[r], round, frames);
        ++counters_[csr14::kResultsFromParent];
        ++counters_[csr14::kCompletions];
        multicast(k.job, at, sink);
        continue;
      }
      int r = pipeline::open_run<P>(runs, at);
      if (decision == pipeline::kTakeover || decision == pipeline::kNewRound) {
        // The frames of this group that went into the round this one replaces (another epoch's,
        // or an unfinished older one) are discarded with it.
        if (r >= 0) runs[r].open = false;
        r = -1;
      }
      if (decision == pipeline::kTakeover) ++counters_[csr14::kEpochTakeovers];
      if (decision == pipeline::kNewRound || decision == pipeline::kTakeover) {
        r = pipeline::free_run<P>(runs);
        runs[r].first = true;
        pipeline::start_round(round, k, table_.job(k.job).workers);
      } else {
        if (r < 0) {
          r = pipeline::free_run<P>(runs);
          runs[r].first = false;
        }
        pipeline::join_round(round, k);
      }
      if (!runs[r].open) runs[r].open_at(at);
      runs[r].member[p] = true;
      pipeline::count_member(round, k);
      ++counters_[csr14::kAggregated];
      if (round.remaining == 0) {
        apply(runs[r], round, frames);
        runs[r].open = false;
        if (table_.job(k.job).has_parent) {  // a child in a tree: the sum goes up, the result down
          round.upstream = true;
          ++counters_[csr14::kSentToParent];
          emit_to_parent(k.job, at, sink);
        } else {
          ++counters_[csr14::kCompletions];
          multicast(k.job, at, sink);
        }
      }
    }
  finish:
    for (int r = 0; r < kNumPorts; ++r)
      if (runs[r].open) apply(runs[r], rounds_.at(runs[r].at), frames);
  }

  // ---- State views for tests and the RTL comparison (not part of the hardware) ------------
  const RoundState& round_state(int slot, int set) const { return rounds_.at(2 * slot + set); }
  // Accumulator lane `element` of (slot, set): int32 or fp32 bits (the low half of a lane).
  uint32_t accumulator(int slot, int set, int element) const {
    return acc_.word(2 * slot + set, element / kLanes, element % kLanes);
  }
  // An exact round's lane `element` of (slot, set).
  ExactLane exact_lane(int slot, int set, int element) const {
    return acc_.lane(2 * slot + set, element / kLanes, element % kLanes);
  }
#ifndef __SYNTHESIS__
  void debug_set_counter(int index, uint64_t value) { counters_[index] = value; }
#endif

 private:
  static constexpr int kRegWords = csr14::kJobParentMacHi / 4 + 1;
  using Contribution = pipeline::Contribution;
  using JobEntry = pipeline::JobEntry;
  using WorkerEntry = pipeline::WorkerEntry;
  using Run = pipeline::Run<P>;
  using StreamSink = pipeline::StreamSink;

  static uint32_t align(uint32_t address) {
    return address & ((1u << csr14::kAddrBits) - 1u) & ~3u;
  }
  static bool writable(uint32_t off) {
    switch (off) {
      case csr14::kControl:
      case csr14::kAggMacLo:
      case csr14::kAggMacHi:
      case csr14::kAggIp:
      case csr14::kAggUdpPort:
      case csr14::kJobIndex:
      case csr14::kJobId:
      case csr14::kJobWorkers:
      case csr14::kJobSlots:
      case csr14::kJobElements:
      case csr14::kWorkerIndex:
      case csr14::kWorkerIp:
      case csr14::kWorkerUdpPort:
      case csr14::kWorkerMacLo:
      case csr14::kWorkerMacHi:
      case csr14::kCommit:
      case csr14::kCounterIndex:
      case csr14::kJobParentId:
      case csr14::kJobParentRank:
      case csr14::kJobParentSlots:
      case csr14::kJobParentIp:
      case csr14::kJobParentUdpPort:
      case csr14::kJobParentMacLo:
      case csr14::kJobParentMacHi:
        return true;
      default:
        return false;
    }
  }
  static uint32_t version_register() { return kDesignVersion << 16 | layout::kVersion; }
  static uint32_t features_register() {
    return static_cast<uint32_t>(kNumPorts) | csr14::kFeaturesJobTableReadback |
           (P::kExact ? csr14::kFeaturesExact : 0u) | static_cast<uint32_t>(kMaxJobs) << 8 |
           static_cast<uint32_t>(P::kLog2Slots) << 16 | static_cast<uint32_t>(kMaxBeats) << 24;
  }

  uint32_t reg(uint32_t offset) const { return reg_[offset / 4]; }

  // JOB_ENTRY_* (register offset `off`): the entry JOB_INDEX selects as the table holds it; 0
  // for an entry that is not valid or beyond the table.
  uint32_t entry_register(uint32_t off) const {
    const uint32_t entry = reg(csr14::kJobIndex);
    if (entry >= static_cast<uint32_t>(kMaxJobs)) return 0;
    const JobEntry& job = table_.job(static_cast<int>(entry));
    if (!job.valid) return 0;
    switch (off) {
      case csr14::kJobEntryId:
        return csr14::kJobEntryValid | job.id;
      case csr14::kJobEntryWorkers:
        return job.workers;
      case csr14::kJobEntrySlots:
        return static_cast<uint32_t>(job.slot_count) << 16 | job.slot_base;
      case csr14::kJobEntryElements:
        return job.elements;
      case csr14::kJobEntryParentId:
        return job.has_parent ? (csr14::kJobEntryHasParent | job.parent_id) : 0u;
      default:
        return 0;
    }
  }

  // CONTROL first, then COMMIT: when the top sees both change in one poll, the host wrote the
  // reset before programming (the order control.cpp and the tests use).
  void act_on_sequences() {
    const uint32_t control = reg(csr14::kControl);
    if ((control >> 16) != control_seq_seen_) {
      control_seq_seen_ = control >> 16;
      if (control & csr14::kControlSoftReset)
        clear_state();
      else if (control & csr14::kControlClearCounters)
        clear_counters();
    }
    const uint32_t commit = reg(csr14::kCommit);
    if ((commit >> 16) != commit_seq_seen_) {
      commit_seq_seen_ = commit >> 16;
      execute_commit(commit & 3u);
    }
  }

  void execute_commit(uint32_t command) {
    const uint32_t entry = reg(csr14::kJobIndex);
    if (entry >= static_cast<uint32_t>(kMaxJobs)) return;
    JobEntry& job = table_.job(static_cast<int>(entry));
    if (command == csr14::kCommitStoreJob) {
      const uint32_t id = reg(csr14::kJobId), workers = reg(csr14::kJobWorkers);
      const uint32_t slots = reg(csr14::kJobSlots);
      // A job whose worker count the bitmap cannot hold is stored as not valid.
      job.valid = (id & csr14::kJobIdValid) != 0 && workers >= 1 &&
                  workers <= static_cast<uint32_t>(kMaxWorkers);
      job.id = static_cast<uint16_t>(id & 0xFFFFu);
      job.workers = job.valid ? static_cast<uint8_t>(workers) : 0;
      job.slot_base = static_cast<uint16_t>(slots & 0xFFFFu);
      job.slot_count = static_cast<uint16_t>(slots >> 16);
      job.elements = static_cast<uint16_t>(reg(csr14::kJobElements) & 0xFFFFu);
      const uint32_t parent = reg(csr14::kJobParentId);
      const uint32_t parent_port = reg(csr14::kJobParentUdpPort);
      const uint32_t parent_egress = (parent_port >> 16) & 0xFu;
      job.has_parent = (parent & csr14::kJobParentValid) != 0;
      job.parent_id = static_cast<uint16_t>(parent & 0xFFFFu);
      job.parent_rank = static_cast<uint16_t>(reg(csr14::kJobParentRank) & 0xFFFFu);
      job.parent_slot_base = static_cast<uint16_t>(reg(csr14::kJobParentSlots) & 0xFFFFu);
      job.parent_ip = reg(csr14::kJobParentIp);
      job.parent_udp_port = static_cast<uint16_t>(parent_port & 0xFFFFu);
      job.parent_port = static_cast<uint8_t>(
          parent_egress < static_cast<uint32_t>(kNumPorts) ? parent_egress : 0);
      job.parent_mac_lo = reg(csr14::kJobParentMacLo);
      job.parent_mac_hi = static_cast<uint16_t>(reg(csr14::kJobParentMacHi) & 0xFFFFu);
      rounds_.clear_slots(job.slot_base, job.slot_count);
    } else if (command == csr14::kCommitStoreWorker) {
      const uint32_t rank = reg(csr14::kWorkerIndex);
      if (rank >= static_cast<uint32_t>(kMaxWorkers)) return;
      WorkerEntry& w = table_.worker(static_cast<int>(entry), static_cast<int>(rank));
      const uint32_t port = reg(csr14::kWorkerUdpPort);
      w.ip = reg(csr14::kWorkerIp);
      w.udp_port = static_cast<uint16_t>(port & 0xFFFFu);
      const uint32_t egress = (port >> 16) & 0xFu;
      w.egress_port = static_cast<uint8_t>(egress < static_cast<uint32_t>(kNumPorts) ? egress : 0);
      w.mac_lo = reg(csr14::kWorkerMacLo);
      w.mac_hi = static_cast<uint16_t>(reg(csr14::kWorkerMacHi) & 0xFFFFu);
    } else if (command == csr14::kCommitRemoveJob) {
      rounds_.clear_slots(job.slot_base, job.slot_count);
      job = JobEntry();
    }
  }

  void clear_counters() {
    for (int i = 0; i < csr14::kCounterCount; ++i) counters_[i] = 0;
  }
  // Soft reset: slots, job table, the notices' rate and counters (the other registers keep their
  // values).
  void clear_state() {
    rounds_.clear();
    table_.clear();
    notices_.clear();
    clear_counters();
  }

  static uint32_t all_ranks(int workers) { return workers >= 32 ? ~0u : (1u << workers) - 1u; }

  // Counts a drop of the frame whose beat 0 is `h` (ingress port `port`) by its reason
  // (`counter`) and answers it with a notice when the reason is one its sender can act on, the
  // frame a contribution that is no recovery copy, and the rate allows (notice.hpp). `waiting`:
  // a duplicate's round's ranks still due.
  template <class Sink>
  void drop(int counter, int port, const BeatData& h, uint32_t waiting, Sink& sink) {
    using namespace layout;
    ++counters_[counter];
    const unsigned code = pipeline::notice_code(counter);
    if (code == 0 || get_byte(h, kNetaggType) != kMsgContribution ||
        (get_byte(h, kNetaggFlags) & kFlagRecovery) != 0)
      return;
    if (!notices_.due(code, get_be16(h, kNetaggRank))) return;
    pipeline::emit_notice(h, code, waiting, port, sink);
    ++counters_[csr14::kNotices];
    ++counters_[csr14::kFramesOut];
  }

  // A run into its accumulators; elements an exact round cannot hold are counted.
  void apply(const Run& run, const RoundState& round, const Frame frames[kNumPorts]) {
    counters_[csr14::kExactOutOfRange] += acc_.apply(run, round, frames);
  }

  // The round's result to every worker of the job, in rank order.
  template <class Sink>
  void multicast(int job, int at, Sink& sink) {
    const int workers = table_.job(job).workers;
  multicast:
    for (int w = 0; w < kMaxWorkers; ++w) {
      if (w >= workers) break;
      emit_result(job, w, at, sink);
    }
  }

  // The result frame of round `at` for rank `rank` of job table entry `job`.
  template <class Sink>
  void emit_result(int job, int rank, int at, Sink& sink) {
    emit(pipeline::to_worker(table_.job(job), table_.worker(job, rank), rank, at), at, sink);
  }
  // Trees: the sum of round `at` to the parent of job table entry `job`.
  template <class Sink>
  void emit_to_parent(int job, int at, Sink& sink) {
    emit(pipeline::to_parent(table_.job(job), rounds_.at(at), at), at, sink);
  }
  template <class Sink>
  void emit(const pipeline::Destination& dst, int at, Sink& sink) {
    const pipeline::Origin from = {reg(csr14::kAggMacLo), reg(csr14::kAggMacHi), reg(csr14::kAggIp),
                                   reg(csr14::kAggUdpPort)};
    pipeline::emit_frame<P>(dst, from, rounds_.at(at), acc_, at, sink);
    ++counters_[csr14::kFramesOut];
  }

  uint32_t reg_[kRegWords];
  uint32_t commit_seq_seen_;
  uint32_t control_seq_seen_;
  uint64_t counter_latch_;
  uint64_t counters_[csr14::kCounterCount];
  pipeline::JobTable<P> table_;
  pipeline::RoundTable<P> rounds_;  // index 2 * slot + set
  pipeline::Accumulators<P> acc_;   // int32 or fp32 bits, exact lanes
  pipeline::NoticeRate notices_;
};

}  // namespace fpga
}  // namespace netagg

#endif  // NETAGG_HLS_AGGREGATOR_HPP
