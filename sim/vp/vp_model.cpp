// SPDX-License-Identifier: Apache-2.0
#include "vp_model.hpp"

#include <systemc>

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <exception>
#include <span>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "netagg/error.hpp"
#include "platform.hpp"

namespace netagg::vp {
namespace {

// What the host thread is asked to do, and what came of it.
struct Request {
  enum class Kind { kNone, kStep, kRunUntilIdle, kRead, kWrite, kReset };
  Kind kind = Kind::kNone;
  std::uint64_t cycles = 0;  // kStep: cycles; kRunUntilIdle: at most this many
  std::uint64_t quiet = 0;   // kRunUntilIdle
  std::uint32_t address = 0;
  std::uint32_t value = 0;  // kWrite: to write; kRead: what was read
  bool idle = false;        // kRunUntilIdle: whether it became idle
  std::exception_ptr error;
};

class VpModel final : public sim::FpgaModel {
 public:
  explicit VpModel(const VpModelOptions& o) : options_(o) {
    PlatformConfig config;
    config.kernel_mhz = o.kernel_mhz;
    config.mac.line_gbps = o.line_gbps;
    config.seed = o.seed;
    platform_ = std::make_unique<Platform>("vp", config);
    for (unsigned p = 0; p < kPorts; ++p) {
      MacPort& port = platform_->port(p);
      port.set_source([this, p](MacPort::Outgoing& out) {
        std::deque<std::vector<std::byte>>& queue = ingress_[p];
        if (queue.empty()) return false;
        out.bytes = std::move(queue.front());
        out.elements = 0;
        queue.pop_front();
        ++in_mac_[p];
        return true;
      });
      port.set_sink([this, p](std::vector<std::byte> bytes) { take_egress(p, std::move(bytes)); });
    }
    platform_->set_host([this](Platform& platform) { serve(platform); });
    // sc_pause() ends a slice, sc_stop() (at destruction) the simulation: neither is news.
    sc_core::sc_report_handler::set_actions("/OSCI/SystemC", sc_core::SC_INFO,
                                            sc_core::SC_DO_NOTHING);
    egress_ready_.fill(true);
    // Elaboration, the reset, and the host thread's first pause.
    transact(Request{});
  }

  ~VpModel() override {
    try {
      sc_core::sc_stop();
      platform_->finish();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "vp: stopping the simulation: %s\n", e.what());
    }
  }

  VpModel(const VpModel&) = delete;
  VpModel& operator=(const VpModel&) = delete;

  std::string name() const override { return "vp"; }
  unsigned num_ports() const override { return kPorts; }
  std::uint64_t default_quiet_cycles() const override { return options_.quiet_cycles; }

  void reset() override {
    Request r;
    r.kind = Request::Kind::kReset;
    transact(r);
  }

  void push_frame(unsigned port, std::span<const std::byte> frame) override {
    check_port(port);
    if (frame.empty()) throw Error(Errc::kInvalidArgument, "push_frame: empty frame");
    ingress_[port].emplace_back(frame.begin(), frame.end());
  }

  // Queued here, or handed to the link partner and not yet taken whole by the aggregator.
  std::size_t ingress_pending(unsigned port) const override {
    check_port(port);
    const std::uint64_t taken = platform_->port(port).stats().rx_frames - rx_frames_at_reset_[port];
    return ingress_[port].size() + static_cast<std::size_t>(in_mac_[port] - taken);
  }

  void set_egress_ready(unsigned port, bool ready) override {
    check_port(port);
    egress_ready_[port] = ready;
    platform_->port(port).set_tx_paused(!ready);
  }
  bool egress_ready(unsigned port) const override {
    check_port(port);
    return egress_ready_[port];
  }

  void step(std::uint64_t cycles) override {
    if (cycles == 0) return;
    Request r;
    r.kind = Request::Kind::kStep;
    r.cycles = cycles;
    transact(r);
  }
  std::uint64_t cycles() const override { return platform_->kernel_cycles(); }

  std::vector<sim::EgressFrame> pop_egress() override {
    std::vector<sim::EgressFrame> out;
    out.swap(egress_);
    return out;
  }

  bool run_until_idle(std::uint64_t quiet_cycles, std::uint64_t max_cycles) override {
    if (idle_for(quiet_cycles)) return true;  // no need to start the simulation
    Request r;
    r.kind = Request::Kind::kRunUntilIdle;
    r.quiet = quiet_cycles;
    r.cycles = max_cycles;
    return transact(r).idle;
  }

  std::uint64_t egress_protocol_errors() const override {
    std::uint64_t n = 0;
    for (unsigned p = 0; p < kPorts; ++p) n += platform_->port(p).stats().tx_protocol_errors;
    return n;
  }
  std::string last_protocol_error() const override {
    std::string last;
    for (unsigned p = 0; p < kPorts; ++p)
      if (!platform_->port(p).last_tx_protocol_error().empty())
        last = platform_->port(p).last_tx_protocol_error();
    return last;
  }

