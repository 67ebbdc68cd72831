// SPDX-License-Identifier: Apache-2.0
#include "run.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <stdexcept>

#include <fmt/format.h>

#include "netagg/fpga/control.hpp"
#include "traffic.hpp"

namespace netagg::vp {

using nlohmann::json;

json run_once(const RunOptions& o) {
  Platform platform("vp", o.platform);
  Traffic traffic(o.jobs, o.platform.seed);
  traffic.attach(platform);
  json out;
  std::uint64_t start_cycle = 0, end_cycle = 0;
  bool finished = false;
  platform.run([&](Platform& p) {
    const netagg::fpga::DeviceInfo info = netagg::fpga::read_device_info(p.csr());
    out["device"] = {{"ports", info.num_ports},
                     {"slots", info.slots},
                     {"max_beats", info.max_beats},
                     {"max_jobs", info.max_jobs},
                     {"max_elements", info.max_elements()}};
    traffic.program(p.csr());
    out["csr_transactions"] = p.csr_transactions();
    start_cycle = p.kernel_cycles();
    traffic.start();
    for (std::uint64_t c = 0; c < o.max_cycles && !traffic.done(); c += 64) p.wait_cycles(64);
    finished = traffic.done();
    end_cycle = p.kernel_cycles();
    p.wait_idle(64, 10000);
    // The device's own counts (formats/csr.json), those that are not zero.
    json counters = json::object();
    for (const netagg::fpga::Counter& c : netagg::fpga::read_counters(p.csr()))
      if (c.value != 0) counters[std::string(c.name)] = c.value;
    out["device_counters"] = counters;
    if (o.host_check) o.host_check(p, out["host_check"]);
  });
  const netagg::vp::TrafficReport r = traffic.report();
  out["finished"] = finished;
  out["results_expected"] = r.results_expected;
  out["results_ok"] = r.results_ok;
  out["results_bad"] = r.results_bad;
  out["results_unexpected"] = r.results_unexpected;
  out["errors"] = r.errors;
  out["ok"] = finished && r.ok();
  out["kernel_mhz"] = o.platform.kernel_mhz;
  out["line_gbps"] = o.platform.mac.line_gbps;
  out["kernel_cycles"] = end_cycle - start_cycle;
  json ports = json::array();
  for (unsigned i = 0; i < kPorts; ++i) {
    const netagg::vp::PortStats& s = platform.port(i).stats();
    json j = {{"port", i},
              {"rx_frames", s.rx_frames},
              {"rx_bytes", s.rx_bytes},
              {"rx_wire_bytes", s.rx_wire_bytes},
              {"rx_elements", s.rx_elements},
              {"rx_stall_cycles", s.rx_stall_cycles},
              {"wire_paused_ns", s.wire_paused.to_seconds() * 1e9},
              {"tx_frames", s.tx_frames},
              {"tx_bytes", s.tx_bytes},
              {"tx_protocol_errors", s.tx_protocol_errors},
              {"rx_fifo_high_water", s.rx_fifo_high_water},
              {"tx_fifo_high_water", s.tx_fifo_high_water}};
    if (s.rx_frames >= 2) {
      // Frames completed into the kernel from the first to the last: a steady rate, the
      // start-up (the first frame's latency) left out.
      const double seconds = (s.rx_last_done - s.rx_first_done).to_seconds();
      const double n = static_cast<double>(s.rx_frames - 1);
      const double frame_wire_bits =
          8.0 * static_cast<double>(s.rx_wire_bytes) / static_cast<double>(s.rx_frames);
      const double fps = n / seconds;
      j["frames_per_s"] = fps;
      j["wire_gbps"] = fps * frame_wire_bits / 1e9;  // line rate is line_gbps
      j["line_rate_fraction"] = fps * frame_wire_bits / (o.platform.mac.line_gbps * 1e9);
      // The window's ends fall on kernel clock edges: it is known to one cycle, so the rate
      // (above 100 % by up to this much on a saturated line) to this fraction of itself.
      j["rate_resolution"] = 1.0 / (o.platform.kernel_mhz * 1e6 * seconds);
      j["elements_per_s"] =
          fps * static_cast<double>(s.rx_elements) / static_cast<double>(s.rx_frames);
      j["kernel_cycles_per_frame"] = o.platform.kernel_mhz * 1e6 / fps;
    }
    ports.push_back(j);
  }
  out["ports"] = ports;
  if (!out["ok"].get<bool>() && r.errors.empty() && !finished)
    out["errors"].push_back(
        fmt::format("not all results arrived within {} kernel cycles", o.max_cycles));
  return out;
}

json run_in_child(const RunOptions& o) {
  int fds[2];
  if (pipe(fds) != 0) throw std::runtime_error(fmt::format("pipe: {}", std::strerror(errno)));
  std::fflush(nullptr);
  const pid_t pid = fork();
  if (pid < 0) throw std::runtime_error(fmt::format("fork: {}", std::strerror(errno)));
  if (pid == 0) {
    close(fds[0]);
    std::string text;
    int status = 0;
    try {
      text = run_once(o).dump();
    } catch (const std::exception& e) {
      text = json{{"ok", false}, {"errors", {e.what()}}}.dump();
      status = 1;
    }
    const char* p = text.data();
    std::size_t left = text.size();
    while (left > 0) {
      const ssize_t n = write(fds[1], p, left);
      if (n <= 0) _exit(2);
      p += n;
      left -= static_cast<std::size_t>(n);
    }
    close(fds[1]);
    _exit(status);
  }
  close(fds[1]);
  std::string text;
  char buf[4096];
  for (;;) {
    const ssize_t n = read(fds[0], buf, sizeof buf);
    if (n <= 0) break;
    text.append(buf, static_cast<std::size_t>(n));
  }
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (text.empty())
    throw std::runtime_error(
        fmt::format("the simulation process ended without a result "
                    "(status {})",
                    status));
  return json::parse(text);
}

}  // namespace netagg::vp
