// SPDX-License-Identifier: Apache-2.0
// Throughput and latency of the FPGA aggregator in simulation, in clock cycles: back-to-back
// contributions on every ingress port (one worker per port, all sending the same chunks, as the
// workers of a data-parallel job do), and one round on an idle device. Cycle counts are exact
// properties of the RTL (deterministic simulation); the wall-clock figure is the simulator's.
//
// With --baseline (the RTL only), the simulator's speed is also measured on the traced Verilator
// build (RtlBuild::kTraced: the options netagg-fpgad ran before the fast build), in the same run,
// the two interleaved --repeat times, and the ratio reported: once for the back-to-back traffic
// (every cycle busy) and once for traffic in rounds as netagg-fpgad feeds it (a round's
// contributions, then the model run until idle: 64 quiet cycles).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <vector>

#include <fmt/format.h>
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "harness.hpp"
#include "netagg/codec.hpp"
#include "netagg/error.hpp"
#include "netagg/exact.hpp"
#include "netagg/fpga/control.hpp"
#include "netagg/wire.hpp"

namespace {

using namespace netagg;

std::vector<std::byte> contribution(const JobSpec& job, unsigned rank, std::uint64_t p,
                                    std::uint16_t count, wire::DataType dtype) {
  wire::Header h;
  h.type = wire::MsgType::kContribution;
  h.dtype = dtype;
  h.job_id = job.job_id;
  h.rank = static_cast<std::uint16_t>(rank);
  h.slot = static_cast<std::uint16_t>(job.slot_base + p % job.slot_count);
  h.set = static_cast<std::uint8_t>((p / job.slot_count) % 2);
  h.seq = static_cast<std::uint32_t>(p);
  h.count = count;
  // fp32_exact: every element below 2^11 ((rank + 1) * (i + 6) <= 4 * 261), the scale 11
  if (dtype == wire::DataType::kFp32Exact) h.exponent = exact::pack_exponents(11, 10);
  std::vector<std::byte> packet(h.packet_size());
  wire::encode_header(h, packet);
  std::vector<float> values(count);
  for (std::size_t i = 0; i < count; ++i) values[i] = static_cast<float>((rank + 1) * (i + p % 7));
  if (dtype == wire::DataType::kFp32 || dtype == wire::DataType::kFp32Exact)
    codec::store_be(std::span<const float>(values), packet.data() + wire::kHeaderSize);
  else
    for (std::size_t i = 0; i < count; ++i)
      wire::store_be32(packet.data() + wire::kHeaderSize + 4 * i,
                       static_cast<std::uint32_t>(static_cast<std::int32_t>(values[i])));
  wire::FrameAddress a;
  a.src_ip = job.workers[rank].address.ip;
  a.src_port = job.workers[rank].address.port;
  a.dst_ip = 0x7F000001;
  a.dst_port = wire::kUdpPort;
  a.src_mac = fpga::worker_mac(job.workers[rank]);
  std::vector<std::byte> frame(wire::kFrameOverhead + packet.size());
  frame.resize(wire::encode_frame(a, packet, frame));
  return frame;
}

bool all_ingress_empty(sim::FpgaModel& m) {
  for (unsigned port = 0; port < m.num_ports(); ++port)
    if (m.ingress_pending(port) != 0) return false;
  return true;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

struct Setup {
  std::unique_ptr<sim::FpgaModel> model;
  JobSpec job;
  unsigned ports = 0;
};

Setup make_setup(const std::function<std::unique_ptr<sim::FpgaModel>()>& make,
                 std::uint16_t& elements) {
  Setup s;
  s.model = make();
  const fpga::DeviceInfo info = fpga::read_device_info(*s.model);
  if (elements == 0) elements = static_cast<std::uint16_t>(info.max_elements());
  s.ports = info.num_ports;
  s.job = make_local_job(1, static_cast<std::uint16_t>(s.ports), 31000, 0,
                         static_cast<std::uint16_t>(info.slots), elements,
                         Endpoint{0x7F000001, wire::kUdpPort});
  for (auto& w : s.job.workers) w.switch_port = w.rank;  // one worker per port
  fpga::program_job(*s.model, s.job, 0, fpga::AggregatorAddress{});
  return s;
}

// Every result frame decodes with the full element count; returns how many there were.
std::size_t check_results(sim::FpgaModel& m, std::uint16_t elements) {
  std::size_t results = 0;
  for (const auto& f : m.pop_egress()) {
    const auto d = wire::decode_frame(f.bytes, 0);  // results go to the worker's port
    if (!d || d.packet.header.count != elements)
      throw Error(Errc::kTransport, fmt::format("a bad result frame: {}", wire::error_id(d.error)));
    ++results;
  }
  return results;
}

struct Throughput {
  std::uint64_t ingress_cycles = 0;
  std::uint64_t total_cycles = 0;
  std::uint64_t skipped_cycles = 0;
  double seconds = 0;
  std::size_t results = 0;
  std::int64_t latency = 0;
  std::uint64_t protocol_errors = 0;
  std::string name;
  unsigned ports = 0;
  double cycles_per_second() const { return static_cast<double>(total_cycles) / seconds; }
};

// The end of a measured run that began at cycle `start` (`skipped_before` cycles skipped by then)
// and wall time `wall_start`: its time, cycles, results and protocol errors into `t`.
void finish(Throughput& t, sim::FpgaModel& model, std::uint64_t start, std::uint64_t skipped_before,
            std::chrono::steady_clock::time_point wall_start, std::uint16_t elements) {
  t.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  t.total_cycles = model.cycles() - start;
  t.skipped_cycles = model.cycles_skipped() - skipped_before;
  t.results = check_results(model, elements);
  t.protocol_errors = model.egress_protocol_errors();
}

// Latency (one round on an idle device), then `packets` contributions per port queued back to
// back on every port at once.
Throughput back_to_back(const std::function<std::unique_ptr<sim::FpgaModel>()>& make,
                        std::uint16_t& elements, unsigned packets, wire::DataType dtype) {
  Setup s = make_setup(make, elements);
  sim::FpgaModel& model = *s.model;
  Throughput t;
  t.name = model.name();
  t.ports = s.ports;
  // Latency: from the cycle the last contribution's last beat entered to the cycle the first
  // result beat left.
  for (unsigned r = 0; r < s.ports; ++r)
    model.push_frame(r, contribution(s.job, r, 0, elements, dtype));
  while (!all_ingress_empty(model)) model.step(1);
  const std::uint64_t last_in = model.cycles();
  if (!model.run_until_idle(model.default_quiet_cycles(), 1'000'000))
    throw Error(Errc::kTimeout, "the latency round did not finish");
  std::uint64_t first_out = UINT64_MAX;
  std::size_t latency_results = 0;
  for (const auto& f : model.pop_egress()) {
    first_out = std::min(first_out, f.first_beat_cycle);
    ++latency_results;
  }
  if (latency_results != s.ports)
    throw Error(Errc::kTransport,
                fmt::format("latency round: {} results, want {}", latency_results, s.ports));
  t.latency = static_cast<std::int64_t>(first_out) - static_cast<std::int64_t>(last_in);

  for (std::uint64_t p = 1; p <= packets; ++p)
    for (unsigned r = 0; r < s.ports; ++r)
      model.push_frame(r, contribution(s.job, r, p, elements, dtype));
  const std::uint64_t start = model.cycles(), skipped_before = model.cycles_skipped();
  const auto wall_start = std::chrono::steady_clock::now();
  while (!all_ingress_empty(model)) model.step(1);
  t.ingress_cycles = model.cycles() - start;
  if (!model.run_until_idle(model.default_quiet_cycles(), 100'000'000))
    throw Error(Errc::kTimeout, "the throughput run did not finish");
  finish(t, model, start, skipped_before, wall_start, elements);
  return t;
}

// As netagg-fpgad runs the model: one round's contributions (one per port), then the model run
// until idle, `rounds` times.
Throughput in_rounds(const std::function<std::unique_ptr<sim::FpgaModel>()>& make,
                     std::uint16_t& elements, unsigned rounds, wire::DataType dtype) {
  Setup s = make_setup(make, elements);
  sim::FpgaModel& model = *s.model;
  Throughput t;
  t.name = model.name();
  t.ports = s.ports;
  const std::uint64_t start = model.cycles(), skipped_before = model.cycles_skipped();
  const auto wall_start = std::chrono::steady_clock::now();
  for (std::uint64_t p = 0; p < rounds; ++p) {
    for (unsigned r = 0; r < s.ports; ++r)
      model.push_frame(r, contribution(s.job, r, p, elements, dtype));
    if (!model.run_until_idle(model.default_quiet_cycles(), 1'000'000))
      throw Error(Errc::kTimeout, "a round did not finish");
  }
  finish(t, model, start, skipped_before, wall_start, elements);
  return t;
}

// Median cycles/s of `runs` and each run's figure.
nlohmann::json speed(const std::vector<Throughput>& runs) {
  std::vector<double> rates;
  std::vector<std::uint64_t> skipped;
  for (const auto& r : runs) {
    rates.push_back(r.cycles_per_second());
    skipped.push_back(r.skipped_cycles);
  }
  return {{"simulated_cycles", runs.front().total_cycles},
          {"simulated_cycles_per_second", median(rates)},
          {"simulated_cycles_per_second_runs", rates},
          {"cycles_skipped", skipped.front()}};
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"fpga_bench: cycles per element of the FPGA aggregator with back-to-back packets"};
  std::string model_kind = "rtl", dtype_name = "fp32";
  unsigned packets = 512, rounds = 256, repeat = 3;
  std::uint16_t elements = 0;
  bool baseline = false;
  app.add_option("--model", model_kind, "rtl or hls")->capture_default_str();
  app.add_option("--dtype", dtype_name, "fp32, fp32_exact or int32")
      ->check(CLI::IsMember({"fp32", "fp32_exact", "int32"}))
      ->capture_default_str();
  app.add_option("--packets", packets, "packets per port")
      ->check(CLI::Range(1u, 1u << 20))
      ->capture_default_str();
  app.add_option("--elements", elements, "elements per packet (default: the most a slot holds)");
  app.add_flag("--baseline", baseline,
               "also measure the traced Verilator build (--model rtl) in the same run, and the "
               "ratio of the simulated cycles per second");
  app.add_option("--rounds", rounds, "with --baseline: rounds of the traffic in rounds")
      ->check(CLI::Range(1u, 1u << 20))
      ->capture_default_str();
  app.add_option("--repeat", repeat, "with --baseline: measurements of each build, interleaved")
      ->check(CLI::Range(1u, 100u))
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  const auto dtype = dtype_name == "fp32"         ? wire::DataType::kFp32
                     : dtype_name == "fp32_exact" ? wire::DataType::kFp32Exact
                                                  : wire::DataType::kInt32;
  if (baseline && model_kind != "rtl") {
    std::fprintf(stderr, "fpga_bench: --baseline: only with --model rtl\n");
    return 2;
  }

  try {
    const auto make = [&] { return sim::make_fpga_model(model_kind, ""); };
    const auto make_baseline = [] { return sim::make_rtl_model("", sim::RtlBuild::kTraced); };
    std::vector<Throughput> fast_runs, baseline_runs, fast_rounds, baseline_rounds;
    fast_runs.push_back(back_to_back(make, elements, packets, dtype));
    if (baseline) {
      for (unsigned i = 0; i < repeat; ++i) {
        baseline_runs.push_back(back_to_back(make_baseline, elements, packets, dtype));
        if (i > 0) fast_runs.push_back(back_to_back(make, elements, packets, dtype));
        baseline_rounds.push_back(in_rounds(make_baseline, elements, rounds, dtype));
        fast_rounds.push_back(in_rounds(make, elements, rounds, dtype));
      }
    }
    const Throughput& t = fast_runs.front();
    const unsigned ports = t.ports;
    const std::size_t beats_per_packet = 1 + (elements * 4 + 63) / 64;
    std::vector<double> rates;
    for (const auto& r : fast_runs) rates.push_back(r.cycles_per_second());
    nlohmann::json out{
        {"model", t.name},
        {"dtype", dtype_name},
        {"ports", ports},
        {"elements_per_packet", elements},
        {"packets_per_port", packets},
        {"beats_per_packet", beats_per_packet},
        {"ingress_cycles", t.ingress_cycles},
        {"elements_per_cycle_per_port",
         static_cast<double>(packets) * elements / static_cast<double>(t.ingress_cycles)},
        {"ingress_beats_per_cycle_per_port",
         static_cast<double>(packets) * beats_per_packet / static_cast<double>(t.ingress_cycles)},
        {"latency_cycles_last_contribution_to_first_result", t.latency},
        {"results", t.results},
        {"results_expected", static_cast<std::size_t>(packets) * ports},
        {"simulated_cycles", t.total_cycles},
        {"simulated_cycles_per_second", median(rates)},
        {"protocol_errors", t.protocol_errors},
    };
    bool ok = true;
    const auto check = [&](const std::vector<Throughput>& runs, std::size_t want) {
      for (const auto& r : runs) ok = ok && r.results == want && r.protocol_errors == 0;
    };
    check(fast_runs, static_cast<std::size_t>(packets) * ports);
    if (baseline) {
      check(baseline_runs, static_cast<std::size_t>(packets) * ports);
      check(fast_rounds, static_cast<std::size_t>(rounds) * ports);
      check(baseline_rounds, static_cast<std::size_t>(rounds) * ports);
      // The same traffic through both builds of the same RTL: the same cycle counts.
      ok = ok && baseline_runs.front().total_cycles == t.total_cycles &&
           baseline_rounds.front().total_cycles == fast_rounds.front().total_cycles;
      const nlohmann::json fast_b2b = speed(fast_runs), base_b2b = speed(baseline_runs);
      const nlohmann::json fast_r = speed(fast_rounds), base_r = speed(baseline_rounds);
      out["speed"] = {
          {"repeat", repeat},
          {"fast",
           "Verilator --flatten -O3 --x-assign fast --x-initial unique "
           "--output-split-cfuncs 1000, no tracing; "
           "the harness's idle fast path"},
          {"baseline",
           "Verilator --x-assign unique --x-initial unique, FST tracing compiled in "
           "(not written); every cycle evaluated"},
          {"back_to_back",
           {{"fast", fast_b2b},
            {"baseline", base_b2b},
            {"ratio", fast_b2b["simulated_cycles_per_second"].get<double>() /
                          base_b2b["simulated_cycles_per_second"].get<double>()}}},
          {"in_rounds",
           {{"rounds", rounds},
            {"fast", fast_r},
            {"baseline", base_r},
            {"ratio", fast_r["simulated_cycles_per_second"].get<double>() /
                          base_r["simulated_cycles_per_second"].get<double>()}}},
      };
    }
    std::puts(out.dump().c_str());
    return ok ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fpga_bench: %s\n", e.what());
    return 2;
  }
}
