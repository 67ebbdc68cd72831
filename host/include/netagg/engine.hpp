// SPDX-License-Identifier: Apache-2.0
// The protocol engine, sans-IO: packets and time in, packets and a deadline out. The same engine
// runs over UDP, DPDK and in-process transports, and inside the simulators.
//
// Slots are used in a fixed pattern: packet P (a global index that continues across operations)
// goes to slot slot_base + P mod W with set (P / W) mod 2, seq = P mod 2^32. Packet P is sent
// only once the result of packet P - W has arrived: a result is the acknowledgement of its slot
// and the permission to send the slot's next packet (self-clocking). Unanswered packets are
// retransmitted on timeout with exponential backoff, the timeout fixed or (adaptive_retransmit)
// estimated from the round trips measured (netagg/rto.hpp); duplicate and stale results are
// ignored; an operation with no new result for job_timeout fails with an error naming the missing
// slots.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <optional>
#include <queue>
#include <span>
#include <string>
#include <vector>

#include "netagg/rto.hpp"
#include "netagg/stats.hpp"
#include "netagg/wire.hpp"

namespace netagg {

struct EngineParams {
  std::uint16_t job_id = 0;
  std::uint16_t rank = 0;
  std::uint16_t slot_base = 0;
  std::uint16_t window = 1;  // W: slots of the job's range this worker cycles through
  // The first retransmission's timeout: fixed, or with adaptive_retransmit the estimate before
  // the first round trip is measured. Backoff doubles it per retransmission up to the cap.
  Duration retransmit_timeout = std::chrono::milliseconds(20);
  Duration max_retransmit_timeout = std::chrono::milliseconds(500);  // backoff cap (doubling)
  // Estimate the timeout from round trips (RFC 6298, Karn's rule), never below the floor.
  bool adaptive_retransmit = false;
  Duration min_retransmit_timeout = std::chrono::milliseconds(1);
  Duration job_timeout = std::chrono::seconds(10);  // fail after this long without a new result
  // The run's token: sent in every contribution, required in every result. A packet is sent
  // `fresh` when it is the first of this engine on its (slot, set) (global index < 2W).
  std::uint32_t epoch = 0;
  // A congestion window in slots (docs/congestion-control.md): cut by the fraction of results
  // that carry ECN's CE mark (DCTCP) and halved on a loss, at most once per round trip; slow
  // start below the threshold, one slot per round trip above it; never above `window`.
  bool congestion_control = false;
  // Pacing (0: off): at most this many Gbit/s of UDP payload (netagg header and payload bytes),
  // first transmissions, retransmissions and recovery copies alike. Packet k may leave at
  // max(t(k-1), now - pace_slack) + size(k-1) * 8 / rate: a wake-up up to pace_slack late is made
  // up by sending the packets it owes at once, so the average rate holds when the caller's timer
  // is coarse; after an idle spell the first pace_slack's worth leaves as one burst.
  double pace_gbps = 0;
  Duration pace_slack = std::chrono::microseconds(500);
};

// What an operation sends and where its results go; the communicator implements it per call.
class PacketSource {
 public:
  virtual ~PacketSource() = default;
  virtual std::uint64_t packet_count() const = 0;
  // Packet p (0-based within the operation) is about to be sent for the first time. Set h.dtype,
  // h.count and h.exponent, and write h.payload_size() bytes to payload (capacity
  // wire::kMaxPayloadSize). Called only after deliver(p - W) for p >= W.
  virtual void fill(std::uint64_t p, wire::Header& h, std::span<std::byte> payload) = 0;
  // The result of packet p arrived; called exactly once per p, in any order.
  virtual void deliver(std::uint64_t p, const wire::Header& h,
                       std::span<const std::byte> payload) = 0;
  // Whether fill(p) needs nothing but the caller's data (no earlier packet's result, as block
  // floating point needs its exponents): then the host fallback fills packets in any order.
  virtual bool independent() const { return false; }
};

// Drive it like this (one thread per engine; the engine is not thread-safe):
//
//   auto flush = [&] {
//     if (!engine.transmits().empty()) transport.send(engine.transmits());
//     engine.clear_transmits();
//   };
//   engine.start(source, Clock::now());
//   flush();
//   while (engine.state() == Engine::State::kRunning) {
//     const TimePoint deadline = *engine.next_deadline();   // always set while running
//     const TimePoint now = Clock::now();
//     if (now >= deadline) {
//       engine.on_timer(now);
//     } else {
//       transport.receive(deadline - now, [&](std::span<const std::byte> packet) {
//         engine.on_packet(packet, Clock::now());
//       });
//     }
//     flush();
//   }
//   // kDone: every deliver() has been called. kFailed: throw Error(kTimeout, engine.failure()).
//
// Several calls (e.g. on_packet for a whole received batch, then on_timer) may be made before
// the transmits are sent: the views stay valid until clear_transmits().
class Engine {
 public:
  // kHost: the operation was taken over by the host fallback (take_over): the engine sends
  // nothing and takes no result from the network; deliver_external() finishes it, resume()
  // gives it back to the network.
  enum class State { kIdle, kRunning, kDone, kFailed, kHost };

