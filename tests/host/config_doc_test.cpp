// SPDX-License-Identifier: Apache-2.0
// docs/configuration.md's settings tables are generated from the table the configuration is
// read by (config_settings_markdown): this test fails when the page differs, and with
// NETAGG_UPDATE_DOCS=1 writes the generated tables into the page instead.
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <regex>
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

#ifdef NETAGG_ALLREDUCE_BINARY
// The netagg-allreduce options the table names are the tool's: each is in its --help.
TEST(ConfigDoc, TheToolOptionsTheTableNamesExist) {
  const std::string table = config_settings_markdown(ConfigTable::kSettings);
  std::string help;
  {
    FILE* p = ::popen(NETAGG_ALLREDUCE_BINARY " --help", "r");
    ASSERT_NE(p, nullptr);
    char buffer[4096];
    for (std::size_t n; (n = std::fread(buffer, 1, sizeof buffer, p)) > 0;) help.append(buffer, n);
    ::pclose(p);
  }
  ASSERT_NE(help.find("--rank"), std::string::npos) << help;
  const std::regex option("`(--[a-z][a-z-]*)");
  int named = 0;
  for (auto it = std::sregex_iterator(table.begin(), table.end(), option);
       it != std::sregex_iterator(); ++it) {
    const std::string name = (*it)[1];
    EXPECT_NE(help.find(name + " "), std::string::npos) << name << " is not an option of the tool";
    ++named;
  }
  EXPECT_GE(named, 10);
}
#endif

}  // namespace
}  // namespace netagg
