// SPDX-License-Identifier: Apache-2.0
// Reading a JSON document with a clear message for every mistake: which input (a file name, or
// what the text came from), which field (its path: "workers[2].mac", "job.window"), what is
// wrong. Errors are netagg::Error(kConfig), "SOURCE: PATH: PROBLEM". The parsers of jobs
// (job.cpp), worker configurations (config.cpp), fabric scenarios (sim/fabric/scenario.cpp) and
// topologies (plan/src/topology.cpp) read through it. Header-only and C++17: the fabric's ns-3
// side includes it.
#pragma once

#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "netagg/error.hpp"

namespace netagg {

// "SOURCE: PATH: PROBLEM" (no PATH: "SOURCE: PROBLEM").
[[noreturn]] inline void json_error(std::string_view source, std::string_view path,
                                    std::string_view problem) {
  std::string text(source);
  if (!path.empty()) text += std::string(text.empty() ? "" : ": ") + std::string(path);
  throw Error(Errc::kConfig, text + (text.empty() ? "" : ": ") + std::string(problem));
}

class JsonIn {
 public:
  JsonIn(const nlohmann::json& value, std::string source, std::string path = {})
      : v_(&value), source_(std::move(source)), path_(std::move(path)) {}

  // The document in `text`; "SOURCE: not valid JSON: ..." when it is not.
  static nlohmann::json parse(std::string_view text, std::string_view source) {
    try {
      return nlohmann::json::parse(text);
    } catch (const nlohmann::json::parse_error& e) {
      json_error(source, {}, std::string("not valid JSON: ") + e.what());
    }
  }

  const nlohmann::json& json() const { return *v_; }
  const std::string& source() const { return source_; }
  const std::string& path() const { return path_; }
  [[noreturn]] void fail(std::string_view problem) const { json_error(source_, path_, problem); }
  // The path of a member of this object, for messages of checks made after reading.
  std::string path_of(std::string_view key) const {
    return path_.empty() ? std::string(key) : path_ + "." + std::string(key);
  }
  [[noreturn]] void fail_at(std::string_view key, std::string_view problem) const {
    json_error(source_, path_of(key), problem);
  }

  // ---- structure ----
  // An object whose keys are all among `keys`; any other is "unknown field" (a typo must not
  // leave a default in place silently).
  const JsonIn& only(std::initializer_list<std::string_view> keys) const {
    object();
    for (auto it = v_->begin(); it != v_->end(); ++it) {
      bool known = false;
      for (std::string_view k : keys) known = known || it.key() == k;
      if (!known) fail_at(it.key(), "unknown field");
    }
    return *this;
  }
  const JsonIn& object() const {
    if (!v_->is_object()) fail("must be an object");
    return *this;
  }
  bool has(std::string_view key) const { return v_->is_object() && v_->contains(key); }
  // A member that must be there ("missing" otherwise).
  JsonIn operator[](std::string_view key) const {
    object();
    const auto it = v_->find(key);
    if (it == v_->end()) fail_at(key, "missing");
    return JsonIn(*it, source_, path_of(key));
  }
  std::optional<JsonIn> find(std::string_view key) const {
    object();
    const auto it = v_->find(key);
    if (it == v_->end()) return std::nullopt;
    return JsonIn(*it, source_, path_of(key));
  }
  // The elements of an array (`min` of them at least).
  std::vector<JsonIn> elements(std::size_t min = 0) const {
    if (!v_->is_array()) fail("must be an array");
    if (v_->size() < min)
      fail(min == 1 ? "must not be empty"
                    : "must have at least " + std::to_string(min) + " elements");
    std::vector<JsonIn> out;
    for (std::size_t i = 0; i < v_->size(); ++i)
      out.emplace_back((*v_)[i], source_, path_ + "[" + std::to_string(i) + "]");
    return out;
  }