  // Throws Error(kInvalidArgument) if window is 0, slot_base + window exceeds the 16-bit slot
  // space, or a timeout is not positive / the backoff cap is below the first timeout.
  explicit Engine(const EngineParams& params);

  // Begins an operation; the previous one must be done or failed (else Error(kInvalidArgument)).
  // src must outlive it. An operation of zero packets is done at once. After a failure the
  // unanswered packets are abandoned and numbering continues after the failed operation.
  // If the source fills a packet that cannot be encoded (count > kMaxCount, unknown dtype), the
  // operation fails and Error(kInvalidArgument) is thrown (here or from on_packet).
  void start(PacketSource& src, TimePoint now);
  // A datagram from the network. Accepts the result of the packet in flight on its slot and
  // sends that slot's next packet; counts everything else as duplicate or rejected.
  // `ecn`: the IPv4 ECN bits the datagram carried (3 = CE), when the transport can tell.
  void on_packet(std::span<const std::byte> packet, TimePoint now, std::uint8_t ecn = 0);
  // Call when now >= *next_deadline(): retransmits what is due and checks the job timeout.
  // Calling it early is harmless.
  void on_timer(TimePoint now);
  // Earliest retransmission, job-timeout or (paced) next-send deadline; nullopt unless running.
  std::optional<TimePoint> next_deadline() const;

  // Packets to send, in order. The views stay valid until clear_transmits(); views of a packet
  // that became obsolete (it was answered in the meantime) are removed.
  std::span<const std::span<const std::byte>> transmits() const { return transmits_; }
  void clear_transmits() {
    transmits_.clear();
    ++transmits_epoch_;
  }

  State state() const { return state_; }
  const std::string& failure() const { return failure_; }  // set in kFailed
  const EngineStats& stats() const { return stats_; }
  const EngineParams& params() const { return params_; }
  std::uint64_t next_global_packet() const { return next_global_; }
  // Packets of the current (or last) operation answered so far, and how many it has.
  std::uint64_t delivered() const { return delivered_; }
  std::uint64_t packet_count() const { return count_; }
  // The retransmission timeout now (fixed unless adaptive_retransmit) and its estimate.
  const RtoEstimator& rto() const { return rto_; }
  const RtoEstimator& start_rto() const { return start_rto_; }
  // When the running operation last got a new result (or started).
  TimePoint last_progress() const { return last_progress_; }
  // When the last result from the network was taken, in any operation (TimePoint{}: never),
  // and when the current (or last) operation started.
  TimePoint last_result() const { return last_result_; }
  TimePoint op_started() const { return op_started_; }

