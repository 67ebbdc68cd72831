// SPDX-License-Identifier: Apache-2.0
// netagg-replay: replays the switch conformance vectors (tests/vectors/switch) against the
// in-process frame-level pipeline (--model) or a switch behind network interfaces (--iface
// PORT=IFNAME ..., AF_PACKET: a BMv2 simple_switch, a Tofino model, netagg-frame-switchd), and
// says which vectors pass. Exit 0: all pass; 1: some fail; 2: bad usage or setup.
#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include "netagg/error.hpp"
#include "raw_ports.hpp"
#include "switch_vectors.hpp"

namespace {

namespace fs = std::filesystem;
namespace sim = netagg::sim;

constexpr int kExitFailed = 1;
constexpr int kExitUsage = 2;

// A switch behind interfaces. It cannot tell outcomes or counters: only frames are compared.
class IfaceTarget : public sim::FrameTarget {
 public:
  IfaceTarget(const std::vector<sim::PortSpec>& ports, std::chrono::milliseconds timeout,
              std::chrono::milliseconds quiet, std::string configure)
      : ports_(ports), timeout_(timeout), quiet_(quiet), configure_(std::move(configure)) {}

  void start(const sim::SwitchVector& v) override {
    for (const auto port : v.ports())
      if (!ports_.has_port(port))
        throw netagg::Error(
            netagg::Errc::kConfig,
            fmt::format("the vector uses switch port {}: give --iface {}=IFNAME", port, port));
    if (!configure_.empty()) {
      // The lines the switch needs, after a reset: simple_switch_CLI < FILE does it on BMv2.
      const fs::path file =
          fs::temp_directory_path() / fmt::format("netagg-replay-{}.bmv2", getpid());
      std::ofstream(file) << "reset_state\n" << v.bmv2;
      setenv("NETAGG_BMV2_FILE", file.c_str(), 1);
      setenv("NETAGG_VECTOR", v.name.c_str(), 1);
      const int status = std::system(configure_.c_str());
      fs::remove(file);
      if (status != 0)
        throw netagg::Error(netagg::Errc::kConfig,
                            fmt::format("--configure '{}' failed (exit status {})", configure_,
                                        WIFEXITED(status) ? WEXITSTATUS(status) : -1));
    }
    ports_.drain();
  }

  std::vector<sim::FrameOut> exchange(std::uint16_t port, std::span<const std::byte> frame,
                                      std::size_t expected) override {
    ports_.send(port, frame);
    std::vector<sim::FrameOut> got;
    const auto deadline = std::chrono::steady_clock::now() + timeout_;
    // The frames the vector expects, each within --timeout-ms of the send; then --quiet-ms in
    // which nothing more may come.
    while (got.size() < expected) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) break;
      if (auto f = receive(left)) got.push_back(std::move(*f));
    }
    while (auto f = receive(quiet_)) got.push_back(std::move(*f));
    return got;
  }

  std::size_t ignored() const { return ignored_; }

 private:
  // IPv6 (router solicitations, MLD, neighbour discovery) is the hosts' own chatter on the
  // links: no vector sends or expects it.
  std::optional<sim::FrameOut> receive(std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      auto f = ports_.receive(std::max(left, std::chrono::milliseconds(0)));
      if (!f) return f;
      if (f->bytes.size() >= 14 && std::uint8_t(f->bytes[12]) == 0x86 &&
          std::uint8_t(f->bytes[13]) == 0xdd) {
        ++ignored_;
        continue;
      }
      return f;
    }
  }

  sim::RawPorts ports_;
  std::chrono::milliseconds timeout_, quiet_;
  std::string configure_;
  std::size_t ignored_ = 0;
};

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "Replays the switch conformance vectors against the frame-level model or a switch on "
      "network interfaces."};
  std::string vectors;
  bool model = false, verbose = false;
  std::vector<std::string> ifaces;
  int timeout_ms = 1000, quiet_ms = 200;
  std::string configure;
  app.add_option("--vectors", vectors, "a folder of *.vec (tests/vectors/switch) or one file")
      ->required();
  auto* model_opt = app.add_flag("--model", model, "replay against the in-process pipeline");
  auto* iface_opt = app.add_option("--iface", ifaces,
                                   "PORT=IFNAME: the interface wired to switch port PORT "
                                   "(repeat for every port the vectors use)");
  model_opt->excludes(iface_opt);
  app.add_option("--timeout-ms", timeout_ms, "--iface: how long to wait for an expected frame")
      ->check(CLI::Range(1, 600000));
  app.add_option("--quiet-ms", quiet_ms,
                 "--iface: how long nothing more may arrive after the expected frames")
      ->check(CLI::Range(0, 600000));
  app.add_option("--configure", configure,
                 "--iface: shell command run before each vector to reset and configure the "
                 "switch; $NETAGG_BMV2_FILE holds 'reset_state' and the vector's "
                 "simple_switch_CLI lines, e.g. 'simple_switch_CLI < $NETAGG_BMV2_FILE'");
  app.add_flag("--verbose", verbose, "print every vector, not only failures");
  bool without_notices = false;
  app.add_flag("--without-notices", without_notices,
               "the switch sends no notices (the Tofino program, the FPGA aggregator): the "
               "vectors' notice frames are not expected");
  CLI11_PARSE(app, argc, argv);
  if (!model && ifaces.empty()) {
    std::fprintf(stderr, "netagg-replay: give --model or --iface PORT=IFNAME ...\n");
    return kExitUsage;
  }

  std::vector<sim::SwitchVector> all;
  std::unique_ptr<sim::FrameTarget> target;
  IfaceTarget* iface = nullptr;
  try {
    all = sim::load_switch_vectors(vectors);
    if (model) {
      target = std::make_unique<sim::ModelTarget>();
    } else {
      std::vector<sim::PortSpec> ports;
      for (const auto& text : ifaces) ports.push_back(sim::parse_port_spec(text));
      auto t = std::make_unique<IfaceTarget>(ports, std::chrono::milliseconds(timeout_ms),
                                             std::chrono::milliseconds(quiet_ms), configure);
      iface = t.get();
      target = std::move(t);
      if (configure.empty() && all.size() > 1)
        std::fprintf(stderr,
                     "netagg-replay: warning: no --configure: the switch keeps its tables and "
                     "registers from one vector to the next\n");
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "netagg-replay: %s\n", e.what());
    return kExitUsage;
  }

  std::size_t failed = 0;
  for (const auto& v : all) {
    const auto r = sim::replay(v, *target, !without_notices);
    if (r.ok()) {
      if (verbose) std::printf("PASS %s (%zu steps)\n", v.name.c_str(), r.steps);
      continue;
    }
    ++failed;
    std::printf("FAIL %s (%s)\n", v.name.c_str(), v.file.c_str());
    for (const auto& f : r.failures) std::printf("  %s\n", f.c_str());
  }
  std::printf("netagg-replay: %zu of %zu vectors passed (%s)\n", all.size() - failed, all.size(),
              model ? "model" : "interfaces");
  if (iface && iface->ignored())
    std::printf("netagg-replay: ignored %zu IPv6 frames of the hosts\n", iface->ignored());
  return failed ? kExitFailed : 0;
}
