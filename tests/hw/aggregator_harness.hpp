// A cycle-level testbench around the Verilated RTL top netagg_aggregator (hw/rtl/): frames
// pushed onto ingress ports beat by beat, egress frames collected per port (with AXI4-Stream
// protocol checks), AXI4-Lite CSR transactions that take clock cycles while traffic flows,
// random ingress gaps and egress backpressure, and the aggregator's decisions as it takes them
// (read from the round stage's debug signals), so that the reference model in hls/ can be fed
// exactly the groups the RTL formed. The VerilatedContext belongs to the harness object.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <random>
#include <span>
#include <string>
#include <vector>

// The Verilated model class: Vnetagg_aggregator (default parameters), or another build of the
// same top (e.g. -DNETAGG_TB_MODEL=Vnetagg_aggregator_v for a parameter variant).
#ifndef NETAGG_TB_MODEL
#define NETAGG_TB_MODEL Vnetagg_aggregator
#endif

class VerilatedContext;
class NETAGG_TB_MODEL;

namespace netagg::rtltest {

using Bytes = std::vector<std::byte>;

inline constexpr unsigned kPorts = 4;  // ports the top has (NUM_PORTS of them are used)
using TopModel = NETAGG_TB_MODEL;

struct EgressFrame {
  unsigned port = 0;
  Bytes bytes;
  std::uint64_t first_cycle = 0;  // cycle its first beat left
  std::uint64_t last_cycle = 0;   // cycle its last beat left
};

// Frames the aggregator took in one cycle: `group` the heads decided together (in port order,
// the adder tree's input), `dropped` the heads that failed a check.
struct Taken {
  std::uint64_t cycle = 0;
  std::vector<std::pair<unsigned, Bytes>> group;
  std::vector<std::pair<unsigned, Bytes>> dropped;
};

class Harness {
 public:
  explicit Harness(std::uint64_t seed = 1);
  ~Harness();
  Harness(const Harness&) = delete;
  Harness& operator=(const Harness&) = delete;

  // ap_rst_n low for `cycles` cycles. Frames queued or half sent on ingress are dropped, so are
  // half received egress frames and pending decisions.
  void reset(unsigned cycles = 4);

  void tick();
  void run(std::uint64_t cycles);
  // Ticks until done() or max_cycles; returns done().
  bool run_until(const std::function<bool()>& done, std::uint64_t max_cycles);
  // Ticks until every frame pushed was taken and decided, no egress frame is half out, and
  // nothing (beat in or out, decision) happened for `quiet` cycles. False after max_cycles.
  bool run_until_idle(std::uint64_t quiet = 200, std::uint64_t max_cycles = 2'000'000);
  std::uint64_t cycle() const { return cycle_; }

  // ---- ingress ---------------------------------------------------------------------------
  void push(unsigned port, Bytes frame);
  std::size_t pending(unsigned port) const { return ingress_[port].queue.size(); }
  bool ingress_empty() const;
  // Probability that a port with a beat to send holds TVALID low for a cycle (0 = back to back).
  void set_ingress_gaps(double probability) { gap_probability_ = probability; }
  // Beats taken on a port so far, and cycles with TVALID high but TREADY low.
  std::uint64_t beats_in(unsigned port) const { return ingress_[port].beats_taken; }
  std::uint64_t stalls_in(unsigned port) const { return ingress_[port].stall_cycles; }

  // ---- egress ----------------------------------------------------------------------------
  void set_ready(unsigned port, bool ready) { egress_[port].ready = ready; }
  // Each port's TREADY random each cycle with this probability of being high (< 0: use
  // set_ready's fixed values).
  void set_random_ready(double probability) { ready_probability_ = probability; }
  std::vector<EgressFrame> take_egress();  // completed frames, in the order they completed
  std::size_t egress_count() const { return egress_done_.size(); }
  std::uint64_t protocol_errors() const { return protocol_errors_; }
  const std::string& last_protocol_error() const { return last_protocol_error_; }

  // ---- AXI4-Lite ---------------------------------------------------------------------------
  std::uint32_t csr_read(std::uint32_t address);
  void csr_write(std::uint32_t address, std::uint32_t value, std::uint8_t strobe = 0xF);
  std::uint64_t counter(unsigned index);  // COUNTER_INDEX, COUNTER_LO, COUNTER_HI
  // STATUS.busy polled until clear (throws after max_polls).
  void wait_not_busy(unsigned max_polls = 100000);

  // ---- decisions -----------------------------------------------------------------------------
  std::vector<Taken> take_decisions();
  // Frames in the order their last beat was taken (ports in index order within a cycle).
  std::vector<std::pair<unsigned, Bytes>> take_arrivals();

  TopModel& top() { return *top_; }

 private:
  struct IngressPort {
    std::deque<Bytes> queue;     // frames not yet completely taken (front: the one being sent)
    std::size_t beat = 0;        // next beat of queue.front()
    std::deque<Bytes> accepted;  // taken whole, not yet decided by the aggregator
    std::uint64_t beats_taken = 0, stall_cycles = 0;
    bool gap = false;  // TVALID low this cycle
  };
  struct EgressPort {
    bool ready = true;
    bool ready_now = true;
    Bytes partial;
    std::uint64_t first_cycle = 0;
  };
  enum class Phase { kIdle, kAddress, kResponse };
  struct CsrOp {
    bool write = false;
    Phase phase = Phase::kIdle;
    bool aw_done = false, w_done = false;
    std::uint32_t address = 0, value = 0;
    std::uint8_t strobe = 0xF;
    std::uint32_t result = 0;
  };

  void drive_inputs();
  void sample_and_commit();
  void protocol_error(unsigned port, const std::string& what);

  std::unique_ptr<VerilatedContext> context_;
  std::unique_ptr<TopModel> top_;
  std::mt19937_64 rng_;
  std::uint64_t cycle_ = 0;
  IngressPort ingress_[kPorts];
  EgressPort egress_[kPorts];
  std::vector<EgressFrame> egress_done_;
  std::uint64_t last_activity_cycle_ = 0;  // a beat in or out, or a decision
  double gap_probability_ = 0.0;
  double ready_probability_ = -1.0;
  std::uint64_t protocol_errors_ = 0;
  std::string last_protocol_error_;
  CsrOp csr_;
  std::vector<Taken> decisions_;
  std::vector<std::pair<unsigned, Bytes>> arrivals_;
};

}  // namespace netagg::rtltest