  // ---- Notices: what the aggregator said of packets it dropped (docs/wire-format.md) ----
  // A notice is taken only for a packet in flight (its job, rank, epoch, slot, set and seq), so
  // one of another run or a forged one without the run's token changes nothing. A notice of a
  // reason other than kDuplicate fails the operation (Error kRejected, its text in failure()) once
  // its packet has stayed unanswered for kNoticeGrace: a result in the meantime cancels it, so a
  // forged notice cannot stop an operation the aggregator answers.
  static constexpr Duration kNoticeGrace = std::chrono::milliseconds(500);
  struct NoticeSeen {
    wire::NoticeReason reason{};
    TimePoint at{};
    std::uint64_t global = 0;  // the packet it named
    // kDuplicate: the ranks its round waits for (rank r: bit r % 32 of word r / 32).
    std::vector<std::uint32_t> waiting;
  };
  // The latest duplicate notice of the running operation (the round of a packet in flight waits
  // for other ranks), if one came after its last result.
  const std::optional<NoticeSeen>& waiting_notice() const { return waiting_notice_; }
  // The ranks in a duplicate notice's bitmap, and what a notice means, for messages.
  static std::vector<std::uint32_t> ranks_of(const std::vector<std::uint32_t>& words);
  std::string describe(const NoticeSeen& n) const;
  // Whether the failure (kFailed) is a notice's (kRejected) rather than the job timeout's.
  bool failed_by_notice() const { return failed_by_notice_; }

  // ---- The host fallback's view (netagg/fallback.hpp) ----
  // Packets of a slot are answered in order (packet g + W is sent only after g's result), so what
  // this worker holds of a slot is one number: the global index of the slot's first packet
  // without a result here, at or after the current (or last) operation's first packet.
  std::uint64_t frontier(std::uint32_t idx) const;
  // The slot's last result as it arrived (or as deliver_external gave it), and its packet's
  // global index (UINT64_MAX and empty: none yet). Another worker that lost that result gets it
  // from here.
  std::uint64_t kept_global(std::uint32_t idx) const { return slots_[idx].answered_global; }
  std::span<const std::byte> kept_result(std::uint32_t idx) const;
  // The current (or last) operation's packets: global indices [first, end).
  std::uint64_t op_first_global() const { return op_first_global_; }
  std::uint64_t op_end_global() const { return op_first_global_ + count_; }
  // kRunning -> kHost: timers stop, nothing queued or in flight is sent again, results from the
  // network are ignored (counted as duplicates). Transmits not yet sent are dropped.
  void take_over();
  // kHost -> kRunning: every unanswered packet is sent (again) from its slot's frontier.
  void resume(TimePoint now);
  // kHost: the contribution of packet `global` as it would be sent (header, and payload into
  // `payload`, capacity wire::kMaxPayloadSize). `global` must be within the operation, at or
  // after its slot's frontier, and the frontier itself unless the source is independent() (its
  // predecessor answered, so the source can fill it); else Error(kInvalidArgument).
  wire::Header contribution(std::uint64_t global, std::span<std::byte> payload);
  // The running (or taken over) operation's source fills packets in any order.
  bool source_independent() const { return src_ != nullptr && src_->independent(); }
  // kHost: the result of packet `global`, made elsewhere. Taken (true) only when `global` is its
  // slot's frontier within the operation and the shape matches what was sent; the operation is
  // kDone once every packet has its result. Throws what the source's deliver() throws.
  bool deliver_external(std::uint64_t global, const wire::Header& h,
                        std::span<const std::byte> payload);

 private:
  // From this retransmission of a packet on, each retransmission also sends the slot's previous
  // packet again. A retransmission answers nothing only when the aggregator lost the round:
  // it restarted, and the workers that had not yet got the previous packet's result wait for a
  // round that the others, who had, will never join again. Their copies complete it; to a
  // running aggregator a copy is a retransmission of a completed round, answered by unicast and
  // counted as a duplicate here.
  static constexpr std::uint32_t kRecoveryAfter = 2;
  static constexpr std::uint32_t kNone = UINT32_MAX;

