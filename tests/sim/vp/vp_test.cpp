// SPDX-License-Identifier: Apache-2.0
// The virtual platform (sim/vp): the driver's control plane over TLM-2.0 and the AXI4-Lite
// bridge, all-reduces through the Verilated RTL behind the MAC models, checked result by result
// against independently computed sums, and the rates the wire model allows. Rates here are
// simulated time, the same on every run (no wall-clock timing).
#include <gtest/gtest.h>

#include <systemc>

#include <string>

#include <nlohmann/json.hpp>

#include "netagg/error.hpp"
#include "netagg/fpga/control.hpp"
#include "netagg/fpga_csr.hpp"
#include "platform.hpp"
#include "run.hpp"
#include "traffic.hpp"

namespace {

using namespace netagg::vp;
using netagg::wire::DataType;
using nlohmann::json;

// Readable failures: the run's errors and counters.
std::string describe(const json& r) {
  json brief = r;
  brief.erase("ports");
  return brief.dump(1);
}

JobPattern job(std::uint16_t elements, DataType dtype = DataType::kFp32,
               std::uint32_t packets = 8) {
  return {.job_id = 1,
          .workers = 4,
          .slot_base = 0,
          .slot_count = 32,
          .dtype = dtype,
          .elements = elements,
          .packets = packets};
}

TEST(VirtualPlatform, DriverProgramsTheJobOverTlmAndTheSumsAreRight) {
  RunOptions o;
  o.jobs = {job(64)};
  o.host_check = [](Platform& p, json& out) {
    // The driver's reads of VERSION/FEATURES and a register written and read back, all as
    // b_transport calls through the AXI4-Lite bridge.
    const netagg::fpga::DeviceInfo info = netagg::fpga::read_device_info(p.csr());
    out["ports"] = info.num_ports;
    out["max_elements"] = info.max_elements();
    p.csr().write32(netagg::fpga::csr::kAggIp, 0x0A0B0C0D);
    out["agg_ip"] = p.csr().read32(netagg::fpga::csr::kAggIp);
  };
  const json r = run_in_child(o);
  ASSERT_TRUE(r.value("ok", false)) << describe(r);
  EXPECT_EQ(r["results_expected"], 32u);
  EXPECT_EQ(r["results_ok"], 32u);
  EXPECT_EQ(r["device_counters"].value("frames_in", 0u), 32u) << describe(r);
  EXPECT_EQ(r["device_counters"].value("completions", 0u), 8u) << describe(r);
  EXPECT_GT(r["csr_transactions"].get<unsigned>(), 20u);  // program_job went over TLM
  EXPECT_EQ(r["host_check"]["ports"], 4u);
  EXPECT_EQ(r["host_check"]["max_elements"], 1024u);
  EXPECT_EQ(r["host_check"]["agg_ip"], 0x0A0B0C0Du);
}

// At both kernel clocks: the clock-domain crossings see other ratios to the MAC clock.
TEST(VirtualPlatform, SeveralJobsOfEveryDataTypeAndHeaderOnlyPackets) {
  for (double mhz : {250.0, 300.0}) {
    RunOptions o;
    o.platform.kernel_mhz = mhz;
    o.jobs = {
        {.job_id = 1,
         .workers = 4,
         .slot_base = 0,
         .slot_count = 8,
         .dtype = DataType::kFp32,
         .elements = 1024,
         .packets = 12},
        {.job_id = 2,
         .workers = 3,
         .slot_base = 8,
         .slot_count = 8,
         .dtype = DataType::kBf16,
         .elements = 100,
         .packets = 12},
        {.job_id = 3,
         .workers = 2,
         .slot_base = 16,
         .slot_count = 8,
         .dtype = DataType::kInt32,
         .elements = 16,
         .packets = 12},
        {.job_id = 4,
         .workers = 4,
         .slot_base = 24,
         .slot_count = 8,
         .dtype = DataType::kInt32,
         .elements = 0,
         .packets = 12},
        {.job_id = 5,
         .workers = 4,
         .slot_base = 32,
         .slot_count = 4,
         .dtype = DataType::kBf16,
         .elements = 1,
         .packets = 12},
    };
    const json r = run_in_child(o);
    ASSERT_TRUE(r.value("ok", false)) << mhz << " MHz: " << describe(r);
    EXPECT_EQ(r["results_ok"], 12u * (4 + 3 + 2 + 4 + 4));
    for (const json& p : r["ports"]) EXPECT_EQ(p["tx_protocol_errors"], 0u);
  }
}

// 256-element fp32 packets (1 KiB payload) through all four ports at 250 MHz: each port carries
// 100 GbE line rate, no more (the wire model) and not less (the RTL keeps up).
TEST(VirtualPlatform, PortsHoldLineRateAt250MHz) {
  for (std::uint16_t elements : {64, 256, 1024}) {
    RunOptions o;
    o.platform.kernel_mhz = 250;
    o.jobs = {job(elements, DataType::kFp32, 64)};
    o.jobs[0].slot_count = 64;
    const json r = run_in_child(o);
    ASSERT_TRUE(r.value("ok", false)) << describe(r);
    for (const json& p : r["ports"]) {
      EXPECT_GT(p["line_rate_fraction"].get<double>(), 0.99) << elements << " elements: " << p;
      EXPECT_LT(p["line_rate_fraction"].get<double>(), 1.005) << elements << " elements: " << p;
    }
  }
}

// A slower line (25 Gb/s) throttles the same traffic to its rate: the wire model, not the RTL,
// sets the pace, and the link partner is paused rather than frames lost.
TEST(VirtualPlatform, TheWireModelLimitsTheRate) {
  RunOptions o;
  o.platform.mac.line_gbps = 25;
  o.jobs = {job(256, DataType::kFp32, 32)};
  const json r = run_in_child(o);
  ASSERT_TRUE(r.value("ok", false)) << describe(r);
  for (const json& p : r["ports"]) {
    EXPECT_NEAR(p["wire_gbps"].get<double>(), 25.0, 0.2) << p;
    EXPECT_EQ(p["rx_frames"], 32u);
  }
}

// Frames of fewer than 5 beats are taken at one per 5 kernel cycles per port
// (docs/fpga-aggregator.md), below line rate: the backlog waits in the RX crossing while the
// aggregator holds TREADY low, and once the crossing has no room for a largest frame the link
// partner is paused. Nothing is lost. Header-only packets (one beat) and 16-element ones (two),
// with the shallowest RX crossing the platform takes.
TEST(VirtualPlatform, ShortFramesAreBackPressuredNotLost) {
  for (std::uint16_t elements : {0, 16}) {
    RunOptions o;
    o.platform.mac.rx_fifo_beats = 2 * kMaxFrameBeats;
    o.jobs = {job(elements, elements == 0 ? DataType::kInt32 : DataType::kFp32, 128)};
    o.jobs[0].slot_count = 64;
    const json r = run_in_child(o);
    ASSERT_TRUE(r.value("ok", false)) << describe(r);
    for (const json& p : r["ports"]) {
      EXPECT_EQ(p["rx_frames"], 128u);
      EXPECT_LT(p["line_rate_fraction"].get<double>(), 0.8) << p;
      EXPECT_GE(p["kernel_cycles_per_frame"].get<double>(), 4.5) << p;
      EXPECT_GT(p["rx_stall_cycles"].get<double>(), 0) << p;
      EXPECT_LE(p["rx_fifo_high_water"].get<std::size_t>(), 2 * kMaxFrameBeats) << p;
      if (elements == 16) {
        EXPECT_GT(p["wire_paused_ns"].get<double>(), 0) << p;
      }
    }
  }
}

TEST(VirtualPlatform, CsrErrorsReachTheDriverAsErrors) {
  RunOptions o;
  o.jobs = {job(16, DataType::kFp32, 1)};
  o.host_check = [](Platform& p, json& out) {
    try {
      p.csr().read32(0x1000);  // beyond the 12-bit CSR space: the bridge answers an error
      out["beyond"] = "no error";
    } catch (const netagg::Error& e) {
      out["beyond"] = e.code() == netagg::Errc::kTransport ? "transport" : "other";
    }
    try {
      p.csr().write32(0x2, 1);
      out["unaligned"] = "no error";
    } catch (const netagg::Error& e) {
      out["unaligned"] = e.code() == netagg::Errc::kInvalidArgument ? "invalid" : "other";
    }
  };
  const json r = run_in_child(o);
  ASSERT_TRUE(r.value("ok", false)) << describe(r);
  EXPECT_EQ(r["host_check"]["beyond"], "transport");
  EXPECT_EQ(r["host_check"]["unaligned"], "invalid");
}

TEST(VirtualPlatform, BadInputIsRefused) {
  EXPECT_THROW(Traffic({job(2000)}, 1), netagg::Error);
  EXPECT_THROW(Traffic({job(16), job(16)}, 1), netagg::Error);  // the same id and slots twice
  JobPattern none = job(16);
  none.workers = 0;
  EXPECT_THROW(Traffic({none}, 1), netagg::Error);
  EXPECT_THROW(parse_dtype("fp16"), netagg::Error);
  PlatformConfig c;
  c.kernel_mhz = 0;
  EXPECT_THROW(check_config(c), netagg::Error);
  c = {};
  c.mac.rx_fifo_beats = 8;
  EXPECT_THROW(check_config(c), netagg::Error);
  // A job the device cannot hold is refused by the driver, in the run.
  RunOptions o;
  o.jobs = {job(16)};
  o.jobs[0].slot_base = 60;  // 32 slots from 60: beyond the device's 64
  const json r = run_in_child(o);
  EXPECT_FALSE(r.value("ok", true));
  ASSERT_FALSE(r["errors"].empty());
  EXPECT_NE(r["errors"][0].get<std::string>().find("slot"), std::string::npos) << describe(r);
}

}  // namespace

int sc_main(int argc, char** argv) {
  testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
