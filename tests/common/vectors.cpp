// SPDX-License-Identifier: Apache-2.0
#include "vectors.hpp"

#include <algorithm>
#include <fstream>
#include <stdexcept>

namespace netagg::testing {

namespace {
std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t\r");
  if (b == std::string::npos) return "";
  const auto e = s.find_last_not_of(" \t\r");
  return s.substr(b, e - b + 1);
}
}  // namespace

const std::string& Vector::at(const std::string& key) const {
  auto it = fields.find(key);
  if (it == fields.end()) throw std::runtime_error(file.string() + ": missing field '" + key + "'");
  return it->second;
}

std::optional<std::string> Vector::get(const std::string& key) const {
  auto it = fields.find(key);
  if (it == fields.end()) return std::nullopt;
  return it->second;
}

std::int64_t Vector::integer(const std::string& key) const {
  return std::stoll(at(key), nullptr, 0);
}

Vector load_vector(const std::filesystem::path& file) {
  std::ifstream in(file);
  if (!in) throw std::runtime_error(file.string() + ": cannot open");
  Vector v;
  v.file = file;
  std::string line;
  bool in_hex = false;
  while (std::getline(in, line)) {
    if (in_hex) {
      std::size_t pos = 0;
      while (pos < line.size()) {
        while (pos < line.size() && (line[pos] == ' ' || line[pos] == '\t' || line[pos] == '\r'))
          ++pos;
        if (pos >= line.size()) break;
        if (pos + 2 > line.size() || !std::isxdigit(static_cast<unsigned char>(line[pos])) ||
            !std::isxdigit(static_cast<unsigned char>(line[pos + 1])))
          throw std::runtime_error(file.string() + ": bad hex '" + line + "'");
        v.bytes.push_back(static_cast<std::byte>(std::stoi(line.substr(pos, 2), nullptr, 16)));
        pos += 2;
      }
      continue;
    }
    if (line.empty()) continue;
    if (line[0] == '#') {
      if (v.description.empty()) v.description = trim(line.substr(1));
      continue;
    }
    if (trim(line) == "hex:") {
      in_hex = true;
      continue;
    }
    const auto colon = line.find(':');
    if (colon == std::string::npos)
      throw std::runtime_error(file.string() + ": expected 'key: value', got '" + line + "'");
    v.fields[trim(line.substr(0, colon))] = trim(line.substr(colon + 1));
  }
  if (!in_hex) throw std::runtime_error(file.string() + ": no 'hex:' section");
  return v;
}

std::vector<Vector> load_vectors(const std::filesystem::path& folder) {
  std::vector<std::filesystem::path> files;
  for (const auto& e : std::filesystem::directory_iterator(folder))
    if (e.path().extension() == ".vec") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  std::vector<Vector> out;
  for (const auto& f : files) out.push_back(load_vector(f));
  return out;
}

std::filesystem::path vectors_dir() { return NETAGG_VECTORS_DIR; }

}  // namespace netagg::testing
