// RtlHarness: an FpgaModel around a Verilated top with the aggregator's ports
// (docs/fpga-aggregator.md: ap_clk, ap_rst_n, rx_<i>_* / tx_<i>_* AXI4-Stream, s_axi_control_*
// AXI4-Lite). A template over the Verilated class, so the harness's own tests can drive a small
// stand-in top with the same ports; sim/fpga/rtl_model.cpp instantiates it for netagg_aggregator.
//
// One cycle: inputs are set, the model settles with the clock low, handshakes are sampled
// (valid && ready), the rising edge is evaluated, then the queues advance by what fired. The
// harness owns its VerilatedContext (no file-scope statics), so several models can coexist.
#pragma once

#include <verilated.h>
#include <verilated_fst_c.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "harness.hpp"
#include "netagg/error.hpp"

namespace netagg::sim {

// Pointers to one AXI4-Stream port's signals in a Verilated top.
struct AxisSignals {
  VlWide<16>* tdata = nullptr;
  QData* tkeep = nullptr;
  QData* tstrb = nullptr;
  CData* tlast = nullptr;
  CData* tvalid = nullptr;
  CData* tready = nullptr;
};

#define NETAGG_AXIS_SIGNALS(top, dir, i)                                               \
  ::netagg::sim::AxisSignals {                                                         \
    &(top).dir##_##i##_TDATA, &(top).dir##_##i##_TKEEP, &(top).dir##_##i##_TSTRB,      \
        &(top).dir##_##i##_TLAST, &(top).dir##_##i##_TVALID, &(top).dir##_##i##_TREADY \
  }

template <typename Top, unsigned kPorts>
class RtlHarness final : public FpgaModel {
 public:
  static constexpr unsigned kBeatBytes = 64;
  static constexpr unsigned kResetCycles = 8;
  // An AXI4-Lite transaction the device does not answer within this many cycles is an error.
  static constexpr std::uint64_t kCsrTimeoutCycles = 100000;

  RtlHarness(std::string name, const std::string& trace_fst, std::uint64_t quiet_cycles)
      : name_(std::move(name)), quiet_cycles_(quiet_cycles), context_(new VerilatedContext) {
    context_->commandArgs(0, static_cast<const char**>(nullptr));
    // The RTL is verilated with --x-initial unique: state not reset starts random (seeded, so
    // runs repeat), and a design that relies on power-up zeros fails.
    context_->randReset(2);
    context_->randSeed(1);
    context_->traceEverOn(!trace_fst.empty());
    top_ = std::make_unique<Top>(context_.get(), "netagg");
    rx_ = ports(*top_, /*rx=*/true);
    tx_ = ports(*top_, /*rx=*/false);
    if (!trace_fst.empty()) {
      trace_ = std::make_unique<VerilatedFstC>();
      top_->trace(trace_.get(), 99);
      trace_->open(trace_fst.c_str());
      if (!trace_->isOpen())
        throw Error(Errc::kConfig, fmt::format("cannot write the FST trace {}", trace_fst));
    }
    egress_ready_.fill(true);
    reset();
  }

  ~RtlHarness() override {
    if (trace_) trace_->close();
    top_->final();
  }

  std::string name() const override { return name_; }
  unsigned num_ports() const override { return kPorts; }
  std::uint64_t default_quiet_cycles() const override { return quiet_cycles_; }

  void reset() override {
    for (auto& q : ingress_) q.clear();
    ingress_beat_.fill(0);
    for (auto& f : egress_partial_) f.bytes.clear();
    top_->ap_rst_n = 0;
    idle_axi();
    // Until the first clock edge in reset the registers hold their random initial values, TVALID
    // included: nothing is sampled while ap_rst_n is low.
    in_reset_ = true;
    for (unsigned c = 0; c < kResetCycles; ++c) cycle();
    in_reset_ = false;
    top_->ap_rst_n = 1;
    for (auto& f : egress_partial_) f.bytes.clear();
  }

