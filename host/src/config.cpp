// SPDX-License-Identifier: Apache-2.0
#include "netagg/config.hpp"

#include <arpa/inet.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <random>
#include <sstream>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "netagg/engine.hpp"
#include "netagg/error.hpp"

namespace netagg {

using nlohmann::json;

namespace {

[[noreturn]] void config_error(std::string_view where, std::string_view problem) {
  throw Error(Errc::kConfig, fmt::format("{}: {}", where, problem));
}

// The JSON keys a config file may hold; anything else is a typo the user should hear about.
// clang-format off
constexpr std::string_view kFileKeys[] = {
    "rank", "job_file", "job", "job_id", "aggregator", "transport", "float_wire",
    "retransmit_timeout_ms", "max_retransmit_timeout_ms", "min_retransmit_timeout_ms",
    "adaptive_retransmit", "job_timeout_ms", "loss", "loss_seed", "udp_offload",
    "congestion_control", "pace_gbps", "dpdk", "fallback", "fallback_after_ms",
    "fallback_timeout_ms", "store"};
constexpr std::string_view kDpdkKeys[] = {
    "lcores", "vdevs", "no_huge", "no_pci", "memory_mb", "file_prefix", "eal_args", "port", "mac",
    "aggregator_mac", "next_hop", "arp_timeout_ms", "burst", "mbufs", "verify_udp_checksum"};
// clang-format on

// Limits of the DPDK port settings (validate() checks them, the parsers name the field).
constexpr std::uint32_t kMaxBurst = 512;
constexpr std::uint32_t kMinMbufs = 255, kMaxMbufs = 1u << 20;

// The longest timeout a setting may hold: a day. Far beyond any useful value, and far from the
// range of the nanosecond clock (about 292 years), so deadlines never overflow.
constexpr double kMaxTimeoutMs = 86'400'000;

// A timeout setting in milliseconds: finite, > 0 and at most kMaxTimeoutMs, else an error at
// `where`.
Duration timeout_from_ms(double ms, std::string_view where) {
  if (!(ms > 0 && ms <= kMaxTimeoutMs))
    config_error(where, fmt::format("{} ms is outside (0, {}] ms", ms, kMaxTimeoutMs));
  return std::chrono::duration_cast<Duration>(std::chrono::duration<double, std::milli>(ms));
}

double to_ms(Duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

// A worker's pace: 0 (off) or [kMinPaceGbps, kMaxPaceGbps] (a tree's share is at least
// 2^-20 of it: EngineParams takes down to 1e-6).
constexpr double kMinPaceGbps = 1e-3, kMaxPaceGbps = 1e4;
void check_pace(double gbps, std::string_view where) {
  if (!(gbps == 0 || (gbps >= kMinPaceGbps && gbps <= kMaxPaceGbps)))
    config_error(where, fmt::format("{} Gbit/s is neither 0 (off) nor in [{}, {}]", gbps,
                                    kMinPaceGbps, kMaxPaceGbps));
}

// Picks the job `job_id` out of a file that may hold several; without an id it must hold one.
JobSpec pick_job(std::vector<JobSpec> jobs, std::optional<std::uint16_t> job_id,
                 std::string_view where) {
  if (job_id) {
    for (auto& j : jobs)
      if (j.job_id == *job_id) return std::move(j);
    config_error(where, fmt::format("no job with job_id {} in it", *job_id));
  }
  if (jobs.size() != 1)
    config_error(where, fmt::format("holds {} jobs; say which one with job_id", jobs.size()));
  return std::move(jobs.front());
}

std::optional<std::string> getenv_string(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr) return std::nullopt;
  return std::string(v);
}

// Integer from an environment variable; the whole text must be the number.
std::int64_t parse_env_int(const char* name, const std::string& text, std::int64_t min,
                           std::int64_t max) {
  std::int64_t v = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, v);
  if (text.empty() || ec == std::errc::invalid_argument || ptr != end)
    config_error(name, fmt::format("'{}' is not an integer", text));
  if (ec == std::errc::result_out_of_range || v < min || v > max)
    config_error(name, fmt::format("{} is out of range [{}, {}]", text, min, max));
  return v;
}

std::uint64_t parse_env_u64(const char* name, const std::string& text) {
  std::uint64_t v = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, v);
  if (text.empty() || ec == std::errc::invalid_argument || ptr != end)
    config_error(name, fmt::format("'{}' is not a non-negative integer", text));
  if (ec == std::errc::result_out_of_range)
    config_error(name, fmt::format("{} does not fit in 64 bits", text));
  return v;
}

double parse_env_double(const char* name, const std::string& text) {
  double v = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, v);
  if (text.empty() || ec != std::errc() || ptr != end || !std::isfinite(v))
    config_error(name, fmt::format("'{}' is not a number", text));
  return v;
}

