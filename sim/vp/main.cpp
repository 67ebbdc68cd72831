// SPDX-License-Identifier: Apache-2.0
// netagg-vp: the Alveo card as a SystemC virtual platform (sim/vp/README.md).
//
//   netagg-vp [--kernel-mhz 250] [--dtype fp32] [--elements 256] [--packets 16] ...
//       programs a job through driver/fpga over TLM, all-reduces packets.
//   netagg-vp --mix
//       several jobs at once: fp32, bf16, int32 and header-only packets, 16..1024 elements.
//   netagg-vp --measure [--json FILE]
//       per-port rate against 100 GbE line rate for kernel clocks 250 and 300 MHz and payloads
//       of 16, 64, 256, 1024 fp32 elements and header-only packets; a table, and JSON.
// Every run checks every result against an independently computed sum; the exit status is 0 only
// if all were right.
#include <cstdio>
#include <fstream>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "netagg/error.hpp"
#include "netagg/fpga/control.hpp"
#include "platform.hpp"
#include "run.hpp"
#include "traffic.hpp"

namespace {

using netagg::vp::JobPattern;
using netagg::vp::kPorts;
using netagg::vp::Platform;
using netagg::vp::PlatformConfig;
using netagg::vp::run_in_child;
using netagg::vp::RunOptions;
using netagg::vp::Traffic;
using nlohmann::json;

std::string payload_name(std::uint16_t elements) {
  return elements == 0 ? std::string("header-only") : fmt::format("{}", elements);
}

void print_run(const json& r) {
  fmt::print(
      "results: {} of {} right, {} wrong, {} unexpected; {} kernel cycles, {} CSR "
      "transactions over TLM\n",
      r.value("results_ok", 0), r.value("results_expected", 0), r.value("results_bad", 0),
      r.value("results_unexpected", 0), r.value("kernel_cycles", 0),
      r.value("csr_transactions", 0));
  if (r.contains("device_counters"))
    fmt::print("device counters: {}\n", r["device_counters"].dump());
  for (const auto& e : r.value("errors", json::array()))
    fmt::print("error: {}\n", e.get<std::string>());
  if (r.contains("ports"))
    for (const auto& p : r["ports"])
      if (p.contains("wire_gbps"))
        fmt::print(
            "port {}: {} frames in, {} out, {:.2f} Gb/s on the wire ({:.1f}% of line rate, "
            "±{:.1f}: the measuring window ends on kernel clock edges), {:.3g} elements/s\n",
            p["port"].get<unsigned>(), p["rx_frames"].get<std::uint64_t>(),
            p["tx_frames"].get<std::uint64_t>(), p["wire_gbps"].get<double>(),
            100 * p["line_rate_fraction"].get<double>(),
            100 * p["line_rate_fraction"].get<double>() * p.value("rate_resolution", 0.0),
            p["elements_per_s"].get<double>());
}

int measure(const RunOptions& base, const std::string& json_path, std::uint32_t packets) {
  const std::vector<double> clocks{250.0, 300.0};
  const std::vector<std::uint16_t> payloads{0, 16, 64, 256, 1024};
  json table = json::array();
  bool all_ok = true;
  fmt::print("{:>6} {:>11} {:>7} {:>7} {:>9} {:>8} {:>9} {:>13} {:>12}\n", "kernel", "elements",
             "frame B", "wire B", "min Gb/s", "min %", "mean Gb/s", "elements/s", "cycles/frame");
  for (double mhz : clocks) {
    for (std::uint16_t e : payloads) {
      RunOptions o = base;
      o.platform.kernel_mhz = mhz;
      JobPattern job;
      job.job_id = 1;
      job.workers = kPorts;
      job.slot_base = 0;
      job.slot_count = 64;
      job.dtype = e == 0 ? netagg::wire::DataType::kInt32 : netagg::wire::DataType::kFp32;
      job.elements = e;
      job.packets = packets;
      o.jobs = {job};
      json r = run_in_child(o);
      r["elements"] = e;
      all_ok = all_ok && r.value("ok", false);
      double min_gbps = 1e300, min_frac = 1e300, sum_gbps = 0, sum_eps = 0, cycles = 0;
      std::uint64_t frame_bytes = 0, frame_wire = 0;
      for (const auto& p : r.value("ports", json::array())) {
        if (!p.contains("wire_gbps")) continue;
        min_gbps = std::min(min_gbps, p["wire_gbps"].get<double>());
        min_frac = std::min(min_frac, p["line_rate_fraction"].get<double>());
        sum_gbps += p["wire_gbps"].get<double>() / kPorts;
        sum_eps += p["elements_per_s"].get<double>() / kPorts;
        cycles = std::max(cycles, p["kernel_cycles_per_frame"].get<double>());
        frame_bytes = p["rx_bytes"].get<std::uint64_t>() / p["rx_frames"].get<std::uint64_t>();
        frame_wire = p["rx_wire_bytes"].get<std::uint64_t>() / p["rx_frames"].get<std::uint64_t>();
      }
      fmt::print("{:>6.0f} {:>11} {:>7} {:>7} {:>9.2f} {:>7.1f}% {:>9.2f} {:>13.4g} {:>12.2f}{}\n",
                 mhz, payload_name(e), frame_bytes, frame_wire, min_gbps, 100 * min_frac, sum_gbps,
                 sum_eps, cycles, r.value("ok", false) ? "" : "  (results wrong!)");
      std::fflush(stdout);
      r["summary"] = {{"frame_bytes", frame_bytes},           {"wire_bytes", frame_wire},
                      {"min_port_wire_gbps", min_gbps},       {"min_line_rate_fraction", min_frac},
                      {"mean_port_wire_gbps", sum_gbps},      {"mean_port_elements_per_s", sum_eps},
                      {"max_kernel_cycles_per_frame", cycles}};
      table.push_back(r);
    }
  }
  const json doc = {{"line_gbps", base.platform.mac.line_gbps},
                    {"mac_mhz", base.platform.mac_mhz},
                    {"packets_per_worker", packets},
                    {"runs", table}};
  if (json_path.empty() || json_path == "-") {
    std::cout << doc.dump(2) << "\n";
  } else {
    std::ofstream f(json_path);
    f << doc.dump(2) << "\n";
    if (!f) throw netagg::Error(netagg::Errc::kConfig, fmt::format("cannot write {}", json_path));
    fmt::print("JSON: {}\n", json_path);
  }
  return all_ok ? 0 : 1;
}

}  // namespace