  std::uint32_t read32(std::uint32_t address) override {
    check_address(address);
    Request r;
    r.kind = Request::Kind::kRead;
    r.address = address;
    return transact(r).value;
  }
  void write32(std::uint32_t address, std::uint32_t value) override {
    check_address(address);
    Request r;
    r.kind = Request::Kind::kWrite;
    r.address = address;
    r.value = value;
    transact(r);
  }

 private:
  void check_port(unsigned port) const {
    if (port >= kPorts)
      throw Error(
          Errc::kInvalidArgument,
          fmt::format("vp: port {} out of range (the platform has {} ports)", port, kPorts));
  }
  static void check_address(std::uint32_t address) {
    if (address % 4 != 0)
      throw Error(Errc::kInvalidArgument,
                  fmt::format("CSR address 0x{:x} is not 4-aligned", address));
  }

  bool idle_for(std::uint64_t quiet) const {
    for (const auto& queue : ingress_)
      if (!queue.empty()) return false;
    return platform_->ports_idle() &&
           platform_->kernel_cycles() - platform_->last_busy_cycle() >= quiet;
  }

  // Hands `r` to the host thread and runs the simulation until the thread has served it.
  Request transact(Request r) {
    request_ = std::move(r);
    served_ = false;
    try {
      sc_core::sc_start();  // the host thread pauses the simulation when done
    } catch (const sc_core::sc_report& e) {
      throw Error(Errc::kTransport, fmt::format("vp: SystemC: {}", e.what()));
    }
    if (!served_)
      throw Error(Errc::kTransport,
                  fmt::format("vp: the simulation stopped (SystemC status {}) before serving a "
                              "request",
                              static_cast<int>(sc_core::sc_get_status())));
    if (request_.error) std::rethrow_exception(request_.error);
    return request_;
  }

  // The host thread (Platform's, from the end of the first reset on): serves one request per
  // slice, then pauses the simulation. The next sc_start() resumes it after wait(SC_ZERO_TIME),
  // with the next request in place.
  void serve(Platform& p) {
    for (;;) {
      try {
        execute(p, request_);
      } catch (...) {
        request_.error = std::current_exception();
      }
      served_ = true;
      sc_core::sc_pause();
      sc_core::wait(sc_core::SC_ZERO_TIME);
    }
  }

  void execute(Platform& p, Request& r) {
    switch (r.kind) {
      case Request::Kind::kNone:
        break;
      case Request::Kind::kStep:
        p.wait_cycles(r.cycles);
        break;
      case Request::Kind::kRunUntilIdle:
        for (std::uint64_t i = 0; i < r.cycles && !idle_for(r.quiet); ++i) p.wait_cycles(1);
        r.idle = idle_for(r.quiet);
        break;
      case Request::Kind::kRead:
        r.value = p.csr().read32(r.address);
        break;
      case Request::Kind::kWrite:
        p.csr().write32(r.address, r.value);
        break;
      case Request::Kind::kReset:
        for (unsigned port = 0; port < kPorts; ++port) {
          ingress_[port].clear();
          in_mac_[port] = 0;
        }
        p.reset();
        for (unsigned port = 0; port < kPorts; ++port)
          rx_frames_at_reset_[port] = p.port(port).stats().rx_frames;
        break;
    }
  }

  // At the MAC clock edge after the frame's last byte left the wire.
  void take_egress(unsigned port, std::vector<std::byte> bytes) {
    const sc_core::sc_time period = platform_->kernel_period();
    const sc_core::sc_time now = sc_core::sc_time_stamp();
    const sc_core::sc_time on_wire(
        static_cast<double>(wire_bytes(bytes.size())) * 8.0 / options_.line_gbps, sc_core::SC_NS);
    sim::EgressFrame f;
    f.port = port;
    f.last_beat_cycle = static_cast<std::uint64_t>(now / period);
    f.first_beat_cycle = on_wire < now ? static_cast<std::uint64_t>((now - on_wire) / period) : 0;
    f.bytes = std::move(bytes);
    egress_.push_back(std::move(f));
  }

  VpModelOptions options_;
  std::unique_ptr<Platform> platform_;
  std::array<std::deque<std::vector<std::byte>>, kPorts> ingress_;
  std::array<std::uint64_t, kPorts> in_mac_{};              // frames the link partners took
  std::array<std::uint64_t, kPorts> rx_frames_at_reset_{};  // rx_frames at the last reset
  std::array<bool, kPorts> egress_ready_{};
  std::vector<sim::EgressFrame> egress_;
  Request request_;
  bool served_ = false;
};

std::atomic<bool> g_made{false};

}  // namespace

std::unique_ptr<sim::FpgaModel> make_vp_model(const VpModelOptions& options) {
  PlatformConfig config;
  config.kernel_mhz = options.kernel_mhz;
  config.mac.line_gbps = options.line_gbps;
  check_config(config);
  if (g_made.exchange(true))
    throw Error(Errc::kUnsupported,
                "vp: SystemC runs one simulation per process, and this process has made its "
                "virtual platform already");
  ::setenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1", /*overwrite=*/0);
  return std::make_unique<VpModel>(options);
}

}  // namespace netagg::vp