// The first of `names` that is set, with its name (for messages).
std::optional<std::pair<const char*, std::string>> first_env(
    std::initializer_list<const char*> names) {
  for (const char* n : names)
    if (auto v = getenv_string(n)) return std::make_pair(n, *v);
  return std::nullopt;
}

double get_number(const json& j, const char* key, std::string_view where);

wire::Mac parse_mac_text(std::string_view text, std::string_view where) {
  wire::Mac mac{};
  std::size_t pos = 0;
  const auto bad = [&] {
    config_error(where, fmt::format("'{}' is not a MAC (aa:bb:cc:dd:ee:ff)", text));
  };
  for (int i = 0; i < 6; ++i) {
    if (pos + 2 > text.size()) bad();
    unsigned v = 0;
    auto [ptr, ec] = std::from_chars(text.data() + pos, text.data() + pos + 2, v, 16);
    if (ec != std::errc() || ptr != text.data() + pos + 2) bad();
    mac[i] = static_cast<std::uint8_t>(v);
    pos += 2;
    if (i < 5) {
      if (pos >= text.size() || (text[pos] != ':' && text[pos] != '-')) bad();
      ++pos;
    }
  }
  if (pos != text.size()) bad();
  return mac;
}

std::uint32_t parse_ipv4_text(const std::string& text, std::string_view where) {
  in_addr a{};
  if (::inet_pton(AF_INET, text.c_str(), &a) != 1)
    config_error(where, fmt::format("'{}' is not an IPv4 address (a.b.c.d)", text));
  return ntohl(a.s_addr);
}

bool parse_env_bool(const char* name, const std::string& text) {
  if (text == "1" || text == "true" || text == "yes" || text == "on") return true;
  if (text == "0" || text == "false" || text == "no" || text == "off") return false;
  config_error(name, fmt::format("'{}' is not a boolean (1/0, true/false)", text));
}

// "a b  c" -> {"a", "b", "c"} (EAL arguments from one environment variable).
std::vector<std::string> split(const std::string& text, char sep) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : text) {
    if (c == sep || (sep == ' ' && c == '\t')) {
      if (!cur.empty()) out.push_back(std::move(cur));
      cur.clear();
    } else {
      cur.push_back(c);
    }
  }
  if (!cur.empty()) out.push_back(std::move(cur));
  return out;
}

void parse_dpdk_object(const json& d, const std::string& where, DpdkConfig& out) {
  if (!d.is_object()) config_error(where, "must be a JSON object");
  const auto field = [&](std::string_view key) { return fmt::format("{}.{}", where, key); };
  for (const auto& [key, value] : d.items()) {
    bool known = false;
    for (auto k : kDpdkKeys) known = known || k == key;
    if (!known) config_error(field(key), "unknown field");
  }
  const auto string_of = [&](const char* key) {
    if (!d[key].is_string()) config_error(field(key), "must be a string");
    return d[key].get<std::string>();
  };
  const auto strings_of = [&](const char* key) {
    const json& v = d[key];
    if (!v.is_array()) config_error(field(key), "must be an array of strings");
    std::vector<std::string> list;
    for (const auto& e : v) {
      if (!e.is_string()) config_error(field(key), "must be an array of strings");
      list.push_back(e.get<std::string>());
    }
    return list;
  };
  const auto bool_of = [&](const char* key) {
    if (!d[key].is_boolean()) config_error(field(key), "must be true or false");
    return d[key].get<bool>();
  };
  const auto uint_of = [&](const char* key, std::uint64_t min, std::uint64_t max) {
    const json& v = d[key];
    if (!v.is_number_unsigned() || v.get<std::uint64_t>() < min || v.get<std::uint64_t>() > max)
      config_error(field(key), fmt::format("must be an integer in [{}, {}]", min, max));
    return v.get<std::uint64_t>();
  };
  if (d.contains("lcores")) out.lcores = string_of("lcores");
  if (d.contains("vdevs")) out.vdevs = strings_of("vdevs");
  if (d.contains("no_huge")) out.no_huge = bool_of("no_huge");
  if (d.contains("no_pci")) out.no_pci = bool_of("no_pci");
  if (d.contains("memory_mb"))
    out.memory_mb = static_cast<std::uint32_t>(uint_of("memory_mb", 0, 1u << 20));
  if (d.contains("file_prefix")) out.file_prefix = string_of("file_prefix");
  if (d.contains("eal_args")) out.eal_args = strings_of("eal_args");
  if (d.contains("port")) out.port = static_cast<std::uint16_t>(uint_of("port", 0, 0xFFFF));
  if (d.contains("mac")) out.mac = parse_mac_text(string_of("mac"), field("mac"));
  if (d.contains("aggregator_mac"))
    out.aggregator_mac = parse_mac_text(string_of("aggregator_mac"), field("aggregator_mac"));
  if (d.contains("next_hop"))
    out.next_hop = parse_ipv4_text(string_of("next_hop"), field("next_hop"));
  if (d.contains("arp_timeout_ms")) {
    out.arp_timeout =
        timeout_from_ms(get_number(d, "arp_timeout_ms", where), field("arp_timeout_ms"));
  }
  if (d.contains("burst")) out.burst = static_cast<std::uint16_t>(uint_of("burst", 1, kMaxBurst));
  if (d.contains("mbufs"))
    out.mbufs = static_cast<std::uint32_t>(uint_of("mbufs", kMinMbufs, kMaxMbufs));
  if (d.contains("verify_udp_checksum")) out.verify_udp_checksum = bool_of("verify_udp_checksum");
}