int sc_main(int argc, char** argv) {
  CLI::App app{
      "netagg-vp: the FPGA aggregator's RTL on a SystemC virtual platform of the Alveo "
      "card (four 100 GbE ports, AXI4-Lite over TLM-2.0)"};
  RunOptions o;
  JobPattern job;
  std::string dtype = "fp32";
  bool mix = false, do_measure = false, header_only = false;
  std::string json_path;
  std::uint32_t measure_packets = 128;
  app.add_option("--kernel-mhz", o.platform.kernel_mhz, "kernel clock (MHz): 250 or 300")
      ->default_val(250.0);
  app.add_option("--line-gbps", o.platform.mac.line_gbps, "Ethernet line rate (Gb/s)")
      ->default_val(100.0);
  app.add_option("--dtype", dtype, "fp32, bf16 or int32")->default_val("fp32");
  app.add_option("--elements", job.elements, "elements per packet (1..1024)")->default_val(256);
  app.add_flag("--header-only", header_only,
               "header-only packets (block floating point's "
               "exponents), no payload");
  app.add_option("--packets", job.packets, "packets per worker")->default_val(16);
  app.add_option("--workers", job.workers, "workers (rank r on port r mod 4)")->default_val(4);
  app.add_option("--slots", job.slot_count, "the job's slots")->default_val(32);
  app.add_option("--seed", o.platform.seed, "seed of the data and of the RTL's initial state")
      ->default_val(1);
  app.add_option("--max-cycles", o.max_cycles, "give up after this many kernel cycles")
      ->default_val(5'000'000);
  app.add_flag("--mix", mix,
               "several jobs at once: fp32, bf16, int32, header-only, 16..1024 "
               "elements");
  app.add_flag("--measure", do_measure,
               "the line-rate table: kernel 250 and 300 MHz, payloads "
               "16, 64, 256, 1024 elements and header-only");
  app.add_option("--measure-packets", measure_packets, "packets per worker in each --measure run")
      ->default_val(128);
  app.add_option("--json", json_path, "with --measure: write the JSON there ('-': stdout)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  try {
    netagg::vp::check_config(o.platform);
    if (header_only)
      job.elements = 0;
    else if (job.elements == 0)
      throw netagg::Error(netagg::Errc::kInvalidArgument,
                          "--elements must be 1..1024 (--header-only for no payload)");
    job.dtype = netagg::vp::parse_dtype(dtype);
    if (do_measure) return measure(o, json_path, measure_packets);
    if (mix) {
      using netagg::wire::DataType;
      o.jobs = {
          {.job_id = 1,
           .workers = 4,
           .slot_base = 0,
           .slot_count = 16,
           .dtype = DataType::kFp32,
           .elements = 1024,
           .packets = job.packets},
          {.job_id = 2,
           .workers = 3,
           .slot_base = 16,
           .slot_count = 16,
           .dtype = DataType::kBf16,
           .elements = 100,
           .packets = job.packets},
          {.job_id = 3,
           .workers = 2,
           .slot_base = 32,
           .slot_count = 16,
           .dtype = DataType::kInt32,
           .elements = 16,
           .packets = job.packets},
          {.job_id = 4,
           .workers = 4,
           .slot_base = 48,
           .slot_count = 16,
           .dtype = DataType::kInt32,
           .elements = 0,
           .packets = job.packets},
      };
    } else {
      o.jobs = {job};
    }
    Traffic(o.jobs, o.platform.seed);  // refuses bad jobs before a simulation starts
    const json r = run_in_child(o);
    fmt::print("netagg-vp: kernel {} MHz, MAC {} MHz, {} Gb/s lines, {} job(s)\n",
               o.platform.kernel_mhz, o.platform.mac_mhz, o.platform.mac.line_gbps, o.jobs.size());
    print_run(r);
    fmt::print("verification: {}\n", r.value("ok", false) ? "ok" : "FAILED");
    return r.value("ok", false) ? 0 : 1;
  } catch (const std::exception& e) {
    fmt::print(stderr, "netagg-vp: {}\n", e.what());
    return 2;
  }
}
