// SPDX-License-Identifier: Apache-2.0
// The DPDK part of the worker config: the "dpdk" object of a config file, NETAGG_DPDK_*, and
// validate()'s checks. Needs no DPDK (the transport's own tests are in dpdk_transport_test).
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "netagg/config.hpp"
#include "netagg/error.hpp"

namespace netagg {
namespace {

namespace fs = std::filesystem;
using ::testing::AllOf;
using ::testing::HasSubstr;

constexpr const char* kJob = R"({"job_id": 1, "slots": {"base": 0, "count": 8},
  "elements_per_packet": 256, "aggregator": "10.77.0.254:20033",
  "workers": [{"rank": 0, "address": "10.77.0.1:20100", "mac": "02:00:00:00:00:01"},
              {"rank": 1, "address": "10.77.0.2:20100"}]})";

constexpr const char* kEnvNames[] = {"NETAGG_CONFIG",
                                     "NETAGG_JOB_FILE",
                                     "NETAGG_RANK",
                                     "NETAGG_TRANSPORT",
                                     "NETAGG_DPDK_LCORES",
                                     "NETAGG_DPDK_VDEVS",
                                     "NETAGG_DPDK_NO_HUGE",
                                     "NETAGG_DPDK_NO_PCI",
                                     "NETAGG_DPDK_MEMORY_MB",
                                     "NETAGG_DPDK_FILE_PREFIX",
                                     "NETAGG_DPDK_EAL_ARGS",
                                     "NETAGG_DPDK_PORT",
                                     "NETAGG_DPDK_MAC",
                                     "NETAGG_DPDK_AGGREGATOR_MAC",
                                     "NETAGG_DPDK_NEXT_HOP",
                                     "NETAGG_DPDK_ARP_TIMEOUT_MS",
                                     "NETAGG_DPDK_BURST",
                                     "NETAGG_DPDK_MBUFS",
                                     "NETAGG_DPDK_VERIFY_UDP_CHECKSUM",
                                     "OMPI_COMM_WORLD_RANK",
                                     "PMI_RANK",
                                     "RANK",
                                     "NETAGG_WORLD_SIZE",
                                     "OMPI_COMM_WORLD_SIZE",
                                     "PMI_SIZE",
                                     "WORLD_SIZE"};

class DpdkConfigTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* n : kEnvNames) ::unsetenv(n);
    dir_ = fs::temp_directory_path() / ("netagg-dpdk-config-" + std::to_string(::getpid()));
    fs::create_directories(dir_);
    write("job.json", kJob);
  }
  void TearDown() override {
    for (const char* n : kEnvNames) ::unsetenv(n);
    fs::remove_all(dir_);
  }
  fs::path write(const std::string& name, const std::string& text) {
    std::ofstream(dir_ / name) << text;
    return dir_ / name;
  }
  Config file_with(const std::string& dpdk) {
    return Config::from_file(write("w.json", R"({"rank": 0, "job_file": "job.json",
      "transport": "dpdk", "dpdk": )" + dpdk + "}"));
  }
  std::string file_error(const std::string& dpdk) {
    try {
      file_with(dpdk);
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), Errc::kConfig) << e.what();
      return e.what();
    }
    ADD_FAILURE() << "no error for " << dpdk;
    return "";
  }
  std::string env_error(const char* name, const char* value) {
    ::setenv("NETAGG_JOB_FILE", (dir_ / "job.json").c_str(), 1);
    ::setenv("NETAGG_RANK", "0", 1);
    ::setenv("NETAGG_TRANSPORT", "dpdk", 1);
    ::setenv(name, value, 1);
    std::string what;
    try {
      Config::from_env();
      ADD_FAILURE() << "no error for " << name << "=" << value;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), Errc::kConfig) << e.what();
      what = e.what();
    }
    ::unsetenv(name);
    return what;
  }
  fs::path dir_;
};

TEST_F(DpdkConfigTest, DefaultsAreAUsableSinglePortSetUp) {
  if (!dpdk_built()) GTEST_SKIP() << "built without DPDK: transport dpdk is refused";
  const Config c = file_with("{}");
  EXPECT_EQ(c.transport, "dpdk");
  EXPECT_EQ(c.dpdk, DpdkConfig{});
  EXPECT_EQ(c.dpdk.lcores, "0");
  EXPECT_FALSE(c.dpdk.no_huge);
  EXPECT_FALSE(c.dpdk.aggregator_mac.has_value());  // ARP by default
}

