// SPDX-License-Identifier: Apache-2.0
// The one parser and formatter of MAC and IPv4 addresses (netagg/address.hpp), and what reads
// addresses through them: job endpoints.
#include "netagg/address.hpp"

#include <string>

#include <gtest/gtest.h>

#include "netagg/error.hpp"
#include "netagg/job.hpp"

namespace netagg {
namespace {

std::string error_of(auto&& f) {
  try {
    f();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Errc::kConfig);
    return e.what();
  }
  return "no error";
}

TEST(Address, MacsParseWithColonsOrDashesAndFormatWithColons) {
  const wire::Mac m = parse_mac("02:00:0a:FF:00:7e", "mac");
  EXPECT_EQ(m, (wire::Mac{0x02, 0x00, 0x0a, 0xff, 0x00, 0x7e}));
  EXPECT_EQ(parse_mac("02-00-0a-ff-00-7e", "mac"), m);
  EXPECT_EQ(format_mac(m), "02:00:0a:ff:00:7e");
}

TEST(Address, BadMacsAreRefusedNamingTheInput) {
  for (const char* bad : {"", "02:00:0a:ff:00", "02:00:0a:ff:00:7e:01", "02:00:0a:ff:00:7g",
                          "2:00:0a:ff:00:7e0", "02.00.0a.ff.00.7e", "02:00:0a:ff:00:7e "}) {
    const std::string e = error_of([&] { parse_mac(bad, "dpdk.mac"); });
    EXPECT_EQ(e, "dpdk.mac: '" + std::string(bad) + "' is not a MAC (aa:bb:cc:dd:ee:ff)");
  }
}

TEST(Address, Ipv4ParsesToHostOrderAndFormatsBack) {
  EXPECT_EQ(parse_ipv4("10.1.2.254", "ip"), 0x0A0102FEu);
  EXPECT_EQ(format_ipv4(0x0A0102FEu), "10.1.2.254");
  EXPECT_EQ(format_ipv4(parse_ipv4("255.255.255.255", "ip")), "255.255.255.255");
}

TEST(Address, BadIpv4IsRefusedAnEmbeddedNulIncluded) {
  for (const char* bad : {"", "10.0.0", "10.0.0.300", "10.0.0.1 ", "host", "10.0.0.1:5"}) {
    const std::string e = error_of([&] { parse_ipv4(bad, "--switch-ip"); });
    EXPECT_EQ(e, "--switch-ip: '" + std::string(bad) + "' is not an IPv4 address (a.b.c.d)");
  }
  // A C string reader would stop at the NUL and take 127.0.0.1.
  const std::string nul("127.0.0.1\0garbage", 17);
  EXPECT_EQ(error_of([&] { parse_ipv4(nul, "ip"); }),
            "ip: '127.0.0.1\\0garbage' is not an IPv4 address (a.b.c.d)");
}

TEST(Address, AJobEndpointWithAnEmbeddedNulIsRefused) {
  // JSON's \u0000 in the address: read as 127.0.0.1:25871 by a C string parser.
  const std::string job =
      R"({"job_id": 1, "elements_per_packet": 64, "slots": {"base": 0, "count": 8},
      "aggregator": "127.0.0.1:20033",
      "workers": [{"rank": 0, "address": "127.0.0.1\u0000garbage:25871"}]})";
  const std::string e = error_of([&] { parse_job(job, "job.json"); });
  EXPECT_NE(e.find("is not an IPv4 address"), std::string::npos) << e;
  EXPECT_NE(e.find("job.json"), std::string::npos) << e;
}

}  // namespace
}  // namespace netagg
