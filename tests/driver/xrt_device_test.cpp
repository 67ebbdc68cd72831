// SPDX-License-Identifier: Apache-2.0
// The Alveo driver over XRT as far as a machine without a card goes: every error before a card
// answers. The XILINX_XRT checks, "no device" (XRT's own answer with a usable XILINX_XRT), and
// the xclbin file checks (missing, a folder, not an xclbin, an xclbin without the aggregator, one
// with it), on xclbin files this test writes in the axlf layout of XRT's xclbin.h (Debian's
// xclbinutil is not usable: its wrapper misses the binary). A build without XRT: a clear error.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <stdlib.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "expect_error.hpp"
#include "netagg/error.hpp"
#include "netagg/fpga/device.hpp"

namespace netagg::fpga {
namespace {

namespace fs = std::filesystem;
using ::testing::AllOf;
using ::testing::HasSubstr;

fs::path temp_dir() {
  std::string t = (fs::temp_directory_path() / "xrt_device_test.XXXXXX").string();
  if (!mkdtemp(t.data())) throw std::runtime_error("mkdtemp");
  return t;
}

template <class T>
void put(std::vector<char>& b, std::size_t at, T v) {
  std::memcpy(b.data() + at, &v, sizeof(v));
}

// An axlf file (xclbin.h: struct axlf 496 bytes with one section header at 456, axlf_header at
// 304) with one IP_LAYOUT section (kind 8): m_count, then 80-byte ip_data records (type, 32-bit
// properties, base address, name[64]).
void write_xclbin(const fs::path& file, const std::vector<std::string>& ip_names) {
  constexpr std::size_t kAxlf = 496, kIpData = 80;
  const std::size_t section_size = 8 + kIpData * ip_names.size();
  std::vector<char> b(kAxlf + section_size, 0);
  std::memcpy(b.data(), "xclbin2", 8);
  put<std::int32_t>(b, 8, -1);           // no signature
  std::memset(b.data() + 12, 0xFF, 28);  // reserved
  put<std::uint64_t>(b, 304, b.size());  // m_header.m_length
  put<std::uint8_t>(b, 330, 2);          // version 2.1.0
  put<std::uint8_t>(b, 331, 1);
  std::memcpy(b.data() + 352, "xilinx_u280_gen3x16_xdma_1_202211_1", 36);  // platform VBNV
  for (int i = 0; i < 16; ++i) b[416 + i] = static_cast<char>(0x10 + i);   // uuid
  put<std::uint32_t>(b, 448, 1);                                           // m_numSections
  put<std::uint32_t>(b, 456, 8);                                           // IP_LAYOUT
  std::memcpy(b.data() + 460, "ip_layout", 10);
  put<std::uint64_t>(b, 480, kAxlf);
  put<std::uint64_t>(b, 488, section_size);
  put<std::int32_t>(b, kAxlf, static_cast<std::int32_t>(ip_names.size()));
  for (std::size_t i = 0; i < ip_names.size(); ++i) {
    const std::size_t at = kAxlf + 8 + i * kIpData;
    put<std::uint32_t>(b, at, 1);                            // IP_KERNEL
    put<std::uint32_t>(b, at + 4, 2u << 8);                  // AP_CTRL_NONE
    put<std::uint64_t>(b, at + 8, 0x1800000 + 0x10000 * i);  // base address
    std::memcpy(b.data() + at + 16, ip_names[i].c_str(), ip_names[i].size());
  }
  std::ofstream(file, std::ios::binary).write(b.data(), static_cast<std::streamsize>(b.size()));
}

using testing::error_of;

class EnvGuard {
 public:
  EnvGuard() {
    if (const char* v = std::getenv("XILINX_XRT")) saved_ = v;
  }
  ~EnvGuard() {
    if (saved_.empty())
      unsetenv("XILINX_XRT");
    else
      setenv("XILINX_XRT", saved_.c_str(), 1);
  }