// NETAGG_DPDK_* over whatever the file said.
void apply_dpdk_env(DpdkConfig& d) {
  if (auto v = getenv_string("NETAGG_DPDK_LCORES")) {
    if (v->empty()) config_error("NETAGG_DPDK_LCORES", "is set but empty");
    d.lcores = *v;
  }
  // vdev arguments hold commas themselves, so several vdevs are separated by ';'.
  if (auto v = getenv_string("NETAGG_DPDK_VDEVS")) d.vdevs = split(*v, ';');
  if (auto v = getenv_string("NETAGG_DPDK_NO_HUGE"))
    d.no_huge = parse_env_bool("NETAGG_DPDK_NO_HUGE", *v);
  if (auto v = getenv_string("NETAGG_DPDK_NO_PCI"))
    d.no_pci = parse_env_bool("NETAGG_DPDK_NO_PCI", *v);
  if (auto v = getenv_string("NETAGG_DPDK_MEMORY_MB"))
    d.memory_mb =
        static_cast<std::uint32_t>(parse_env_int("NETAGG_DPDK_MEMORY_MB", *v, 0, 1 << 20));
  if (auto v = getenv_string("NETAGG_DPDK_FILE_PREFIX")) d.file_prefix = *v;
  if (auto v = getenv_string("NETAGG_DPDK_EAL_ARGS")) d.eal_args = split(*v, ' ');
  if (auto v = getenv_string("NETAGG_DPDK_PORT"))
    d.port = static_cast<std::uint16_t>(parse_env_int("NETAGG_DPDK_PORT", *v, 0, 0xFFFF));
  if (auto v = getenv_string("NETAGG_DPDK_MAC")) d.mac = parse_mac_text(*v, "NETAGG_DPDK_MAC");
  if (auto v = getenv_string("NETAGG_DPDK_AGGREGATOR_MAC"))
    d.aggregator_mac = parse_mac_text(*v, "NETAGG_DPDK_AGGREGATOR_MAC");
  if (auto v = getenv_string("NETAGG_DPDK_NEXT_HOP"))
    d.next_hop = parse_ipv4_text(*v, "NETAGG_DPDK_NEXT_HOP");
  if (auto v = getenv_string("NETAGG_DPDK_ARP_TIMEOUT_MS")) {
    d.arp_timeout = timeout_from_ms(parse_env_double("NETAGG_DPDK_ARP_TIMEOUT_MS", *v),
                                    "NETAGG_DPDK_ARP_TIMEOUT_MS");
  }
  if (auto v = getenv_string("NETAGG_DPDK_BURST"))
    d.burst = static_cast<std::uint16_t>(parse_env_int("NETAGG_DPDK_BURST", *v, 1, kMaxBurst));
  if (auto v = getenv_string("NETAGG_DPDK_MBUFS"))
    d.mbufs =
        static_cast<std::uint32_t>(parse_env_int("NETAGG_DPDK_MBUFS", *v, kMinMbufs, kMaxMbufs));
  if (auto v = getenv_string("NETAGG_DPDK_VERIFY_UDP_CHECKSUM"))
    d.verify_udp_checksum = parse_env_bool("NETAGG_DPDK_VERIFY_UDP_CHECKSUM", *v);
}

struct FileConfig {
  Config cfg;
  bool has_job = false;
};

double get_number(const json& j, const char* key, std::string_view where) {
  const json& v = j.at(key);
  if (!v.is_number()) config_error(fmt::format("{}: {}", where, key), "must be a number");
  return v.get<double>();
}