  // One per slot of the window. A busy slot is linked into the timer list of its backoff level.
  struct InFlight {
    bool busy = false;
    std::uint8_t level = 0;             // retransmissions so far, capped at the last backoff level
    std::uint32_t retransmissions = 0;  // of the packet in flight
    wire::DataType dtype = wire::DataType::kInt32;
    std::uint16_t count = 0;
    std::uint32_t size = 0;    // encoded packet bytes in the slot's buffer
    std::uint64_t p = 0;       // packet index within the operation
    std::uint64_t global = 0;  // global packet index
    TimePoint first_sent{};
    TimePoint last_sent{};
    // Places in the engine's order of transmission, of the first and the latest copy: packets
    // sent in one call leave in that order at the same instant, so times alone cannot tell
    // which of them was sent after another.
    std::uint64_t first_order = 0;
    std::uint64_t last_order = 0;
    TimePoint deadline{};  // fixed timeout only
    // The slot's previous packet, answered: its seq, how many of its retransmissions may still
    // bring a result of their own (each such result is a spurious retransmission), and the
    // round trip of its first copy if the first result answered that copy.
    std::uint32_t answered_seq = 0;
    std::uint64_t answered_global = UINT64_MAX;  // the slot's last packet answered (kept_result)
    std::uint32_t kept_size = 0;                 // its result's bytes in kept_
    std::uint32_t answered_retransmissions = 0;
    Duration answered_rtt{0};
    std::uint32_t prev = kNone, next = kNone;  // timer list links (slot indices)
  };
  // The packet bytes of global index g live in buffer g mod 2W until g + 2W is sent, which is
  // after the result of g + W: so while g is in flight its slot's previous packet g - W is
  // still there, to be sent again for the workers that lost its result (see kRecoveryAfter).
  struct Buffer {
    std::uint64_t global = UINT64_MAX;  // the packet it holds (UINT64_MAX: none)
    std::uint32_t size = 0;
    std::uint64_t queued_epoch = 0;  // == transmits_epoch_ while transmits_ views it
  };
  // Busy slots in timer lists. Fixed timeout: one list per backoff level, in order of deadline
  // (each level's timeout is constant, so appending at `now + timeout` keeps it sorted).
  // Adaptive: one list in order of last transmission; a slot's deadline is computed from it
  // (adaptive_deadline). Sending and answering are O(1), and so is expiring, but for the
  // adaptive timeout's probe (O(slots due)); next_deadline() is O(backoff levels), or
  // O(overtaken slots) when adaptive.
  struct TimerList {
    std::uint32_t head = kNone, tail = kNone;
  };

  void send_packet(std::uint64_t p, TimePoint now);
  // Every field of h that names packet `global` of this engine (all but dtype, count, exponent).
  void address(wire::Header& h, std::uint64_t global, wire::MsgType type) const;
  // The header of global packet `global` (operation packet p), payload filled by the source.
  // Throws Error(kInvalidArgument) (the operation failed) when the source makes it unencodable.
  wire::Header fill_packet(std::uint64_t global, std::span<std::byte> buf);
  // A result accepted for slot idx: kept, delivered, counted.
  void accept_result(std::uint32_t idx, const wire::Header& h, std::span<const std::byte> payload,
                     std::span<const std::byte> packet, TimePoint now);
  // The first global index on slot idx at or after `global`.
  std::uint64_t on_slot_from(std::uint32_t idx, std::uint64_t global) const;
  // Sends ready packets (their slot's previous packet answered), oldest first, while the
  // congestion window has room; paced: queued copies first, and only what the pace allows now.
  void pump(TimePoint now);
  // A packet's bytes go out: to transmits_ at once, or paced, into resends_.
  void transmit(std::uint32_t b, bool recovery);
  void charge_pace(std::uint32_t bytes, TimePoint now);
  bool paced() const { return params_.pace_gbps > 0; }
  // Paced: something could be sent now but for the pace (a queued copy, or a ready packet that
  // the congestion window lets out).
  bool waiting_for_pace() const;
  void on_congestion_feedback(bool marked, TimePoint now);
  void cut_window(double factor, TimePoint now);
  void arm(std::uint32_t idx, std::uint8_t level, TimePoint now);
  void disarm(std::uint32_t idx);
  void retransmit(std::uint32_t idx, std::uint8_t level, TimePoint now);

