// SPDX-License-Identifier: Apache-2.0
// docs/configuration.md's settings tables are generated from the table the configuration is
// read by (config_settings_markdown): this test fails when the page differs, and with
// NETAGG_UPDATE_DOCS=1 writes the generated tables into the page instead.
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "netagg/config.hpp"

namespace netagg {
namespace {

struct Region {
  const char* name;
  ConfigTable table;
};

std::string begin_marker(const char* name) {
  return std::string("<!-- generated: ") + name +
         " (host/src/config.cpp; NETAGG_UPDATE_DOCS=1 build/tests/host/config_doc_test "
         "rewrites it) -->\n";
}
const std::string kEnd = "<!-- end of the generated table -->";

TEST(ConfigDoc, ThePagesTablesAreTheSettingsTables) {
  const std::string path = NETAGG_CONFIGURATION_MD;
  std::stringstream ss;
  ss << std::ifstream(path).rdbuf();
  std::string page = ss.str();
  ASSERT_FALSE(page.empty()) << path;
  const bool update = std::getenv("NETAGG_UPDATE_DOCS") != nullptr;
  for (const Region r :
       {Region{"settings", ConfigTable::kSettings}, Region{"dpdk settings", ConfigTable::kDpdk}}) {
    const std::string begin = begin_marker(r.name);
    const auto a = page.find(begin);
    ASSERT_NE(a, std::string::npos) << path << " has no line " << begin;
    const auto from = a + begin.size();
    const auto to = page.find(kEnd, from);
    ASSERT_NE(to, std::string::npos) << path << ": no " << kEnd << " after " << begin;
    const std::string want = config_settings_markdown(r.table);
    if (update) {
      page.replace(from, to - from, want);
      continue;
    }
    EXPECT_EQ(page.substr(from, to - from), want)
        << path << "'s " << r.name << " table differs from the settings: NETAGG_UPDATE_DOCS=1 "
        << "config_doc_test "
        << "rewrites it";
  }
  if (update) std::ofstream(path) << page;
}

}  // namespace
}  // namespace netagg