FileConfig parse_file(const std::filesystem::path& file) {
  const std::string where = file.string();
  std::ifstream in(file);
  if (!in) config_error(where, "cannot open");
  std::stringstream ss;
  ss << in.rdbuf();
  json j;
  try {
    j = json::parse(ss.str());
  } catch (const json::parse_error& e) {
    config_error(where, fmt::format("not valid JSON: {}", e.what()));
  }
  if (!j.is_object()) config_error(where, "must be a JSON object");
  for (const auto& [key, value] : j.items()) {
    bool known = false;
    for (auto k : kFileKeys) known = known || k == key;
    if (!known) config_error(fmt::format("{}: {}", where, key), "unknown field");
  }
  const auto field = [&](std::string_view key) { return fmt::format("{}: {}", where, key); };

  FileConfig out;
  Config& cfg = out.cfg;
  if (j.contains("rank")) {
    const json& v = j["rank"];
    if (!v.is_number_integer() || (!v.is_number_unsigned() && v.get<std::int64_t>() < 0) ||
        v.get<std::uint64_t>() > 0xFFFF)
      config_error(field("rank"), "must be an integer in [0, 65535]");
    cfg.rank = static_cast<int>(v.get<std::uint64_t>());
  }
  std::optional<std::uint16_t> job_id;
  if (j.contains("job_id")) {
    const json& v = j["job_id"];
    if (!v.is_number_unsigned() || v.get<std::uint64_t>() > 0xFFFF)
      config_error(field("job_id"), "must be an integer in [0, 65535]");
    job_id = static_cast<std::uint16_t>(v.get<std::uint64_t>());
  }
  if (j.contains("job_file") && j.contains("job"))
    config_error(field("job"), "give either job_file or an inline job, not both");
  if (j.contains("job_file")) {
    if (!j["job_file"].is_string()) config_error(field("job_file"), "must be a string");
    std::filesystem::path jf = j["job_file"].get<std::string>();
    if (jf.is_relative()) jf = file.parent_path() / jf;
    cfg.job = pick_job(load_jobs(jf), job_id, jf.string());
    out.has_job = true;
  } else if (j.contains("job")) {
    cfg.job = parse_job(j["job"].dump(), field("job"));
    if (job_id && cfg.job.job_id != *job_id)
      config_error(field("job_id"),
                   fmt::format("{} but the inline job has job_id {}", *job_id, cfg.job.job_id));
    out.has_job = true;
  }
  if (j.contains("aggregator")) {
    if (!j["aggregator"].is_string())
      config_error(field("aggregator"), "must be a string \"a.b.c.d:port\"");
    cfg.aggregator = Endpoint::parse(j["aggregator"].get<std::string>(), field("aggregator"));
  }
  if (j.contains("transport")) {
    if (!j["transport"].is_string()) config_error(field("transport"), "must be a string");
    cfg.transport = j["transport"].get<std::string>();
  }
  if (j.contains("dpdk")) parse_dpdk_object(j["dpdk"], field("dpdk"), cfg.dpdk);
  if (j.contains("float_wire")) {
    if (!j["float_wire"].is_string()) config_error(field("float_wire"), "must be a string");
    try {
      cfg.float_wire = parse_float_wire(j["float_wire"].get<std::string>());
    } catch (const Error& e) {
      config_error(where, e.what());
    }
  }
  const auto timeout = [&](const char* key, Duration& d) {
    if (!j.contains(key)) return;
    d = timeout_from_ms(get_number(j, key, where), field(key));
  };
  timeout("retransmit_timeout_ms", cfg.retransmit_timeout);
  timeout("max_retransmit_timeout_ms", cfg.max_retransmit_timeout);
  timeout("min_retransmit_timeout_ms", cfg.min_retransmit_timeout);
  timeout("job_timeout_ms", cfg.job_timeout);
  timeout("fallback_after_ms", cfg.fallback_after);
  timeout("fallback_timeout_ms", cfg.fallback_timeout);
  if (j.contains("fallback")) {
    if (!j["fallback"].is_string()) config_error(field("fallback"), "must be \"gloo\" or \"off\"");
    try {
      cfg.fallback = parse_fallback(j["fallback"].get<std::string>());
    } catch (const Error& e) {
      config_error(where, e.what());
    }
  }
  if (j.contains("store")) {
    if (!j["store"].is_string()) config_error(field("store"), "must be a string \"file:DIR\"");
    cfg.store = j["store"].get<std::string>();
  }
  if (j.contains("congestion_control")) {
    if (!j["congestion_control"].is_boolean())
      config_error(field("congestion_control"), "must be true or false");
    cfg.congestion_control = j["congestion_control"].get<bool>();
  }
  if (j.contains("pace_gbps")) {
    cfg.pace_gbps = get_number(j, "pace_gbps", where);
    check_pace(cfg.pace_gbps, field("pace_gbps"));
  }
  if (j.contains("udp_offload")) {
    if (!j["udp_offload"].is_boolean()) config_error(field("udp_offload"), "must be true or false");
    cfg.udp_offload = j["udp_offload"].get<bool>();
  }
  if (j.contains("adaptive_retransmit")) {
    if (!j["adaptive_retransmit"].is_boolean())
      config_error(field("adaptive_retransmit"), "must be true or false");
    cfg.adaptive_retransmit = j["adaptive_retransmit"].get<bool>();
  }
  if (j.contains("loss")) cfg.loss = get_number(j, "loss", where);
  if (j.contains("loss_seed")) {
    if (!j["loss_seed"].is_number_unsigned())
      config_error(field("loss_seed"), "must be a non-negative integer");
    cfg.loss_seed = j["loss_seed"].get<std::uint64_t>();
  }
  return out;
}

}  // namespace