  // ---- values ----
  std::string string() const {
    if (!v_->is_string()) fail("must be a string");
    return v_->get<std::string>();
  }
  std::string nonempty_string() const {
    std::string s = string();
    if (s.empty()) fail("must not be empty");
    return s;
  }
  bool boolean() const {
    if (!v_->is_boolean()) fail("must be true or false");
    return v_->get<bool>();
  }
  double number() const {
    if (!v_->is_number()) fail("must be a number");
    const double d = v_->get<double>();
    if (!std::isfinite(d)) fail("must be finite");
    return d;
  }
  double number(double min, double max) const {
    const double d = number();
    if (!(d >= min && d <= max)) fail(num(d) + " is outside [" + num(min) + ", " + num(max) + "]");
    return d;
  }
  // An integer in [min, max] (of T's range by default): "must be an integer" ("a non-negative
  // integer" for an unsigned T), or "V is out of range [MIN, MAX]".
  template <typename T>
  T integer(T min = std::numeric_limits<T>::lowest(), T max = std::numeric_limits<T>::max()) const {
    static_assert(std::is_integral_v<T>);
    const bool is_unsigned = std::is_unsigned_v<T>;
    if (!v_->is_number_integer() ||
        (is_unsigned && !v_->is_number_unsigned() && v_->get<std::int64_t>() < 0))
      fail(is_unsigned ? "must be a non-negative integer" : "must be an integer");
    const auto out_of_range = [&](const std::string& v) {
      fail(v + " is out of range [" + std::to_string(min) + ", " + std::to_string(max) + "]");
    };
    if (v_->is_number_unsigned()) {
      const auto u = v_->get<std::uint64_t>();
      if (u > static_cast<std::uint64_t>(max) || (min > 0 && u < static_cast<std::uint64_t>(min)))
        out_of_range(std::to_string(u));
      return static_cast<T>(u);
    }
    const auto s = v_->get<std::int64_t>();
    if (s < static_cast<std::int64_t>(min) ||
        (max <= static_cast<T>(std::numeric_limits<std::int64_t>::max()) &&
         s > static_cast<std::int64_t>(max)))
      out_of_range(std::to_string(s));
    return static_cast<T>(s);
  }
  // Member `key` as an integer in [min, max], or `fallback` when it is not there (nothing:
  // "missing").
  template <typename T>
  T integer(std::string_view key, T min, T max, std::optional<T> fallback = std::nullopt) const {
    if (const auto m = find(key)) return m->template integer<T>(min, max);
    if (!fallback) fail_at(key, "missing");
    return *fallback;
  }
  std::vector<std::string> strings() const {
    std::vector<std::string> out;
    for (const JsonIn& e : elements()) out.push_back(e.string());
    return out;
  }

  // Reads member `key` into `out` when it is there (else leaves `out` as it is): a bool, an
  // integer of out's type, a floating-point number, a string, strings, or JSON as it is.
  template <typename T>
  bool read(std::string_view key, T& out) const {
    const auto m = find(key);
    if (!m) return false;
    if constexpr (std::is_same_v<T, bool>)
      out = m->boolean();
    else if constexpr (std::is_integral_v<T>)
      out = m->template integer<T>();
    else if constexpr (std::is_floating_point_v<T>)
      out = static_cast<T>(m->number());
    else if constexpr (std::is_same_v<T, std::string>)
      out = m->string();
    else if constexpr (std::is_same_v<T, std::vector<std::string>>)
      out = m->strings();
    else if constexpr (std::is_same_v<T, nlohmann::json>)
      out = m->json();
    else
      static_assert(!sizeof(T), "JsonIn::read: a type it does not read");
    return true;
  }

 private:
  static std::string num(double d) {
    std::string s = std::to_string(d);
    // std::to_string writes 6 decimals: drop the zeros that add nothing.
    if (s.find('.') != std::string::npos) {
      while (!s.empty() && s.back() == '0') s.pop_back();
      if (!s.empty() && s.back() == '.') s.pop_back();
    }
    return s;
  }
  const nlohmann::json* v_;
  std::string source_;
  std::string path_;
};

}  // namespace netagg
