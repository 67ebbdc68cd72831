// SPDX-License-Identifier: Apache-2.0
// HlsModelAdapter: the HLS C++ aggregator (hls/, through its byte-level ReferenceModel) behind
// the FpgaModel interface, so netagg-fpgad and the tests drive it like the RTL.
//
// The C model is transaction level: it takes whole frames and answers with whole frames. The
// adapter groups frames as the kernel's free-running loop does (the head frame of every port
// that has one, processed together: the adder tree combines those that meet in one slot), and
// keeps a cycle count of the beats that would move: a group takes as many cycles as its longest
// frame has beats, an egress frame as many as it has beats on its port. Egress backpressure
// holds result frames back on their port (the C model has no stall); CSR accesses take no time
// and STATUS never reads busy (the model clears slots within the access).
#include <algorithm>
#include <deque>

#include <fmt/format.h>

#include "harness.hpp"
#include "netagg/error.hpp"
#include "netagg_hls/reference.hpp"

namespace netagg::sim {
namespace {

using Reference = fpga::ReferenceModel<fpga::DefaultParams>;
constexpr unsigned kPorts = Reference::kNumPorts;

std::uint64_t beats_of(std::size_t bytes) { return std::max<std::uint64_t>(1, (bytes + 63) / 64); }

class HlsModelAdapter final : public FpgaModel {
 public:
  HlsModelAdapter() : model_(std::make_unique<Reference>()) { egress_ready_.fill(true); }

  std::string name() const override { return "hls"; }
  unsigned num_ports() const override { return kPorts; }
  std::uint64_t default_quiet_cycles() const override { return 0; }

  void reset() override {
    model_->reset();
    for (auto& q : ingress_) q.clear();
    for (auto& q : egress_held_) q.clear();
    cycles_ += 8;
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

  // Processes groups until `n` cycles are used up (a group is not split: it may overrun).
  void step(std::uint64_t n) override {
    const std::uint64_t end = cycles_ + n;
    while (cycles_ < end) {
      if (!process_one_group()) {
        cycles_ = end;
        break;
      }
    }
    release_egress();
  }
  std::uint64_t cycles() const override { return cycles_; }

  std::vector<EgressFrame> pop_egress() override {
    release_egress();
    std::vector<EgressFrame> out;
    out.swap(egress_done_);
    std::stable_sort(out.begin(), out.end(), [](const EgressFrame& a, const EgressFrame& b) {
      return a.last_beat_cycle < b.last_beat_cycle;
    });
    return out;
  }

  bool run_until_idle(std::uint64_t /*quiet_cycles*/, std::uint64_t max_cycles) override {
    const std::uint64_t end = cycles_ + max_cycles;
    while (cycles_ < end && process_one_group()) {
    }
    release_egress();
    for (unsigned p = 0; p < kPorts; ++p)
      if (!ingress_[p].empty() || !egress_held_[p].empty()) return false;
    return true;
  }

  std::uint64_t egress_protocol_errors() const override { return 0; }
  std::string last_protocol_error() const override { return ""; }

  std::uint32_t read32(std::uint32_t address) override {
    check_address(address);
    return model_->csr_read(address);
  }
  void write32(std::uint32_t address, std::uint32_t value) override {
    check_address(address);
    model_->csr_write(address, value);
  }

 private:
  void check_port(unsigned port) const {
    if (port >= kPorts)
      throw Error(Errc::kInvalidArgument,
                  fmt::format("hls: port {} out of range (the model has {} ports)", port, kPorts));
  }
  static void check_address(std::uint32_t address) {
    if (address % 4 != 0)
      throw Error(Errc::kInvalidArgument,
                  fmt::format("CSR address 0x{:x} is not 4-aligned", address));
  }

  // The head frame of every port that has one, as one group. False if there was none.
  bool process_one_group() {
    std::vector<fpga::RxFrame> group;
    std::uint64_t beats = 0;
    for (unsigned p = 0; p < kPorts; ++p)
      if (!ingress_[p].empty()) {
        beats = std::max(beats, beats_of(ingress_[p].front().size()));
        group.push_back({p, std::move(ingress_[p].front())});
        ingress_[p].pop_front();
      }
    if (group.empty()) return false;
    cycles_ += beats;
    for (fpga::TxFrame& f : model_->process_group(group))
      egress_held_[f.port].push_back({f.port, std::move(f.bytes), 0, 0});
    return true;
  }

  // Result frames leave their port one after the other while the port is ready.
  void release_egress() {
    for (unsigned p = 0; p < kPorts; ++p) {
      if (!egress_ready_[p]) continue;
      std::uint64_t at = std::max(cycles_, port_free_at_[p]);
      for (EgressFrame& f : egress_held_[p]) {
        f.first_beat_cycle = at;
        at += beats_of(f.bytes.size());
        f.last_beat_cycle = at - 1;
        egress_done_.push_back(std::move(f));
      }
      port_free_at_[p] = at;
      egress_held_[p].clear();
    }
  }

  std::unique_ptr<Reference> model_;
  std::array<std::deque<std::vector<std::byte>>, kPorts> ingress_;
  std::array<std::deque<EgressFrame>, kPorts> egress_held_;
  std::array<bool, kPorts> egress_ready_{};
  std::array<std::uint64_t, kPorts> port_free_at_{};
  std::vector<EgressFrame> egress_done_;
  std::uint64_t cycles_ = 0;
};

}  // namespace

std::unique_ptr<FpgaModel> make_hls_model_impl() { return std::make_unique<HlsModelAdapter>(); }

}  // namespace netagg::sim