FloatWire parse_float_wire(std::string_view text) {
  if (text == "int32-bfp") return FloatWire::kBlockInt32;
  if (text == "fp32") return FloatWire::kFp32;
  throw Error(Errc::kConfig, fmt::format("float_wire: '{}' is not one of int32-bfp, fp32", text));
}

bool dpdk_built() {
#ifdef NETAGG_HAVE_DPDK
  return true;
#else
  return false;
#endif
}

Fallback parse_fallback(std::string_view text) {
  if (text == "gloo") return Fallback::kGloo;
  if (text == "off") return Fallback::kOff;
  throw Error(Errc::kConfig, fmt::format("fallback: '{}' is not one of gloo, off", text));
}

std::string_view to_string(Fallback f) { return f == Fallback::kGloo ? "gloo" : "off"; }

std::string_view to_string(FloatWire w) {
  return w == FloatWire::kBlockInt32 ? "int32-bfp" : "fp32";
}

Config Config::from_file(const std::filesystem::path& file) {
  FileConfig f = parse_file(file);
  if (!f.has_job) config_error(file.string(), "job_file or job: missing");
  try {
    f.cfg.validate();
  } catch (const Error& e) {
    throw Error(e.code(), fmt::format("{}: {}", file.string(), e.what()));
  }
  return std::move(f.cfg);
}

