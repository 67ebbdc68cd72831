// SPDX-License-Identifier: Apache-2.0
// The JSON reader every input parser reads through (netagg/json_in.hpp): each mistake names the
// input, the field's path and the problem.
#include "netagg/json_in.hpp"

#include <string>

#include <gtest/gtest.h>

namespace netagg {
namespace {

using nlohmann::json;

template <typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Errc::kConfig);
    return e.what();
  }
  return "no error";
}

const json kDoc = json::parse(R"({"name": "x", "n": 7, "neg": -2, "ratio": 0.5, "on": true,
  "list": [{"port": 70000}, {"port": 9}], "tags": ["a", "b"], "obj": {"inner": {"deep": "s"}}})");

TEST(JsonIn, PathsNameNestedMembersAndElements) {
  const JsonIn in(kDoc, "conf.json");
  EXPECT_EQ(error_of([&] { in["list"].elements()[0].integer<std::uint16_t>("port", 1, 65535); }),
            "conf.json: list[0].port: 70000 is out of range [1, 65535]");
  EXPECT_EQ(error_of([&] { in["obj"]["inner"]["deep"].boolean(); }),
            "conf.json: obj.inner.deep: must be true or false");
  EXPECT_EQ(error_of([&] { in["obj"]["missing"]; }), "conf.json: obj.missing: missing");
  EXPECT_EQ(in["list"].elements()[1].integer<std::uint16_t>("port", 1, 65535), 9);
}

TEST(JsonIn, UnknownFieldsAreRefused) {
  const JsonIn in(kDoc, "conf.json");
  EXPECT_EQ(error_of([&] { in["obj"].only({"other"}); }), "conf.json: obj.inner: unknown field");
  EXPECT_NO_THROW(in["obj"].only({"inner"}));
}

TEST(JsonIn, NumbersKnowTheirTypeAndRange) {
  const JsonIn in(kDoc, "s");
  EXPECT_EQ(error_of([&] { in["neg"].integer<unsigned>(); }),
            "s: neg: must be a non-negative integer");
  EXPECT_EQ(in["neg"].integer<int>(-5, 5), -2);
  EXPECT_EQ(error_of([&] { in["neg"].integer<int>(0, 5); }), "s: neg: -2 is out of range [0, 5]");
  EXPECT_EQ(error_of([&] { in["ratio"].integer<int>(); }), "s: ratio: must be an integer");
  EXPECT_EQ(error_of([&] { in["name"].number(); }), "s: name: must be a number");
  EXPECT_EQ(error_of([&] { in["ratio"].number(0.75, 1); }), "s: ratio: 0.5 is outside [0.75, 1]");
}

TEST(JsonIn, ReadTakesWhatIsThereAndLeavesTheRest) {
  const JsonIn in(kDoc, "s");
  std::string name = "default";
  unsigned n = 1, absent = 3;
  double ratio = 0;
  bool on = false;
  std::vector<std::string> tags;
  EXPECT_TRUE(in.read("name", name));
  EXPECT_TRUE(in.read("n", n));
  EXPECT_FALSE(in.read("absent", absent));
  EXPECT_TRUE(in.read("ratio", ratio));
  EXPECT_TRUE(in.read("on", on));
  EXPECT_TRUE(in.read("tags", tags));
  EXPECT_EQ(name, "x");
  EXPECT_EQ(n, 7u);
  EXPECT_EQ(absent, 3u);
  EXPECT_EQ(ratio, 0.5);
  EXPECT_TRUE(on);
  EXPECT_EQ(tags, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(error_of([&] { in.read("name", n); }), "s: name: must be a non-negative integer");
}

TEST(JsonIn, BadTextNamesTheInput) {
  EXPECT_EQ(error_of([] { JsonIn::parse("{", "job.json"); }).rfind("job.json: not valid JSON: ", 0),
            0u);
}

}  // namespace
}  // namespace netagg
