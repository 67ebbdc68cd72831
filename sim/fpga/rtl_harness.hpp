// SPDX-License-Identifier: Apache-2.0
// RtlHarness: an FpgaModel around a Verilated top with the aggregator's ports
// (docs/fpga-aggregator.md: ap_clk, ap_rst_n, rx_<i>_* / tx_<i>_* AXI4-Stream for i = 0..3,
// s_axi_control_* AXI4-Lite). One harness for every user of the RTL: netagg-fpgad, the scenario,
// the bench and the tests. A template over the Verilated class, because each Verilated
// configuration of netagg_aggregator (sim/fpga/CMakeLists.txt) is a class of its own, and the
// harness's own tests drive a small stand-in top with the same ports.
//
// One cycle: inputs are set, the model settles with the clock low, handshakes are sampled
// (valid && ready), the rising edge is evaluated, then the queues advance by what fired. The
// harness owns its VerilatedContext (no file-scope statics), so several models can coexist.
//
// The idle fast path (RtlOptions::skip_idle, with the model's symbol table type as the third
// template argument): while no ingress frame is queued, egress TREADY stays put and no CSR access
// runs, the inputs are the same every cycle, so the design's next state is a function of its
// state alone. When one such cycle leaves the whole model state (the symbol table, which holds
// every register and memory) byte for byte as it found it and no egress TVALID is high, every
// further such cycle would do the same: the harness then counts those cycles without evaluating
// them, until an input changes. The RTL has no timers or free-running counters, but a design
// that had one would simply never reach that fixed point. Off with a trace (the waveform keeps
// every cycle), random ingress gaps or random egress TREADY (their random draws are per cycle),
// and observe_rounds.
//
// Beyond FpgaModel, what the RTL tests need to reach corner cases and check them: random gaps in
// ingress TVALID and random egress TREADY, beat and stall counts per port, AXI4-Lite writes with
// byte strobes, an empty frame, TREADY/TVALID of ports the configuration leaves unused, and
// (RtlOptions::observe_rounds) the frames the round stage takes at each clock edge, read from its
// public debug signals, so that a reference model can be fed exactly the groups the RTL formed.
#pragma once

#include <verilated.h>
#include <verilated_fst_c.h>
#include <verilated_sym_props.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cstdint>
#include <cstring>
#include <deque>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "harness.hpp"
#include "netagg/error.hpp"

namespace netagg::sim {

struct RtlOptions {
  std::string name = "rtl";  // for messages and FpgaModel::name()
  std::string trace_fst{};   // an FST waveform of every cycle is written there; "" = none
  // default_quiet_cycles(). The RTL's first result beat leaves about 20 cycles after the last
  // beat of the contribution that completes a round (the adder pipelines, then the slot memory;
  // replication streams without gaps): 64 cover it with room. Too few would not lose results,
  // only delay them to the next batch of netagg-fpgad (sim/fpga/README.md).
  std::uint64_t quiet_cycles = 64;
  // Seeds Verilator's random initial state (the RTL is verilated with --x-initial unique, so a
  // design that relies on power-up zeros fails) and the random ingress gaps and egress TREADY:
  // the same seed repeats a run exactly.
  std::uint64_t seed = 1;
  // Record the frames the round stage takes (take_decisions) and the order frames arrive
  // (take_arrivals). Needs the public debug signals of netagg_aggregator's round stage. The
  // records grow until they are taken, so this is for tests, not for a daemon.
  bool observe_rounds = false;
  // The idle fast path (above); only for a harness given the model's symbol table type.
  bool skip_idle = true;
};

// A frame and the ingress port it came in on.
using PortFrame = std::pair<unsigned, std::vector<std::byte>>;

// Frames the round stage took off the ingress ports at one clock edge: `group` the head frames it
// decided together (in port order, the adder tree's inputs), `dropped` the heads that failed a
// check.
struct RoundDecision {
  std::uint64_t cycle = 0;
  std::vector<PortFrame> group;
  std::vector<PortFrame> dropped;
};

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

// kPorts: the ports the configuration uses (its NUM_PORTS); the top always has four, and the
// harness holds the others idle. Syms: the model's symbol table class (V<prefix>__Syms, from
// V<prefix>__Syms.h), which holds the whole model state; void leaves the idle fast path out.
template <typename Top, unsigned kPorts = 4, typename Syms = void>
class RtlHarness final : public FpgaModel {
 public:
  static constexpr unsigned kTopPorts = 4;
  static_assert(kPorts >= 1 && kPorts <= kTopPorts, "NUM_PORTS is 1..4 on netagg_aggregator");
  static constexpr unsigned kBeatBytes = 64;
  static constexpr unsigned kResetCycles = 8;
  // An AXI4-Lite transaction the device does not answer within this many cycles is an error.
  static constexpr std::uint64_t kCsrTimeoutCycles = 100000;