Config Config::from_env() {
  Config cfg;
  bool has_job = false;
  if (auto file = getenv_string("NETAGG_CONFIG")) {
    if (file->empty()) config_error("NETAGG_CONFIG", "is set but empty");
    FileConfig f = parse_file(*file);
    cfg = std::move(f.cfg);
    has_job = f.has_job;
  }
  std::optional<std::uint16_t> job_id;
  if (auto v = getenv_string("NETAGG_JOB_ID"))
    job_id = static_cast<std::uint16_t>(parse_env_int("NETAGG_JOB_ID", *v, 0, 0xFFFF));
  if (auto v = getenv_string("NETAGG_JOB_FILE")) {
    if (v->empty()) config_error("NETAGG_JOB_FILE", "is set but empty");
    cfg.job = pick_job(load_jobs(*v), job_id, *v);
    has_job = true;
  } else if (job_id && has_job && cfg.job.job_id != *job_id) {
    config_error("NETAGG_JOB_ID",
                 fmt::format("{} but the configured job has job_id {}", *job_id, cfg.job.job_id));
  }
  if (!has_job) config_error("NETAGG_JOB_FILE", "not set, and no NETAGG_CONFIG file names a job");

  if (auto r = first_env({"NETAGG_RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "RANK"}))
    cfg.rank = static_cast<int>(parse_env_int(r->first, r->second, 0, 0xFFFF));
  if (cfg.rank < 0)
    config_error("NETAGG_RANK",
                 "not set (nor OMPI_COMM_WORLD_RANK, PMI_RANK, RANK, nor rank in NETAGG_CONFIG)");
  if (auto w = first_env({"NETAGG_WORLD_SIZE", "OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "WORLD_SIZE"})) {
    const auto n = parse_env_int(w->first, w->second, 1, 0xFFFF);
    if (static_cast<std::size_t>(n) != cfg.job.world_size())
      throw Error(Errc::kConfig, fmt::format("{}={} but the job has {} workers", w->first, n,
                                             cfg.job.world_size()));
  }
  if (auto v = getenv_string("NETAGG_AGGREGATOR"))
    cfg.aggregator = Endpoint::parse(*v, "NETAGG_AGGREGATOR");
  if (auto v = getenv_string("NETAGG_TRANSPORT")) {
    if (v->empty()) config_error("NETAGG_TRANSPORT", "is set but empty");
    cfg.transport = *v;
  }
  apply_dpdk_env(cfg.dpdk);
  if (auto v = getenv_string("NETAGG_FLOAT_WIRE")) {
    try {
      cfg.float_wire = parse_float_wire(*v);
    } catch (const Error&) {
      config_error("NETAGG_FLOAT_WIRE", fmt::format("'{}' is not one of int32-bfp, fp32", *v));
    }
  }
  const auto timeout = [](const char* name, Duration& d) {
    if (auto v = getenv_string(name)) d = timeout_from_ms(parse_env_double(name, *v), name);
  };
  timeout("NETAGG_TIMEOUT_MS", cfg.job_timeout);
  timeout("NETAGG_RETRANSMIT_TIMEOUT_MS", cfg.retransmit_timeout);
  timeout("NETAGG_MAX_RETRANSMIT_TIMEOUT_MS", cfg.max_retransmit_timeout);
  timeout("NETAGG_MIN_RETRANSMIT_TIMEOUT_MS", cfg.min_retransmit_timeout);
  if (auto v = getenv_string("NETAGG_ADAPTIVE_RETRANSMIT")) {
    if (*v != "0" && *v != "1")
      config_error("NETAGG_ADAPTIVE_RETRANSMIT", fmt::format("'{}' is not 0 or 1", *v));
    cfg.adaptive_retransmit = *v == "1";
  }
  if (auto v = getenv_string("NETAGG_LOSS")) {
    cfg.loss = parse_env_double("NETAGG_LOSS", *v);
    if (cfg.loss < 0 || cfg.loss >= 1)
      config_error("NETAGG_LOSS", fmt::format("{} is outside [0, 1)", *v));
  }
  if (auto v = getenv_string("NETAGG_LOSS_SEED"))
    cfg.loss_seed = parse_env_u64("NETAGG_LOSS_SEED", *v);
  apply_run_environment(cfg);
  cfg.validate();
  return cfg;
}

void apply_run_environment(Config& cfg) {
  for (const auto& [name, field] : {std::pair{"NETAGG_CONGESTION_CONTROL", &cfg.congestion_control},
                                    std::pair{"NETAGG_UDP_OFFLOAD", &cfg.udp_offload}}) {
    if (auto v = getenv_string(name)) {
      if (*v != "0" && *v != "1") config_error(name, fmt::format("'{}' is not 0 or 1", *v));
      *field = *v == "1";
    }
  }
  if (auto v = getenv_string("NETAGG_PACE_GBPS")) {
    cfg.pace_gbps = parse_env_double("NETAGG_PACE_GBPS", *v);
    check_pace(cfg.pace_gbps, "NETAGG_PACE_GBPS");
  }
  if (auto v = getenv_string("NETAGG_FALLBACK")) {
    try {
      cfg.fallback = parse_fallback(*v);
    } catch (const Error&) {
      config_error("NETAGG_FALLBACK", fmt::format("'{}' is not one of gloo, off", *v));
    }
  }
  const auto timeout = [](const char* name, Duration& d) {
    if (auto v = getenv_string(name)) d = timeout_from_ms(parse_env_double(name, *v), name);
  };
  timeout("NETAGG_FALLBACK_AFTER_MS", cfg.fallback_after);
  timeout("NETAGG_FALLBACK_TIMEOUT_MS", cfg.fallback_timeout);
  if (auto v = getenv_string("NETAGG_STORE")) cfg.store = *v;
  if (auto v = getenv_string("NETAGG_EPOCH")) {
    cfg.epoch = parse_epoch(*v, "NETAGG_EPOCH");
    check_epoch(*cfg.epoch, "NETAGG_EPOCH");
  } else if (!cfg.epoch) {
    cfg.epoch = launcher_epoch();
  }
}

void check_epoch(std::uint32_t epoch, std::string_view where) {
  // 0 is what a token that was never set reads as, in a field, a file or a shell variable: it
  // would be the same in every run that forgot it.
  if (epoch == 0)
    config_error(where,
                 "0 is not a run token (it is what an unset one reads as, the same in every "
                 "run): set a random one for each run, e.g. $(od -An -N4 -tu4 /dev/urandom), "
                 "the same on every worker of the run");
}

std::uint32_t parse_epoch(std::string_view text, std::string_view where) {
  // Blanks around the number are allowed: `od -An -tu4` writes them.
  const auto first = text.find_first_not_of(" \t\n");
  text = first == std::string_view::npos
             ? std::string_view{}
             : text.substr(first, text.find_last_not_of(" \t\n") - first + 1);
  const bool hex = text.starts_with("0x") || text.starts_with("0X");
  const std::string_view digits = hex ? text.substr(2) : text;
  std::uint64_t v = 0;
  const char* end = digits.data() + digits.size();
  auto [ptr, ec] = std::from_chars(digits.data(), end, v, hex ? 16 : 10);
  if (digits.empty() || ec == std::errc::invalid_argument || ptr != end)
    config_error(where, fmt::format("'{}' is not a decimal or 0x-hexadecimal integer", text));
  if (ec == std::errc::result_out_of_range || v > 0xFFFFFFFFu)
    config_error(where, fmt::format("{} does not fit in 32 bits", text));
  return static_cast<std::uint32_t>(v);
}

namespace {

// The launcher's run id: the variable that holds it, and the text to hash (or nothing).
struct LauncherRunId {
  std::string variable, value, id;
};

std::optional<LauncherRunId> launcher_run_id() {
  if (auto v = getenv_string("TORCHELASTIC_RUN_ID"))
    return LauncherRunId{"TORCHELASTIC_RUN_ID", *v, "torchelastic:" + *v};
  if (auto v = getenv_string("OMPI_MCA_ess_base_jobid"))
    return LauncherRunId{"OMPI_MCA_ess_base_jobid", *v, "ompi:" + *v};
  if (auto v = getenv_string("PMIX_NAMESPACE"))
    return LauncherRunId{"PMIX_NAMESPACE", *v, "pmix:" + *v};
  if (auto v = getenv_string("SLURM_JOB_ID"))
    return LauncherRunId{"SLURM_JOB_ID", *v,
                         "slurm:" + *v + "." + getenv_string("SLURM_STEP_ID").value_or("")};
  return std::nullopt;
}

// A run id that every launch repeats: empty, torchrun's default "none" (no --rdzv-id), or a
// placeholder number. Hashing it would give two runs one token.
bool repeats_across_runs(std::string_view value) {
  const auto first = value.find_first_not_of(" \t\n");
  if (first == std::string_view::npos) return true;
  value = value.substr(first, value.find_last_not_of(" \t\n") - first + 1);
  std::string lower(value);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return lower == "none" || lower == "null" || lower == "default" || lower == "0";
}

}  // namespace

std::optional<std::string> launcher_run_id_problem() {
  const auto run = launcher_run_id();
  if (!run || !repeats_across_runs(run->value)) return std::nullopt;
  std::string text =
      fmt::format("{}='{}' is the same in every launch, so it cannot tell runs apart",
                  run->variable, run->value);
  if (run->variable == "TORCHELASTIC_RUN_ID")
    text +=
        " (torchrun's default without --rdzv-id): start torchrun with "
        "--rdzv-id=$(od -An -N8 -tx8 /dev/urandom | tr -d ' ') or --standalone, use the torch "
        "backend (it agrees a fresh token through torchrun's store),";
  return text + " or set NETAGG_EPOCH to a random value for each run, the same on every worker";
}

std::optional<std::uint32_t> launcher_epoch() {
  const auto run = launcher_run_id();
  if (!run || repeats_across_runs(run->value)) return std::nullopt;
  const std::string& id = run->id;
  std::uint32_t h = 2166136261u;  // FNV-1a
  for (const char c : id) {
    h ^= static_cast<unsigned char>(c);
    h *= 16777619u;
  }
  return h != 0 ? h : 1;  // 0 is refused as a token (check_epoch)
}

std::uint32_t random_epoch() {
  std::random_device rd;
  for (;;)
    if (const auto e = static_cast<std::uint32_t>(rd()); e != 0) return e;
}

void Config::validate() const {
  const std::size_t n = job.world_size();
  if (n == 0) config_error("job", "has no workers");
  if (job.trees.size() > 1 && aggregator.port != 0)
    config_error("aggregator",
                 fmt::format("set to {}, but job {} runs on {} trees, each with its own "
                             "aggregator of this rank: leave it unset",
                             aggregator.to_string(), job.job_id, job.trees.size()));
  if (job.slot_count == 0 && job.trees.empty())
    config_error("job: slots.count", "must be at least 1");
  if (job.elements_per_packet == 0 || job.elements_per_packet > wire::kMaxCount)
    config_error("job: elements_per_packet",
                 fmt::format("{} is outside [1, {}]", job.elements_per_packet, wire::kMaxCount));
  if (std::uint32_t(job.slot_base) + job.slot_count > 0x10000)
    config_error("job: slots", "base + count exceeds the 16-bit slot space");
  for (std::size_t r = 0; r < n; ++r)
    if (job.workers[r].rank != r)
      config_error("job: workers", fmt::format("entry {} has rank {}; ranks must be 0..{}", r,
                                               job.workers[r].rank, n - 1));
  if (rank < 0) config_error("rank", "not set");
  if (static_cast<std::size_t>(rank) >= n)
    throw Error(Errc::kConfig,
                fmt::format("rank {} is outside the job's {} workers (0..{})", rank, n, n - 1));
  if (aggregator.port == 0 && !job.aggregator && job.trees.empty())
    config_error("aggregator", "not set (neither in the config nor in the job)");
  for (const Endpoint& a : aggregator_addresses()) check_host_address(a, "aggregator");
  if (transport == "dpdk" && !dpdk_built())
    throw Error(Errc::kUnsupported,
                "transport: 'dpdk' is not built into this libnetagg (available: udp; build with "
                "libdpdk-dev installed and -DNETAGG_DPDK=ON)");
  if (transport != "udp" && transport != "dpdk")
    config_error("transport", fmt::format("'{}' is not one of udp, dpdk", transport));
  if (transport == "dpdk") {
    if (dpdk.lcores.empty()) config_error("dpdk.lcores", "must not be empty");
    for (const auto& v : dpdk.vdevs)
      if (v.empty()) config_error("dpdk.vdevs", "holds an empty device");
    if (dpdk.burst == 0 || dpdk.burst > kMaxBurst)
      config_error("dpdk.burst", fmt::format("{} is outside [1, {}]", dpdk.burst, kMaxBurst));
    if (dpdk.mbufs < kMinMbufs || dpdk.mbufs > kMaxMbufs)
      config_error("dpdk.mbufs",
                   fmt::format("{} is outside [{}, {}]", dpdk.mbufs, kMinMbufs, kMaxMbufs));
    // Every packet of a window can be in flight at once, plus a receive ring's worth.
    unsigned window = 0;  // the packets in flight: every tree's window
    for (std::size_t t = 0; t < trees(); ++t) window += worker_view(t).job.slot_count;
    if (dpdk.mbufs < 2u * window + 2u * dpdk.burst)
      config_error("dpdk.mbufs", fmt::format("{} is too few for a window of {} slots (at least {})",
                                             dpdk.mbufs, window, 2u * window + 2u * dpdk.burst));
    if (dpdk.arp_timeout <= Duration::zero()) config_error("dpdk.arp_timeout", "must be > 0");
  }
  const auto in_range = [](const char* name, Duration d) {
    if (d <= Duration::zero() || to_ms(d) > kMaxTimeoutMs)
      config_error(name, fmt::format("{} ms is outside (0, {}] ms", to_ms(d), kMaxTimeoutMs));
  };
  in_range("retransmit_timeout", retransmit_timeout);
  in_range("max_retransmit_timeout", max_retransmit_timeout);
  in_range("min_retransmit_timeout", min_retransmit_timeout);
  in_range("job_timeout", job_timeout);
  in_range("fallback_after", fallback_after);
  in_range("fallback_timeout", fallback_timeout);
  if (fallback == Fallback::kGloo && !store.empty()) {
    if (fallback_after >= job_timeout)
      config_error("fallback_after",
                   fmt::format("{} ms is not below job_timeout {} ms: the job timeout would end "
                               "the all-reduce before the fallback starts",
                               to_ms(fallback_after), to_ms(job_timeout)));
    if (!store.starts_with("file:") || store.size() == 5)
      config_error("store",
                   fmt::format("'{}' is not file:DIR (a directory every worker sees)", store));
  }
  if (max_retransmit_timeout < retransmit_timeout)
    config_error("max_retransmit_timeout",
                 fmt::format("{} ms is below retransmit_timeout {} ms",
                             to_ms(max_retransmit_timeout), to_ms(retransmit_timeout)));
  if (!(loss >= 0 && loss < 1)) config_error("loss", fmt::format("{} is outside [0, 1)", loss));
  check_pace(pace_gbps, "pace_gbps");
}

WorkerView Config::worker_view(std::size_t tree) const {
  if (job.trees.empty()) return {job, static_cast<std::uint16_t>(rank)};
  if (rank < 0 || static_cast<std::size_t>(rank) >= job.world_size())
    throw Error(Errc::kConfig,
                fmt::format("rank {} is outside the job's {} workers", rank, job.world_size()));
  return netagg::worker_view(job, tree, static_cast<std::uint16_t>(rank));
}

std::vector<Endpoint> Config::aggregator_addresses() const {
  if (trees() == 1) return {aggregator_address()};
  std::vector<Endpoint> out;
  for (std::size_t t = 0; t < trees(); ++t) out.push_back(*worker_view(t).job.aggregator);
  return out;
}

EngineParams Config::engine_params(std::size_t tree) const {
  EngineParams p;
  const WorkerView view = worker_view(tree);
  p.job_id = view.job.job_id;
  p.rank = view.rank;
  p.slot_base = view.job.slot_base;
  p.window = view.job.slot_count;
  p.retransmit_timeout = retransmit_timeout;
  p.max_retransmit_timeout = max_retransmit_timeout;
  p.adaptive_retransmit = adaptive_retransmit;
  p.min_retransmit_timeout = min_retransmit_timeout;
  p.job_timeout = job_timeout;
  p.epoch = epoch.value_or(0);
  p.congestion_control = congestion_control;
  return p;
}

Endpoint Config::aggregator_address() const {
  if (aggregator.port != 0) return aggregator;
  if (!job.trees.empty()) return *worker_view().job.aggregator;
  if (job.aggregator) return *job.aggregator;
  config_error("aggregator", "not set (neither in the config nor in the job)");
}

Endpoint Config::local_address() const {
  if (rank < 0 || static_cast<std::size_t>(rank) >= job.world_size())
    throw Error(Errc::kConfig,
                fmt::format("rank {} is outside the job's {} workers", rank, job.world_size()));
  return job.workers[rank].address;
}

}  // namespace netagg
