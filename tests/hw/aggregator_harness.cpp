#include "aggregator_harness.hpp"

#include <stdexcept>

#include <fmt/format.h>

#ifndef NETAGG_TB_MODEL_HEADER
#define NETAGG_TB_MODEL_HEADER "Vnetagg_aggregator.h"
#define NETAGG_TB_ROOT_HEADER "Vnetagg_aggregator___024root.h"
#endif
#include NETAGG_TB_MODEL_HEADER
#include NETAGG_TB_ROOT_HEADER
#include "netagg/fpga_csr.hpp"
#include "verilated.h"

namespace netagg::rtltest {
namespace {

constexpr unsigned kBeatBytes = 64;
constexpr std::uint64_t kCsrTimeout = 1'000'000;  // cycles an AXI4-Lite transaction may take

// The top's per-port signals by index (the names are spelled out in the RTL).
VlWide<16>& rx_data(TopModel& t, unsigned p) {
  switch (p) {
    case 0:
      return t.rx_0_TDATA;
    case 1:
      return t.rx_1_TDATA;
    case 2:
      return t.rx_2_TDATA;
    default:
      return t.rx_3_TDATA;
  }
}
QData& rx_keep(TopModel& t, unsigned p) {
  switch (p) {
    case 0:
      return t.rx_0_TKEEP;
    case 1:
      return t.rx_1_TKEEP;
    case 2:
      return t.rx_2_TKEEP;
    default:
      return t.rx_3_TKEEP;
  }
}
QData& rx_strb(TopModel& t, unsigned p) {
  switch (p) {
    case 0:
      return t.rx_0_TSTRB;
    case 1:
      return t.rx_1_TSTRB;
    case 2:
      return t.rx_2_TSTRB;
    default:
      return t.rx_3_TSTRB;
  }
}
CData& rx_last(TopModel& t, unsigned p) {
  switch (p) {
    case 0:
      return t.rx_0_TLAST;
    case 1:
      return t.rx_1_TLAST;
    case 2:
      return t.rx_2_TLAST;
    default:
      return t.rx_3_TLAST;
  }
}
CData& rx_valid(TopModel& t, unsigned p) {
  switch (p) {
    case 0:
      return t.rx_0_TVALID;
    case 1:
      return t.rx_1_TVALID;
    case 2:
      return t.rx_2_TVALID;
    default:
      return t.rx_3_TVALID;
  }
}
CData& rx_ready(TopModel& t, unsigned p) {
  switch (p) {
    case 0:
      return t.rx_0_TREADY;
    case 1:
      return t.rx_1_TREADY;
    case 2:
      return t.rx_2_TREADY;
    default:
      return t.rx_3_TREADY;
  }
}
VlWide<16>& tx_data(TopModel& t, unsigned p) {
  switch (p) {
    case 0:
      return t.tx_0_TDATA;
    case 1:
      return t.tx_1_TDATA;
    case 2:
      return t.tx_2_TDATA;
    default:
      return t.tx_3_TDATA;
  }
}
QData& tx_keep(TopModel& t, unsigned p) {
  switch (p) {
    case 0:
      return t.tx_0_TKEEP;
    case 1:
      return t.tx_1_TKEEP;
    case 2:
      return t.tx_2_TKEEP;
    default:
      return t.tx_3_TKEEP;
  }
}
QData& tx_strb(TopModel& t, unsigned p) {
  switch (p) {
    case 0:
      return t.tx_0_TSTRB;
    case 1:
      return t.tx_1_TSTRB;
    case 2:
      return t.tx_2_TSTRB;
    default:
      return t.tx_3_TSTRB;
  }
}
CData& tx_last(TopModel& t, unsigned p) {
  switch (p) {
    case 0:
      return t.tx_0_TLAST;
    case 1:
      return t.tx_1_TLAST;
    case 2:
      return t.tx_2_TLAST;
    default:
      return t.tx_3_TLAST;
  }
}
CData& tx_valid(TopModel& t, unsigned p) {
  switch (p) {
    case 0:
      return t.tx_0_TVALID;
    case 1:
      return t.tx_1_TVALID;
    case 2:
      return t.tx_2_TVALID;
    default:
      return t.tx_3_TVALID;
  }
}
CData& tx_ready(TopModel& t, unsigned p) {
  switch (p) {
    case 0:
      return t.tx_0_TREADY;
    case 1:
      return t.tx_1_TREADY;
    case 2:
      return t.tx_2_TREADY;
    default:
      return t.tx_3_TREADY;
  }
}

// Beat `b` of a frame: its bytes in TDATA (byte 0 in bits 7:0) and TKEEP. An empty frame is one
// beat with TKEEP 0.
std::size_t beat_count(const Bytes& frame) {
  return frame.empty() ? 1 : (frame.size() + kBeatBytes - 1) / kBeatBytes;
}

void load_beat(const Bytes& frame, std::size_t b, VlWide<16>& data, QData& keep) {
  for (int w = 0; w < 16; ++w) data[w] = 0;
  const std::size_t begin = b * kBeatBytes;
  const std::size_t len =
      frame.size() > begin ? std::min<std::size_t>(kBeatBytes, frame.size() - begin) : 0;
  for (std::size_t i = 0; i < len; ++i)
    data[i / 4] |= static_cast<std::uint32_t>(frame[begin + i]) << (8 * (i % 4));
  keep = len == 64 ? ~QData{0} : ((QData{1} << len) - 1);
}

}  // namespace

Harness::Harness(std::uint64_t seed) : context_(std::make_unique<VerilatedContext>()), rng_(seed) {
  context_->randReset(2);  // uninitialised state random (with --x-initial unique)
  context_->randSeed(static_cast<int>(seed & 0x7FFFFFFF));
  top_ = std::make_unique<TopModel>(context_.get(), "top");
  top_->ap_clk = 0;
  top_->ap_rst_n = 0;
  top_->eval();
  reset();
}

Harness::~Harness() { top_->final(); }

void Harness::reset(unsigned cycles) {
  for (auto& port : ingress_) port = IngressPort{};
  for (auto& port : egress_) {
    port.partial.clear();
  }
  csr_ = CsrOp{};
  decisions_.clear();
  arrivals_.clear();
  top_->ap_rst_n = 0;
  for (unsigned i = 0; i < cycles; ++i) tick();
  top_->ap_rst_n = 1;
  for (auto& port : egress_) port.partial.clear();
  decisions_.clear();
  arrivals_.clear();
}

bool Harness::ingress_empty() const {
  for (const auto& port : ingress_)
    if (!port.queue.empty()) return false;
  return true;
}

void Harness::push(unsigned port, Bytes frame) {
  if (port >= kPorts) throw std::invalid_argument(fmt::format("no ingress port {}", port));
  ingress_[port].queue.push_back(std::move(frame));
}

void Harness::drive_inputs() {
  TopModel& t = *top_;
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  for (unsigned p = 0; p < kPorts; ++p) {
    IngressPort& in = ingress_[p];
    in.gap = gap_probability_ > 0 && unit(rng_) < gap_probability_;
    const bool have = !in.queue.empty() && !in.gap && top_->ap_rst_n;
    if (have) {
      const Bytes& frame = in.queue.front();
      load_beat(frame, in.beat, rx_data(t, p), rx_keep(t, p));
      rx_strb(t, p) = rx_keep(t, p);
      rx_last(t, p) = in.beat + 1 == beat_count(frame);
    } else {
      for (int w = 0; w < 16; ++w) rx_data(t, p)[w] = 0;
      rx_keep(t, p) = 0;
      rx_strb(t, p) = 0;
      rx_last(t, p) = 0;
    }
    rx_valid(t, p) = have;
    EgressPort& out = egress_[p];
    out.ready_now = ready_probability_ >= 0 ? unit(rng_) < ready_probability_ : out.ready;
    tx_ready(t, p) = out.ready_now;
  }
  // AXI4-Lite master
  t.s_axi_control_AWVALID = csr_.phase == Phase::kAddress && csr_.write && !csr_.aw_done;
  t.s_axi_control_WVALID = csr_.phase == Phase::kAddress && csr_.write && !csr_.w_done;
  t.s_axi_control_AWADDR = csr_.address;
  t.s_axi_control_WDATA = csr_.value;
  t.s_axi_control_WSTRB = csr_.strobe;
  t.s_axi_control_BREADY = csr_.phase == Phase::kResponse && csr_.write;
  t.s_axi_control_ARVALID = csr_.phase == Phase::kAddress && !csr_.write;
  t.s_axi_control_ARADDR = csr_.address;
  t.s_axi_control_RREADY = csr_.phase == Phase::kResponse && !csr_.write;
}

void Harness::protocol_error(unsigned port, const std::string& what) {
  ++protocol_errors_;
  last_protocol_error_ = fmt::format("egress port {} cycle {}: {}", port, cycle_, what);
}

// Called with the clock low and the inputs settled: what the rising edge will transfer.
void Harness::sample_and_commit() {
  TopModel& t = *top_;
  const bool running = top_->ap_rst_n;
  bool rx_take[kPorts] = {};
  for (unsigned p = 0; p < kPorts; ++p) {
    IngressPort& in = ingress_[p];
    if (rx_valid(t, p) && rx_ready(t, p)) rx_take[p] = true;
    if (rx_valid(t, p) && !rx_ready(t, p)) ++in.stall_cycles;
  }
  // Egress beats.
  for (unsigned p = 0; p < kPorts && running; ++p) {
    EgressPort& out = egress_[p];
    if (!(tx_valid(t, p) && tx_ready(t, p))) continue;
    const QData keep = tx_keep(t, p);
    if (tx_strb(t, p) != keep) protocol_error(p, "TSTRB differs from TKEEP");
    unsigned n = 0;
    while (n < 64 && ((keep >> n) & 1)) ++n;
    if (n < 64 && (keep >> n) != 0) protocol_error(p, "TKEEP not contiguous from byte 0");
    const bool last = tx_last(t, p);
    if (!last && n != 64) protocol_error(p, "partial TKEEP on a beat that is not the last");
    if (last && n == 0) protocol_error(p, "empty last beat");
    if (out.partial.empty()) out.first_cycle = cycle_;
    for (unsigned i = 0; i < n; ++i)
      out.partial.push_back(std::byte((tx_data(t, p)[i / 4] >> (8 * (i % 4))) & 0xFF));
    last_activity_cycle_ = cycle_;
    if (last) {
      egress_done_.push_back({p, std::move(out.partial), out.first_cycle, cycle_});
      out.partial.clear();
    }
  }
  // Decisions the round stage makes at this edge.
  if (running) {
    const auto& root = *t.rootp;
    const unsigned group = root.netagg_aggregator__DOT__u_core__DOT__u_round__DOT__dbg_group_pop;
    const unsigned admit = root.netagg_aggregator__DOT__u_core__DOT__u_round__DOT__dbg_admit_pop;
    if (group || admit) {
      Taken taken;
      taken.cycle = cycle_;
      for (unsigned p = 0; p < kPorts; ++p) {
        if (!((group | admit) >> p & 1)) continue;
        IngressPort& in = ingress_[p];
        if (in.accepted.empty())
          throw std::logic_error(
              fmt::format("cycle {}: port {} decided a frame it never took", cycle_, p));
        auto& list = (group >> p & 1) ? taken.group : taken.dropped;
        list.emplace_back(p, std::move(in.accepted.front()));
        in.accepted.pop_front();
      }
      decisions_.push_back(std::move(taken));
      last_activity_cycle_ = cycle_;
    }
  }
  // Ingress beats (after the decisions: a frame completing now is decided later).
  for (unsigned p = 0; p < kPorts; ++p) {
    if (!rx_take[p]) continue;
    IngressPort& in = ingress_[p];
    ++in.beats_taken;
    last_activity_cycle_ = cycle_;
    if (++in.beat == beat_count(in.queue.front())) {
      arrivals_.emplace_back(p, in.queue.front());
      in.accepted.push_back(std::move(in.queue.front()));
      in.queue.pop_front();
      in.beat = 0;
    }
  }
  // AXI4-Lite handshakes.
  if (csr_.phase == Phase::kAddress) {
    if (csr_.write) {
      if (t.s_axi_control_AWVALID && t.s_axi_control_AWREADY) csr_.aw_done = true;
      if (t.s_axi_control_WVALID && t.s_axi_control_WREADY) csr_.w_done = true;
      if (csr_.aw_done && csr_.w_done) csr_.phase = Phase::kResponse;
    } else if (t.s_axi_control_ARVALID && t.s_axi_control_ARREADY) {
      csr_.phase = Phase::kResponse;
    }
  } else if (csr_.phase == Phase::kResponse) {
    if (csr_.write && t.s_axi_control_BVALID) {
      if (t.s_axi_control_BRESP != 0) throw std::runtime_error("AXI4-Lite write: BRESP not OKAY");
      csr_.phase = Phase::kIdle;
    } else if (!csr_.write && t.s_axi_control_RVALID) {
      if (t.s_axi_control_RRESP != 0) throw std::runtime_error("AXI4-Lite read: RRESP not OKAY");
      csr_.result = t.s_axi_control_RDATA;
      csr_.phase = Phase::kIdle;
    }
  }
}

void Harness::tick() {
  drive_inputs();
  top_->ap_clk = 0;
  top_->eval();
  sample_and_commit();
  top_->ap_clk = 1;
  top_->eval();
  context_->timeInc(1);
  ++cycle_;
}

void Harness::run(std::uint64_t cycles) {
  for (std::uint64_t i = 0; i < cycles; ++i) tick();
}

bool Harness::run_until(const std::function<bool()>& done, std::uint64_t max_cycles) {
  for (std::uint64_t i = 0; i < max_cycles && !done(); ++i) tick();
  return done();
}

bool Harness::run_until_idle(std::uint64_t quiet, std::uint64_t max_cycles) {
  return run_until(
      [&] {
        if (!ingress_empty()) return false;
        for (const auto& port : ingress_)
          if (!port.accepted.empty()) return false;
        for (const auto& port : egress_)
          if (!port.partial.empty()) return false;
        return cycle_ >= last_activity_cycle_ + quiet;
      },
      max_cycles);
}

std::vector<EgressFrame> Harness::take_egress() {
  std::vector<EgressFrame> out;
  out.swap(egress_done_);
  return out;
}

std::vector<Taken> Harness::take_decisions() {
  std::vector<Taken> out;
  out.swap(decisions_);
  return out;
}

std::vector<std::pair<unsigned, Bytes>> Harness::take_arrivals() {
  std::vector<std::pair<unsigned, Bytes>> out;
  out.swap(arrivals_);
  return out;
}

std::uint32_t Harness::csr_read(std::uint32_t address) {
  csr_ = CsrOp{};
  csr_.write = false;
  csr_.phase = Phase::kAddress;
  csr_.address = address;
  if (!run_until([&] { return csr_.phase == Phase::kIdle; }, kCsrTimeout))
    throw std::runtime_error(fmt::format("AXI4-Lite read of 0x{:03x} timed out", address));
  return csr_.result;
}

void Harness::csr_write(std::uint32_t address, std::uint32_t value, std::uint8_t strobe) {
  csr_ = CsrOp{};
  csr_.write = true;
  csr_.phase = Phase::kAddress;
  csr_.address = address;
  csr_.value = value;
  csr_.strobe = strobe;
  if (!run_until([&] { return csr_.phase == Phase::kIdle; }, kCsrTimeout))
    throw std::runtime_error(fmt::format("AXI4-Lite write of 0x{:03x} timed out", address));
}

std::uint64_t Harness::counter(unsigned index) {
  namespace csr = netagg::fpga::csr;
  csr_write(csr::kCounterIndex, index);
  const std::uint64_t lo = csr_read(csr::kCounterLo);
  const std::uint64_t hi = csr_read(csr::kCounterHi);
  return hi << 32 | lo;
}

void Harness::wait_not_busy(unsigned max_polls) {
  namespace csr = netagg::fpga::csr;
  for (unsigned i = 0; i < max_polls; ++i)
    if ((csr_read(csr::kStatus) & 1) == 0) return;
  throw std::runtime_error("STATUS.busy did not clear");
}

}  // namespace netagg::rtltest