  explicit RtlHarness(RtlOptions options = {})
      : options_(std::move(options)),
        context_(std::make_unique<VerilatedContext>()),
        rng_(options_.seed) {
    context_->commandArgs(0, static_cast<const char**>(nullptr));
    context_->randReset(2);
    context_->randSeed(static_cast<int>(options_.seed & 0x7FFFFFFF));
    context_->traceEverOn(!options_.trace_fst.empty());
    top_ = std::make_unique<Top>(context_.get(), "netagg");
    rx_ = {NETAGG_AXIS_SIGNALS(*top_, rx, 0), NETAGG_AXIS_SIGNALS(*top_, rx, 1),
           NETAGG_AXIS_SIGNALS(*top_, rx, 2), NETAGG_AXIS_SIGNALS(*top_, rx, 3)};
    tx_ = {NETAGG_AXIS_SIGNALS(*top_, tx, 0), NETAGG_AXIS_SIGNALS(*top_, tx, 1),
           NETAGG_AXIS_SIGNALS(*top_, tx, 2), NETAGG_AXIS_SIGNALS(*top_, tx, 3)};
    if (options_.observe_rounds) find_round_signals();
    if (!options_.trace_fst.empty()) {
      if constexpr (kCanTrace) {
        trace_ = std::make_unique<Trace>();
        top_->trace(trace_.get(), 99);
        trace_->open(options_.trace_fst.c_str());
        if (!trace_->isOpen())
          throw Error(Errc::kConfig,
                      fmt::format("cannot write the FST trace {}", options_.trace_fst));
      } else {
        throw Error(Errc::kUnsupported,
                    fmt::format("{}: this Verilated configuration was built without TRACE_FST",
                                options_.name));
      }
    }
    egress_ready_.fill(true);
    if constexpr (!std::is_void_v<Syms>) {
      if (options_.skip_idle && options_.trace_fst.empty() && !options_.observe_rounds) {
        state_ = reinterpret_cast<const std::byte*>(top_->rootp->vlSymsp);
        snapshot_.resize(sizeof(Syms));
      }
    }
    reset();
  }

  ~RtlHarness() override {
    if (trace_) trace_->close();
    top_->final();
    // Verilator (5.006) unregisters a model's scopes from the calling thread's current context,
    // which is the one constructed last, not necessarily this model's: with several harnesses
    // that can be another's, or one already destroyed. So this one's for the model, and the
    // default context after it (never a destroyed one).
    Verilated::threadContextp(context_.get());
    trace_.reset();
    top_.reset();
    Verilated::threadContextp(Verilated::defaultContextp());
  }

  RtlHarness(const RtlHarness&) = delete;
  RtlHarness& operator=(const RtlHarness&) = delete;

  std::string name() const override { return options_.name; }
  unsigned num_ports() const override { return kPorts; }
  std::uint64_t default_quiet_cycles() const override { return options_.quiet_cycles; }

  // Also forgets the beat and stall counts and what observe_rounds recorded but was not taken.
  void reset() override {
    inputs_changed();
    for (auto& port : ingress_) port = IngressPort{};
    for (auto& f : egress_partial_) f.bytes.clear();
    decisions_.clear();
    arrivals_.clear();
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
    ingress_[port].queue.emplace_back(frame.begin(), frame.end());
    inputs_changed();
  }
  // One beat with TLAST and no TKEEP bit set: a frame no MAC delivers, which the device must
  // still count (as truncated). push_frame refuses it, so that callers that mean a real frame
  // cannot send one by mistake.
  void push_empty_frame(unsigned port) {
    check_port(port);
    ingress_[port].queue.emplace_back();
    inputs_changed();
  }
  std::size_t ingress_pending(unsigned port) const override {
    check_port(port);
    return ingress_[port].queue.size();
  }