 private:
  std::string saved_;
};

#if NETAGG_HAVE_XRT

TEST(XrtDevice, BuiltWithXrt) { EXPECT_TRUE(xrt_available()); }

TEST(XrtDevice, NoXilinxXrtIsNamedWithTheFix) {
  EnvGuard env;
  unsetenv("XILINX_XRT");
  const std::string e = error_of([] { open_xrt_device({}); }, Errc::kConfig);
  EXPECT_THAT(e, AllOf(HasSubstr("Alveo device 0"), HasSubstr("XILINX_XRT is not set"),
                       HasSubstr("setup.sh")));
}

TEST(XrtDevice, XilinxXrtWithoutTheCoreLibraryIsNamed) {
  EnvGuard env;
  const fs::path dir = temp_dir();
  setenv("XILINX_XRT", dir.c_str(), 1);
  XrtOptions o;
  o.index = 3;
  const std::string e = error_of([&] { open_xrt_device(o); }, Errc::kConfig);
  EXPECT_THAT(e, AllOf(HasSubstr("Alveo device 3"),
                       HasSubstr((dir / "lib" / "libxrt_core.so.2").string())));
  fs::remove_all(dir);
}

// XRT proper answers: with a XILINX_XRT whose lib/ holds the core library, xrt::device(0)
// throws on a machine without a card, and the error names the index and what to check.
TEST(XrtDevice, NoCardNamesTheIndexAndWhatToCheck) {
  const fs::path lib = "/usr/lib/x86_64-linux-gnu";
  if (!fs::exists(lib / "libxrt_core.so.2")) GTEST_SKIP() << "no libxrt_core.so.2 in " << lib;
  EnvGuard env;
  const fs::path dir = temp_dir();
  fs::create_directory_symlink(lib, dir / "lib");
  setenv("XILINX_XRT", dir.c_str(), 1);
  const std::string e = error_of([] { open_xrt_device({}); }, Errc::kTransport);
  EXPECT_THAT(e, AllOf(HasSubstr("cannot open Alveo device 0"), HasSubstr("xbutil examine"),
                       HasSubstr("xocl")));
  fs::remove_all(dir);
}

TEST(XrtDevice, XclbinFileProblemsNameTheFile) {
  const fs::path dir = temp_dir();
  XrtOptions o;
  o.xclbin = (dir / "missing.xclbin").string();
  EXPECT_THAT(error_of([&] { check_xclbin(o); }, Errc::kConfig),
              HasSubstr(o.xclbin + ": no such xclbin file"));
  // The file is checked before XILINX_XRT and the card: the user's mistake is named first.
  EXPECT_THAT(error_of([&] { open_xrt_device(o); }, Errc::kConfig),
              HasSubstr("no such xclbin file"));

  o.xclbin = dir.string();
  EXPECT_THAT(error_of([&] { check_xclbin(o); }, Errc::kConfig), HasSubstr("is a directory"));

  o.xclbin = (dir / "corrupt.xclbin").string();
  std::ofstream(o.xclbin) << "not an xclbin\n";
  EXPECT_THAT(error_of([&] { check_xclbin(o); }, Errc::kConfig),
              AllOf(HasSubstr(o.xclbin), HasSubstr("not a valid xclbin")));

  // A valid xclbin of another design: the IPs it has are listed.
  o.xclbin = (dir / "vadd.xclbin").string();
  write_xclbin(o.xclbin, {"vadd:vadd_1", "cmac_0:cmac_0"});
  EXPECT_THAT(error_of([&] { check_xclbin(o); }, Errc::kConfig),
              AllOf(HasSubstr(o.xclbin), HasSubstr("no netagg_aggregator:* compute unit"),
                    HasSubstr("vadd:vadd_1, cmac_0:cmac_0")));
  fs::remove_all(dir);
}

TEST(XrtDevice, AggregatorXclbinPassesAndTheCardIsNext) {
  const fs::path dir = temp_dir();
  XrtOptions o;
  o.xclbin = (dir / "netagg.xclbin").string();
  write_xclbin(o.xclbin, {"cmac_0:cmac_0", "netagg_aggregator:netagg_aggregator_1"});
  EXPECT_EQ(check_xclbin(o), "netagg_aggregator:netagg_aggregator_1");
  o.compute_unit = "netagg_aggregator_2";
  EXPECT_THAT(error_of([&] { check_xclbin(o); }, Errc::kConfig),
              HasSubstr("no netagg_aggregator:netagg_aggregator_2 compute unit"));
  o.compute_unit.clear();
  // Past the file: the next problem on this machine is XILINX_XRT or the missing card.
  EnvGuard env;
  unsetenv("XILINX_XRT");
  EXPECT_THAT(error_of([&] { open_xrt_device(o); }, Errc::kConfig), HasSubstr("XILINX_XRT"));
  fs::remove_all(dir);
}

#else

TEST(XrtDevice, BuildWithoutXrtSaysSo) {
  EXPECT_FALSE(xrt_available());
  EXPECT_THAT(error_of([] { open_xrt_device({}); }, Errc::kUnsupported),
              AllOf(HasSubstr("Alveo device 0"), HasSubstr("no XRT support")));
}

#endif

}  // namespace
}  // namespace netagg::fpga
