// SPDX-License-Identifier: Apache-2.0
// netagg-fpga-scenario: the RTL testbench of `make sim`. A short scripted scenario through the
// FPGA aggregator's model, checked step by step, optionally with an FST waveform for GTKWave:
//
//   1. two jobs programmed through the CSRs (driver/fpga), as netagg-fpgad does;
//   2. an int32 round with all four ports presenting their contribution in the same cycles
//      (the adder tree), results on every port;
//   3. an fp32 round of partial beats, arriving one port after the other (slot memory);
//   4. a retransmission to the completed round: the stored result to that worker alone;
//   5. malformed and foreign frames: dropped and counted; the foreign one answered with a
//      notice to its sender (a malformed frame never is);
//   6. egress backpressure on one port while a round completes, and the second job alongside;
//   7. the counters, read through the CSRs.
//
// Exit 0 if every check held, 1 if one failed, 2 on bad options.
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include "harness.hpp"
#include "netagg/error.hpp"
#include "netagg/fpga/control.hpp"
#include "netagg/wire.hpp"

namespace {

using netagg::Endpoint;
using netagg::JobSpec;
namespace fpga = netagg::fpga;
namespace sim = netagg::sim;
namespace wire = netagg::wire;

constexpr std::uint64_t kMaxCycles = 100000;
const fpga::AggregatorAddress kAgg{{0x02, 0x6e, 0x61, 0x67, 0x00, 0x01}, 0x0A0000FE, 20033};

int g_failures = 0;

void check(bool ok, const std::string& what) {
  std::printf("  %s %s\n", ok ? "ok  " : "FAIL", what.c_str());
  if (!ok) ++g_failures;
}

JobSpec make_job(std::uint16_t id, std::uint16_t base, std::uint16_t window, std::uint16_t workers,
                 std::uint16_t elements, unsigned first_port) {
  JobSpec job;
  job.job_id = id;
  job.slot_base = base;
  job.slot_count = window;
  job.elements_per_packet = elements;
  for (std::uint16_t r = 0; r < workers; ++r)
    job.workers.push_back({r, Endpoint{0x0A000000u + 16u * id + r + 1, std::uint16_t(31000 + r)},
                           std::nullopt, std::uint16_t((first_port + r) % 4)});
  return job;
}

std::vector<std::byte> frame(const JobSpec& job, std::uint16_t rank, std::uint32_t seq,
                             wire::DataType dtype, const std::vector<std::uint32_t>& words,
                             const Endpoint* from = nullptr) {
  wire::Header h;
  h.job_id = job.job_id;
  h.rank = rank;
  h.slot = static_cast<std::uint16_t>(job.slot_base + seq % job.slot_count);
  h.set = static_cast<std::uint8_t>((seq / job.slot_count) % 2);
  h.seq = seq;
  h.dtype = dtype;
  h.count = static_cast<std::uint16_t>(words.size());
  std::vector<std::byte> packet(h.packet_size());
  wire::encode_header(h, packet);
  for (std::size_t i = 0; i < words.size(); ++i)
    wire::store_be32(packet.data() + wire::kHeaderSize + 4 * i, words[i]);
  const auto& w = job.workers[rank];
  const Endpoint source = from ? *from : w.address;
  wire::FrameAddress a;
  a.src_mac = fpga::worker_mac(w);
  a.dst_mac = kAgg.mac;
  a.src_ip = source.ip;
  a.src_port = source.port;
  a.dst_ip = kAgg.ip;
  a.dst_port = kAgg.udp_port;
  std::vector<std::byte> out(wire::kFrameOverhead + packet.size());
  out.resize(wire::encode_frame(a, packet, out));
  return out;
}

struct Result {
  unsigned port;
  std::uint64_t first_cycle;
  wire::Header header;
  Endpoint to;
  std::vector<std::uint32_t> words;
};

std::vector<Result> results(sim::FpgaModel& m) {
  std::vector<Result> out;
  for (const sim::EgressFrame& f : m.pop_egress()) {
    const wire::DecodedFrame d = wire::decode_frame(f.bytes, 0);
    if (!d) {
      check(false,
            fmt::format("egress frame on port {} decodes ({})", f.port, wire::to_string(d.error)));
      continue;
    }
    Result r{f.port,
             f.first_beat_cycle,
             d.packet.header,
             Endpoint{d.address.dst_ip, d.address.dst_port},
             {}};
    for (std::size_t i = 0; i < d.packet.header.count; ++i)
      r.words.push_back(wire::load_be32(d.packet.payload.data() + 4 * i));
    out.push_back(r);
  }
  return out;
}

std::uint32_t bits(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

void run(sim::FpgaModel& m, const std::string& what) {
  const std::uint64_t before = m.cycles();
  const bool idle = m.run_until_idle(m.default_quiet_cycles(), kMaxCycles);
  check(idle, fmt::format("{}: idle after {} cycles", what, m.cycles() - before));
}

void scenario(sim::FpgaModel& m) {
  std::printf("1. program two jobs through the CSRs\n");
  const fpga::DeviceInfo info = fpga::read_device_info(m);
  std::printf(
      "  device: design version %u, wire version %u, %u ports, %u slots, %u jobs, "
      "%u beats a slot\n",
      info.design_version, info.wire_version, info.num_ports, info.slots, info.max_jobs,
      info.max_beats);
  const JobSpec a = make_job(1, 0, 4, 4, 64, 0);  // ranks 0..3 on ports 0..3
  const JobSpec b = make_job(2, 8, 2, 2, 16, 2);  // ranks 0, 1 on ports 2, 3
  fpga::program_job(m, a, 0, kAgg);
  fpga::program_job(m, b, 1, kAgg);
  check(true, fmt::format("jobs programmed at cycle {}", m.cycles()));

  std::printf("2. int32 round, four ports in the same cycles (the adder tree)\n");
  std::vector<std::uint32_t> sum(64, 0);
  for (std::uint16_t r = 0; r < 4; ++r) {
    std::vector<std::uint32_t> v(64);
    for (std::uint32_t i = 0; i < 64; ++i) v[i] = 0x10000000u * r + i * (r + 1) + 0xFFFFFF00u;
    for (std::uint32_t i = 0; i < 64; ++i) sum[i] += v[i];  // wraps, as the device
    m.push_frame(r, frame(a, r, 0, wire::DataType::kInt32, v));
  }
  run(m, "int32 round");
  auto res = results(m);
  check(res.size() == 4, fmt::format("{} result frames (4 expected)", res.size()));
  for (const Result& r : res)
    check(r.words == sum && r.port == r.header.rank && r.to == a.workers[r.header.rank].address,
          fmt::format("rank {} on port {}: the wrapped sum, addressed to {}", r.header.rank, r.port,
                      r.to.to_string()));

  std::printf("3. fp32 round of 40 elements (a partial beat), ports one after the other\n");
  std::vector<float> fsum(40, 0.0f);
  for (std::uint16_t r = 0; r < 4; ++r) {
    std::vector<std::uint32_t> v(40);
    for (int i = 0; i < 40; ++i) {
      const float x = std::ldexp(float(i + 1), -r) * (r % 2 ? -1.0f : 1.0f);
      v[i] = bits(x);
      fsum[i] = r == 0 ? x : fsum[i] + x;  // arrival order: the spec's order for one at a time
    }
    m.push_frame(r, frame(a, r, 1, wire::DataType::kFp32, v));
    run(m, fmt::format("fp32 contribution of rank {}", r));
  }
  res = results(m);
  check(res.size() == 4, fmt::format("{} result frames (4 expected)", res.size()));
  for (const Result& r : res) {
    bool exact = r.words.size() == 40 && r.header.dtype == wire::DataType::kFp32;
    for (int i = 0; exact && i < 40; ++i) exact = r.words[i] == bits(fsum[i]);
    check(exact, fmt::format("rank {}: fp32 sums bit for bit", r.header.rank));
  }

  std::printf("4. rank 2 retransmits the int32 round: the stored result to rank 2 alone\n");
  m.push_frame(2, frame(a, 2, 0, wire::DataType::kInt32, std::vector<std::uint32_t>(64, 0)));
  run(m, "retransmission");
  res = results(m);
  check(res.size() == 1 && res[0].header.rank == 2 && res[0].words == sum,
        fmt::format("{} result frame(s): the stored sum to rank 2", res.size()));

  std::printf("5. malformed and foreign frames are dropped; the foreign one gets a notice\n");
  auto truncated = frame(a, 0, 2, wire::DataType::kInt32, std::vector<std::uint32_t>(16, 1));
  truncated.resize(50);
  // Cut inside the netagg header: the IPv4 length says more than the frame holds.
  const std::string truncated_reason =
      "malformed_" + std::string(wire::error_id(wire::decode_frame(truncated).error));
  m.push_frame(3, truncated);
  const Endpoint stranger{0x0A0000EE, 4444};
  m.push_frame(
      1, frame(a, 1, 2, wire::DataType::kInt32, std::vector<std::uint32_t>(16, 1), &stranger));
  run(m, "junk");
  res = results(m);
  check(res.size() == 1 && res[0].header.type == wire::MsgType::kNotice && res[0].to == stranger &&
            res[0].port == 1 &&
            res[0].words == std::vector<std::uint32_t>{static_cast<std::uint32_t>(
                                wire::NoticeReason::kForeignSource)},
        "junk: a notice to the stranger (foreign_source) out of its port, nothing else");

  std::printf("6. egress port 1 stalled while a round completes; job 2 alongside\n");
  m.set_egress_ready(1, false);
  for (std::uint16_t r = 0; r < 4; ++r)
    m.push_frame(r, frame(a, r, 4, wire::DataType::kInt32, std::vector<std::uint32_t>(64, r + 1)));
  for (std::uint16_t r = 0; r < 2; ++r)
    m.push_frame(2 + r, frame(b, r, 0, wire::DataType::kInt32, std::vector<std::uint32_t>(16, 7)));
  check(!m.run_until_idle(m.default_quiet_cycles(), 2000), "not idle while port 1 is stalled");
  res = results(m);
  bool port1_quiet = true;
  for (const Result& r : res) port1_quiet = port1_quiet && r.port != 1;
  check(port1_quiet, fmt::format("{} frames left on the other ports, none on port 1", res.size()));
  m.set_egress_ready(1, true);
  run(m, "backpressure released");
  const auto late = results(m);
  res.insert(res.end(), late.begin(), late.end());
  int job1 = 0, job2 = 0;
  for (const Result& r : res) {
    if (r.header.job_id == 1 && r.words == std::vector<std::uint32_t>(64, 10)) ++job1;
    if (r.header.job_id == 2 && r.words == std::vector<std::uint32_t>(16, 14)) ++job2;
  }
  check(job1 == 4 && job2 == 2,
        fmt::format("job 1: {} of 4 results, job 2: {} of 2, sums right", job1, job2));

  std::printf("7. counters through the CSRs\n");
  std::map<std::string, std::uint64_t> c;
  for (const auto& k : fpga::read_counters(m)) {
    c[std::string(k.name)] = k.value;
    if (k.value)
      std::printf("  %-34s %llu\n", std::string(k.name).c_str(),
                  static_cast<unsigned long long>(k.value));
  }
  check(c["frames_in"] == 17 && c["aggregated"] == 14 && c["completions"] == 4 &&
            c["results_resent"] == 1 && c["frames_out"] == 16 && c[truncated_reason] == 1 &&
            c["dropped_foreign_source"] == 1 && c["notices"] == 1,
        fmt::format("frames_in 17, aggregated 14, completions 4, results_resent 1, frames_out 16, "
                    "one {} (the cut frame), one foreign, one notice",
                    truncated_reason));
  check(m.egress_protocol_errors() == 0,
        fmt::format("AXI4-Stream egress protocol clean {}", m.last_protocol_error()));
  std::printf("  %llu cycles\n", static_cast<unsigned long long>(m.cycles()));
}

}  // namespace

int main(int argc, char** argv) {
  std::string model = "rtl";
  std::string trace;
  CLI::App app{"netagg-fpga-scenario: a scripted run through the FPGA aggregator's model"};
  app.add_option("--model", model, "rtl (the Verilated SystemVerilog) or hls (the C model)")
      ->check(CLI::IsMember({"rtl", "hls"}))
      ->capture_default_str();
  app.add_option("--trace", trace, "write an FST waveform to FILE (rtl only)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? 0 : 2;
  }
  try {
    auto m = sim::make_fpga_model(model, trace);
    std::printf("netagg-fpga-scenario: the %s model\n", m->name().c_str());
    scenario(*m);
  } catch (const netagg::Error& e) {
    std::fprintf(stderr, "netagg-fpga-scenario: %s\n", e.what());
    return e.code() == netagg::Errc::kConfig || e.code() == netagg::Errc::kUnsupported ? 2 : 1;
  }
  if (!trace.empty())
    std::printf("trace: %s (open it with gtkwave)\n",
                std::filesystem::absolute(trace).string().c_str());
  std::printf("netagg-fpga-scenario: %s\n", g_failures ? "FAILED" : "all checks passed");
  return g_failures ? 1 : 0;
}