  void set_egress_ready(unsigned port, bool ready) override {
    check_port(port);
    egress_ready_[port] = ready;
    inputs_changed();
  }
  bool egress_ready(unsigned port) const override {
    check_port(port);
    return egress_ready_[port];
  }

  // Each cycle, each ingress port with a beat to send holds TVALID low with this probability
  // (0: beats back to back).
  void set_ingress_gaps(double probability) {
    gap_probability_ = probability;
    inputs_changed();
  }
  // Each cycle, each egress port's TREADY is high with this probability; below 0 it follows
  // set_egress_ready.
  void set_random_egress_ready(double probability) {
    ready_probability_ = probability;
    inputs_changed();
  }

  // Beats the port took since the last reset, and cycles it held TREADY low under TVALID.
  std::uint64_t ingress_beats(unsigned port) const {
    check_port(port);
    return ingress_[port].beats;
  }
  std::uint64_t ingress_stalls(unsigned port) const {
    check_port(port);
    return ingress_[port].stalls;
  }
  // rx_<port>_TREADY and tx_<port>_TVALID as of the last evaluation, for any of the top's ports,
  // also those the configuration does not use.
  bool ingress_ready(unsigned port) const { return *rx_.at(port).tready; }
  bool egress_valid(unsigned port) const { return *tx_.at(port).tvalid; }

  void step(std::uint64_t n) override {
    for (std::uint64_t i = 0; i < n; ++i) {
      if (at_fixed_point_) {
        skip(n - i);
        return;
      }
      cycle();
    }
  }
  std::uint64_t cycles() const override { return cycles_; }
  std::uint64_t cycles_skipped() const override { return skipped_; }

  // Runs until done() (checked before every cycle) or max_cycles ran; returns done().
  template <class Done>
  bool run_until(Done&& done, std::uint64_t max_cycles) {
    for (std::uint64_t i = 0; i < max_cycles && !done(); ++i) cycle();
    return done();
  }

  std::vector<EgressFrame> pop_egress() override {
    std::vector<EgressFrame> out;
    out.swap(egress_done_);
    return out;
  }

  // With observe_rounds, idle also means every frame taken in whole was decided, and a decision
  // is activity.
  bool run_until_idle(std::uint64_t quiet_cycles, std::uint64_t max_cycles) override {
    for (std::uint64_t i = 0; i < max_cycles; ++i) {
      if (idle_for(quiet_cycles)) return true;
      if (at_fixed_point_) {
        // Nothing moves any more: the quiet time ends without another cycle evaluated, and a
        // frame half out stays so (then max_cycles run out).
        bool half_out = false;
        for (const Partial& f : egress_partial_) half_out = half_out || !f.bytes.empty();
        const std::uint64_t quiet_left = quiet_cycles - (cycles_ - last_activity_cycle_);
        skip(half_out ? max_cycles - i : std::min(quiet_left, max_cycles - i));
        break;
      }
      cycle();
    }
    return idle_for(quiet_cycles);
  }

  std::uint64_t egress_protocol_errors() const override { return protocol_errors_; }
  std::string last_protocol_error() const override { return last_protocol_error_; }

  // What the round stage decided since the last call, in order (observe_rounds).
  std::vector<RoundDecision> take_decisions() {
    std::vector<RoundDecision> out;
    out.swap(decisions_);
    return out;
  }
  // Frames in the order their last beat was taken, ports in index order within a cycle
  // (observe_rounds).
  std::vector<PortFrame> take_arrivals() {
    std::vector<PortFrame> out;
    out.swap(arrivals_);
    return out;
  }

