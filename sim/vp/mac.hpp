// SPDX-License-Identifier: Apache-2.0
// The network side of the virtual platform: one 100 GbE port as the user side of a CMAC sees it
// (512-bit AXI4-Stream at the MAC clock, 322.265625 MHz), the Ethernet wire in front of it (each
// frame occupies the wire for preamble + frame + FCS + inter-frame gap, at least the 64-byte
// minimum frame), and the clock-domain crossing FIFOs between the MAC clock and the kernel clock.
//
// Receive: the link partner puts frames on the wire back to back at line rate; a frame is on the
// MAC's user side once its last byte has arrived, one 64-byte beat per MAC clock, into the RX
// crossing FIFO; the kernel side offers the FIFO's head to the aggregator's rx_<i> port. The
// CMAC's user side cannot stall, so the link partner is paused (as by priority flow control)
// while the FIFO has no room for its next frame: nothing is dropped, and the time the wire stands
// still is counted.
// Transmit: the aggregator's tx_<i> port writes the TX crossing FIFO (TREADY while there is room);
// the MAC reads a frame a beat per MAC clock and puts it on the wire; the next frame starts when
// the wire is free again.
#pragma once

#include <systemc>

#include <algorithm>
#include <array>
#include <cstdint>
#include <deque>
#include <functional>
#include <string>
#include <vector>

namespace netagg::vp {

inline constexpr unsigned kBeatBytes = 64;
// Ethernet's per-frame overheads (IEEE 802.3): preamble with start-of-frame delimiter,
// inter-frame gap, frame check sequence; frames shorter than the minimum are padded.
inline constexpr unsigned kPreambleBytes = 8;
inline constexpr unsigned kIfgBytes = 12;
inline constexpr unsigned kFcsBytes = 4;
inline constexpr unsigned kMinFrameBytes = 64;  // with the FCS

// Bytes a frame of `frame_bytes` (the user side's bytes: no FCS) takes on the wire.
inline constexpr std::uint64_t wire_bytes(std::size_t frame_bytes) {
  const std::uint64_t framed = std::max<std::uint64_t>(frame_bytes + kFcsBytes, kMinFrameBytes);
  return framed + kPreambleBytes + kIfgBytes;
}

inline constexpr std::size_t beats_of(std::size_t frame_bytes) {
  return std::max<std::size_t>(1, (frame_bytes + kBeatBytes - 1) / kBeatBytes);
}

// The largest frame: the wire's largest packet (1024 32-bit elements) in Ethernet/IPv4/UDP.
inline constexpr std::size_t kMaxFrameBeats = beats_of(42 + 22 + 4096);

struct Beat {
  std::array<std::uint32_t, 16> data{};
  std::uint64_t keep = 0;
  bool last = false;
};

// A FIFO between two clock domains: a beat written at time t is visible to the reader from
// t + sync_delay on (the synchroniser stages of the write pointer, in reader clock periods).
class CdcFifo {
 public:
  CdcFifo(std::size_t depth, sc_core::sc_time sync_delay) : depth_(depth), sync_(sync_delay) {}
  std::size_t size() const { return entries_.size(); }
  std::size_t free() const { return depth_ - entries_.size(); }
  std::size_t depth() const { return depth_; }
  bool full() const { return entries_.size() >= depth_; }
  void push(const Beat& b) { entries_.push_back({b, sc_core::sc_time_stamp() + sync_}); }
  bool readable() const {
    return !entries_.empty() && entries_.front().visible <= sc_core::sc_time_stamp();
  }
  const Beat& front() const { return entries_.front().beat; }
  void pop() { entries_.pop_front(); }
  void clear() { entries_.clear(); }
  std::size_t high_water() const { return high_water_; }
  void note_level() { high_water_ = std::max(high_water_, entries_.size()); }