  // Adaptive retransmission, in the manner of TCP's RACK (RFC 8985) and its RTO. A packet is
  // overtaken when a packet sent after it (later in the order of transmission, even at the same
  // instant) has been answered: results come back in the order packets left, the aggregator
  // being one queue. Then it is taken as lost once its round trip plus a reordering window has
  // passed. A packet not overtaken waits the RTO from the latest of its sending, the last result
  // and the last timeout: it is behind the ones that keep being answered.
  struct AdaptiveDeadline {
    TimePoint at;
    bool overtaken;
  };
  AdaptiveDeadline adaptive_deadline(std::uint32_t idx) const;
  Duration reordering_window() const;
  std::uint32_t first_not_overtaken() const;
  void on_adaptive_timer(TimePoint now);
  void on_fixed_timer(TimePoint now);
  std::uint32_t buffer_index(std::uint64_t global) const {
    return static_cast<std::uint32_t>(global % (2 * std::uint64_t{params_.window}));
  }
  std::span<std::byte> buffer(std::uint32_t b) {
    return {buffers_.data() + std::size_t{b} * wire::kMaxPacketSize, wire::kMaxPacketSize};
  }
  void queue_transmit(std::uint32_t b);
  void send_predecessor(std::uint32_t idx);
  void sample_rtt(Duration rtt);  // counts it; feeds the estimator if adaptive
  void fail(TimePoint now);
  void on_notice(const wire::Decoded& d, TimePoint now);

  std::optional<NoticeSeen> fatal_notice_;    // the first, while its packet is unanswered
  std::optional<NoticeSeen> waiting_notice_;  // the latest kDuplicate since the last result
  bool failed_by_notice_ = false;

  EngineParams params_;
  State state_ = State::kIdle;
  std::string failure_;
  EngineStats stats_;
  PacketSource* src_ = nullptr;
  std::uint64_t op_first_global_ = 0;  // global index of the operation's packet 0
  std::uint64_t next_global_ = 0;      // next global index to use by a later operation
  std::uint64_t count_ = 0;            // packets in this operation
  std::uint64_t delivered_ = 0;
  TimePoint last_progress_{};
  TimePoint last_result_{};
  TimePoint op_started_{};
  std::vector<InFlight> slots_;  // W entries, indexed by global % W
  std::vector<std::byte>
      buffers_;  // 2W * kMaxPacketSize: the packets in flight, their predecessors
  std::vector<Buffer> buffer_info_;  // 2W
  std::vector<std::byte> kept_;      // W * kMaxPacketSize: each slot's last result
  RtoEstimator rto_;
  // The timeout while the operation has no result yet (adaptive only): its first rounds wait for
  // every worker to start it, so they follow the spread of round trips from one operation to the
  // next, not the last few packets'. The same samples, the gains divided by the packets an
  // operation keeps in flight (RFC 7323, Appendix G): its RTTVAR moves per round trip.
  RtoEstimator start_rto_;
  std::uint64_t next_order_ = 1;   // the next transmission's place in the order
  std::uint64_t rack_order_ = 0;   // latest first transmission of a packet answered (0: none)
  Duration rack_rtt_{0};           // round trip of the latest-sent packet answered without a resend
  TimePoint last_probe_{};         // the latest retransmission on timeout
  std::vector<TimerList> timers_;  // one per backoff level
  std::vector<std::span<const std::byte>> transmits_;
  std::uint64_t transmits_epoch_ = 1;

  // Congestion control. ready_: packets of the operation whose slot is free, not yet sent.
  std::priority_queue<std::uint64_t, std::vector<std::uint64_t>, std::greater<>> ready_;
  std::uint32_t in_flight_ = 0;
  double cwnd_ = 0, ssthresh_ = 0, alpha_ = 0;
  std::uint64_t observed_ = 0, observed_marked_ = 0;  // results in the current observation
  double observe_until_ = 0;                          // results that end it (one window's worth)
  TimePoint last_cut_{};                              // cuts at most once per round trip
  bool cut_once_ = false;

  // Pacing. Retransmissions and recovery copies wait in resends_ (oldest first, ahead of new
  // packets, which are written only when they leave); a copy whose packet was answered or whose
  // buffer was reused meanwhile is skipped when its turn comes.
  struct PacedCopy {
    std::uint32_t buffer;
    std::uint64_t global;
    bool recovery;  // the slot's previous packet, answered: valid while its buffer holds it
  };
  std::deque<PacedCopy> resends_;
  TimePoint pace_next_{};  // when the next packet may leave
  double pace_ns_per_byte_ = 0;
};

}  // namespace netagg
