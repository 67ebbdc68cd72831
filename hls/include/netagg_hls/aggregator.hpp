// SPDX-License-Identifier: Apache-2.0
// The FPGA aggregator in Vitis HLS C++ (docs/fpga-aggregator.md): the kernel's whole state and
// behaviour in one class, so the C simulation can own as many independent instances as it likes;
// the synthesized top (hls/src/netagg_aggregator.cpp) is a thin wrapper over one static instance,
// which is the hardware's state. It is also the bit-exact reference model the RTL is tested
// against (through reference.hpp).
//
// What one frame goes through:
//   1. stored whole (up to 1 + MAX_BEATS beats) and checked: frame, netagg header, job table.
//      The first failing check is the drop reason; a dropped frame touches no slot.
//   2. the round decision of sim/switch (new round / join / duplicate / resend / stale / ahead),
//      plus count_mismatch and dtype_mismatch.
//   3. accumulation: the frames of one cycle ("group") that join or start the same round of a
//      (slot, set) are summed by PANAMA's adder tree in port order, and that sum is stored (new
//      round) or added to the accumulators, accumulator first: acc <- acc + tree.
//   4. a completed round sends one result frame to every worker of the job, on the worker's
//      egress port, in rank order; a resend sends the stored result to the requester alone.
//   Trees (a job with a parent, JOB_PARENT_*): a completed round instead sends its sum to the
//   parent as one contribution and waits; a member's retransmission meanwhile sends it again;
//   the parent's result frame (from the parent's address, for this job at the parent) replaces
//   the sum, completes the round and goes to every worker as in 4.
// Kernel code: C++14, no dynamic memory, every loop bounded.
#ifndef NETAGG_HLS_AGGREGATOR_HPP
#define NETAGG_HLS_AGGREGATOR_HPP

#include <hls_stream.h>
#include <stdint.h>

#include "netagg_hls/arith.hpp"
#include "netagg_hls/csr14.hpp"
#include "netagg_hls/frame.hpp"
#include "netagg_hls/params.hpp"

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

// The round state of one (slot, set), as in sim/switch plus dtype and the ECN OR.
struct RoundState {
  // Trees: the round is complete here and its sum went to the parent, whose result is not here
  // yet. `fresh`: the round's first contribution was fresh (the sum goes up fresh).
  bool upstream;
  bool fresh;
  bool has_round;     // the set holds a round (in progress or complete)
  uint32_t epoch;     // the epoch (run token) of its contributions, echoed in results
  uint32_t seq;       // seq of the round's first contribution, echoed in results
  uint32_t bitmap;    // ranks that contributed to this round
  uint8_t remaining;  // workers still to contribute; 0 = complete
  uint16_t count;     // elements of the round
  uint8_t dtype;      // layout::kDtype*
  int16_t exponent;   // max of the contributions' exponents
  uint8_t ecn;        // OR of the contributions' ECN bits
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
  struct Frame {
    BeatData beat[kMaxFrameBeats];  // beats 0..kMaxFrameBeats-1 (later beats are not stored)
    uint32_t beats;                 // beats the frame had on the wire, all of them
    uint32_t bytes;                 // its length: 64 * (beats - 1) + TKEEP bytes of the last
  };

  Aggregator() { hard_reset(); }

