// SPDX-License-Identifier: Apache-2.0
#include "mac.hpp"

#include <algorithm>
#include <cstring>

namespace netagg::vp {

using sc_core::sc_time;
using sc_core::sc_time_stamp;

MacPort::MacPort(sc_core::sc_module_name name, unsigned index, const MacConfig& config,
                 sc_time kernel_period, sc_time mac_period)
    : sc_module(name),
      index_(index),
      config_(config),
      mac_period_(mac_period),
      rx_fifo_(config.rx_fifo_beats, kernel_period * config.sync_stages),
      tx_fifo_(config.tx_fifo_beats, mac_period * config.sync_stages) {
  SC_METHOD(mac_rx);
  sensitive << mac_clk.pos();
  dont_initialize();
  SC_METHOD(mac_tx);
  sensitive << mac_clk.pos();
  dont_initialize();
  SC_METHOD(kernel_rx);
  sensitive << kernel_clk.pos();
  dont_initialize();
  SC_METHOD(kernel_tx);
  sensitive << kernel_clk.pos();
  dont_initialize();
}

sc_time MacPort::wire_time(std::size_t frame_bytes) const {
  // Bits over Gb/s is nanoseconds.
  return sc_time(static_cast<double>(wire_bytes(frame_bytes)) * 8.0 / config_.line_gbps,
                 sc_core::SC_NS);
}

bool MacPort::idle() const {
  return !rx_on_wire_ && rx_user_.empty() && rx_fifo_.size() == 0 && !rx_driving_ &&
         tx_fifo_.size() == 0 && tx_frame_.empty() && tx_on_wire_.empty();
}

void MacPort::clear() {
  rx_on_wire_ = false;
  rx_wire_frame_ = {};
  rx_user_.clear();
  rx_user_beat_ = 0;
  rx_fifo_.clear();
  rx_in_fifo_.clear();
  rx_driving_ = false;
  tx_fifo_.clear();
  tx_frame_.clear();
  tx_on_wire_.clear();
}

void MacPort::mac_rx() {
  const sc_time now = sc_time_stamp();
  // A frame whose last byte has arrived is on the user side.
  if (rx_on_wire_ && rx_wire_done_ <= now) {
    rx_user_.push_back(std::move(rx_wire_frame_));
    rx_wire_frame_ = {};
    rx_on_wire_ = false;
  }
  // The link partner's next frame, if it has one and the crossing has room for the largest frame
  // besides the beats already promised to it (the link partner is paused otherwise). A frame is
  // taken from the source only when it can go, so the source keeps its order.
  if (!rx_on_wire_ && source_) {
    std::size_t promised = rx_fifo_.size();
    for (const Outgoing& f : rx_user_) promised += beats_of(f.bytes.size());
    promised -= rx_user_beat_;
    const bool room = promised + kMaxFrameBeats <= rx_fifo_.depth();
    Outgoing next;
    if (room && source_(next)) {
      // The wire is free since the previous frame ended (or since this clock, if the link
      // partner had nothing or was paused at the previous one).
      rx_wire_frame_ = std::move(next);
      rx_wire_done_ = rx_wire_done_ + wire_time(rx_wire_frame_.bytes.size());
      rx_on_wire_ = true;
    } else {
      if (!room) stats_.wire_paused += mac_period_;
      rx_wire_done_ = std::max(rx_wire_done_, now + mac_period_);
    }
  }
  // One beat a MAC clock onto the crossing.
  if (!rx_user_.empty()) {
    const Outgoing& f = rx_user_.front();
    const std::size_t n = beats_of(f.bytes.size());
    Beat b;
    const std::size_t offset = rx_user_beat_ * kBeatBytes;
    const std::size_t len = std::min<std::size_t>(kBeatBytes, f.bytes.size() - offset);
    std::memcpy(b.data.data(), f.bytes.data() + offset, len);  // little-endian lanes
    b.keep = len == 64 ? ~std::uint64_t{0} : ((std::uint64_t{1} << len) - 1);
    b.last = rx_user_beat_ + 1 == n;
    rx_fifo_.push(b);
    rx_fifo_.note_level();
    stats_.rx_fifo_high_water = rx_fifo_.high_water();
    if (b.last) {
      rx_in_fifo_.emplace_back(f.bytes.size(), f.elements);
      rx_user_.pop_front();
      rx_user_beat_ = 0;
    } else {
      ++rx_user_beat_;
    }
  }
}

void MacPort::kernel_rx() {
  if (!rst_n.read()) {
    rx_tvalid.write(false);
    rx_driving_ = false;
    return;
  }
  if (rx_driving_) {
    if (rx_tready.read()) {
      if (rx_fifo_.front().last) {
        const auto [bytes, elements] = rx_in_fifo_.front();
        rx_in_fifo_.pop_front();
        if (stats_.rx_frames == 0) stats_.rx_first_done = sc_time_stamp();
        stats_.rx_last_done = sc_time_stamp();
        ++stats_.rx_frames;
        stats_.rx_bytes += bytes;
        stats_.rx_wire_bytes += wire_bytes(bytes);
        stats_.rx_elements += elements;
      }
      rx_fifo_.pop();
      rx_driving_ = false;
    } else {
      ++stats_.rx_stall_cycles;
      return;  // the beat stays on the pins
    }
  }
  if (!rx_fifo_.readable()) {
    rx_tvalid.write(false);
    return;
  }
  const Beat& b = rx_fifo_.front();
  sc_dt::sc_bv<512> data;
  for (int w = 0; w < 16; ++w) data.set_word(w, b.data[static_cast<std::size_t>(w)]);
  rx_tdata.write(data);
  rx_tkeep.write(b.keep);
  rx_tstrb.write(b.keep);
  rx_tlast.write(b.last);
  rx_tvalid.write(true);
  rx_driving_ = true;
}

void MacPort::kernel_tx() {
  if (!rst_n.read()) {
    tx_ready_ = false;
    tx_tready.write(false);
    return;
  }
  if (tx_ready_ && tx_tvalid.read()) {
    Beat b;
    const sc_dt::sc_bv<512> data = tx_tdata.read();
    for (int w = 0; w < 16; ++w) b.data[static_cast<std::size_t>(w)] = data.get_word(w);
    b.keep = tx_tkeep.read();
    b.last = tx_tlast.read();
    const bool contiguous = b.keep == ~std::uint64_t{0} || (b.keep & (b.keep + 1)) == 0;
    const char* error = !contiguous                              ? "TKEEP not contiguous"
                        : tx_tstrb.read() != b.keep              ? "TSTRB differs from TKEEP"
                        : !b.last && b.keep != ~std::uint64_t{0} ? "TKEEP partial before TLAST"
                        : b.last && b.keep == 0                  ? "TLAST with an empty TKEEP"
                                                                 : nullptr;
    if (error) {
      ++stats_.tx_protocol_errors;
      tx_last_error_ = std::string(name()) + " at " + sc_time_stamp().to_string() + ": " + error;
    }
    tx_fifo_.push(b);
    tx_fifo_.note_level();
    stats_.tx_fifo_high_water = tx_fifo_.high_water();
  }
  tx_ready_ = !tx_fifo_.full();
  tx_tready.write(tx_ready_);
}

void MacPort::mac_tx() {
  const sc_time now = sc_time_stamp();
  while (!tx_on_wire_.empty() && tx_on_wire_.front().done <= now) {
    std::vector<std::byte> bytes = std::move(tx_on_wire_.front().bytes);
    tx_on_wire_.pop_front();
    if (sink_) sink_(std::move(bytes));
  }
  // The next frame's first beat is read once the wire frees within this clock period; the rest
  // of a frame a beat per clock (faster than the wire, so the MAC never runs dry mid-frame).
  if (tx_frame_.empty() && (tx_paused_ || now + mac_period_ < tx_wire_free_)) return;
  if (!tx_fifo_.readable()) return;
  const Beat& b = tx_fifo_.front();
  const unsigned n = static_cast<unsigned>(__builtin_popcountll(b.keep));
  const auto* bytes = reinterpret_cast<const std::byte*>(b.data.data());
  tx_frame_.insert(tx_frame_.end(), bytes, bytes + n);
  const bool last = b.last;
  tx_fifo_.pop();
  if (tx_frame_.size() == n) tx_frame_start_ = std::max(now, tx_wire_free_);  // first beat
  if (!last) return;
  const sc_time done = tx_frame_start_ + wire_time(tx_frame_.size());
  tx_wire_free_ = done;
  ++stats_.tx_frames;
  stats_.tx_bytes += tx_frame_.size();
  tx_on_wire_.push_back({std::move(tx_frame_), done});
  tx_frame_.clear();
}

}  // namespace netagg::vp
