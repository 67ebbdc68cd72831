// SPDX-License-Identifier: Apache-2.0
#include "netagg/engine.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <utility>

#include "netagg/error.hpp"

namespace netagg {
namespace {

std::string format_duration(Duration d) {
  return fmt::format("{:g} ms", std::chrono::duration<double, std::milli>(d).count());
}

// Unanswered packets listed by name in a timeout error; the rest are only counted.
constexpr std::size_t kListedMissing = 16;

// The estimator for these parameters: the floor never above the first timeout (a fixed timeout
// below the default floor stays what it is). Called after the parameters were checked.
RtoEstimator make_rto(const EngineParams& p) {
  const Duration floor = std::min(p.min_retransmit_timeout, p.retransmit_timeout);
  return RtoEstimator(p.retransmit_timeout, p.adaptive_retransmit ? floor : p.retransmit_timeout,
                      p.max_retransmit_timeout);
}

const EngineParams& checked(const EngineParams& params) {
  if (params.window == 0) throw Error(Errc::kInvalidArgument, "engine: window must be at least 1");
  if (std::size_t{params.slot_base} + params.window > 65536) {
    throw Error(Errc::kInvalidArgument,
                fmt::format("engine: slots {}..{} exceed the 16-bit slot space", params.slot_base,
                            std::size_t{params.slot_base} + params.window - 1));
  }
  if (params.retransmit_timeout <= Duration::zero()) {
    throw Error(Errc::kInvalidArgument, "engine: retransmit_timeout must be positive");
  }
  if (params.max_retransmit_timeout < params.retransmit_timeout) {
    throw Error(Errc::kInvalidArgument,
                "engine: max_retransmit_timeout must not be below retransmit_timeout");
  }
  if (params.job_timeout <= Duration::zero()) {
    throw Error(Errc::kInvalidArgument, "engine: job_timeout must be positive");
  }
  if (params.adaptive_retransmit && params.min_retransmit_timeout <= Duration::zero()) {
    throw Error(Errc::kInvalidArgument, "engine: min_retransmit_timeout must be positive");
  }
  // Below 1 kbit/s a packet would wait for minutes; NaN and infinity are no rates.
  if (!(params.pace_gbps == 0 || (params.pace_gbps >= 1e-6 && params.pace_gbps <= 1e6))) {
    throw Error(Errc::kInvalidArgument,
                fmt::format("engine: pace_gbps {} is neither 0 (off) nor in [1e-6, 1e6]",
                            params.pace_gbps));
  }
  if (params.pace_slack < Duration::zero()) {
    throw Error(Errc::kInvalidArgument, "engine: pace_slack must not be negative");
  }
  return params;
}

}  // namespace

Engine::Engine(const EngineParams& params)
    : params_(checked(params)), rto_(make_rto(params)), start_rto_(make_rto(params)) {
  // Backoff levels: from the lowest timeout, doubling per retransmission up to the cap, where
  // it stays (the last level).
  std::size_t levels = 1;
  Duration timeout = rto_.min();
  while (timeout < rto_.max() && levels < 64) {
    timeout = timeout > rto_.max() / 2 ? rto_.max() : timeout * 2;
    ++levels;
  }
  timers_.resize(levels);
  stats_.rto = rto_.rto();
  if (params_.adaptive_retransmit) stats_.start_rto = start_rto_.rto();

  slots_.resize(params.window);
  cwnd_ = ssthresh_ = params.window;
  stats_.cwnd = cwnd_;
  buffers_.resize(2 * std::size_t{params.window} * wire::kMaxPacketSize);
  buffer_info_.resize(2 * std::size_t{params.window});
  kept_.resize(std::size_t{params.window} * wire::kMaxPacketSize);
  // A send, a retransmission of every slot with its predecessor, and their replacements fit
  // without reallocating.
  transmits_.reserve(std::size_t{params.window} * 3);
  // 1 Gbit/s is one bit per nanosecond.
  if (params.pace_gbps > 0) pace_ns_per_byte_ = 8.0 / params.pace_gbps;
}

void Engine::start(PacketSource& src, TimePoint now) {
  if (state_ == State::kRunning) {
    throw Error(Errc::kInvalidArgument, "engine: start() while an operation is running");
  }
  // Whatever a failed operation left in flight is abandoned.
  for (std::uint32_t idx = 0; idx < slots_.size(); ++idx) {
    if (slots_[idx].busy) {
      disarm(idx);
      slots_[idx].busy = false;
    }
  }
  failure_.clear();
  failed_by_notice_ = false;
  fatal_notice_.reset();
  waiting_notice_.reset();
  src_ = &src;
  count_ = src.packet_count();
  op_first_global_ = next_global_;
  next_global_ += count_;
  delivered_ = 0;
  last_progress_ = op_started_ = now;
  if (count_ == 0) {
    state_ = State::kDone;
    ++stats_.operations;
    src_ = nullptr;
    return;
  }
  state_ = State::kRunning;
  ready_ = {};
  resends_.clear();
  in_flight_ = 0;
  const std::uint64_t first = std::min<std::uint64_t>(count_, params_.window);
  for (std::uint64_t p = 0; p < first; ++p) ready_.push(p);
  pump(now);
}

void Engine::send_packet(std::uint64_t p, TimePoint now) {
  const std::uint64_t global = op_first_global_ + p;
  const auto idx = static_cast<std::uint32_t>(global % params_.window);
  InFlight& slot = slots_[idx];
  const std::uint32_t b = buffer_index(global);
  std::span<std::byte> buf = buffer(b);

  // The buffer is about to be overwritten: drop views of its previous packet that were not sent.
  if (buffer_info_[b].queued_epoch == transmits_epoch_) {
    std::erase_if(transmits_, [&](std::span<const std::byte> t) { return t.data() == buf.data(); });
    buffer_info_[b].queued_epoch = 0;
  }
  buffer_info_[b].global = UINT64_MAX;
  const wire::Header h = fill_packet(global, buf);

  slot.busy = true;
  slot.retransmissions = 0;
  slot.first_sent = now;
  slot.p = p;
  slot.global = global;
  slot.dtype = h.dtype;
  slot.count = h.count;
  slot.size = static_cast<std::uint32_t>(h.packet_size());
  buffer_info_[b] = {global, slot.size, 0};
  arm(idx, 0, now);
  slot.first_order = slot.last_order;
  queue_transmit(b);
  ++stats_.packets_sent;
  ++in_flight_;
}

void Engine::address(wire::Header& h, std::uint64_t global, wire::MsgType type) const {
  h.version = wire::kVersion;
  h.type = type;
  h.job_id = params_.job_id;
  h.rank = params_.rank;
  h.slot = static_cast<std::uint16_t>(params_.slot_base + global % params_.window);
  h.set = static_cast<std::uint8_t>((global / params_.window) % 2);
  h.seq = static_cast<std::uint32_t>(global);
  h.epoch = params_.epoch;
  h.fresh = h.recovery = 0;
}

wire::Header Engine::fill_packet(std::uint64_t global, std::span<std::byte> buf) {
  const std::uint64_t p = global - op_first_global_;
  wire::Header h;
  address(h, global, wire::MsgType::kContribution);
  src_->fill(p, h, buf.subspan(wire::kHeaderSize));
  // The source chooses only dtype, count and exponent; the rest is the engine's.
  address(h, global, wire::MsgType::kContribution);
  h.fresh = global < 2 * std::uint64_t{params_.window} ? 1 : 0;  // first use of (slot, set)
  if (!wire::is_valid(h.dtype) || !wire::encode_header(h, buf)) {
    // The operation cannot go on; fail it so the engine can start the next one.
    failure_ = fmt::format(
        "engine: the source made packet {} unencodable: count {} (at most {}), "
        "dtype {}",
        p, h.count, wire::kMaxCount, static_cast<int>(h.dtype));
    state_ = State::kFailed;
    src_ = nullptr;
    throw Error(Errc::kInvalidArgument, failure_);
  }
  return h;
}

void Engine::pump(TimePoint now) {
  const auto limit = static_cast<std::uint32_t>(std::max(1.0, cwnd_));
  if (!paced()) {
    while (!ready_.empty() && in_flight_ < limit && state_ == State::kRunning) {
      const std::uint64_t p = ready_.top();
      ready_.pop();
      send_packet(p, now);
    }
    return;
  }
  // Copies first: a retransmission is what the aggregator's rounds wait for. A new packet is
  // written only when it may leave, so its timer and round trip start when it does.
  while (state_ == State::kRunning && now >= pace_next_) {
    if (!resends_.empty()) {
      const PacedCopy c = resends_.front();
      resends_.pop_front();
      const InFlight& slot = slots_[c.global % params_.window];
      const bool wanted = buffer_info_[c.buffer].global == c.global &&
                          (c.recovery || (slot.busy && slot.global == c.global));
      if (!wanted) continue;  // answered meanwhile, or the buffer holds a newer packet
      queue_transmit(c.buffer);
      charge_pace(buffer_info_[c.buffer].size, now);
      continue;
    }
    if (ready_.empty() || in_flight_ >= limit) break;
    const std::uint64_t p = ready_.top();
    ready_.pop();
    send_packet(p, now);
    charge_pace(slots_[(op_first_global_ + p) % params_.window].size, now);
  }
}

void Engine::charge_pace(std::uint32_t bytes, TimePoint now) {
  const auto cost = Duration(static_cast<Duration::rep>(std::llround(bytes * pace_ns_per_byte_)));
  pace_next_ = std::max(pace_next_, now - params_.pace_slack) + cost;
}

bool Engine::waiting_for_pace() const {
  if (!paced() || state_ != State::kRunning) return false;
  const auto limit = static_cast<std::uint32_t>(std::max(1.0, cwnd_));
  return !resends_.empty() || (!ready_.empty() && in_flight_ < limit);
}

void Engine::transmit(std::uint32_t b, bool recovery) {
  if (paced())
    resends_.push_back({b, buffer_info_[b].global, recovery});
  else
    queue_transmit(b);
}

// DCTCP (RFC 8257) in slots: every result is an acknowledgement, CE-marked when a queue on the
// way of any contribution of its round or of the result was above its marking threshold (the
// aggregator ORs the contributions' marks into the result). Once per observation window (one
// window's worth of results), alpha = (1 - g) alpha + g F with F the marked fraction, and a
// window with marks cuts cwnd by alpha / 2. Without marks cwnd grows: by one per result below
// ssthresh (slow start), by 1 / cwnd per result above it (one slot per round trip).
void Engine::on_congestion_feedback(bool marked, TimePoint now) {
  constexpr double kGain = 1.0 / 16;
  ++observed_;
  if (marked) {
    ++observed_marked_;
    ++stats_.ce_results;
  }
  if (static_cast<double>(observed_) >= observe_until_) {
    const double fraction = static_cast<double>(observed_marked_) / static_cast<double>(observed_);
    alpha_ = (1 - kGain) * alpha_ + kGain * fraction;
    stats_.alpha = alpha_;
    if (observed_marked_ > 0) cut_window(1 - alpha_ / 2, now);
    observed_ = observed_marked_ = 0;
    observe_until_ = std::max(1.0, cwnd_);
  }
  if (!marked) {
    cwnd_ += cwnd_ < ssthresh_ ? 1.0 : 1.0 / std::max(1.0, cwnd_);
    cwnd_ = std::min(cwnd_, static_cast<double>(params_.window));
  }
  stats_.cwnd = cwnd_;
}

// At most once per round trip: the marks or losses of one window of packets are one event.
void Engine::cut_window(double factor, TimePoint now) {
  const Duration rtt = rto_.srtt() > Duration::zero() ? rto_.srtt() : rto_.rto();
  if (cut_once_ && now - last_cut_ < rtt) return;
  cwnd_ = std::max(1.0, cwnd_ * factor);
  ssthresh_ = cwnd_;
  last_cut_ = now;
  cut_once_ = true;
  ++stats_.window_cuts;
  stats_.cwnd = cwnd_;
}

void Engine::queue_transmit(std::uint32_t b) {
  transmits_.emplace_back(buffer(b).data(), buffer_info_[b].size);
  buffer_info_[b].queued_epoch = transmits_epoch_;
}

void Engine::send_predecessor(std::uint32_t idx) {
  InFlight& slot = slots_[idx];
  if (slot.global < params_.window) return;
  const std::uint64_t previous = slot.global - params_.window;
  const std::uint32_t b = buffer_index(previous);
  if (buffer_info_[b].global != previous) return;  // never sent (a failed operation's)
  // Marked a recovery copy: it must never start a round (wire-format.md, "A restarted
  // aggregator"). The packet is answered, so its bytes are not sent as itself again.
  std::byte& flags = buffer(b)[wire::offset::kFlags];
  flags |= std::byte{wire::kFlagRecovery};
  transmit(b, true);
  // Its result comes again as a duplicate, not because of a retransmission of it.
  slot.answered_retransmissions = 0;
  ++stats_.recovery_resends;
}

void Engine::arm(std::uint32_t idx, std::uint8_t level, TimePoint now) {
  InFlight& slot = slots_[idx];
  // Fixed: one list per backoff level, each with one timeout, so appending keeps it in order of
  // deadline. Adaptive: one list in order of last transmission (deadlines: adaptive_deadline).
  if (params_.adaptive_retransmit) level = 0;
  TimerList& list = timers_[level];
  slot.level = level;
  slot.last_sent = now;
  slot.last_order = next_order_++;
  slot.deadline = now + rto_.backoff(level);  // used by the fixed timeout only
  slot.prev = list.tail;
  slot.next = kNone;
  if (list.tail == kNone) {
    list.head = idx;
  } else {
    slots_[list.tail].next = idx;
  }
  list.tail = idx;
}

void Engine::disarm(std::uint32_t idx) {
  InFlight& slot = slots_[idx];
  TimerList& list = timers_[slot.level];
  if (slot.prev == kNone) {
    list.head = slot.next;
  } else {
    slots_[slot.prev].next = slot.next;
  }
  if (slot.next == kNone) {
    list.tail = slot.prev;
  } else {
    slots_[slot.next].prev = slot.prev;
  }
  slot.prev = slot.next = kNone;
}

void Engine::on_packet(std::span<const std::byte> packet, TimePoint now, std::uint8_t ecn) {
  const wire::Decoded d = wire::decode(packet);
  if (!d) {
    ++stats_.rejected;
    return;
  }
  const wire::Header& h = d.header;
  if (h.type == wire::MsgType::kNotice) {
    on_notice(d, now);
    return;
  }
  if (h.type != wire::MsgType::kResult || h.job_id != params_.job_id || h.rank != params_.rank ||
      h.slot < params_.slot_base || h.slot - params_.slot_base >= params_.window) {
    ++stats_.rejected;
    return;
  }
  if (h.epoch != params_.epoch) {  // another run's result: never a sum of this run
    ++stats_.foreign_epoch;
    return;
  }
  const auto idx = static_cast<std::uint32_t>(h.slot - params_.slot_base);
  InFlight& slot = slots_[idx];
  if (state_ != State::kRunning || !slot.busy || h.seq != static_cast<std::uint32_t>(slot.global) ||
      h.set != (slot.global / params_.window) % 2) {
    ++stats_.duplicates;  // an earlier packet's result again, or one for nothing in flight
    if (slot.answered_retransmissions > 0 && h.seq == slot.answered_seq) {
      --slot.answered_retransmissions;
      ++stats_.spurious_retransmissions;
      if (slot.answered_rtt > Duration::zero()) {
        sample_rtt(slot.answered_rtt);
        slot.answered_rtt = Duration::zero();
      }
    }
    return;
  }
  if (h.dtype != slot.dtype || h.count != slot.count) {
    ++stats_.rejected;  // claims to answer the packet in flight, but not with its shape
    return;
  }

  accept_result(idx, h, d.payload, packet, now);
  if (params_.congestion_control) on_congestion_feedback(ecn == 3, now);
  if (slot.p + params_.window < count_) ready_.push(slot.p + params_.window);
  pump(now);
  if (delivered_ == count_) {
    state_ = State::kDone;
    ++stats_.operations;
    src_ = nullptr;
  }
}

void Engine::accept_result(std::uint32_t idx, const wire::Header& h,
                           std::span<const std::byte> payload, std::span<const std::byte> packet,
                           TimePoint now) {
  InFlight& slot = slots_[idx];
  disarm(idx);
  slot.busy = false;
  if (fatal_notice_ && fatal_notice_->global == slot.global) fatal_notice_.reset();
  waiting_notice_.reset();  // progress: whatever a round waited for has come
  // Copies of it queued but not sent yet are obsolete now.
  if (const std::uint32_t b = buffer_index(slot.global);
      buffer_info_[b].queued_epoch == transmits_epoch_) {
    const std::byte* data = buffer(b).data();
    std::erase_if(transmits_, [&](std::span<const std::byte> t) { return t.data() == data; });
    buffer_info_[b].queued_epoch = 0;
  }
  // Karn's rule: only a packet sent once gives an unambiguous round trip (a retransmitted one
  // may give it later, if the result comes twice). And only a result in order: one that comes
  // after the result of a packet sent later waited for a loss to be repaired, this worker's or
  // another's whose contribution its round needed, so its delay is that repair's (a timeout),
  // not a round trip. Taking it would let every repair lengthen the timeout of the next.
  const bool in_order = slot.first_order > rack_order_;
  if (slot.retransmissions == 0 && in_order) {
    sample_rtt(now - slot.first_sent);
    rack_rtt_ = now - slot.first_sent;
  }
  // Some copy sent no earlier than the first was answered: packets sent before the first that
  // are still unanswered were overtaken. Not those sent before the latest copy: the result may
  // answer the first, and behind a deep queue every packet sent between the two would then be
  // taken as lost, their copies deepening the queue further.
  rack_order_ = std::max(rack_order_, slot.first_order);
  slot.answered_seq = h.seq;
  slot.answered_retransmissions = slot.retransmissions;
  slot.answered_rtt =
      slot.retransmissions == 0 || !in_order ? Duration::zero() : now - slot.first_sent;
  slot.answered_global = slot.global;
  slot.kept_size = static_cast<std::uint32_t>(packet.size());
  std::copy(packet.begin(), packet.end(),
            kept_.begin() + static_cast<std::ptrdiff_t>(std::size_t{idx} * wire::kMaxPacketSize));
  ++delivered_;
  ++stats_.results;
  last_progress_ = last_result_ = now;
  --in_flight_;
  src_->deliver(slot.p, h, payload);
}

std::uint64_t Engine::on_slot_from(std::uint32_t idx, std::uint64_t global) const {
  const std::uint64_t w = params_.window;
  const std::uint64_t first = global - global % w + idx;  // slot idx's packet of global's round
  return first >= global ? first : first + w;
}

std::uint64_t Engine::frontier(std::uint32_t idx) const {
  const InFlight& slot = slots_[idx];
  const std::uint64_t next =
      slot.answered_global == UINT64_MAX ? idx : slot.answered_global + params_.window;
  return std::max(next, on_slot_from(idx, op_first_global_));
}

std::span<const std::byte> Engine::kept_result(std::uint32_t idx) const {
  const InFlight& slot = slots_[idx];
  if (slot.answered_global == UINT64_MAX) return {};
  return {kept_.data() + std::size_t{idx} * wire::kMaxPacketSize, slot.kept_size};
}

void Engine::take_over() {
  if (state_ != State::kRunning)
    throw Error(Errc::kInvalidArgument, "engine: take_over() without a running operation");
  for (std::uint32_t idx = 0; idx < slots_.size(); ++idx) {
    if (slots_[idx].busy) {
      disarm(idx);
      slots_[idx].busy = false;
    }
  }
  in_flight_ = 0;
  ready_ = {};
  resends_.clear();
  clear_transmits();
  state_ = State::kHost;
}

void Engine::resume(TimePoint now) {
  if (state_ != State::kHost)
    throw Error(Errc::kInvalidArgument, "engine: resume() without an operation taken over");
  state_ = State::kRunning;
  last_progress_ = now;
  for (std::uint32_t idx = 0; idx < slots_.size(); ++idx) {
    const std::uint64_t g = frontier(idx);
    if (g < op_end_global()) ready_.push(g - op_first_global_);
  }
  pump(now);
}

wire::Header Engine::contribution(std::uint64_t global, std::span<std::byte> payload) {
  const std::uint64_t f = frontier(static_cast<std::uint32_t>(global % params_.window));
  if (state_ != State::kHost || global < op_first_global_ || global >= op_end_global() ||
      global < f || (global != f && !src_->independent()))
    throw Error(Errc::kInvalidArgument,
                fmt::format("engine: packet {} is not the next of its slot in an operation taken "
                            "over",
                            global));
  std::array<std::byte, wire::kMaxPacketSize> buf;
  const wire::Header h = fill_packet(global, buf);
  std::copy_n(buf.begin() + wire::kHeaderSize, h.payload_size(), payload.begin());
  return h;
}

bool Engine::deliver_external(std::uint64_t global, const wire::Header& h,
                              std::span<const std::byte> payload) {
  const auto idx = static_cast<std::uint32_t>(global % params_.window);
  if (state_ != State::kHost || global < op_first_global_ || global >= op_end_global() ||
      frontier(idx) != global || payload.size() != h.payload_size())
    return false;
  // The result as this worker would have received it: its own job, rank, slot, set and seq.
  wire::Header r = h;
  address(r, global, wire::MsgType::kResult);
  std::array<std::byte, wire::kMaxPacketSize> packet;
  if (!wire::encode_header(r, packet)) return false;
  std::copy(payload.begin(), payload.end(), packet.begin() + wire::kHeaderSize);
  InFlight& slot = slots_[idx];
  // The slot's bookkeeping as if the packet had been in flight and answered.
  slot.busy = false;
  slot.p = global - op_first_global_;
  slot.global = global;
  slot.prev = slot.next = kNone;
  slot.answered_global = global;
  slot.kept_size = static_cast<std::uint32_t>(r.packet_size());
  std::copy_n(packet.begin(), r.packet_size(),
              kept_.begin() + static_cast<std::ptrdiff_t>(std::size_t{idx} * wire::kMaxPacketSize));
  ++delivered_;
  ++stats_.host_results;
  src_->deliver(slot.p, r, payload);
  if (delivered_ == count_) {
    state_ = State::kDone;
    ++stats_.operations;
    src_ = nullptr;
  }
  return true;
}

void Engine::sample_rtt(Duration rtt) {
  ++stats_.rtt_samples;
  if (!params_.adaptive_retransmit) return;
  rto_.on_sample(rtt);
  // A window's packets answered one after another give a window of samples per round trip.
  const auto in_flight = static_cast<std::uint64_t>(std::max(1.0, cwnd_));
  start_rto_.on_sample(rtt, static_cast<std::uint32_t>(std::min(count_, in_flight)));
  stats_.rto = rto_.rto();
  stats_.srtt = rto_.srtt();
  stats_.rttvar = rto_.rttvar();
  stats_.start_rto = start_rto_.rto();
}

void Engine::retransmit(std::uint32_t idx, std::uint8_t level, TimePoint now) {
  if (params_.congestion_control) cut_window(0.5, now);  // a loss (or a late result)
  disarm(idx);
  arm(idx, level, now);
  transmit(buffer_index(slots_[idx].global), false);
  ++slots_[idx].retransmissions;
  ++stats_.retransmissions;
  if (slots_[idx].retransmissions >= kRecoveryAfter) send_predecessor(idx);
}

void Engine::on_timer(TimePoint now) {
  if (state_ != State::kRunning) return;
  if (now - last_progress_ >= params_.job_timeout) {
    fail(now);
    return;
  }
  if (fatal_notice_ && now - fatal_notice_->at >= kNoticeGrace) {
    failure_ = describe(*fatal_notice_);
    failed_by_notice_ = true;
    state_ = State::kFailed;
    src_ = nullptr;
    return;
  }
  if (params_.adaptive_retransmit) {
    on_adaptive_timer(now);
  } else {
    on_fixed_timer(now);
  }
  if (paced()) pump(now);  // what the pace held back, and the copies just queued
}

void Engine::on_fixed_timer(TimePoint now) {
  const auto last_level = static_cast<std::uint8_t>(timers_.size() - 1);
  for (std::uint8_t level = 0; level <= last_level; ++level) {
    // Re-armed slots go to the tail of a list with a deadline after now, which ends the loop.
    while (timers_[level].head != kNone && slots_[timers_[level].head].deadline <= now) {
      retransmit(timers_[level].head, std::min<std::uint8_t>(level + 1, last_level), now);
    }
  }
}

Duration Engine::reordering_window() const { return std::max(rto_.srtt() / 4, rto_.min()); }

Engine::AdaptiveDeadline Engine::adaptive_deadline(std::uint32_t idx) const {
  const InFlight& slot = slots_[idx];
  if (slot.last_order < rack_order_) {
    // Overtaken: lost unless its result is merely late, by up to the reordering window.
    const Duration rtt = rack_rtt_ > Duration::zero() ? rack_rtt_ : rto_.rto();
    return {slot.last_sent + rtt + reordering_window(), true};
  }
  // Nothing sent after it was answered yet: it waits in the same queue as they do, so while
  // results keep coming it is not late; the RTO counts from the latest of its sending, the last
  // result and the last probe (which restarts the timer, as a retransmission does in TCP).
  // Before the operation's first result the wait includes the other workers' start.
  const Duration rto = delivered_ == 0 ? std::max(rto_.rto(), start_rto_.rto()) : rto_.rto();
  return {std::max({slot.last_sent, last_progress_, last_probe_}) + rto, false};
}

std::uint32_t Engine::first_not_overtaken() const {
  std::uint32_t idx = timers_[0].head;
  while (idx != kNone && slots_[idx].last_order < rack_order_) idx = slots_[idx].next;
  return idx;
}

void Engine::on_adaptive_timer(TimePoint now) {
  // The list is in order of last transmission: the overtaken slots first (sent before the
  // latest one answered), each group in order of deadline. A retransmitted slot goes to the
  // tail, not overtaken, with a deadline after now: each loop ends.
  while (timers_[0].head != kNone) {
    const std::uint32_t idx = timers_[0].head;
    const AdaptiveDeadline d = adaptive_deadline(idx);
    if (!d.overtaken || d.at > now) break;
    ++stats_.overtaken_retransmissions;
    retransmit(idx, 0, now);
  }
  // A timeout sends one packet, and the others wait an RTO from it, as after TCP's tail loss
  // probe. The first timeout after a result sends the newest of the packets due: they may only
  // be queued behind each other in an aggregator slower than the RTO, and its result comes after
  // all of theirs; sending them all would deepen the queue by a window. If they were lost, its
  // result overtakes them all at once, instead of one timeout each, every one twice as long as
  // the last. Timeouts with no result since the last one send the oldest due, so that each
  // packet goes in turn (a retransmitted packet moves to the end of the list).
  const bool probed = last_probe_ > last_progress_;
  std::uint32_t probe = kNone;
  for (std::uint32_t idx = first_not_overtaken(); idx != kNone && adaptive_deadline(idx).at <= now;
       idx = slots_[idx].next) {
    probe = idx;
    if (probed) break;
  }
  if (probe == kNone) return;
  rto_.on_timeout(now);  // a timeout, not a loss seen: back off
  if (delivered_ == 0) start_rto_.on_timeout(now);
  stats_.rto = rto_.rto();
  stats_.start_rto = start_rto_.rto();
  last_probe_ = now;
  retransmit(probe, 0, now);
}

std::optional<TimePoint> Engine::next_deadline() const {
  if (state_ != State::kRunning) return std::nullopt;
  TimePoint deadline = last_progress_ + params_.job_timeout;
  if (fatal_notice_) deadline = std::min(deadline, fatal_notice_->at + kNoticeGrace);
  if (waiting_for_pace()) deadline = std::min(deadline, pace_next_);
  if (params_.adaptive_retransmit) {
    if (timers_[0].head != kNone)
      deadline = std::min(deadline, adaptive_deadline(timers_[0].head).at);
    if (const std::uint32_t idx = first_not_overtaken(); idx != kNone)
      deadline = std::min(deadline, adaptive_deadline(idx).at);
    return deadline;
  }
  for (const TimerList& list : timers_) {
    if (list.head != kNone) deadline = std::min(deadline, slots_[list.head].deadline);
  }
  return deadline;
}

void Engine::fail(TimePoint now) {
  std::vector<const InFlight*> missing;
  for (const InFlight& slot : slots_) {
    if (slot.busy) missing.push_back(&slot);
  }
  std::sort(missing.begin(), missing.end(),
            [](const InFlight* a, const InFlight* b) { return a->global < b->global; });

  std::string text = fmt::format(
      "all-reduce timed out: job {} rank {} got no new result for {}; {} of {} packets answered, "
      "{} unanswered: ",
      params_.job_id, params_.rank, format_duration(now - last_progress_), delivered_, count_,
      missing.size());
  for (std::size_t i = 0; i < missing.size() && i < kListedMissing; ++i) {
    const InFlight& slot = *missing[i];
    if (i > 0) text += ", ";
    text +=
        fmt::format("slot {} set {} seq {}", params_.slot_base + slot.global % params_.window,
                    (slot.global / params_.window) % 2, static_cast<std::uint32_t>(slot.global));
  }
  if (missing.size() > kListedMissing) {
    text += fmt::format(" and {} more", missing.size() - kListedMissing);
  }
  if (waiting_notice_) text += "; " + describe(*waiting_notice_);
  failure_ = std::move(text);
  state_ = State::kFailed;
  src_ = nullptr;
}

void Engine::on_notice(const wire::Decoded& d, TimePoint now) {
  const wire::Header& h = d.header;
  const auto notice = wire::read_notice(d);
  // Only a notice about the packet in flight on its slot counts: of this job, rank and run, its
  // set and seq. Anything else (a late one, another run's, one forged without the run's token)
  // is ignored.
  const bool in_window = h.slot >= params_.slot_base && h.slot - params_.slot_base < params_.window;
  const InFlight* slot = in_window ? &slots_[h.slot - params_.slot_base] : nullptr;
  if (!notice || state_ != State::kRunning || h.job_id != params_.job_id ||
      h.rank != params_.rank || h.epoch != params_.epoch || !slot || !slot->busy ||
      h.seq != static_cast<std::uint32_t>(slot->global) ||
      h.set != (slot->global / params_.window) % 2) {
    ++stats_.notices_ignored;
    return;
  }
  ++stats_.notices;
  NoticeSeen seen{notice->reason, now, slot->global, {}};
  if (notice->reason == wire::NoticeReason::kDuplicate) {
    for (std::size_t i = 0; i + 4 <= notice->waiting.size(); i += 4)
      seen.waiting.push_back(wire::load_be32(notice->waiting.data() + i));
    waiting_notice_ = std::move(seen);
    return;
  }
  if (!fatal_notice_) fatal_notice_ = std::move(seen);
}

std::vector<std::uint32_t> Engine::ranks_of(const std::vector<std::uint32_t>& words) {
  std::vector<std::uint32_t> ranks;
  for (std::size_t w = 0; w < words.size(); ++w)
    for (std::uint32_t b = 0; b < 32; ++b)
      if (words[w] >> b & 1u) ranks.push_back(static_cast<std::uint32_t>(32 * w + b));
  return ranks;
}

std::string Engine::describe(const NoticeSeen& n) const {
  const std::uint64_t g = n.global;
  const auto slot = params_.slot_base + g % params_.window;
  const std::string where = fmt::format("job {} rank {}: the aggregator drops our packets ({})",
                                        params_.job_id, params_.rank, wire::to_string(n.reason));
  switch (n.reason) {
    case wire::NoticeReason::kStale:
    case wire::NoticeReason::kStaleEpoch:
      return fmt::format(
          "{} as another run's: {}; if this run reused a finished run's token, set a new "
          "NETAGG_EPOCH (or leave it unset: every run draws its own)",
          where,
          n.reason == wire::NoticeReason::kStale
              ? fmt::format("slot {} holds a later round of this run's token {:#010x}", slot,
                            params_.epoch)
              : fmt::format("slot {} holds a round of another run of job {}: two runs of one "
                            "job use the aggregator at once",
                            slot, params_.job_id));
    case wire::NoticeReason::kUnknownJob:
      return fmt::format(
          "{}: it has no job {}: the job was never installed there, or was removed or replaced "
          "(see the daemon's --job, or `netagg-ctl fpga job list`)",
          where, params_.job_id);
    case wire::NoticeReason::kForeignSource:
      return fmt::format(
          "{}: they do not come from the address its job table gives rank {}: the job file's "
          "address for this rank differs from the aggregator's",
          where, params_.rank);
    case wire::NoticeReason::kRankOutOfRange:
      return fmt::format(
          "{}: its job {} has fewer than {} workers: its job table differs from this job file",
          where, params_.job_id, params_.rank + 1);
    case wire::NoticeReason::kSlotOutOfRange:
      return fmt::format(
          "{}: slot {} is outside its range for job {}: its job table differs from this job file",
          where, slot, params_.job_id);
    case wire::NoticeReason::kUnsupportedDtype:
      return fmt::format(
          "{}: it cannot add this dtype (a switch adds int32: send fp32 as block floating point, "
          "float_wire int32-bfp; an FPGA aggregator without exact fp32, FEATURES bit 5 clear, "
          "adds fp32 with float_wire fp32)",
          where);
    case wire::NoticeReason::kCountTooLargeForJob:
      return fmt::format(
          "{}: its job {} takes fewer elements per packet than we send: its job table differs "
          "from this job file",
          where, params_.job_id);
    case wire::NoticeReason::kCountMismatch:
    case wire::NoticeReason::kDtypeMismatch:
      return fmt::format(
          "{}: the round in progress on slot {} has another {}: the ranks of job {} do not run "
          "the same all-reduce (each must pass a tensor of the same size and dtype)",
          where, slot, n.reason == wire::NoticeReason::kCountMismatch ? "element count" : "dtype",
          params_.job_id);
    case wire::NoticeReason::kScaleMismatch:
      return fmt::format(
          "{}: the round in progress on slot {} converts at another scale (exact fp32): the "
          "ranks of job {} did not agree on the chunk's exponent, so they do not run the same "
          "all-reduce, or one of them is not netagg's engine",
          where, slot, params_.job_id);
    case wire::NoticeReason::kDuplicate: {
      const auto ranks = ranks_of(n.waiting);
      const std::string who = ranks.empty() ? std::string("other ranks")
                                            : fmt::format("rank{} {}", ranks.size() > 1 ? "s" : "",
                                                          fmt::join(ranks, ", "));
      const bool one = ranks.size() == 1;
      if (delivered_ == 0)
        return fmt::format(
            "job {} rank {}: {} {} not contributed to any round of this all-reduce (the "
            "aggregator's round of slot {} waits for {}): {} running, with this job and "
            "epoch?",
            params_.job_id, params_.rank, who, one ? "has" : "have", slot, one ? "it" : "them",
            one ? "is it" : "are they");
      return fmt::format(
          "job {} rank {}: the aggregator's round of slot {} waits for {}: {} running, with "
          "this job and epoch?",
          params_.job_id, params_.rank, slot, who, one ? "is it" : "are they");
    }
  }
  return where;
}

}  // namespace netagg