  void push_frame(unsigned port, std::span<const std::byte> frame) override {
    check_port(port);
    if (frame.empty()) throw Error(Errc::kInvalidArgument, "push_frame: empty frame");
    ingress_[port].emplace_back(frame.begin(), frame.end());
  }
  std::size_t ingress_pending(unsigned port) const override {
    check_port(port);
    return ingress_[port].size();
  }

  void set_egress_ready(unsigned port, bool ready) override {
    check_port(port);
    egress_ready_[port] = ready;
  }
  bool egress_ready(unsigned port) const override {
    check_port(port);
    return egress_ready_[port];
  }

  void step(std::uint64_t n) override {
    for (std::uint64_t i = 0; i < n; ++i) cycle();
  }
  std::uint64_t cycles() const override { return cycles_; }

  std::vector<EgressFrame> pop_egress() override {
    std::vector<EgressFrame> out;
    out.swap(egress_done_);
    return out;
  }

  bool run_until_idle(std::uint64_t quiet_cycles, std::uint64_t max_cycles) override {
    for (std::uint64_t i = 0; i < max_cycles; ++i) {
      if (idle_for(quiet_cycles)) return true;
      cycle();
    }
    return idle_for(quiet_cycles);
  }

  std::uint64_t egress_protocol_errors() const override { return protocol_errors_; }
  std::string last_protocol_error() const override { return last_protocol_error_; }

  std::uint32_t read32(std::uint32_t address) override {
    check_address(address);
    Top& t = *top_;
    t.s_axi_control_ARADDR = address;
    t.s_axi_control_ARVALID = 1;
    t.s_axi_control_RREADY = 1;
    bool address_taken = false;
    for (std::uint64_t i = 0; i < kCsrTimeoutCycles; ++i) {
      settle();
      const bool ar_fire = t.s_axi_control_ARVALID && t.s_axi_control_ARREADY;
      const bool r_fire = t.s_axi_control_RVALID && t.s_axi_control_RREADY;
      const std::uint32_t data = t.s_axi_control_RDATA;
      const unsigned resp = t.s_axi_control_RRESP;
      rising_edge();
      if (ar_fire) {
        address_taken = true;
        t.s_axi_control_ARVALID = 0;
      }
      if (r_fire && (address_taken || ar_fire)) {
        t.s_axi_control_RREADY = 0;
        if (resp != 0)
          throw Error(Errc::kTransport, fmt::format("{}: CSR read of 0x{:03x} answered RRESP {}",
                                                    name_, address, resp));
        return data;
      }
    }
    idle_axi();
    throw Error(Errc::kTransport, fmt::format("{}: CSR read of 0x{:03x} not answered in {} cycles",
                                              name_, address, kCsrTimeoutCycles));
  }

  void write32(std::uint32_t address, std::uint32_t value) override {
    check_address(address);
    Top& t = *top_;
    t.s_axi_control_AWADDR = address;
    t.s_axi_control_AWVALID = 1;
    t.s_axi_control_WDATA = value;
    t.s_axi_control_WSTRB = 0xF;
    t.s_axi_control_WVALID = 1;
    t.s_axi_control_BREADY = 1;
    bool aw_done = false, w_done = false;
    for (std::uint64_t i = 0; i < kCsrTimeoutCycles; ++i) {
      settle();
      const bool aw_fire = t.s_axi_control_AWVALID && t.s_axi_control_AWREADY;
      const bool w_fire = t.s_axi_control_WVALID && t.s_axi_control_WREADY;
      const bool b_fire = t.s_axi_control_BVALID && t.s_axi_control_BREADY;
      const unsigned resp = t.s_axi_control_BRESP;
      rising_edge();
      if (aw_fire) {
        aw_done = true;
        t.s_axi_control_AWVALID = 0;
      }
      if (w_fire) {
        w_done = true;
        t.s_axi_control_WVALID = 0;
      }
      if (b_fire && aw_done && w_done) {
        t.s_axi_control_BREADY = 0;
        if (resp != 0)
          throw Error(Errc::kTransport, fmt::format("{}: CSR write of 0x{:03x} answered BRESP {}",
                                                    name_, address, resp));
        return;
      }
    }
    idle_axi();
    throw Error(Errc::kTransport, fmt::format("{}: CSR write of 0x{:03x} not answered in {} cycles",
                                              name_, address, kCsrTimeoutCycles));
  }