  // ap_rst_n: every register to its power-on value, the job table, slots and counters cleared.
  void hard_reset() {
    for (int i = 0; i < kRegWords; ++i) reg_[i] = 0;
    reg_[csr14::kAggUdpPort / 4] = csr14::kAggUdpPortReset;
    commit_seq_seen_ = 0;
    control_seq_seen_ = 0;
    counter_latch_ = 0;
    clear_state();
    for (int s = 0; s < 2 * kSlots; ++s)
      for (int b = 0; b < kMaxBeats; ++b)
        for (int l = 0; l < kLanes; ++l) acc_[s][b][l] = 0;
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
  // Unmapped addresses read 0.
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
          frames[p].bytes = 64 * b + keep_bytes(w.keep.to_uint64());
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
  // sink.write(port, beat) in the order their rounds complete, in rank order per round.
  template <class Sink>
  void process_group(const Frame frames[kNumPorts], const bool present[kNumPorts], Sink& sink) {
    Contribution c[kNumPorts] = {};  // filled in by check() for the frames that pass
    bool ok[kNumPorts];
  check:
    for (int p = 0; p < kNumPorts; ++p) {
      ok[p] = false;
      if (!present[p]) continue;
      ++counters_[csr14::kFramesIn];
      const int reason = check(frames[p], c[p]);
      if (reason >= 0)
        ++counters_[reason];
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
      RoundState& round = rounds_[at];
      const int decision = decide(round, k);
      if (decision >= 0) {  // a drop reason
        ++counters_[decision];
        continue;
      }
      if (decision == kResend) {
        emit_result(k.job, k.rank, at, sink);
        ++counters_[csr14::kResultsResent];
        continue;
      }
      if (decision == kResendToParent) {  // the first copy or the parent's result was lost
        emit_to_parent(k.job, at, sink);
        ++counters_[csr14::kResentToParent];
        continue;
      }
      if (decision == kParentResult) {
        // The parent's values replace the round's sum: a run of this frame alone, stored as a
        // new round's (a round waiting for the parent has no run open: it takes no member).
        const int r = free_run(runs);
        runs[r].open = false;
        runs[r].first = true;
        runs[r].at = at;
        for (int q = 0; q < kTreeLeaves; ++q) runs[r].member[q] = false;
        runs[r].member[p] = true;
        apply_run(runs[r], frames);
        round.exponent = k.exponent;
        round.ecn |= k.ecn;
        round.upstream = false;
        ++counters_[csr14::kResultsFromParent];
        ++counters_[csr14::kCompletions];
        multicast(k.job, at, sink);
        continue;
      }
      int r = open_run(runs, at);
      const uint32_t bit = 1u << k.rank;
      if (decision == kTakeover || decision == kNewRound) {
        // The frames of this group that went into the round this one replaces (another epoch's,
        // or an unfinished older one) are discarded with it.
        if (r >= 0) runs[r].open = false;
        r = -1;
      }
      if (decision == kTakeover) ++counters_[csr14::kEpochTakeovers];
      if (decision == kNewRound || decision == kTakeover) {
        // A new round's bitmap is its starter's bit alone: the bits set belong to an earlier
        // round.
        round.bitmap = 0;
        r = free_run(runs);
        runs[r].first = true;
        round.has_round = true;
        round.epoch = k.epoch;
        round.seq = k.seq;
        round.remaining = static_cast<uint8_t>(jobs_[k.job].workers);
        round.count = k.count;
        round.dtype = k.dtype;
        round.exponent = k.exponent;
        round.ecn = k.ecn;
        round.upstream = false;
        round.fresh = k.fresh != 0;
      } else {
        if (r < 0) {
          r = free_run(runs);
          runs[r].first = false;
        }
        if (k.exponent > round.exponent) round.exponent = k.exponent;
        round.ecn |= k.ecn;
      }
      if (!runs[r].open) {
        runs[r].open = true;
        runs[r].at = at;
        for (int q = 0; q < kTreeLeaves; ++q) runs[r].member[q] = false;
      }
      runs[r].member[p] = true;
      round.bitmap |= bit;  // (the other set's bitmap is left alone, as in sim/switch)
      --round.remaining;
      ++counters_[csr14::kAggregated];
      if (round.remaining == 0) {
        apply_run(runs[r], frames);
        runs[r].open = false;
        if (jobs_[k.job].has_parent) {  // a child in a tree: the sum goes up, the result down
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
      if (runs[r].open) apply_run(runs[r], frames);
  }

  // ---- State views for tests and the RTL comparison (not part of the hardware) ------------
  const RoundState& round_state(int slot, int set) const { return rounds_[2 * slot + set]; }
  // Accumulator lane `element` of (slot, set): int32 or fp32 bits.
  uint32_t accumulator(int slot, int set, int element) const {
    return acc_[2 * slot + set][element / kLanes][element % kLanes];
  }
#ifndef __SYNTHESIS__
  void debug_set_counter(int index, uint64_t value) { counters_[index] = value; }
#endif

 private:
  static constexpr int kRegWords = csr14::kJobParentMacHi / 4 + 1;
  // >= 0: a drop counter index. kTakeover: a new round on a set that holds another epoch's.
  // kResendToParent: a member's retransmission while the round waits for the parent.
  // kParentResult: the parent's result for a round waiting for it.
  enum Decision {
    kNewRound = -1,
    kJoin = -2,
    kResend = -3,
    kTakeover = -4,
    kResendToParent = -5,
    kParentResult = -6
  };

  struct JobEntry {
    bool valid;
    uint16_t id;
    uint8_t workers;
    uint16_t slot_base, slot_count, elements;
    // Trees: the job's parent (JOB_PARENT_*), where a completed round's sum goes.
    bool has_parent;
    uint16_t parent_id, parent_rank, parent_slot_base;
    uint32_t parent_ip;
    uint16_t parent_udp_port;
    uint8_t parent_port;     // the egress port towards the parent
    uint32_t parent_mac_lo;  // MAC bytes 2..5
    uint16_t parent_mac_hi;  // MAC bytes 0..1
  };
  struct WorkerEntry {
    uint32_t ip;
    uint16_t udp_port;
    uint8_t egress_port;
    uint32_t mac_lo;  // MAC bytes 2..5, byte 2 in bits 31:24
    uint16_t mac_hi;  // MAC bytes 0..1, byte 0 in bits 15:8
  };
  // A frame that passed the frame, header and job table checks: a contribution, or a result from
  // a job's parent (`from_parent`; then `job` is the child's entry and `slot` its own slot).
  struct Contribution {
    int job;  // job table entry
    uint8_t dtype, set, fresh, recovery, ecn, from_parent;
    uint16_t rank, slot, count;
    int16_t exponent;
    uint32_t seq, epoch;
  };
  // The frames of a group that start or join one round of one (slot, set).
  struct Run {
    bool open;
    bool first;  // the run starts the round: its tree sum overwrites the accumulators
    int at;      // 2 * slot + set
    bool member[kTreeLeaves];
  };
  struct StreamSink {
    hls::stream<AxisBeat>* tx;
    void write(int port, const AxisBeat& w) { tx[port].write(w); }
  };

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
    return static_cast<uint32_t>(kNumPorts) | static_cast<uint32_t>(kMaxJobs) << 8 |
           static_cast<uint32_t>(P::kLog2Slots) << 16 | static_cast<uint32_t>(kMaxBeats) << 24;
  }
  static unsigned keep_bytes(uint64_t keep) {
    unsigned n = 0;
    for (int i = 0; i < 64; ++i) {
#pragma HLS UNROLL
      n += static_cast<unsigned>((keep >> i) & 1u);
    }
    return n;
  }

  uint32_t reg(uint32_t offset) const { return reg_[offset / 4]; }

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
    JobEntry& job = jobs_[entry];
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
      clear_slots(job.slot_base, job.slot_count);
    } else if (command == csr14::kCommitStoreWorker) {
      const uint32_t rank = reg(csr14::kWorkerIndex);
      if (rank >= static_cast<uint32_t>(kMaxWorkers)) return;
      WorkerEntry& w = workers_[entry][rank];
      const uint32_t port = reg(csr14::kWorkerUdpPort);
      w.ip = reg(csr14::kWorkerIp);
      w.udp_port = static_cast<uint16_t>(port & 0xFFFFu);
      const uint32_t egress = (port >> 16) & 0xFu;
      w.egress_port = static_cast<uint8_t>(egress < static_cast<uint32_t>(kNumPorts) ? egress : 0);
      w.mac_lo = reg(csr14::kWorkerMacLo);
      w.mac_hi = static_cast<uint16_t>(reg(csr14::kWorkerMacHi) & 0xFFFFu);
    } else if (command == csr14::kCommitRemoveJob) {
      clear_slots(job.slot_base, job.slot_count);
      job = JobEntry();
    }
  }

  // Slot range [base, base + count) clipped to the pool: both sets hold no round.
  void clear_slots(uint32_t base, uint32_t count) {
  clear:
    for (int s = 0; s < kSlots; ++s) {
#pragma HLS PIPELINE II = 1
      if (static_cast<uint32_t>(s) - base < count) {
        rounds_[2 * s] = RoundState();
        rounds_[2 * s + 1] = RoundState();
      }
    }
  }
  void clear_counters() {
    for (int i = 0; i < csr14::kCounterCount; ++i) counters_[i] = 0;
  }
  // Soft reset: slots, job table and counters (the other registers keep their values).
  void clear_state() {
    for (int s = 0; s < 2 * kSlots; ++s) rounds_[s] = RoundState();
    for (int j = 0; j < kMaxJobs; ++j) {
      jobs_[j] = JobEntry();
      for (int w = 0; w < kMaxWorkers; ++w) workers_[j][w] = WorkerEntry();
    }
    clear_counters();
  }

  int find_job(uint16_t id) const {
    for (int j = 0; j < kMaxJobs; ++j) {
#pragma HLS UNROLL
      if (jobs_[j].valid && jobs_[j].id == id) return j;  // the lowest entry wins
    }
    return -1;
  }
  // The job whose parent sent a result: its id at the parent and the parent's address and UDP
  // port are the frame's (the lowest entry wins).
  int find_child_job(uint16_t parent_id, uint32_t ip, uint16_t udp_port) const {
    for (int j = 0; j < kMaxJobs; ++j) {
#pragma HLS UNROLL
      if (jobs_[j].valid && jobs_[j].has_parent && jobs_[j].parent_id == parent_id &&
          jobs_[j].parent_ip == ip && jobs_[j].parent_udp_port == udp_port)
        return j;
    }
    return -1;
  }

  // Returns the counter index of the first failing check, or -1 with `c` filled in.
  int check(const Frame& f, Contribution& c) const {
    using namespace layout;
    const BeatData& h = f.beat[0];
    if (f.bytes < static_cast<uint32_t>(kFrameOverhead)) return csr14::kMalformedTruncated;
    if (get_be16(h, kEthEtherType) != kEthertypeIpv4) return csr14::kMalformedNotIpv4;
    if (get_byte(h, kIpv4Version) != kIpVersionIhl ||
        (get_be16(h, kIpv4Flags) & kIpFragmentMask) != 0 || ipv4_sum(h) != 0xFFFFu)
      return csr14::kMalformedBadIpHeader;
    if (get_byte(h, kIpv4Protocol) != kIpProtocolUdp) return csr14::kMalformedNotUdp;
    const uint32_t ip_length = get_be16(h, kIpv4TotalLen);
    if (ip_length < static_cast<uint32_t>(kIpv4HeaderSize + kUdpHeaderSize) ||
        kIpv4 + ip_length > f.bytes)
      return csr14::kMalformedIpLengthMismatch;
    if (get_be16(h, kUdpLength) != ip_length - kIpv4HeaderSize)
      return csr14::kMalformedUdpLengthMismatch;
    if (get_be16(h, kUdpDstPort) != (reg(csr14::kAggUdpPort) & 0xFFFFu))
      return csr14::kMalformedWrongPort;
    const uint32_t packet = ip_length - kIpv4HeaderSize - kUdpHeaderSize;  // netagg bytes
    if (packet < static_cast<uint32_t>(kNetaggHeaderSize)) return csr14::kMalformedTruncated;
    if (get_byte(h, kNetaggVersion) != kVersion) return csr14::kMalformedBadVersion;
    const unsigned type = get_byte(h, kNetaggType);
    if (type != kMsgContribution && type != kMsgResult) return csr14::kMalformedBadType;
    const unsigned dtype = get_byte(h, kNetaggDtype);
    if (dtype > kDtypeBf16) return csr14::kMalformedBadDtype;
    const unsigned flags = get_byte(h, kNetaggFlags);
    if (flags & kFlagsReservedMask) return csr14::kMalformedBadFlags;
    const unsigned count = get_be16(h, kNetaggCount);
    if (count > kMaxCount) return csr14::kMalformedCountTooLarge;
    if (packet != kNetaggHeaderSize + count * element_size(dtype))
      return csr14::kMalformedLengthMismatch;
    // Ethernet padding is allowed, but not past the beats a port stores.
    if (f.beats > static_cast<uint32_t>(kMaxFrameBeats) && f.bytes != kIpv4 + ip_length)
      return csr14::kMalformedLengthMismatch;

    if (type != kMsgContribution) return check_parent_result(h, dtype, flags, count, c);
    const int job = find_job(static_cast<uint16_t>(get_be16(h, kNetaggJobId)));
    if (job < 0) return csr14::kDroppedUnknownJob;
    const JobEntry& entry = jobs_[job];
    const unsigned rank = get_be16(h, kNetaggRank);
    if (rank >= entry.workers) return csr14::kDroppedRankOutOfRange;
    const WorkerEntry& worker = workers_[job][rank];
    if (get_be32(h, kIpv4SrcAddr) != worker.ip || get_be16(h, kUdpSrcPort) != worker.udp_port)
      return csr14::kDroppedForeignSource;
    const uint32_t slot = get_be16(h, kNetaggSlot);
    if (slot - entry.slot_base >= entry.slot_count || slot >= static_cast<uint32_t>(kSlots))
      return csr14::kDroppedSlotOutOfRange;
    if (count > entry.elements || count > static_cast<unsigned>(kMaxElements))
      return csr14::kDroppedCountTooLargeForJob;

    fill(h, job, dtype, flags, rank, slot, count, c);
    c.from_parent = 0;
    return -1;
  }

  // A result frame (the packet checks passed): only one from a job's parent, for that job at
  // the parent, goes on, as the switch model's result_from_parent checks it: this aggregator's
  // rank at the parent, a slot in the parent's range of the job (mapped to the job's own slot).
  int check_parent_result(const BeatData& h, unsigned dtype, unsigned flags, unsigned count,
                          Contribution& c) const {
    using namespace layout;
    const int job =
        find_child_job(static_cast<uint16_t>(get_be16(h, kNetaggJobId)), get_be32(h, kIpv4SrcAddr),
                       static_cast<uint16_t>(get_be16(h, kUdpSrcPort)));
    if (job < 0) return csr14::kDroppedNotContribution;  // a result, and from no parent of ours
    const JobEntry& entry = jobs_[job];
    const unsigned rank = get_be16(h, kNetaggRank);
    if (rank != entry.parent_rank) return csr14::kDroppedRankOutOfRange;
    const uint32_t offset =
        get_be16(h, kNetaggSlot) - static_cast<uint32_t>(entry.parent_slot_base);
    const uint32_t slot = entry.slot_base + offset;
    if (offset >= entry.slot_count || slot >= static_cast<uint32_t>(kSlots))
      return csr14::kDroppedSlotOutOfRange;
    if (count > entry.elements || count > static_cast<unsigned>(kMaxElements))
      return csr14::kDroppedCountTooLargeForJob;
    fill(h, job, dtype, flags, rank, slot, count, c);
    c.from_parent = 1;
    return -1;
  }

  static void fill(const BeatData& h, int job, unsigned dtype, unsigned flags, unsigned rank,
                   uint32_t slot, unsigned count, Contribution& c) {
    using namespace layout;
    c.job = job;
    c.dtype = static_cast<uint8_t>(dtype);
    c.set = static_cast<uint8_t>(flags & kFlagSet);
    c.fresh = static_cast<uint8_t>((flags & kFlagFresh) != 0);
    c.recovery = static_cast<uint8_t>((flags & kFlagRecovery) != 0);
    c.ecn = static_cast<uint8_t>(get_byte(h, kIpv4Ecn) & kIpv4EcnMask);
    c.rank = static_cast<uint16_t>(rank);
    c.slot = static_cast<uint16_t>(slot);
    c.count = static_cast<uint16_t>(count);
    c.exponent = static_cast<int16_t>(get_be16(h, kNetaggExponent));
    c.seq = get_be32(h, kNetaggSeq);
    c.epoch = get_be32(h, kNetaggEpoch);
  }

  // sim/switch/README.md's table, plus dtype_mismatch next to count_mismatch. Returns a drop
  // counter index (>= 0) or a Decision.
  static int decide(const RoundState& round, const Contribution& k) {
    if (k.from_parent) return decide_parent_result(round, k);
    // A recovery copy never starts a round (and so never takes a set over).
    if (!round.has_round) return k.recovery ? csr14::kDroppedNoRound : static_cast<int>(kNewRound);
    if (k.epoch != round.epoch)
      return k.fresh && !k.recovery ? static_cast<int>(kTakeover) : csr14::kDroppedStaleEpoch;
    const int32_t age = static_cast<int32_t>(k.seq - round.seq);  // serial-number arithmetic
    const bool complete = round.remaining == 0;
    if (age < 0) return csr14::kDroppedStale;
    if (age > 0 && k.recovery) return csr14::kDroppedNoRound;
    if (age > 0) return kNewRound;  // the round is over for every worker, complete or not
    if (k.count != round.count) return csr14::kDroppedCountMismatch;
    if (k.dtype != round.dtype) return csr14::kDroppedDtypeMismatch;
    if (complete)
      return round.upstream ? static_cast<int>(kResendToParent) : static_cast<int>(kResend);
    if (round.bitmap & (1u << k.rank)) return csr14::kDroppedDuplicate;
    return kJoin;
  }
  // A result from the job's parent: taken only by the round that waits for it (same epoch and
  // seq, complete here, its sum sent up), in the switch model's order of checks.
  static int decide_parent_result(const RoundState& round, const Contribution& k) {
    if (!round.has_round) return csr14::kDroppedNoRound;
    if (k.epoch != round.epoch) return csr14::kDroppedStaleEpoch;
    const int32_t age = static_cast<int32_t>(k.seq - round.seq);
    if (age < 0) return csr14::kDroppedStale;
    if (age > 0 || round.remaining != 0) return csr14::kDroppedNoRound;
    if (!round.upstream) return csr14::kDroppedDuplicate;  // answered already
    if (k.count != round.count) return csr14::kDroppedCountMismatch;
    if (k.dtype != round.dtype) return csr14::kDroppedDtypeMismatch;
    return kParentResult;
  }

  static int open_run(const Run runs[kNumPorts], int at) {
    for (int r = 0; r < kNumPorts; ++r)
      if (runs[r].open && runs[r].at == at) return r;
    return -1;
  }
  // A group holds at most kNumPorts frames, so a run is always free.
  static int free_run(const Run runs[kNumPorts]) {
    for (int r = 0; r < kNumPorts; ++r)
      if (!runs[r].open) return r;
    return 0;
  }

  // Element `lane` of accumulator beat `a` taken from frame f, as a 32-bit word (int32 bits or
  // fp32 bits; bf16 widened).
  static uint32_t element(const Frame& f, unsigned dtype, int a, int lane) {
#pragma HLS INLINE
    if (dtype == layout::kDtypeBf16)
      return bf16_to_fp32(get_lane16(f.beat[1 + a / 2], (a % 2) * kLanes + lane));
    return get_lane32(f.beat[1 + a], lane);
  }

  // The run's tree sum into the accumulators of its (slot, set): stored for a new round, else
  // added to them, accumulator first.
  void apply_run(const Run& run, const Frame frames[kNumPorts]) {
    const RoundState& round = rounds_[run.at];
    const int beats = (round.count + kLanes - 1) / kLanes;
    const bool fp = round.dtype != layout::kDtypeInt32;
  accumulate:
    for (int a = 0; a < beats; ++a) {
#pragma HLS PIPELINE II = 1
#pragma HLS LOOP_TRIPCOUNT max = 16
      uint32_t leaf[kTreeLeaves][kLanes];
      for (int p = 0; p < kTreeLeaves; ++p) {
#pragma HLS UNROLL
        for (int l = 0; l < kLanes; ++l) {
#pragma HLS UNROLL
          leaf[p][l] = p < kNumPorts && run.member[p] ? element(frames[p], round.dtype, a, l) : 0;
        }
      }
      uint32_t sum[kLanes] = {0};  // a run has at least one member: always written
      if (fp)
        tree_reduce<Fp32Elem, kLanes, kTreeLeaves>(leaf, run.member, sum);
      else
        tree_reduce<Int32Elem, kLanes, kTreeLeaves>(leaf, run.member, sum);
      for (int l = 0; l < kLanes; ++l) {
#pragma HLS UNROLL
        uint32_t& acc = acc_[run.at][a][l];
        if (run.first)
          acc = sum[l];
        else
          acc = fp ? Fp32Elem::add(acc, sum[l]) : Int32Elem::add(acc, sum[l]);
      }
    }
  }

  // The round's result to every worker of the job, in rank order.
  template <class Sink>
  void multicast(int job, int at, Sink& sink) {
    const int workers = jobs_[job].workers;
  multicast:
    for (int w = 0; w < kMaxWorkers; ++w) {
      if (w >= workers) break;
      emit_result(job, w, at, sink);
    }
  }

  // The result frame of round `at` for rank `rank` of job table entry `job`, on that worker's
  // egress port: Ethernet/IPv4/UDP from the aggregator to the worker, ECN = the round's OR.
  template <class Sink>
  void emit_result(int job, int rank, int at, Sink& sink) {
    const WorkerEntry& w = workers_[job][rank];
    Destination d;
    d.mac_lo = w.mac_lo;
    d.mac_hi = w.mac_hi;
    d.ip = w.ip;
    d.udp_port = w.udp_port;
    d.port = w.egress_port;
    d.type = layout::kMsgResult;
    d.flags = static_cast<unsigned>(at & 1);
    d.job_id = jobs_[job].id;
    d.rank = static_cast<uint16_t>(rank);
    d.slot = static_cast<uint16_t>(at >> 1);
    emit(d, at, sink);
  }

  // Trees: the sum of round `at` to the parent of job table entry `job`, as one contribution
  // (the parent's job id, this aggregator's rank and the parent's slot; fresh if the round was),
  // on the egress port towards the parent.
  template <class Sink>
  void emit_to_parent(int job, int at, Sink& sink) {
    const JobEntry& j = jobs_[job];
    Destination d;
    d.mac_lo = j.parent_mac_lo;
    d.mac_hi = j.parent_mac_hi;
    d.ip = j.parent_ip;
    d.udp_port = j.parent_udp_port;
    d.port = j.parent_port;
    d.type = layout::kMsgContribution;
    d.flags = static_cast<unsigned>(at & 1) | (rounds_[at].fresh ? layout::kFlagFresh : 0u);
    d.job_id = j.parent_id;
    d.rank = j.parent_rank;
    d.slot = static_cast<uint16_t>(j.parent_slot_base + ((at >> 1) - j.slot_base));
    emit(d, at, sink);
  }

  // Where a frame of a round goes and the header fields that differ between a result and a
  // contribution to the parent.
  struct Destination {
    uint32_t mac_lo;  // MAC bytes 2..5
    uint16_t mac_hi;  // MAC bytes 0..1
    uint32_t ip;
    uint16_t udp_port;
    int port;  // egress port
    unsigned type, flags;
    uint16_t job_id, rank, slot;
  };

  // The frame of round `at` to `d`: Ethernet/IPv4/UDP from the aggregator, ECN = the round's
  // OR, the round's dtype, count, exponent, seq and epoch, and its values as the payload.
  template <class Sink>
  void emit(const Destination& dst, int at, Sink& sink) {
    using namespace layout;
    const RoundState& round = rounds_[at];
    const unsigned payload = round.count * element_size(round.dtype);
    const unsigned ip_length = kIpv4HeaderSize + kUdpHeaderSize + kNetaggHeaderSize + payload;
    const uint32_t agg_mac_lo = reg(csr14::kAggMacLo), agg_mac_hi = reg(csr14::kAggMacHi);

    BeatData h = 0;
    set_be16(h, kEthDstAddr, dst.mac_hi);
    set_be32(h, kEthDstAddr + 2, dst.mac_lo);
    set_be16(h, kEthSrcAddr, agg_mac_hi & 0xFFFFu);
    set_be32(h, kEthSrcAddr + 2, agg_mac_lo);
    set_be16(h, kEthEtherType, kEthertypeIpv4);
    set_byte(h, kIpv4Version, kIpVersionIhl);
    set_byte(h, kIpv4Ecn, round.ecn & kIpv4EcnMask);
    set_be16(h, kIpv4TotalLen, ip_length);
    set_be16(h, kIpv4Flags, (kIpFlagsDf << 13));
    set_byte(h, kIpv4Ttl, kIpTtl);
    set_byte(h, kIpv4Protocol, kIpProtocolUdp);
    set_be32(h, kIpv4SrcAddr, reg(csr14::kAggIp));
    set_be32(h, kIpv4DstAddr, dst.ip);
    set_be16(h, kIpv4HdrChecksum, ~ipv4_sum(h) & 0xFFFFu);
    set_be16(h, kUdpSrcPort, reg(csr14::kAggUdpPort) & 0xFFFFu);
    set_be16(h, kUdpDstPort, dst.udp_port);
    set_be16(h, kUdpLength, ip_length - kIpv4HeaderSize);
    set_byte(h, kNetaggVersion, kVersion);
    set_byte(h, kNetaggType, dst.type);
    set_byte(h, kNetaggDtype, round.dtype);
    set_byte(h, kNetaggFlags, dst.flags);
    set_be16(h, kNetaggJobId, dst.job_id);
    set_be16(h, kNetaggRank, dst.rank);
    set_be16(h, kNetaggSlot, dst.slot);
    set_be16(h, kNetaggCount, round.count);
    set_be16(h, kNetaggExponent, static_cast<uint16_t>(round.exponent));
    set_be32(h, kNetaggSeq, round.seq);
    set_be32(h, kNetaggEpoch, round.epoch);

    const int port = dst.port;
    const int beats = static_cast<int>((payload + kBeatBytes - 1) / kBeatBytes);
    AxisBeat out;
    out.data = h;
    out.keep = ~0ULL;
    out.strb = ~0ULL;
    out.last = beats == 0;
    sink.write(port, out);
    const bool bf16 = round.dtype == kDtypeBf16;
  payload_beats:
    for (int k = 0; k < beats; ++k) {
#pragma HLS PIPELINE II = 1
#pragma HLS LOOP_TRIPCOUNT max = 16
      BeatData d = 0;
      if (bf16) {
        for (int e = 0; e < 2 * kLanes; ++e) {
#pragma HLS UNROLL
          const int index = 2 * kLanes * k + e;
          if (index < round.count)
            set_lane16(d, e, fp32_to_bf16(acc_[at][index / kLanes][index % kLanes]));
        }
      } else {
        for (int l = 0; l < kLanes; ++l) {
#pragma HLS UNROLL
          if (kLanes * k + l < round.count) set_lane32(d, l, acc_[at][k][l]);
        }
      }
      const unsigned left = payload - kBeatBytes * k;  // bytes from this beat on
      out.data = d;
      out.keep = left >= 64 ? ~0ULL : (1ULL << left) - 1;
      out.strb = out.keep;
      out.last = k == beats - 1;
      sink.write(port, out);
    }
    ++counters_[csr14::kFramesOut];
  }

  uint32_t reg_[kRegWords];
  uint32_t commit_seq_seen_;
  uint32_t control_seq_seen_;
  uint64_t counter_latch_;
  uint64_t counters_[csr14::kCounterCount];
  JobEntry jobs_[kMaxJobs];
  WorkerEntry workers_[kMaxJobs][kMaxWorkers];
  RoundState rounds_[2 * kSlots];                // index 2 * slot + set
  uint32_t acc_[2 * kSlots][kMaxBeats][kLanes];  // int32 or fp32 bits
};

}  // namespace fpga
}  // namespace netagg

#endif  // NETAGG_HLS_AGGREGATOR_HPP