TEST_F(DpdkConfigTest, EveryFieldOfTheFile) {
  if (!dpdk_built()) GTEST_SKIP() << "built without DPDK: transport dpdk is refused";
  const Config c = file_with(R"({"lcores": "1-2", "vdevs": ["net_af_packet0,iface=dp0",
    "net_ring0"], "no_huge": true, "no_pci": true, "memory_mb": 128, "file_prefix": "w0",
    "eal_args": ["--log-level", "lib.eal:debug"], "port": 1, "mac": "02:00:00:00:00:aa",
    "aggregator_mac": "02-00-00-00-00-FE", "next_hop": "10.77.0.253", "arp_timeout_ms": 250,
    "burst": 64, "mbufs": 4095, "verify_udp_checksum": true})");
  const DpdkConfig& d = c.dpdk;
  EXPECT_EQ(d.lcores, "1-2");
  EXPECT_EQ(d.vdevs, (std::vector<std::string>{"net_af_packet0,iface=dp0", "net_ring0"}));
  EXPECT_TRUE(d.no_huge);
  EXPECT_TRUE(d.no_pci);
  EXPECT_EQ(d.memory_mb, 128u);
  EXPECT_EQ(d.file_prefix, "w0");
  EXPECT_EQ(d.eal_args, (std::vector<std::string>{"--log-level", "lib.eal:debug"}));
  EXPECT_EQ(d.port, 1);
  EXPECT_EQ(d.mac, (wire::Mac{0x02, 0, 0, 0, 0, 0xaa}));
  EXPECT_EQ(d.aggregator_mac, (wire::Mac{0x02, 0, 0, 0, 0, 0xfe}));
  EXPECT_EQ(d.next_hop, (10u << 24) | (77u << 16) | 253u);
  EXPECT_EQ(d.arp_timeout, std::chrono::milliseconds(250));
  EXPECT_EQ(d.burst, 64);
  EXPECT_EQ(d.mbufs, 4095u);
  EXPECT_TRUE(d.verify_udp_checksum);
}

TEST_F(DpdkConfigTest, FileErrorsNameTheField) {
  if (!dpdk_built()) GTEST_SKIP() << "built without DPDK: transport dpdk is refused";
  EXPECT_THAT(file_error(R"({"vdev": []})"), HasSubstr("dpdk.vdev: unknown field"));
  EXPECT_THAT(file_error(R"([])"), HasSubstr("dpdk: must be a JSON object"));
  EXPECT_THAT(file_error(R"({"vdevs": "net_ring0"})"),
              HasSubstr("dpdk.vdevs: must be an array of strings"));
  EXPECT_THAT(file_error(R"({"no_huge": 1})"), HasSubstr("dpdk.no_huge: must be true or false"));
  EXPECT_THAT(file_error(R"({"port": -1})"), HasSubstr("dpdk.port: must be an integer"));
  EXPECT_THAT(file_error(R"({"mac": "02:00:00:00:00"})"),
              AllOf(HasSubstr("dpdk.mac"), HasSubstr("is not a MAC")));
  EXPECT_THAT(file_error(R"({"aggregator_mac": "zz:00:00:00:00:00"})"),
              HasSubstr("dpdk.aggregator_mac: 'zz:00:00:00:00:00' is not a MAC"));
  EXPECT_THAT(file_error(R"({"next_hop": "10.77.0"})"),
              HasSubstr("dpdk.next_hop: '10.77.0' is not an IPv4 address"));
  EXPECT_THAT(file_error(R"({"arp_timeout_ms": 0})"),
              HasSubstr("dpdk.arp_timeout_ms: 0 ms is outside (0, 86400000] ms"));
  EXPECT_THAT(file_error(R"({"burst": 0})"),
              HasSubstr("dpdk.burst: must be an integer in [1, 512]"));
  EXPECT_THAT(file_error(R"({"mbufs": 100})"), HasSubstr("dpdk.mbufs"));
  EXPECT_THAT(file_error(R"({"lcores": ""})"), HasSubstr("dpdk.lcores: must not be empty"));
  // Enough mbufs for the pool's limits but not for the window: validate() says how many.
  write("bigwindow.json", R"({"job_id": 1, "slots": {"base": 0, "count": 1000},
    "elements_per_packet": 256, "aggregator": "10.77.0.254:20033",
    "workers": [{"rank": 0, "address": "10.77.0.1:20100"}]})");
  try {
    Config::from_file(write("w2.json", R"({"rank": 0, "job_file": "bigwindow.json",
      "transport": "dpdk", "dpdk": {"mbufs": 1023}})"));
    ADD_FAILURE() << "1023 mbufs accepted for a window of 1000";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), AllOf(HasSubstr("dpdk.mbufs"), HasSubstr("at least 2064")));
  }
}