 private:
  struct Partial {
    std::vector<std::byte> bytes;
    std::uint64_t first_beat_cycle = 0;
  };

  static std::array<AxisSignals, kPorts> ports(Top& top, bool rx) {
    static_assert(kPorts >= 1 && kPorts <= 8, "NUM_PORTS is 1..8 (docs/fpga-aggregator.md)");
    std::array<AxisSignals, 8> all{};
    if (rx) {
      all[0] = NETAGG_AXIS_SIGNALS(top, rx, 0);
      if constexpr (kPorts > 1) all[1] = NETAGG_AXIS_SIGNALS(top, rx, 1);
      if constexpr (kPorts > 2) all[2] = NETAGG_AXIS_SIGNALS(top, rx, 2);
      if constexpr (kPorts > 3) all[3] = NETAGG_AXIS_SIGNALS(top, rx, 3);
    } else {
      all[0] = NETAGG_AXIS_SIGNALS(top, tx, 0);
      if constexpr (kPorts > 1) all[1] = NETAGG_AXIS_SIGNALS(top, tx, 1);
      if constexpr (kPorts > 2) all[2] = NETAGG_AXIS_SIGNALS(top, tx, 2);
      if constexpr (kPorts > 3) all[3] = NETAGG_AXIS_SIGNALS(top, tx, 3);
    }
    static_assert(kPorts <= 4, "extend ports() for more than 4 ports");
    std::array<AxisSignals, kPorts> out{};
    std::copy_n(all.begin(), kPorts, out.begin());
    return out;
  }

  void check_port(unsigned port) const {
    if (port >= kPorts)
      throw Error(
          Errc::kInvalidArgument,
          fmt::format("{}: port {} out of range (the model has {} ports)", name_, port, kPorts));
  }
  void check_address(std::uint32_t address) const {
    if (address % 4 != 0)
      throw Error(Errc::kInvalidArgument,
                  fmt::format("CSR address 0x{:x} is not 4-aligned", address));
  }

  void idle_axi() {
    Top& t = *top_;
    t.s_axi_control_AWVALID = 0;
    t.s_axi_control_WVALID = 0;
    t.s_axi_control_BREADY = 0;
    t.s_axi_control_ARVALID = 0;
    t.s_axi_control_RREADY = 0;
    t.s_axi_control_WSTRB = 0;
  }

  bool idle_for(std::uint64_t quiet) const {
    for (unsigned p = 0; p < kPorts; ++p)
      if (!ingress_[p].empty() || !egress_partial_[p].bytes.empty()) return false;
    return cycles_ - std::max(last_ingress_beat_cycle_, last_egress_activity_cycle_) >= quiet;
  }

  // Ingress inputs for the coming cycle: the current beat of each port's first frame.
  void drive_ingress() {
    for (unsigned p = 0; p < kPorts; ++p) {
      const AxisSignals& s = rx_[p];
      if (ingress_[p].empty()) {
        *s.tvalid = 0;
        *s.tlast = 0;
        *s.tkeep = 0;
        *s.tstrb = 0;
        continue;
      }
      const std::vector<std::byte>& frame = ingress_[p].front();
      const std::size_t offset = std::size_t(ingress_beat_[p]) * kBeatBytes;
      const std::size_t n = std::min<std::size_t>(kBeatBytes, frame.size() - offset);
      std::uint32_t* words = s.tdata->data();
      std::memset(words, 0, kBeatBytes);
      for (std::size_t b = 0; b < n; ++b)
        words[b / 4] |= std::uint32_t(frame[offset + b]) << (8 * (b % 4));
      const QData keep = n == 64 ? ~QData{0} : ((QData{1} << n) - 1);
      *s.tkeep = keep;
      *s.tstrb = keep;
      *s.tlast = offset + n == frame.size();
      *s.tvalid = 1;
    }
    for (unsigned p = 0; p < kPorts; ++p) *tx_[p].tready = egress_ready_[p] ? 1 : 0;
  }

