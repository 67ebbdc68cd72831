// The generated CSR views against their one definition, hw/csr/csr_map.json: the C++ header
// (compiled in) and the SystemVerilog package (parsed from the build tree), and the rules the
// generator enforces on the JSON.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "netagg/fpga_csr.hpp"
#include "sv_constants.hpp"

namespace {

namespace csr = netagg::fpga::csr;
using nlohmann::json;

json load_json(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read " + path.string());
  return json::parse(in);
}

std::uint32_t offset_of(const json& reg) {
  const json& v = reg.at("offset");
  return v.is_string() ? static_cast<std::uint32_t>(std::stoul(v.get<std::string>(), nullptr, 0))
                       : v.get<std::uint32_t>();
}

std::uint32_t reset_of(const json& reg) {
  if (!reg.contains("reset")) return 0;
  const json& v = reg.at("reset");
  return v.is_string() ? static_cast<std::uint32_t>(std::stoul(v.get<std::string>(), nullptr, 0))
                       : v.get<std::uint32_t>();
}

std::string upper(std::string s) {
  for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

class CsrMap : public ::testing::Test {
 protected:
  json map_ = load_json(NETAGG_CSR_JSON);
};

TEST_F(CsrMap, JsonOffsetsAreUniqueAlignedAndInsideTheAddressSpace) {
  const unsigned addr_bits = map_.at("addr_bits").get<unsigned>();
  std::map<std::uint32_t, std::string> by_offset;
  std::set<std::string> names;
  for (const json& reg : map_.at("registers")) {
    const std::string name = reg.at("name");
    const std::uint32_t offset = offset_of(reg);
    EXPECT_TRUE(names.insert(name).second) << name << " defined twice";
    EXPECT_EQ(offset % 4, 0u) << name;
    EXPECT_LT(offset, 1u << addr_bits) << name;
    const auto [it, inserted] = by_offset.emplace(offset, name);
    EXPECT_TRUE(inserted) << name << " shares offset " << offset << " with " << it->second;
  }
  std::set<std::string> counters;
  for (const json& c : map_.at("counters")) {
    EXPECT_TRUE(counters.insert(c.get<std::string>()).second) << c << " listed twice";
  }
}

TEST_F(CsrMap, HeaderRegisterTableMatchesJson) {
  EXPECT_EQ(csr::kAddrBits, map_.at("addr_bits").get<unsigned>());
  const json& regs = map_.at("registers");
  ASSERT_EQ(csr::kRegisterCount, regs.size());
  for (std::size_t i = 0; i < regs.size(); ++i) {
    const json& reg = regs[i];
    const csr::Register& r = csr::kRegisters[i];
    EXPECT_EQ(r.name, reg.at("name").get<std::string>());
    EXPECT_EQ(r.offset, offset_of(reg)) << r.name;
    EXPECT_EQ(r.reset, reset_of(reg)) << r.name;
    const std::string access = reg.at("access");
    const csr::Access expected = access == "ro"   ? csr::Access::kReadOnly
                                 : access == "rw" ? csr::Access::kReadWrite
                                                  : csr::Access::kWriteOnly;
    EXPECT_EQ(r.access, expected) << r.name;
  }
}

// The named constants that hls/, sim/fpga/ and driver/ use, under the names they use. (The table
// test above covers registers added to the JSON later.)
TEST_F(CsrMap, HeaderNamedOffsetsMatchJson) {
  const std::vector<std::pair<std::string, std::uint32_t>> named = {
      {"VERSION", csr::kVersion},
      {"FEATURES", csr::kFeatures},
      {"CONTROL", csr::kControl},
      {"STATUS", csr::kStatus},
      {"AGG_MAC_LO", csr::kAggMacLo},
      {"AGG_MAC_HI", csr::kAggMacHi},
      {"AGG_IP", csr::kAggIp},
      {"AGG_UDP_PORT", csr::kAggUdpPort},
      {"JOB_INDEX", csr::kJobIndex},
      {"JOB_ID", csr::kJobId},
      {"JOB_WORKERS", csr::kJobWorkers},
      {"JOB_SLOTS", csr::kJobSlots},
      {"JOB_ELEMENTS", csr::kJobElements},
      {"WORKER_INDEX", csr::kWorkerIndex},
      {"WORKER_IP", csr::kWorkerIp},
      {"WORKER_UDP_PORT", csr::kWorkerUdpPort},
      {"WORKER_MAC_LO", csr::kWorkerMacLo},
      {"WORKER_MAC_HI", csr::kWorkerMacHi},
      {"COMMIT", csr::kCommit},
      {"COUNTER_INDEX", csr::kCounterIndex},
      {"COUNTER_LO", csr::kCounterLo},
      {"COUNTER_HI", csr::kCounterHi},
  };
  std::map<std::string, std::uint32_t> json_offsets;
  for (const json& reg : map_.at("registers")) json_offsets[reg.at("name")] = offset_of(reg);
  for (const auto& [name, offset] : named) {
    ASSERT_TRUE(json_offsets.contains(name)) << name << " is gone from the JSON";
    EXPECT_EQ(offset, json_offsets[name]) << name;
  }
  for (const json& reg : map_.at("registers")) {
    if (reg.contains("reset") && reg.at("name") == "AGG_UDP_PORT") {
      EXPECT_EQ(csr::kAggUdpPortReset, reset_of(reg));
    }
  }
}

TEST_F(CsrMap, HeaderCountersMatchJson) {
  const json& counters = map_.at("counters");
  ASSERT_EQ(csr::kCounterCount, counters.size());
  for (std::size_t i = 0; i < counters.size(); ++i) {
    EXPECT_EQ(csr::kCounterNames[i], counters[i].get<std::string>()) << "counter " << i;
  }
  const std::vector<std::pair<std::string, csr::Counter>> named = {
      {"frames_in", csr::Counter::kFramesIn},
      {"frames_out", csr::Counter::kFramesOut},
      {"aggregated", csr::Counter::kAggregated},
      {"completions", csr::Counter::kCompletions},
      {"results_resent", csr::Counter::kResultsResent},
      {"malformed_truncated", csr::Counter::kMalformedTruncated},
      {"malformed_not_ipv4", csr::Counter::kMalformedNotIpv4},
      {"malformed_bad_ip_header", csr::Counter::kMalformedBadIpHeader},
      {"malformed_not_udp", csr::Counter::kMalformedNotUdp},
      {"malformed_wrong_port", csr::Counter::kMalformedWrongPort},
      {"malformed_ip_length_mismatch", csr::Counter::kMalformedIpLengthMismatch},
      {"malformed_udp_length_mismatch", csr::Counter::kMalformedUdpLengthMismatch},
      {"malformed_bad_version", csr::Counter::kMalformedBadVersion},
      {"malformed_bad_type", csr::Counter::kMalformedBadType},
      {"malformed_bad_dtype", csr::Counter::kMalformedBadDtype},
      {"malformed_bad_flags", csr::Counter::kMalformedBadFlags},
      {"malformed_reserved_nonzero", csr::Counter::kMalformedReservedNonzero},
      {"malformed_count_too_large", csr::Counter::kMalformedCountTooLarge},
      {"malformed_length_mismatch", csr::Counter::kMalformedLengthMismatch},
      {"dropped_not_contribution", csr::Counter::kDroppedNotContribution},
      {"dropped_unknown_job", csr::Counter::kDroppedUnknownJob},
      {"dropped_rank_out_of_range", csr::Counter::kDroppedRankOutOfRange},
      {"dropped_foreign_source", csr::Counter::kDroppedForeignSource},
      {"dropped_slot_out_of_range", csr::Counter::kDroppedSlotOutOfRange},
      {"dropped_count_too_large_for_job", csr::Counter::kDroppedCountTooLargeForJob},
      {"dropped_count_mismatch", csr::Counter::kDroppedCountMismatch},
      {"dropped_dtype_mismatch", csr::Counter::kDroppedDtypeMismatch},
      {"dropped_duplicate", csr::Counter::kDroppedDuplicate},
      {"dropped_stale", csr::Counter::kDroppedStale},
      {"dropped_ahead", csr::Counter::kDroppedAhead},
  };
  for (const auto& [name, counter] : named) {
    const auto it = std::find(counters.begin(), counters.end(), name);
    ASSERT_NE(it, counters.end()) << name << " is gone from the JSON";
    EXPECT_EQ(csr::index(counter), static_cast<std::uint32_t>(it - counters.begin())) << name;
    EXPECT_EQ(csr::name(counter), name);
  }
}

TEST_F(CsrMap, SystemVerilogPackageMatchesJson) {
  const auto pkg = netagg::testing::load_sv_package(NETAGG_CSR_SV_PKG);
  EXPECT_EQ(pkg.name, "netagg_csr_pkg");
  const auto& c = pkg.constants;
  ASSERT_TRUE(c.contains("CSR_ADDR_BITS"));
  EXPECT_EQ(c.at("CSR_ADDR_BITS"), map_.at("addr_bits").get<unsigned>());

  std::set<std::string> expected_names = {"CSR_ADDR_BITS", "NUM_COUNTERS", "COUNTER_INDEX_BITS"};
  for (const json& reg : map_.at("registers")) {
    const std::string name = "CSR_" + reg.at("name").get<std::string>();
    expected_names.insert(name);
    ASSERT_TRUE(c.contains(name)) << name << " missing from the package";
    EXPECT_EQ(c.at(name), offset_of(reg)) << name;
    if (reg.contains("reset")) {
      expected_names.insert(name + "_RESET");
      ASSERT_TRUE(c.contains(name + "_RESET")) << name;
      EXPECT_EQ(c.at(name + "_RESET"), reset_of(reg)) << name;
    }
  }
  const json& counters = map_.at("counters");
  EXPECT_EQ(c.at("NUM_COUNTERS"), counters.size());
  EXPECT_GE(1ull << c.at("COUNTER_INDEX_BITS"), counters.size());
  EXPECT_LT(1ull << (c.at("COUNTER_INDEX_BITS") - 1), counters.size());
  for (std::size_t i = 0; i < counters.size(); ++i) {
    const std::string name = "CNT_" + upper(counters[i].get<std::string>());
    expected_names.insert(name);
    ASSERT_TRUE(c.contains(name)) << name << " missing from the package";
    EXPECT_EQ(c.at(name), i) << name;
  }
  for (const auto& [name, value] : c) {
    EXPECT_TRUE(expected_names.contains(name)) << name << " = " << value << " is not in the JSON";
  }
}

// The generator refuses maps that break the rules, with a message naming the problem.
class GenCsrRejects : public ::testing::TestWithParam<std::pair<std::string, std::string>> {};

TEST_P(GenCsrRejects, BadMap) {
  const auto& [mutation, message] = GetParam();
  json map = load_json(NETAGG_CSR_JSON);
  json& regs = map.at("registers");
  if (mutation == "duplicate_offset") regs[1]["offset"] = regs[0]["offset"];
  if (mutation == "misaligned") regs[1]["offset"] = "0x006";
  if (mutation == "outside") regs[1]["offset"] = "0x1000";
  if (mutation == "duplicate_name") regs[1]["name"] = regs[0]["name"];
  if (mutation == "bad_access") regs[1]["access"] = "rx";
  if (mutation == "duplicate_counter") map.at("counters").push_back(map.at("counters")[0]);

  const auto dir = std::filesystem::path(NETAGG_BINARY_DIR) / "tests/hw/gen_csr_rejects" / mutation;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "map.json") << map.dump(2);
  const std::string command = std::string(NETAGG_PYTHON) + " " + NETAGG_GEN_CSR + " --json " +
                              (dir / "map.json").string() + " --hpp " + (dir / "out.hpp").string() +
                              " 2> " + (dir / "stderr.txt").string();
  const int status = std::system(command.c_str());
  EXPECT_NE(status, 0) << mutation;
  EXPECT_FALSE(std::filesystem::exists(dir / "out.hpp"));
  std::ifstream err(dir / "stderr.txt");
  const std::string text((std::istreambuf_iterator<char>(err)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find(message), std::string::npos) << text;
}

INSTANTIATE_TEST_SUITE_P(
    Rules, GenCsrRejects,
    ::testing::Values(std::pair{std::string("duplicate_offset"), std::string("already used")},
                      std::pair{std::string("misaligned"), std::string("not 4-byte aligned")},
                      std::pair{std::string("outside"), std::string("outside the 12-bit")},
                      std::pair{std::string("duplicate_name"), std::string("name used twice")},
                      std::pair{std::string("bad_access"), std::string("access must be")},
                      std::pair{std::string("duplicate_counter"), std::string("used twice")}),
    [](const auto& info) { return info.param.first; });

}  // namespace