 private:
  struct Entry {
    Beat beat;
    sc_core::sc_time visible;
  };
  std::size_t depth_;
  sc_core::sc_time sync_;
  std::deque<Entry> entries_;
  std::size_t high_water_ = 0;
};

// What a port counted.
struct PortStats {
  std::uint64_t rx_frames = 0;        // frames the aggregator took in whole
  std::uint64_t rx_bytes = 0;         // their bytes (user side, no FCS)
  std::uint64_t rx_wire_bytes = 0;    // the same frames on the wire (wire_bytes)
  std::uint64_t rx_elements = 0;      // elements they carried (told by the traffic source)
  std::uint64_t rx_stall_cycles = 0;  // kernel cycles rx_<i> held TREADY low under TVALID
  sc_core::sc_time rx_first_done = sc_core::SC_ZERO_TIME;  // the first frame's last beat taken
  sc_core::sc_time rx_last_done = sc_core::SC_ZERO_TIME;   // the last frame's last beat taken
  sc_core::sc_time wire_paused = sc_core::SC_ZERO_TIME;    // the link partner held by back-pressure
  std::uint64_t tx_frames = 0;
  std::uint64_t tx_bytes = 0;
  std::uint64_t tx_protocol_errors = 0;  // TKEEP not contiguous, TKEEP before TLAST, ...
  std::size_t rx_fifo_high_water = 0;
  std::size_t tx_fifo_high_water = 0;
};

struct MacConfig {
  double line_gbps = 100.0;
  std::size_t rx_fifo_beats = 256;  // 16 KiB: two of the largest frames and more
  std::size_t tx_fifo_beats = 128;
  unsigned sync_stages = 2;  // synchroniser flip-flops of a crossing, in reader clock periods
};

// One port: the wire, the MAC's user side, both crossings, and the kernel-side AXI4-Stream pins
// of aggregator port rx_<i>/tx_<i>.
SC_MODULE(MacPort) {
  sc_core::sc_in<bool> mac_clk;
  sc_core::sc_in<bool> kernel_clk;
  sc_core::sc_in<bool> rst_n;  // kernel domain
  // To the aggregator's rx_<i>.
  sc_core::sc_out<sc_dt::sc_bv<512>> rx_tdata;
  sc_core::sc_out<std::uint64_t> rx_tkeep;
  sc_core::sc_out<std::uint64_t> rx_tstrb;
  sc_core::sc_out<bool> rx_tlast;
  sc_core::sc_out<bool> rx_tvalid;
  sc_core::sc_in<bool> rx_tready;
  // From the aggregator's tx_<i>.
  sc_core::sc_in<sc_dt::sc_bv<512>> tx_tdata;
  sc_core::sc_in<std::uint64_t> tx_tkeep;
  sc_core::sc_in<std::uint64_t> tx_tstrb;
  sc_core::sc_in<bool> tx_tlast;
  sc_core::sc_in<bool> tx_tvalid;
  sc_core::sc_out<bool> tx_tready;

  // A frame for the wire and the elements it carries (for the statistics). The source returns
  // false when it has nothing to send now; it is asked again at the next MAC clock.
  struct Outgoing {
    std::vector<std::byte> bytes;
    std::uint32_t elements = 0;
  };
  using Source = std::function<bool(Outgoing&)>;
  // A frame the MAC received from the aggregator, at the time its last byte left the wire.
  using Sink = std::function<void(std::vector<std::byte>)>;

  MacPort(sc_core::sc_module_name name, unsigned index, const MacConfig& config,
          sc_core::sc_time kernel_period, sc_core::sc_time mac_period);

  void set_source(Source s) { source_ = std::move(s); }
  void set_sink(Sink s) { sink_ = std::move(s); }
  const PortStats& stats() const { return stats_; }
  unsigned index() const { return index_; }
  // Nothing queued anywhere on this port (wire, FIFOs, partial frames).
  bool idle() const;
  // The link partner pauses this port's transmitter (as priority flow control would): no frame
  // starts on the wire while paused (one already started finishes), so the TX crossing fills and
  // the aggregator's tx_<i> sees TREADY low.
  void set_tx_paused(bool paused) { tx_paused_ = paused; }
  // What the last AXI4-Stream violation on tx_<i> was (counted in tx_protocol_errors); "" if none.
  const std::string& last_tx_protocol_error() const { return tx_last_error_; }
  // Drops every frame on the port: on the wires, in the crossings, half read or written. For a
  // reset of the card (the statistics stay).
  void clear();

 private:
  SC_HAS_PROCESS(MacPort);
  void mac_rx();     // MAC clock: the wire delivers frames, written to the RX crossing
  void kernel_rx();  // kernel clock: the RX crossing to rx_<i>
  void kernel_tx();  // kernel clock: tx_<i> to the TX crossing
  void mac_tx();     // MAC clock: the TX crossing to the wire
  sc_core::sc_time wire_time(std::size_t frame_bytes) const;

  unsigned index_;
  MacConfig config_;
  sc_core::sc_time mac_period_;
  CdcFifo rx_fifo_, tx_fifo_;
  Source source_;
  Sink sink_;
  PortStats stats_;

  // Receive: the frame on the wire (arrives whole at rx_wire_done_), the frame being written to
  // the RX crossing, the elements of frames in the crossing (front first).
  bool rx_on_wire_ = false;
  Outgoing rx_wire_frame_;
  sc_core::sc_time rx_wire_done_ = sc_core::SC_ZERO_TIME;
  std::deque<Outgoing> rx_user_;  // arrived, not yet all written to the crossing
  std::size_t rx_user_beat_ = 0;
  std::deque<std::pair<std::size_t, std::uint32_t>> rx_in_fifo_;  // frame bytes, elements
  bool rx_driving_ = false;                                       // rx_<i> shows a beat this cycle

  // Transmit.
  std::vector<std::byte> tx_frame_;  // being read from the TX crossing
  sc_core::sc_time tx_wire_free_ = sc_core::SC_ZERO_TIME;
  sc_core::sc_time tx_frame_start_ = sc_core::SC_ZERO_TIME;
  struct OnWire {
    std::vector<std::byte> bytes;
    sc_core::sc_time done;
  };
  std::deque<OnWire> tx_on_wire_;
  bool tx_ready_ = false;
  bool tx_paused_ = false;
  std::string tx_last_error_;
};

}  // namespace netagg::vp