  void settle() {
    if (in_reset_) {
      for (unsigned p = 0; p < kPorts; ++p) *rx_[p].tvalid = 0;
    } else {
      drive_ingress();
    }
    top_->ap_clk = 0;
    top_->eval();
    if (trace_) trace_->dump(context_->time());
    context_->timeInc(1);
    for (unsigned p = 0; p < kPorts; ++p) {
      rx_fire_[p] = tx_fire_[p] = false;
      if (in_reset_) continue;
      rx_fire_[p] = *rx_[p].tvalid && *rx_[p].tready;
      tx_fire_[p] = *tx_[p].tvalid && *tx_[p].tready;
      if (*tx_[p].tvalid) last_egress_activity_cycle_ = cycles_;  // stalled counts as busy
      if (tx_fire_[p]) take_egress_beat(p);
    }
  }

  void rising_edge() {
    top_->ap_clk = 1;
    top_->eval();
    if (trace_) trace_->dump(context_->time());
    context_->timeInc(1);
    ++cycles_;
    for (unsigned p = 0; p < kPorts; ++p)
      if (rx_fire_[p]) {
        last_ingress_beat_cycle_ = cycles_;
        const std::size_t beats = (ingress_[p].front().size() + kBeatBytes - 1) / kBeatBytes;
        if (++ingress_beat_[p] == beats) {
          ingress_[p].pop_front();
          ingress_beat_[p] = 0;
        }
      }
  }

  void cycle() {
    settle();
    rising_edge();
  }

  void protocol_error(unsigned port, const std::string& what) {
    ++protocol_errors_;
    last_protocol_error_ = fmt::format("tx_{} at cycle {}: {}", port, cycles_, what);
  }

  void take_egress_beat(unsigned p) {
    const AxisSignals& s = tx_[p];
    const QData keep = *s.tkeep;
    const bool last = *s.tlast;
    // TKEEP must be contiguous from byte 0: keep + 1 is a power of two (or keep is all ones).
    unsigned n = 0;
    if (keep == ~QData{0}) {
      n = 64;
    } else if ((keep & (keep + 1)) == 0) {
      n = static_cast<unsigned>(__builtin_popcountll(keep));
    } else {
      protocol_error(p, fmt::format("TKEEP 0x{:016x} is not contiguous from byte 0", keep));
      n = static_cast<unsigned>(__builtin_popcountll(keep));
    }
    if (!last && n != 64) protocol_error(p, fmt::format("TKEEP 0x{:016x} before TLAST", keep));
    if (last && n == 0) protocol_error(p, "TLAST with an empty TKEEP");
    Partial& f = egress_partial_[p];
    if (f.bytes.empty()) f.first_beat_cycle = cycles_;
    const std::uint32_t* words = s.tdata->data();
    for (unsigned b = 0; b < n; ++b) f.bytes.push_back(std::byte(words[b / 4] >> (8 * (b % 4))));
    if (last) {
      egress_done_.push_back({p, std::move(f.bytes), f.first_beat_cycle, cycles_});
      f.bytes.clear();
    }
  }

  std::string name_;
  std::uint64_t quiet_cycles_;
  std::unique_ptr<VerilatedContext> context_;
  std::unique_ptr<Top> top_;
  std::unique_ptr<VerilatedFstC> trace_;
  std::array<AxisSignals, kPorts> rx_{}, tx_{};
  std::array<std::deque<std::vector<std::byte>>, kPorts> ingress_;
  std::array<std::size_t, kPorts> ingress_beat_{};
  std::array<bool, kPorts> rx_fire_{}, tx_fire_{};
  std::array<bool, kPorts> egress_ready_{};
  std::array<Partial, kPorts> egress_partial_;
  std::vector<EgressFrame> egress_done_;
  bool in_reset_ = false;
  std::uint64_t cycles_ = 0;
  std::uint64_t last_ingress_beat_cycle_ = 0;
  std::uint64_t last_egress_activity_cycle_ = 0;
  std::uint64_t protocol_errors_ = 0;
  std::string last_protocol_error_;
};

}  // namespace netagg::sim
