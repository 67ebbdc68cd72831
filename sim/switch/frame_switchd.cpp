// SPDX-License-Identifier: Apache-2.0
// netagg-frame-switchd: the frame-level switch pipeline (sim/switch/pipeline.hpp) on network
// interfaces through AF_PACKET, configured by simple_switch_CLI lines, as a stand-in for a BMv2
// simple_switch: netagg-replay --iface checks its AF_PACKET path against it in CI, and the same
// interfaces and lines then serve a real BMv2.
//
//   netagg-frame-switchd --bmv2 LINES.txt --iface 1=veth1 --iface 2=veth2 ...
//
// stdout: "netagg-frame-switchd: listening on N ports" once ready; the counters at exit.
// SIGINT/SIGTERM: exit 0. Exit 2 on bad configuration (the message names the line or option).
#include <poll.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include "netagg/error.hpp"
#include "raw_ports.hpp"

namespace sim = netagg::sim;

int main(int argc, char** argv) {
  CLI::App app{"The frame-level netagg switch model on network interfaces (AF_PACKET)."};
  std::string lines_file;
  std::vector<std::string> ifaces;
  std::size_t pool_slots = 1024;
  bool quiet = false;
  app.add_option("--bmv2", lines_file, "simple_switch_CLI lines that configure the switch")
      ->required();
  app.add_option("--iface", ifaces, "PORT=IFNAME: switch port PORT is interface IFNAME")
      ->required();
  app.add_option("--slots", pool_slots, "slots in the pool")->check(CLI::Range(1, 65536));
  app.add_flag("--quiet", quiet, "do not print the counters at exit");
  CLI11_PARSE(app, argc, argv);

  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  sigprocmask(SIG_BLOCK, &signals, nullptr);
  const int signal_fd = signalfd(-1, &signals, SFD_CLOEXEC | SFD_NONBLOCK);

  std::unique_ptr<sim::SwitchPipeline> pipeline;
  std::unique_ptr<sim::RawPorts> ports;
  std::vector<std::uint16_t> port_numbers;
  try {
    std::ifstream in(lines_file);
    if (!in) throw netagg::Error(netagg::Errc::kConfig, lines_file + ": cannot open");
    std::stringstream text;
    text << in.rdbuf();
    pipeline = std::make_unique<sim::SwitchPipeline>(sim::parse_bmv2_cli(text.str(), lines_file),
                                                     sim::PipelineLimits{pool_slots});
    std::vector<sim::PortSpec> specs;
    for (const auto& t : ifaces) specs.push_back(sim::parse_port_spec(t));
    for (const auto& s : specs) port_numbers.push_back(s.port);
    ports = std::make_unique<sim::RawPorts>(specs);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "netagg-frame-switchd: %s\n", e.what());
    return 2;
  }
  std::printf("netagg-frame-switchd: listening on %zu ports\n", port_numbers.size());
  std::fflush(stdout);

  std::vector<pollfd> polls;
  for (int fd : ports->fds()) polls.push_back({fd, POLLIN, 0});
  polls.push_back({signal_fd, POLLIN, 0});
  std::uint64_t send_errors = 0;
  for (bool running = true; running;) {
    if (poll(polls.data(), polls.size(), -1) < 0) {
      if (errno == EINTR) continue;
      std::fprintf(stderr, "netagg-frame-switchd: poll: %s\n", std::strerror(errno));
      return 1;
    }
    for (std::size_t i = 0; i + 1 < polls.size(); ++i) {
      if (!(polls[i].revents & POLLIN)) continue;
      while (auto frame = ports->read(i)) {
        for (const auto& out : pipeline->process(frame->port, frame->bytes)) {
          try {
            ports->send(out.port, out.bytes);
          } catch (const std::exception& e) {  // a port without an interface: count, go on
            if (send_errors++ == 0) std::fprintf(stderr, "netagg-frame-switchd: %s\n", e.what());
          }
        }
      }
    }
    if (polls.back().revents & POLLIN) running = false;
  }
  if (!quiet) {
    std::string text = "netagg-frame-switchd: counters (exit):\n";
    for (const auto& [name, value] : pipeline->counters())
      text += fmt::format("  {:<34} {}\n", name, value);
    text += fmt::format("  {:<34} {}\n", "send_errors", send_errors);
    std::fputs(text.c_str(), stdout);
  }
  return 0;
}