TEST_F(DpdkConfigTest, EnvironmentOverridesTheFile) {
  if (!dpdk_built()) GTEST_SKIP() << "built without DPDK: transport dpdk is refused";
  const auto file = write("w.json", R"({"rank": 0, "job_file": "job.json", "transport": "dpdk",
    "dpdk": {"lcores": "3", "no_huge": false, "port": 2}})");
  ::setenv("NETAGG_CONFIG", file.c_str(), 1);
  ::setenv("NETAGG_DPDK_VDEVS", "net_af_packet0,iface=dp0;net_ring0", 1);
  ::setenv("NETAGG_DPDK_NO_HUGE", "1", 1);
  ::setenv("NETAGG_DPDK_EAL_ARGS", "--log-level  lib.eal:debug", 1);
  ::setenv("NETAGG_DPDK_AGGREGATOR_MAC", "02:00:00:00:00:fe", 1);
  ::setenv("NETAGG_DPDK_VERIFY_UDP_CHECKSUM", "true", 1);
  const Config c = Config::from_env();
  EXPECT_EQ(c.dpdk.lcores, "3");  // from the file
  EXPECT_EQ(c.dpdk.port, 2);
  EXPECT_EQ(c.dpdk.vdevs, (std::vector<std::string>{"net_af_packet0,iface=dp0", "net_ring0"}));
  EXPECT_TRUE(c.dpdk.no_huge);
  EXPECT_EQ(c.dpdk.eal_args, (std::vector<std::string>{"--log-level", "lib.eal:debug"}));
  EXPECT_EQ(c.dpdk.aggregator_mac, (wire::Mac{0x02, 0, 0, 0, 0, 0xfe}));
  EXPECT_TRUE(c.dpdk.verify_udp_checksum);
}

TEST_F(DpdkConfigTest, EnvironmentErrorsNameTheVariable) {
  if (!dpdk_built()) GTEST_SKIP() << "built without DPDK: transport dpdk is refused";
  EXPECT_EQ(env_error("NETAGG_DPDK_NO_HUGE", "maybe"),
            "NETAGG_DPDK_NO_HUGE: 'maybe' is not a boolean (1/0, true/false)");
  EXPECT_EQ(env_error("NETAGG_DPDK_PORT", "70000"),
            "NETAGG_DPDK_PORT: 70000 is out of range [0, 65535]");
  EXPECT_THAT(env_error("NETAGG_DPDK_MAC", "02:00"),
              HasSubstr("NETAGG_DPDK_MAC: '02:00' is not a MAC"));
  EXPECT_THAT(env_error("NETAGG_DPDK_NEXT_HOP", "router"),
              HasSubstr("NETAGG_DPDK_NEXT_HOP: 'router' is not an IPv4 address"));
  EXPECT_EQ(env_error("NETAGG_DPDK_BURST", "0"), "NETAGG_DPDK_BURST: 0 is out of range [1, 512]");
  EXPECT_EQ(env_error("NETAGG_DPDK_ARP_TIMEOUT_MS", "-1"),
            "NETAGG_DPDK_ARP_TIMEOUT_MS: -1 ms is outside (0, 86400000] ms");
  EXPECT_EQ(env_error("NETAGG_DPDK_LCORES", ""), "NETAGG_DPDK_LCORES: is set but empty");
}

TEST_F(DpdkConfigTest, WithoutDpdkTheTransportIsRefusedAsUnsupported) {
  if (dpdk_built()) GTEST_SKIP() << "built with DPDK";
  try {
    file_with("{}");
    ADD_FAILURE() << "transport dpdk accepted without DPDK";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Errc::kUnsupported);
    EXPECT_THAT(e.what(), AllOf(HasSubstr("dpdk"), HasSubstr("not built")));
  }
}

}  // namespace
}  // namespace netagg