  std::uint32_t read32(std::uint32_t address) override {
    check_address(address);
    inputs_changed();
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
                                                    options_.name, address, resp));
        return data;
      }
    }
    idle_axi();
    throw Error(Errc::kTransport, fmt::format("{}: CSR read of 0x{:03x} not answered in {} cycles",
                                              options_.name, address, kCsrTimeoutCycles));
  }

  void write32(std::uint32_t address, std::uint32_t value) override {
    write32(address, value, 0xF);
  }
  // A write of the bytes whose WSTRB bit is set (bit b: bits 8b+7..8b).
  void write32(std::uint32_t address, std::uint32_t value, std::uint8_t strobe) {
    check_address(address);
    inputs_changed();
    Top& t = *top_;
    t.s_axi_control_AWADDR = address;
    t.s_axi_control_AWVALID = 1;
    t.s_axi_control_WDATA = value;
    t.s_axi_control_WSTRB = strobe;
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
                                                    options_.name, address, resp));
        return;
      }
    }
    idle_axi();
    throw Error(Errc::kTransport, fmt::format("{}: CSR write of 0x{:03x} not answered in {} cycles",
                                              options_.name, address, kCsrTimeoutCycles));
  }

 private:
  struct IngressPort {
    std::deque<std::vector<std::byte>> queue;      // front: the frame being sent
    std::size_t beat = 0;                          // next beat of queue.front()
    std::deque<std::vector<std::byte>> undecided;  // taken whole, not yet decided (observe_rounds)
    std::uint64_t beats = 0, stalls = 0;
    bool gap = false;  // TVALID held low this cycle
  };
  struct Partial {
    std::vector<std::byte> bytes;
    std::uint64_t first_beat_cycle = 0;
  };

  // A top verilated without TRACE_FST has no trace(); its library then lacks VerilatedFstC too,
  // so the harness must not name it.
  static constexpr bool kCanTrace = requires(Top & t, VerilatedFstC* f) { t.trace(f, 99); };
  struct NoTrace {
    void dump(std::uint64_t) {}
    void close() {}
  };
  using Trace = std::conditional_t<kCanTrace, VerilatedFstC, NoTrace>;

  static std::size_t beats_of(const std::vector<std::byte>& frame) {
    return std::max<std::size_t>(1, (frame.size() + kBeatBytes - 1) / kBeatBytes);
  }

  void check_port(unsigned port) const {
    if (port >= kPorts)
      throw Error(Errc::kInvalidArgument,
                  fmt::format("{}: port {} out of range (the model has {} ports)", options_.name,
                              port, kPorts));
  }
  void check_address(std::uint32_t address) const {
    if (address % 4 != 0)
      throw Error(Errc::kInvalidArgument,
                  fmt::format("CSR address 0x{:x} is not 4-aligned", address));
  }

  // netagg_round's dbg_group_pop and dbg_admit_pop (public_flat_rd in hw/rtl/netagg_round.sv):
  // bit p is set in the cycle port p's head frame leaves for the group or is dropped. Found by
  // name in the model's scope table, so no Verilated configuration needs code of its own.
  void find_round_signals() {
    const std::string scope_name = std::string(top_->name()) + ".netagg_aggregator.u_core.u_round";
    const VerilatedScope* scope = context_->scopeFind(scope_name.c_str());
    const auto find = [&](const char* var) {
      const VerilatedVar* v = scope ? scope->varFind(var) : nullptr;
      if (!v || v->vltype() != VLVT_UINT8)
        throw Error(Errc::kUnsupported,
                    fmt::format("{}: the top has no public {}.{}: observe_rounds needs "
                                "netagg_aggregator's round stage",
                                options_.name, scope_name, var));
      return static_cast<const CData*>(v->datap());
    };
    group_pop_ = find("dbg_group_pop");
    drop_pop_ = find("dbg_admit_pop");
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
    for (const IngressPort& in : ingress_)
      if (!in.queue.empty() || !in.undecided.empty()) return false;
    for (const Partial& f : egress_partial_)
      if (!f.bytes.empty()) return false;
    return cycles_ - last_activity_cycle_ >= quiet;
  }

  // Inputs for the coming cycle: the current beat of each port's first frame, and TREADY.
  void drive_inputs() {
    std::uniform_real_distribution<double> unit(0.0, 1.0);
    for (unsigned p = 0; p < kTopPorts; ++p) {
      const AxisSignals& s = rx_[p];
      std::uint32_t* words = s.tdata->data();
      std::memset(words, 0, kBeatBytes);
      *s.tvalid = 0;
      *s.tlast = 0;
      *s.tkeep = 0;
      *s.tstrb = 0;
      *tx_[p].tready = 1;
      if (p >= kPorts) continue;
      IngressPort& in = ingress_[p];
      in.gap = gap_probability_ > 0 && unit(rng_) < gap_probability_;
      *tx_[p].tready = ready_probability_ >= 0 ? unit(rng_) < ready_probability_ : egress_ready_[p];
      if (in_reset_ || in.queue.empty() || in.gap) continue;
      const std::vector<std::byte>& frame = in.queue.front();
      const std::size_t offset = in.beat * kBeatBytes;
      const std::size_t n = std::min<std::size_t>(kBeatBytes, frame.size() - offset);
      copy_to_words(frame.data() + offset, n, words);
      const QData keep = n == 64 ? ~QData{0} : ((QData{1} << n) - 1);
      *s.tkeep = keep;
      *s.tstrb = keep;
      *s.tlast = in.beat + 1 == beats_of(frame);
      *s.tvalid = 1;
    }
  }

  // The clock low: inputs driven, the model settled, and what the coming edge transfers noted.
  void settle() {
    drive_inputs();
    top_->ap_clk = 0;
    top_->eval();
    if (trace_) trace_->dump(context_->time());
    context_->timeInc(1);
    rx_fire_.fill(false);
    if (in_reset_) return;
    for (unsigned p = 0; p < kPorts; ++p) {
      const AxisSignals& rx = rx_[p];
      rx_fire_[p] = *rx.tvalid && *rx.tready;
      if (*rx.tvalid && !*rx.tready) ++ingress_[p].stalls;
      const AxisSignals& tx = tx_[p];
      if (*tx.tvalid) last_activity_cycle_ = cycles_;  // stalled counts as busy
      if (*tx.tvalid && *tx.tready) take_egress_beat(p);
    }
    if (group_pop_) take_decision();
  }

  // Before the ingress beats of this edge: a frame completing now is decided at a later edge.
  void take_decision() {
    const unsigned group = *group_pop_, dropped = *drop_pop_;
    if ((group | dropped) == 0) return;
    RoundDecision d;
    d.cycle = cycles_;
    for (unsigned p = 0; p < kPorts; ++p) {
      if (((group | dropped) >> p & 1) == 0) continue;
      IngressPort& in = ingress_[p];
      if (in.undecided.empty())
        throw std::logic_error(fmt::format("{}: cycle {}: port {} decided a frame it never took",
                                           options_.name, cycles_, p));
      (group >> p & 1 ? d.group : d.dropped).emplace_back(p, std::move(in.undecided.front()));
      in.undecided.pop_front();
    }
    decisions_.push_back(std::move(d));
    last_activity_cycle_ = cycles_;
  }

  void rising_edge() {
    top_->ap_clk = 1;
    top_->eval();
    if (trace_) trace_->dump(context_->time());
    context_->timeInc(1);
    ++cycles_;
    for (unsigned p = 0; p < kPorts; ++p) {
      if (!rx_fire_[p]) continue;
      IngressPort& in = ingress_[p];
      ++in.beats;
      last_activity_cycle_ = cycles_;
      if (++in.beat < beats_of(in.queue.front())) continue;
      if (group_pop_) {
        arrivals_.emplace_back(p, in.queue.front());
        in.undecided.push_back(std::move(in.queue.front()));
      }
      in.queue.pop_front();
      in.beat = 0;
    }
  }

  // TDATA byte b is bits 8b+7..8b: word b/4, bits 8(b%4)+7..8(b%4). On a little-endian host
  // that is the words' memory order.
  static void copy_to_words(const std::byte* bytes, std::size_t n, std::uint32_t* words) {
    if constexpr (std::endian::native == std::endian::little) {
      std::memcpy(words, bytes, n);
    } else {
      for (std::size_t b = 0; b < n; ++b) words[b / 4] |= std::uint32_t(bytes[b]) << (8 * (b % 4));
    }
  }
  static void copy_from_words(const std::uint32_t* words, std::size_t n, std::byte* bytes) {
    if constexpr (std::endian::native == std::endian::little) {
      std::memcpy(bytes, words, n);
    } else {
      for (std::size_t b = 0; b < n; ++b) bytes[b] = std::byte(words[b / 4] >> (8 * (b % 4)));
    }
  }

  // Something the inputs depend on changed (or the clock ran outside cycle()): the fixed point,
  // if the model was at one, no longer holds.
  void inputs_changed() {
    at_fixed_point_ = false;
    quiet_streak_ = 0;
    next_probe_ = kFirstProbe;
  }

  // Whether this cycle's inputs are the idle ones the fixed point is about: no ingress beat to
  // offer, egress TREADY as set, outside reset, nothing drawn at random.
  bool quiet_inputs() const {
    if (in_reset_ || gap_probability_ > 0 || ready_probability_ >= 0) return false;
    for (const IngressPort& in : ingress_)
      if (!in.queue.empty()) return false;
    return true;
  }
  bool egress_quiet() const {
    for (const AxisSignals& s : tx_)
      if (*s.tvalid) return false;
    return true;
  }

  // Cycles at the fixed point: nothing to evaluate, nothing moves.
  void skip(std::uint64_t n) {
    cycles_ += n;
    skipped_ += n;
  }

  void cycle() {
    if (at_fixed_point_) {
      skip(1);
      return;
    }
    // Probing (a copy and a compare of the model state, about as long as a cycle) starts once
    // the inputs and egress have been quiet for kFirstProbe cycles, then every kProbeInterval
    // cycles while the pipelines drain.
    bool probe = false;
    if (!snapshot_.empty()) {
      if (quiet_inputs() && egress_quiet()) {
        probe = ++quiet_streak_ >= next_probe_;
      } else {
        quiet_streak_ = 0;
        next_probe_ = kFirstProbe;
      }
      if (probe) std::memcpy(snapshot_.data(), state_, snapshot_.size());
    }
    settle();
    rising_edge();
    if (probe) {
      at_fixed_point_ =
          egress_quiet() && std::memcmp(snapshot_.data(), state_, snapshot_.size()) == 0;
      next_probe_ = quiet_streak_ + kProbeInterval;
    }
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
    if (*s.tstrb != keep)
      protocol_error(p,
                     fmt::format("TSTRB 0x{:016x} differs from TKEEP 0x{:016x}", *s.tstrb, keep));
    if (!last && n != 64) protocol_error(p, fmt::format("TKEEP 0x{:016x} before TLAST", keep));
    if (last && n == 0) protocol_error(p, "TLAST with an empty TKEEP");
    Partial& f = egress_partial_[p];
    if (f.bytes.empty()) f.first_beat_cycle = cycles_;
    const std::size_t at = f.bytes.size();
    f.bytes.resize(at + n);
    copy_from_words(s.tdata->data(), n, f.bytes.data() + at);
    if (last) {
      egress_done_.push_back({p, std::move(f.bytes), f.first_beat_cycle, cycles_});
      f.bytes.clear();
    }
  }

  static constexpr std::uint64_t kFirstProbe = 2;
  static constexpr std::uint64_t kProbeInterval = 8;

  RtlOptions options_;
  std::unique_ptr<VerilatedContext> context_;
  std::unique_ptr<Top> top_;
  std::unique_ptr<Trace> trace_;
  std::mt19937_64 rng_;
  std::array<AxisSignals, kTopPorts> rx_{}, tx_{};
  const CData* group_pop_ = nullptr;
  const CData* drop_pop_ = nullptr;
  std::array<IngressPort, kPorts> ingress_;
  std::array<bool, kPorts> rx_fire_{};
  std::array<bool, kPorts> egress_ready_{};
  std::array<Partial, kPorts> egress_partial_;
  std::vector<EgressFrame> egress_done_;
  std::vector<RoundDecision> decisions_;
  std::vector<PortFrame> arrivals_;
  double gap_probability_ = 0.0;
  double ready_probability_ = -1.0;
  bool in_reset_ = false;
  std::uint64_t cycles_ = 0;
  std::uint64_t last_activity_cycle_ = 0;  // a beat in, TVALID out, a decision
  std::uint64_t protocol_errors_ = 0;
  std::string last_protocol_error_;
  // The idle fast path: the model state (empty snapshot_: off), its copy at the start of a probe
  // cycle, and whether the model is at a fixed point of the idle inputs.
  const std::byte* state_ = nullptr;
  std::vector<std::byte> snapshot_;
  bool at_fixed_point_ = false;
  std::uint64_t quiet_streak_ = 0;  // cycles in a row with idle inputs and no egress TVALID
  std::uint64_t next_probe_ = kFirstProbe;
  std::uint64_t skipped_ = 0;
};

}  // namespace netagg::sim
