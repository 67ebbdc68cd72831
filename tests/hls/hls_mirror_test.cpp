// The kernel's C++14 copies of the two definitions it cannot include (both are C++17/20):
// the CSR map (netagg_hls/csr14.hpp against the generated netagg/fpga_csr.hpp, at compile time)
// and the frame layout (netagg_hls/frame.hpp against netagg/wire.hpp). Also the s_axilite
// offsets written into the top's pragmas against hw/csr/csr_map.json.
#include <gtest/gtest.h>

#include <cctype>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "netagg/fpga_csr.hpp"
#include "netagg/wire.hpp"
#include "netagg_hls/csr14.hpp"
#include "netagg_hls/frame.hpp"
#include "netagg_hls/params.hpp"

namespace netagg::fpga {
namespace {

namespace gen = netagg::fpga::csr;

// ---- CSR map: a drift is a compile error ---------------------------------------------------
static_assert(csr14::kAddrBits == gen::kAddrBits);
static_assert(csr14::kVersion == gen::kVersion && csr14::kFeatures == gen::kFeatures &&
              csr14::kControl == gen::kControl && csr14::kStatus == gen::kStatus);
static_assert(csr14::kAggMacLo == gen::kAggMacLo && csr14::kAggMacHi == gen::kAggMacHi &&
              csr14::kAggIp == gen::kAggIp && csr14::kAggUdpPort == gen::kAggUdpPort);
static_assert(csr14::kJobIndex == gen::kJobIndex && csr14::kJobId == gen::kJobId &&
              csr14::kJobWorkers == gen::kJobWorkers && csr14::kJobSlots == gen::kJobSlots &&
              csr14::kJobElements == gen::kJobElements);
static_assert(csr14::kWorkerIndex == gen::kWorkerIndex && csr14::kWorkerIp == gen::kWorkerIp &&
              csr14::kWorkerUdpPort == gen::kWorkerUdpPort &&
              csr14::kWorkerMacLo == gen::kWorkerMacLo && csr14::kWorkerMacHi == gen::kWorkerMacHi);
static_assert(csr14::kCommit == gen::kCommit && csr14::kCounterIndex == gen::kCounterIndex &&
              csr14::kCounterLo == gen::kCounterLo && csr14::kCounterHi == gen::kCounterHi);
static_assert(csr14::kAggUdpPortReset == gen::kAggUdpPortReset);
static_assert(gen::kRegisterCount == 22, "a register was added: give it a csr14 constant");

#define NETAGG_SAME_COUNTER(name) \
  static_assert(static_cast<std::uint32_t>(csr14::name) == gen::index(gen::Counter::name))
NETAGG_SAME_COUNTER(kFramesIn);
NETAGG_SAME_COUNTER(kFramesOut);
NETAGG_SAME_COUNTER(kAggregated);
NETAGG_SAME_COUNTER(kCompletions);
NETAGG_SAME_COUNTER(kResultsResent);
NETAGG_SAME_COUNTER(kMalformedTruncated);
NETAGG_SAME_COUNTER(kMalformedNotIpv4);
NETAGG_SAME_COUNTER(kMalformedBadIpHeader);
NETAGG_SAME_COUNTER(kMalformedNotUdp);
NETAGG_SAME_COUNTER(kMalformedWrongPort);
NETAGG_SAME_COUNTER(kMalformedIpLengthMismatch);
NETAGG_SAME_COUNTER(kMalformedUdpLengthMismatch);
NETAGG_SAME_COUNTER(kMalformedBadVersion);
NETAGG_SAME_COUNTER(kMalformedBadType);
NETAGG_SAME_COUNTER(kMalformedBadDtype);
NETAGG_SAME_COUNTER(kMalformedBadFlags);
NETAGG_SAME_COUNTER(kMalformedReservedNonzero);
NETAGG_SAME_COUNTER(kMalformedCountTooLarge);
NETAGG_SAME_COUNTER(kMalformedLengthMismatch);
NETAGG_SAME_COUNTER(kDroppedNotContribution);
NETAGG_SAME_COUNTER(kDroppedUnknownJob);
NETAGG_SAME_COUNTER(kDroppedRankOutOfRange);
NETAGG_SAME_COUNTER(kDroppedForeignSource);
NETAGG_SAME_COUNTER(kDroppedSlotOutOfRange);
NETAGG_SAME_COUNTER(kDroppedCountTooLargeForJob);
NETAGG_SAME_COUNTER(kDroppedCountMismatch);
NETAGG_SAME_COUNTER(kDroppedDtypeMismatch);
NETAGG_SAME_COUNTER(kDroppedDuplicate);
NETAGG_SAME_COUNTER(kDroppedStale);
NETAGG_SAME_COUNTER(kDroppedAhead);
#undef NETAGG_SAME_COUNTER
static_assert(static_cast<std::size_t>(csr14::kCounterCount) == gen::kCounterCount);

// ---- Frame layout against the wire definition ---------------------------------------------
static_assert(layout::kFrameOverhead == wire::kFrameOverhead);
static_assert(layout::kPayload == wire::kFramePayloadOffset);
static_assert(layout::kNaHeaderSize == wire::kHeaderSize);
static_assert(layout::kIpHeaderSize == wire::kIpv4HeaderSize &&
              layout::kUdpHeaderSize == wire::kUdpHeaderSize &&
              layout::kIp == wire::kEthHeaderSize);
static_assert(layout::kNaVersion == layout::kNa + wire::offset::kVersion &&
              layout::kNaType == layout::kNa + wire::offset::kType &&
              layout::kNaDtype == layout::kNa + wire::offset::kDtype &&
              layout::kNaFlags == layout::kNa + wire::offset::kFlags &&
              layout::kNaJobId == layout::kNa + wire::offset::kJobId &&
              layout::kNaRank == layout::kNa + wire::offset::kRank &&
              layout::kNaSlot == layout::kNa + wire::offset::kSlot &&
              layout::kNaCount == layout::kNa + wire::offset::kCount &&
              layout::kNaExponent == layout::kNa + wire::offset::kExponent &&
              layout::kNaSeq == layout::kNa + wire::offset::kSeq &&
              layout::kNaReserved == layout::kNa + wire::offset::kReserved);
static_assert(layout::kVersion == wire::kVersion && layout::kMaxCount == wire::kMaxCount);
static_assert(layout::kTypeContribution == unsigned(wire::MsgType::kContribution) &&
              layout::kTypeResult == unsigned(wire::MsgType::kResult));
static_assert(layout::kDtypeInt32 == unsigned(wire::DataType::kInt32) &&
              layout::kDtypeFp32 == unsigned(wire::DataType::kFp32) &&
              layout::kDtypeBf16 == unsigned(wire::DataType::kBf16));
static_assert(layout::kFlagSet == wire::kFlagSet &&
              layout::kFlagsReserved == wire::kFlagsReservedMask);
static_assert(csr14::kAggUdpPortReset == wire::kUdpPort);

TEST(HlsMirror, ElementSizesMatchTheWire) {
  for (auto t : {wire::DataType::kInt32, wire::DataType::kFp32, wire::DataType::kBf16})
    EXPECT_EQ(element_size(static_cast<unsigned>(t)), wire::element_size(t));
}

// ---- The top's s_axilite offsets against the JSON ------------------------------------------
std::string read_text(const std::string& path) {
  std::ifstream in(path);
  EXPECT_TRUE(in) << "cannot read " << path;
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(HlsMirror, TopPragmaOffsetsAreTheCsrMapsOffsets) {
  const auto map = nlohmann::json::parse(read_text(NETAGG_SOURCE_DIR "/hw/csr/csr_map.json"));
  std::map<std::string, unsigned> json_offset;
  std::map<std::string, std::string> access;
  for (const auto& r : map.at("registers")) {
    json_offset[r.at("name")] =
        static_cast<unsigned>(std::stoul(r.at("offset").get<std::string>(), nullptr, 0));
    access[r.at("name")] = r.at("access");
  }
  const std::string top = read_text(NETAGG_SOURCE_DIR "/hls/src/netagg_aggregator.cpp");
  const std::regex pragma(
      R"(#pragma HLS INTERFACE s_axilite port = (\w+)( offset = (0x[0-9A-Fa-f]+))?)");
  std::map<std::string, bool> seen;
  for (auto it = std::sregex_iterator(top.begin(), top.end(), pragma); it != std::sregex_iterator();
       ++it) {
    std::string name = (*it)[1];
    if (name == "return") continue;
    for (char& ch : name) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
    ASSERT_TRUE(json_offset.count(name)) << "port " << name << " is not a register of the map";
    seen[name] = true;
    if ((*it)[3].matched) {
      EXPECT_EQ(std::stoul((*it)[3].str(), nullptr, 16), json_offset[name]) << name;
    } else {
      // Only where Vitis cannot put the register: its reserved 0x00-0x0F, or an output.
      EXPECT_TRUE(json_offset[name] < 0x10 || access[name] == "ro")
          << name << " has no offset = " << std::hex << json_offset[name];
    }
  }
  for (const auto& [name, offset] : json_offset)
    EXPECT_TRUE(seen.count(name)) << "register " << name << " is not an argument of the top";
}

}  // namespace
}  // namespace netagg::fpga
