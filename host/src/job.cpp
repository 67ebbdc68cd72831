// SPDX-License-Identifier: Apache-2.0
#include "netagg/job.hpp"

#include <arpa/inet.h>

#include <charconv>
#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "netagg/error.hpp"

namespace netagg {

using nlohmann::json;

namespace {

[[noreturn]] void config_error(std::string_view source, std::string_view field,
                               std::string_view problem) {
  throw Error(Errc::kConfig, fmt::format("{}: {}: {}", source, field, problem));
}

// Throws Error(kConfig) "<what>: '<text>' is not an IPv4 address".
std::uint32_t parse_ipv4(std::string_view text, std::string_view what) {
  in_addr a{};
  const std::string s(text);
  if (inet_pton(AF_INET, s.c_str(), &a) != 1)
    throw Error(Errc::kConfig, fmt::format("{}: '{}' is not an IPv4 address", what, text));
  return ntohl(a.s_addr);
}

std::string ipv4_to_string(std::uint32_t ip) {
  return fmt::format("{}.{}.{}.{}", ip >> 24, (ip >> 16) & 0xFF, (ip >> 8) & 0xFF, ip & 0xFF);
}

template <typename T>
T get_uint(const json& obj, const char* key, std::string_view source, std::string_view path,
           std::uint64_t min, std::uint64_t max, std::optional<T> fallback = std::nullopt) {
  const std::string field = fmt::format("{}{}", path, key);
  auto it = obj.find(key);
  if (it == obj.end()) {
    if (fallback) return *fallback;
    config_error(source, field, "missing");
  }
  if (!it->is_number_integer() || (!it->is_number_unsigned() && it->get<std::int64_t>() < 0))
    config_error(source, field, "must be a non-negative integer");
  const auto v = it->get<std::uint64_t>();
  if (v < min || v > max)
    config_error(source, field, fmt::format("{} is out of range [{}, {}]", v, min, max));
  return static_cast<T>(v);
}

wire::Mac parse_mac(std::string_view text, std::string_view source, std::string_view field) {
  wire::Mac mac{};
  std::size_t pos = 0;
  for (int i = 0; i < 6; ++i) {
    if (pos + 2 > text.size()) config_error(source, field, fmt::format("'{}' is not a MAC", text));
    unsigned v = 0;
    auto [ptr, ec] = std::from_chars(text.data() + pos, text.data() + pos + 2, v, 16);
    if (ec != std::errc() || ptr != text.data() + pos + 2)
      config_error(source, field, fmt::format("'{}' is not a MAC", text));
    mac[i] = static_cast<std::uint8_t>(v);
    pos += 2;
    if (i < 5) {
      if (pos >= text.size() || (text[pos] != ':' && text[pos] != '-'))
        config_error(source, field, fmt::format("'{}' is not a MAC", text));
      ++pos;
    }
  }
  if (pos != text.size()) config_error(source, field, fmt::format("'{}' is not a MAC", text));
  return mac;
}

Endpoint parse_endpoint_field(const json& v, std::string_view source, const std::string& field) {
  if (!v.is_string()) config_error(source, field, "must be a string \"a.b.c.d:port\"");
  try {
    const Endpoint e = Endpoint::parse(v.get<std::string>(), field);
    check_host_address(e, field);
    return e;
  } catch (const Error& e) {
    throw Error(Errc::kConfig, fmt::format("{}: {}", source, e.what()));
  }
}

JobSpec parse_job_object(const json& j, std::string_view source, const std::string& path) {
  if (!j.is_object())
    config_error(source, path.empty() ? "job" : path.substr(0, path.size() - 1),  // no final '.'
                 "must be an object");
  JobSpec job;
  job.job_id = get_uint<std::uint16_t>(j, "job_id", source, path, 0, 0xFFFF);
  auto slots = j.find("slots");
  if (slots == j.end()) config_error(source, path + "slots", "missing");
  if (!slots->is_object()) config_error(source, path + "slots", "must be an object");
  job.slot_base = get_uint<std::uint16_t>(*slots, "base", source, path + "slots.", 0, 0xFFFF);
  job.slot_count = get_uint<std::uint16_t>(*slots, "count", source, path + "slots.", 1, 0xFFFF);
  if (std::uint32_t(job.slot_base) + job.slot_count > 0x10000)
    config_error(source, path + "slots", "base + count exceeds the 16-bit slot space");
  job.elements_per_packet =
      get_uint<std::uint16_t>(j, "elements_per_packet", source, path, 1, wire::kMaxCount);
  if (auto a = j.find("aggregator"); a != j.end())
    job.aggregator = parse_endpoint_field(*a, source, path + "aggregator");

  auto workers = j.find("workers");
  if (workers == j.end()) config_error(source, path + "workers", "missing");
  if (!workers->is_array() || workers->empty())
    config_error(source, path + "workers", "must be a non-empty array");
  if (workers->size() > 0xFFFF) config_error(source, path + "workers", "too many workers");
  job.workers.resize(workers->size());
  std::vector<bool> seen(workers->size(), false);
  for (std::size_t i = 0; i < workers->size(); ++i) {
    const json& w = (*workers)[i];
    const std::string wp = fmt::format("{}workers[{}].", path, i);
    if (!w.is_object()) config_error(source, wp.substr(0, wp.size() - 1), "must be an object");
    WorkerSpec spec;
    spec.rank = get_uint<std::uint16_t>(w, "rank", source, wp, 0, workers->size() - 1);
    if (seen[spec.rank]) config_error(source, wp + "rank", fmt::format("rank {} twice", spec.rank));
    seen[spec.rank] = true;
    auto addr = w.find("address");
    if (addr == w.end()) config_error(source, wp + "address", "missing");
    spec.address = parse_endpoint_field(*addr, source, wp + "address");
    if (auto m = w.find("mac"); m != w.end()) {
      if (!m->is_string()) config_error(source, wp + "mac", "must be a string");
      spec.mac = parse_mac(m->get<std::string>(), source, wp + "mac");
    }
    if (w.contains("switch_port"))
      spec.switch_port = get_uint<std::uint16_t>(w, "switch_port", source, wp, 0, 0xFFFF);
    job.workers[spec.rank] = spec;
  }
  for (std::size_t a = 0; a < job.workers.size(); ++a)
    for (std::size_t b = a + 1; b < job.workers.size(); ++b)
      if (job.workers[a].address == job.workers[b].address)
        config_error(source, fmt::format("{}workers", path),
                     fmt::format("ranks {} and {} share address {}", a, b,
                                 job.workers[a].address.to_string()));
  return job;
}

json parse_text(std::string_view text, std::string_view source) {
  try {
    return json::parse(text);
  } catch (const json::parse_error& e) {
    throw Error(Errc::kConfig, fmt::format("{}: not valid JSON: {}", source, e.what()));
  }
}

std::string read_file(const std::filesystem::path& file) {
  std::error_code ec;
  if (std::filesystem::is_directory(file, ec))
    throw Error(Errc::kConfig, fmt::format("{}: is a directory, not a job file", file.string()));
  std::ifstream in(file);
  if (!in) throw Error(Errc::kConfig, fmt::format("{}: cannot open", file.string()));
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

Endpoint Endpoint::parse(std::string_view text, std::string_view what) {
  const auto colon = text.rfind(':');
  if (colon == std::string_view::npos)
    throw Error(Errc::kConfig, fmt::format("{}: '{}' is not \"a.b.c.d:port\"", what, text));
  Endpoint e;
  e.ip = parse_ipv4(text.substr(0, colon), what);
  const auto port = text.substr(colon + 1);
  unsigned v = 0;
  auto [ptr, ec] = std::from_chars(port.data(), port.data() + port.size(), v);
  if (ec != std::errc() || ptr != port.data() + port.size() || v == 0 || v > 0xFFFF)
    throw Error(Errc::kConfig, fmt::format("{}: '{}' is not a port in 1..65535", what, port));
  e.port = static_cast<std::uint16_t>(v);
  return e;
}

void check_host_address(const Endpoint& e, std::string_view what) {
  const std::uint32_t top = e.ip >> 24;
  if (top == 0 || top >= 224)
    throw Error(Errc::kConfig,
                fmt::format("{}: {} is not a host address (0.0.0.0/8, multicast, reserved and "
                            "broadcast addresses never send a packet)",
                            what, ipv4_to_string(e.ip)));
}

std::string Endpoint::to_string() const { return fmt::format("{}:{}", ipv4_to_string(ip), port); }

const WorkerSpec* JobSpec::find_worker(const Endpoint& source) const {
  for (const auto& w : workers)
    if (w.address == source) return &w;
  return nullptr;
}

JobSpec parse_job(std::string_view json_text, std::string_view source) {
  return parse_job_object(parse_text(json_text, source), source, "");
}

std::vector<JobSpec> load_jobs(const std::filesystem::path& file) {
  const std::string source = file.string();
  const json j = parse_text(read_file(file), source);
  std::vector<JobSpec> jobs;
  if (j.is_object() && j.contains("jobs")) {
    const json& arr = j["jobs"];
    if (!arr.is_array() || arr.empty()) config_error(source, "jobs", "must be a non-empty array");
    for (std::size_t i = 0; i < arr.size(); ++i)
      jobs.push_back(parse_job_object(arr[i], source, fmt::format("jobs[{}].", i)));
  } else {
    jobs.push_back(parse_job_object(j, source, ""));
  }
  for (std::size_t a = 0; a < jobs.size(); ++a)
    for (std::size_t b = a + 1; b < jobs.size(); ++b) {
      if (jobs[a].job_id == jobs[b].job_id)
        config_error(source, "jobs", fmt::format("job_id {} twice", jobs[a].job_id));
      const auto a_end = jobs[a].slot_base + jobs[a].slot_count;
      const auto b_end = jobs[b].slot_base + jobs[b].slot_count;
      if (jobs[a].slot_base < b_end && jobs[b].slot_base < a_end)
        config_error(
            source, "jobs",
            fmt::format("slot ranges of jobs {} and {} overlap", jobs[a].job_id, jobs[b].job_id));
    }
  return jobs;
}

JobSpec load_job(const std::filesystem::path& file) {
  auto jobs = load_jobs(file);
  if (jobs.size() != 1)
    config_error(file.string(), "jobs", fmt::format("expected one job, found {}", jobs.size()));
  return jobs.front();
}

std::string to_json(const JobSpec& job) {
  json j;
  j["job_id"] = job.job_id;
  j["slots"] = {{"base", job.slot_base}, {"count", job.slot_count}};
  j["elements_per_packet"] = job.elements_per_packet;
  if (job.aggregator) j["aggregator"] = job.aggregator->to_string();
  j["workers"] = json::array();
  for (const auto& w : job.workers) {
    json o{{"rank", w.rank}, {"address", w.address.to_string()}};
    if (w.mac)
      o["mac"] = fmt::format("{:02x}:{:02x}:{:02x}:{:02x}:{:02x}:{:02x}", (*w.mac)[0], (*w.mac)[1],
                             (*w.mac)[2], (*w.mac)[3], (*w.mac)[4], (*w.mac)[5]);
    if (w.switch_port) o["switch_port"] = *w.switch_port;
    j["workers"].push_back(o);
  }
  return j.dump(2);
}

JobSpec make_local_job(std::uint16_t job_id, std::uint16_t workers, std::uint16_t first_port,
                       std::uint16_t slot_base, std::uint16_t slot_count,
                       std::uint16_t elements_per_packet, Endpoint aggregator) {
  JobSpec job;
  job.job_id = job_id;
  job.slot_base = slot_base;
  job.slot_count = slot_count;
  job.elements_per_packet = elements_per_packet;
  job.aggregator = aggregator;
  for (std::uint16_t r = 0; r < workers; ++r)
    job.workers.push_back({r, Endpoint{0x7F000001, static_cast<std::uint16_t>(first_port + r)},
                           std::nullopt, std::nullopt});
  return job;
}

}  // namespace netagg
