// SPDX-License-Identifier: Apache-2.0
// Throughput and latency of the FPGA aggregator in simulation, in clock cycles: back-to-back
// contributions on every ingress port (one worker per port, all sending the same chunks, as the
// workers of a data-parallel job do), and one round on an idle device. Cycle counts are exact
// properties of the RTL (deterministic simulation); the wall-clock figure is the simulator's.
#include <chrono>
#include <cstdio>
#include <vector>

#include <fmt/format.h>
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "harness.hpp"
#include "netagg/codec.hpp"
#include "netagg/error.hpp"
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
  std::vector<std::byte> packet(h.packet_size());
  wire::encode_header(h, packet);
  std::vector<float> values(count);
  for (std::size_t i = 0; i < count; ++i) values[i] = static_cast<float>((rank + 1) * (i + p % 7));
  if (dtype == wire::DataType::kFp32)
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

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"fpga_bench: cycles per element of the FPGA aggregator with back-to-back packets"};
  std::string model_kind = "rtl", dtype_name = "fp32";
  unsigned packets = 512;
  std::uint16_t elements = 0;
  app.add_option("--model", model_kind, "rtl or hls")->capture_default_str();
  app.add_option("--dtype", dtype_name, "fp32 or int32")
      ->check(CLI::IsMember({"fp32", "int32"}))
      ->capture_default_str();
  app.add_option("--packets", packets, "packets per port")
      ->check(CLI::Range(1u, 1u << 20))
      ->capture_default_str();
  app.add_option("--elements", elements, "elements per packet (default: the most a slot holds)");
  CLI11_PARSE(app, argc, argv);
  const auto dtype = dtype_name == "fp32" ? wire::DataType::kFp32 : wire::DataType::kInt32;

  try {
    auto model = sim::make_fpga_model(model_kind, "");
    const fpga::DeviceInfo info = fpga::read_device_info(*model);
    if (elements == 0) elements = static_cast<std::uint16_t>(info.max_elements());
    const unsigned ports = info.num_ports;
    JobSpec job = make_local_job(1, static_cast<std::uint16_t>(ports), 31000, 0,
                                 static_cast<std::uint16_t>(info.slots), elements,
                                 Endpoint{0x7F000001, wire::kUdpPort});
    for (auto& w : job.workers) w.switch_port = w.rank;  // one worker per port
    fpga::program_job(*model, job, 0, fpga::AggregatorAddress{});

    // Latency: one round on an idle device. From the cycle the last contribution's last beat
    // entered to the cycle the first result beat left.
    for (unsigned r = 0; r < ports; ++r)
      model->push_frame(r, contribution(job, r, 0, elements, dtype));
    while (!all_ingress_empty(*model)) model->step(1);
    const std::uint64_t last_in = model->cycles();
    if (!model->run_until_idle(model->default_quiet_cycles(), 1'000'000))
      throw Error(Errc::kTimeout, "the latency round did not finish");
    std::uint64_t first_out = UINT64_MAX;
    std::size_t latency_results = 0;
    for (const auto& f : model->pop_egress()) {
      first_out = std::min(first_out, f.first_beat_cycle);
      ++latency_results;
    }
    if (latency_results != ports)
      throw Error(Errc::kTransport,
                  fmt::format("latency round: {} results, want {}", latency_results, ports));

    // Throughput: `packets` contributions per port, queued back to back on every port at once.
    std::vector<std::vector<std::byte>> frames;
    for (std::uint64_t p = 1; p <= packets; ++p)
      for (unsigned r = 0; r < ports; ++r)
        model->push_frame(r, contribution(job, r, p, elements, dtype));
    const std::uint64_t start = model->cycles();
    const auto wall_start = std::chrono::steady_clock::now();
    while (!all_ingress_empty(*model)) model->step(1);
    const std::uint64_t ingress_cycles = model->cycles() - start;
    if (!model->run_until_idle(model->default_quiet_cycles(), 100'000'000))
      throw Error(Errc::kTimeout, "the throughput run did not finish");
    const double wall =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
    const std::uint64_t total_cycles = model->cycles() - start;
    std::size_t results = 0;
    for (const auto& f : model->pop_egress()) {
      const auto d = wire::decode_frame(f.bytes, 0);  // results go to the worker's port
      if (!d || d.packet.header.count != elements)
        throw Error(Errc::kTransport,
                    fmt::format("a bad result frame: {}", wire::error_id(d.error)));
      ++results;
    }
    const std::size_t beats_per_packet = 1 + (elements * 4 + 63) / 64;
    nlohmann::json out{
        {"model", model->name()},
        {"dtype", dtype_name},
        {"ports", ports},
        {"elements_per_packet", elements},
        {"packets_per_port", packets},
        {"beats_per_packet", beats_per_packet},
        {"ingress_cycles", ingress_cycles},
        {"elements_per_cycle_per_port",
         static_cast<double>(packets) * elements / static_cast<double>(ingress_cycles)},
        {"ingress_beats_per_cycle_per_port",
         static_cast<double>(packets) * beats_per_packet / static_cast<double>(ingress_cycles)},
        {"latency_cycles_last_contribution_to_first_result",
         static_cast<std::int64_t>(first_out) - static_cast<std::int64_t>(last_in)},
        {"results", results},
        {"results_expected", static_cast<std::size_t>(packets) * ports},
        {"simulated_cycles", total_cycles},
        {"simulated_cycles_per_second", static_cast<double>(total_cycles) / wall},
        {"protocol_errors", model->egress_protocol_errors()},
    };
    std::puts(out.dump().c_str());
    return results == static_cast<std::size_t>(packets) * ports &&
                   model->egress_protocol_errors() == 0
               ? 0
               : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fpga_bench: %s\n", e.what());
    return 2;
  }
}
