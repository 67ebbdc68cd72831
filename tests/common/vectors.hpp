// SPDX-License-Identifier: Apache-2.0
// Reader for the golden vectors in tests/vectors/ (format: tests/vectors/README.md).
// Shared by every implementation's tests: host, switch model, and later RTL, HLS and P4.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

namespace netagg::testing {

struct Vector {
  std::filesystem::path file;
  std::string description;                    // the leading '#' line
  std::map<std::string, std::string> fields;  // every "key: value" line before "hex:"
  std::vector<std::byte> bytes;

  const std::string& at(const std::string& key) const;  // throws if missing
  std::optional<std::string> get(const std::string& key) const;
  std::int64_t integer(const std::string& key) const;

  // GoogleTest prints a parameter of a failed test this way: the file, not every byte.
  friend void PrintTo(const Vector& v, std::ostream* os) { *os << v.file.filename().string(); }
};

Vector load_vector(const std::filesystem::path& file);
// All *.vec files in a folder, sorted by name.
std::vector<Vector> load_vectors(const std::filesystem::path& folder);
std::filesystem::path vectors_dir();  // tests/vectors (NETAGG_VECTORS_DIR)

}  // namespace netagg::testing
