// SPDX-License-Identifier: Apache-2.0
#include "netagg/config.hpp"

#include <arpa/inet.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <random>
#include <span>
#include <sstream>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "netagg/address.hpp"
#include "netagg/engine.hpp"
#include "netagg/error.hpp"

namespace netagg {

using nlohmann::json;

namespace {

[[noreturn]] void config_error(std::string_view where, std::string_view problem) {
  throw Error(Errc::kConfig, fmt::format("{}: {}", where, problem));
}

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
std::int64_t parse_env_int(std::string_view name, std::string_view text, std::int64_t min,
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

std::uint64_t parse_env_u64(std::string_view name, std::string_view text) {
  std::uint64_t v = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, v);
  if (text.empty() || ec == std::errc::invalid_argument || ptr != end)
    config_error(name, fmt::format("'{}' is not a non-negative integer", text));
  if (ec == std::errc::result_out_of_range)
    config_error(name, fmt::format("{} does not fit in 64 bits", text));
  return v;
}

double parse_env_double(std::string_view name, std::string_view text) {
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

bool parse_env_bool(std::string_view name, std::string_view text) {
  if (text == "1" || text == "true" || text == "yes" || text == "on") return true;
  if (text == "0" || text == "false" || text == "no" || text == "off") return false;
  config_error(name, fmt::format("'{}' is not a boolean (1/0, true/false)", text));
}

// "a b  c" -> {"a", "b", "c"} (EAL arguments from one environment variable).
std::vector<std::string> split(std::string_view text, char sep) {
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

// ---- the settings -------------------------------------------------------------------------
// Every setting that a config file and the environment both give is one row of a table: its
// file key, from which its variable's name follows (NETAGG_ and the key in capitals; a `dpdk`
// field's NETAGG_DPDK_ and the key), what the docs say of it, and one parser for both sources.
// docs/configuration.md's tables are generated from the rows (config_settings_markdown, checked
// by a test), so the docs, the file and the environment cannot drift apart.

// A setting's value as given: a JSON value from a config file, or an environment variable's
// text; `where` names it in messages ("conf.json: loss", "NETAGG_LOSS").
struct Given {
  const json* value = nullptr;  // null: from the environment
  std::string_view text;
  std::string where;
};

double number_of(const Given& g) {
  if (!g.value) return parse_env_double(g.where, g.text);
  if (!g.value->is_number()) config_error(g.where, "must be a number");
  return g.value->get<double>();
}

bool bool_of(const Given& g) {
  if (!g.value) return parse_env_bool(g.where, g.text);
  if (!g.value->is_boolean()) config_error(g.where, "must be true or false");
  return g.value->get<bool>();
}

std::uint64_t uint_of(const Given& g, std::uint64_t min, std::uint64_t max) {
  if (!g.value)
    return static_cast<std::uint64_t>(parse_env_int(g.where, g.text, static_cast<std::int64_t>(min),
                                                    static_cast<std::int64_t>(max)));
  if (!g.value->is_number_unsigned() || g.value->get<std::uint64_t>() < min ||
      g.value->get<std::uint64_t>() > max)
    config_error(g.where, fmt::format("must be an integer in [{}, {}]", min, max));
  return g.value->get<std::uint64_t>();
}

std::uint64_t u64_of(const Given& g) {
  if (!g.value) return parse_env_u64(g.where, g.text);
  if (!g.value->is_number_unsigned()) config_error(g.where, "must be a non-negative integer");
  return g.value->get<std::uint64_t>();
}

// `expected` says what the string holds, for the message of a value of another JSON type.
std::string text_of(const Given& g, std::string_view expected = "a string") {
  if (!g.value) return std::string(g.text);
  if (!g.value->is_string()) config_error(g.where, fmt::format("must be {}", expected));
  return g.value->get<std::string>();
}

std::string nonempty_text_of(const Given& g) {
  std::string t = text_of(g);
  if (t.empty()) config_error(g.where, g.value ? "must not be empty" : "is set but empty");
  return t;
}

// A JSON array of strings, or the variable's text split at `sep`.
std::vector<std::string> strings_of(const Given& g, char sep) {
  if (!g.value) return split(g.text, sep);
  if (!g.value->is_array()) config_error(g.where, "must be an array of strings");
  std::vector<std::string> list;
  for (const auto& e : *g.value) {
    if (!e.is_string()) config_error(g.where, "must be an array of strings");
    list.push_back(e.get<std::string>());
  }
  return list;
}

Duration ms_of(const Given& g) { return timeout_from_ms(number_of(g), g.where); }

template <typename T>
T enum_of(const Given& g, T (*parse)(std::string_view), std::string_view choices) {
  const std::string t = text_of(g, choices);
  try {
    return parse(t);
  } catch (const Error&) {
    config_error(g.where, fmt::format("'{}' is not one of {}", t, choices));
  }
}

struct Setting {
  std::string_view key;  // in a config file (a DPDK setting: in its `dpdk` object)
  std::string_view type, default_text, meaning;  // for the docs
  void (*apply)(Config&, const Given&);
  // Applied by apply_run_environment too: a switch of one run, for a Config made in code.
  bool run = false;
  std::string_view alias = {};  // another variable read when the setting's own is not set
  std::string_view cli = {};    // netagg-allreduce's option that sets it (docs; checked by a test)
};

// clang-format off
constexpr Setting kSettings[] = {
    {"aggregator", "`\"a.b.c.d:port\"`", "the job's `aggregator`",
     "where contributions go (UDP port of an aggregator: 20033); overrides the job's",
     [](Config& c, const Given& g) {
       c.aggregator = Endpoint::parse(text_of(g, "a string \"a.b.c.d:port\""), g.where);
     }, false, {}, "`--target IP:PORT`"},
    {"transport", "`\"udp\"` or `\"dpdk\"`", "`\"udp\"`",
     "kernel UDP, or DPDK (below; `kUnsupported` in a libnetagg built without DPDK)",
     [](Config& c, const Given& g) { c.transport = nonempty_text_of(g); }, false, {}, "`--transport`"},
    {"float_wire", "`\"int32-bfp\"`, `\"fp32\"` or `\"fp32-exact\"`", "`\"int32-bfp\"`",
     "how fp32 tensors travel: block floating point for integer aggregators (the switch), fp32 "
     "added by the FPGA's fp32 adder trees, or fp32 summed exactly by an FPGA aggregator with "
     "exact fp32 (the same bits in every run, docs/exact-fp32.md)",
     [](Config& c, const Given& g) {
       c.float_wire = enum_of(g, parse_float_wire, "int32-bfp, fp32, fp32-exact");
     }, false, {}, "`--float-wire`"},
    {"retransmit_timeout_ms", "number in (0, 86400000]", "20",
     "first retransmission of an unanswered packet; with `adaptive_retransmit`, the timeout "
     "until the first round trip is measured",
     [](Config& c, const Given& g) { c.retransmit_timeout = ms_of(g); }, false, {}, "`--retransmit-timeout-ms`"},
    {"max_retransmit_timeout_ms", "number >= retransmit", "500",
     "cap of the exponential backoff (the timeout doubles per retransmission)",
     [](Config& c, const Given& g) { c.max_retransmit_timeout = ms_of(g); }},
    {"adaptive_retransmit", "boolean", "true",
     "estimate the timeout from measured round trips as TCP does (RFC 6298: smoothed round trip "
     "+ 4 × its deviation; Karn's rule: a retransmitted packet gives no sample), within "
     "[`min_retransmit_timeout_ms`, `max_retransmit_timeout_ms`]; false keeps "
     "`retransmit_timeout_ms`",
     [](Config& c, const Given& g) { c.adaptive_retransmit = bool_of(g); }, false, {}, "`--retransmit adaptive` or `fixed`"},
    {"min_retransmit_timeout_ms", "number in (0, 86400000]", "1",
     "floor of the adaptive timeout",
     [](Config& c, const Given& g) { c.min_retransmit_timeout = ms_of(g); }},
    {"job_timeout_ms", "number in (0, 86400000]", "10000",
     "an all-reduce without any new result for this long fails with `Errc::kTimeout`, naming "
     "the missing slots",
     [](Config& c, const Given& g) { c.job_timeout = ms_of(g); }, false, "NETAGG_TIMEOUT_MS", "`--timeout` (seconds)"},
    {"loss", "number in [0, 1)", "0",
     "injected loss: each packet sent and each packet received is dropped with this probability "
     "(tests, demos)",
     [](Config& c, const Given& g) {
       c.loss = number_of(g);
       if (!(c.loss >= 0 && c.loss < 1))
         config_error(g.where, fmt::format("{} is outside [0, 1)", c.loss));
     }, false, {}, "`--loss`"},
    {"loss_seed", "unsigned integer", "1",
     "seed of the injected loss; each rank mixes its rank into it so ranks drop different "
     "packets, and a run with the same seed drops the same packets as long as the traffic is the "
     "same",
     [](Config& c, const Given& g) { c.loss_seed = u64_of(g); }, false, {}, "`--seed` (the tensor's too)"},
    {"congestion_control", "boolean", "false",
     "a congestion window on ECN marks and loss, packets sent ECT(0) "
     "([congestion-control.md](congestion-control.md))",
     [](Config& c, const Given& g) { c.congestion_control = bool_of(g); }, true},
    {"pace_gbps", "0, or a number in [0.001, 10000]", "0 (off)",
     "pacing: this worker sends at most this many Gbit/s of UDP payload (netagg header and "
     "data; retransmissions included), all trees together; a job on several trees gives each "
     "tree's engine its share by the trees' weights. Packets leave spaced by size × 8 / rate; a "
     "wake-up up to 0.5 ms late is made up at once (`EngineParams::pace_slack`)",
     [](Config& c, const Given& g) {
       c.pace_gbps = number_of(g);
       check_pace(c.pace_gbps, g.where);
     }, true, {}, "`--pace-gbps`"},
    {"udp_offload", "boolean", "true",
     "the udp transport sends runs of equal-sized packets as UDP GSO messages (`UDP_SEGMENT`) "
     "and takes results GRO-coalesced (`UDP_GRO`): the datagrams on the wire are the same, the "
     "kernel passes fewer (docs/performance.md, \"Packet cost\"); false sends one datagram per "
     "message",
     [](Config& c, const Given& g) { c.udp_offload = bool_of(g); }, true},
    {"fallback", "`\"gloo\"` or `\"off\"`", "`\"gloo\"`",
     "when the aggregator stops answering, the workers finish the all-reduce among themselves "
     "over Gloo ([fallback.md](fallback.md)); needs `store`. `\"off\"`: the job timeout ends it "
     "with an error",
     [](Config& c, const Given& g) { c.fallback = enum_of(g, parse_fallback, "gloo, off"); },
     true, {}, "`--fallback`"},
    {"fallback_after_ms", "number, below `job_timeout_ms`", "1000",
     "the fallback starts after this long without a result from the aggregator",
     [](Config& c, const Given& g) { c.fallback_after = ms_of(g); }, true, {}, "`--fallback-after-ms`"},
    {"fallback_timeout_ms", "number in (0, 86400000]", "60000",
     "how long a worker waits for the others in the fallback (and in Gloo's rendezvous when the "
     "communicator is made)",
     [](Config& c, const Given& g) { c.fallback_timeout = ms_of(g); }, true},
    {"store", "`\"file:DIR\"`", "none",
     "the fallback's rendezvous: a directory every worker sees. Without one there is no "
     "fallback, and the communicator warns (the torch backend uses its process group's store "
     "instead)",
     [](Config& c, const Given& g) { c.store = text_of(g, "a string \"file:DIR\""); }, true, {}, "`--store`"},
};

constexpr Setting kDpdkSettings[] = {
    {"lcores", "string", "`\"0\"`",
     "EAL `-l`: cores the EAL may use. The communicator's thread is not an EAL thread and keeps "
     "the process's CPU affinity (the EAL's pinning of the initialising thread is undone)",
     [](Config& c, const Given& g) { c.dpdk.lcores = nonempty_text_of(g); }},
    {"vdevs", "strings (variable: `;` between devices)", "none",
     "EAL `--vdev` each: `net_af_packet0,iface=eth1`, `net_memif0,...`, `net_ring0`",
     // vdev arguments hold commas themselves, so several vdevs are separated by ';'.
     [](Config& c, const Given& g) { c.dpdk.vdevs = strings_of(g, ';'); }},
    {"no_huge", "boolean", "false",
     "EAL `--no-huge`: ordinary memory instead of hugepages (tests, veths; real NICs want "
     "hugepages)",
     [](Config& c, const Given& g) { c.dpdk.no_huge = bool_of(g); }},
    {"no_pci", "boolean", "false", "EAL `--no-pci`: probe no PCI device (vdevs only)",
     [](Config& c, const Given& g) { c.dpdk.no_pci = bool_of(g); }},
    {"memory_mb", "integer in [0, 1048576]", "256 with `no_huge`, else the EAL's", "EAL `-m`",
     [](Config& c, const Given& g) {
       c.dpdk.memory_mb = static_cast<std::uint32_t>(uint_of(g, 0, 1u << 20));
     }},
    {"file_prefix", "string", "none: `--no-shconf`",
     "EAL `--file-prefix`. Without it the EAL keeps no shared files, so independent worker "
     "processes on one host do not collide; set one for DPDK's multi-process tools",
     [](Config& c, const Given& g) { c.dpdk.file_prefix = text_of(g); }},
    {"eal_args", "strings (variable: space separated)", "none",
     "more EAL arguments, appended as they are",
     [](Config& c, const Given& g) { c.dpdk.eal_args = strings_of(g, ' '); }},
    {"port", "integer in [0, 65535]", "0", "the DPDK port id (vdevs are numbered first to last)",
     [](Config& c, const Given& g) { c.dpdk.port = static_cast<std::uint16_t>(uint_of(g, 0, 0xFFFF)); }},
    {"mac", "`\"aa:bb:cc:dd:ee:ff\"`", "the job's `mac` for this rank, else the port's",
     "source MAC; if it differs from the port's, the port takes it or goes promiscuous",
     [](Config& c, const Given& g) { c.dpdk.mac = parse_mac(text_of(g), g.where); }},
    {"aggregator_mac", "`\"aa:bb:cc:dd:ee:ff\"`", "resolved by ARP",
     "destination MAC of every frame",
     [](Config& c, const Given& g) { c.dpdk.aggregator_mac = parse_mac(text_of(g), g.where); }},
    {"next_hop", "`\"a.b.c.d\"`", "the aggregator",
     "IPv4 address to ARP for when a router stands between worker and aggregator",
     [](Config& c, const Given& g) { c.dpdk.next_hop = parse_ipv4(text_of(g), g.where); }},
    {"arp_timeout_ms", "number in (0, 86400000]", "3000",
     "how long start-up waits for the ARP reply (requests every 200 ms)",
     [](Config& c, const Given& g) { c.dpdk.arp_timeout = ms_of(g); }},
    {"burst", "integer in [1, 512]", "32", "packets per `rte_eth_rx_burst`/`tx_burst`",
     [](Config& c, const Given& g) { c.dpdk.burst = static_cast<std::uint16_t>(uint_of(g, 1, kMaxBurst)); }},
    {"mbufs", "integer in [255, 1048576]", "8191",
     "mbufs in the port's pool (each holds the largest frame, 8256 bytes; an AF_XDP port's 2 KB, "
     "the frames of its socket: its jobs' packets must fit, which the veth's MTU of 1500 already "
     "asks); at least 2 × window + "
     "2 × burst",
     [](Config& c, const Given& g) {
       c.dpdk.mbufs = static_cast<std::uint32_t>(uint_of(g, kMinMbufs, kMaxMbufs));
     }},
    {"verify_udp_checksum", "boolean", "false",
     "drop (as malformed) received frames whose non-zero UDP checksum is wrong. Off by default "
     "because a kernel peer on a veth leaves checksums to an offload (a packet socket sees them "
     "half done); turn the peer's offload off (`ethtool -K eth0 tx off`) to verify",
     [](Config& c, const Given& g) { c.dpdk.verify_udp_checksum = bool_of(g); }},
};
// clang-format on

std::string variable_of(const Setting& s, bool dpdk) {
  std::string name = dpdk ? "NETAGG_DPDK_" : "NETAGG_";
  for (const char ch : s.key)
    name += static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  return name;
}

const Setting* file_setting(std::span<const Setting> table, std::string_view key) {
  for (const Setting& s : table)
    if (s.key == key) return &s;
  return nullptr;
}

// The settings in a config file's object `j` (the file's top level, or its `dpdk` object), at
// `where`; the keys `others` are the caller's. An unknown key is an error: a typo should not
// leave a default in place silently.
void apply_file_settings(Config& cfg, const json& j, std::span<const Setting> table,
                         const std::string& where, std::span<const std::string_view> others) {
  for (const auto& [key, value] : j.items()) {
    if (std::find(others.begin(), others.end(), key) != others.end()) continue;
    const Setting* s = file_setting(table, key);
    if (!s) config_error(fmt::format("{}{}", where, key), "unknown field");
    s->apply(cfg, Given{&value, {}, fmt::format("{}{}", where, key)});
  }
}

// The settings whose variables are set (all, or the run's switches only).
void apply_env_settings(Config& cfg, bool run_only) {
  const auto apply = [&](const Setting& s, bool dpdk) {
    if (run_only && !s.run) return;
    std::string name = variable_of(s, dpdk);
    std::optional<std::string> v = getenv_string(name.c_str());
    if (!v && !s.alias.empty()) {
      name = std::string(s.alias);
      v = getenv_string(name.c_str());
    }
    if (v) s.apply(cfg, Given{nullptr, *v, name});
  };
  for (const Setting& s : kSettings) apply(s, false);
  if (!run_only)
    for (const Setting& s : kDpdkSettings) apply(s, true);
}

// The run's epoch: NETAGG_EPOCH, else the one `cfg` has, else the launcher's run id.
void apply_env_epoch(Config& cfg) {
  if (auto v = getenv_string("NETAGG_EPOCH")) {
    cfg.epoch = parse_epoch(*v, "NETAGG_EPOCH");
    check_epoch(*cfg.epoch, "NETAGG_EPOCH");
  } else if (!cfg.epoch) {
    cfg.epoch = launcher_epoch();
  }
}

struct FileConfig {
  Config cfg;
  bool has_job = false;
};

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
  // Everything else: the table's settings, and `dpdk` with its own.
  static constexpr std::string_view kOwn[] = {"rank", "job_id", "job_file", "job", "dpdk"};
  apply_file_settings(cfg, j, kSettings, where + ": ", kOwn);
  if (j.contains("dpdk")) {
    if (!j["dpdk"].is_object()) config_error(field("dpdk"), "must be a JSON object");
    apply_file_settings(cfg, j["dpdk"], kDpdkSettings, where + ": dpdk.", {});
  }
  return out;
}

}  // namespace

FloatWire parse_float_wire(std::string_view text) {
  if (text == "int32-bfp") return FloatWire::kBlockInt32;
  if (text == "fp32") return FloatWire::kFp32;
  if (text == "fp32-exact") return FloatWire::kFp32Exact;
  throw Error(Errc::kConfig,
              fmt::format("float_wire: '{}' is not one of int32-bfp, fp32, fp32-exact", text));
}

DpdkConfig dpdk_config_from_env() {
  Config cfg;
  for (const Setting& s : kDpdkSettings)
    if (auto v = getenv_string(variable_of(s, true).c_str()))
      s.apply(cfg, Given{nullptr, *v, variable_of(s, true)});
  return cfg.dpdk;
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
  switch (w) {
    case FloatWire::kBlockInt32:
      return "int32-bfp";
    case FloatWire::kFp32:
      return "fp32";
    case FloatWire::kFp32Exact:
      return "fp32-exact";
  }
  return "?";
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
  apply_env_settings(cfg, /*run_only=*/false);  // the run's switches among them
  apply_env_epoch(cfg);
  cfg.validate();
  return cfg;
}

void apply_run_environment(Config& cfg) {
  apply_env_settings(cfg, /*run_only=*/true);
  // A world size that the job does not have is a mistake of the launch: said at once, not after
  // a timeout waiting for workers that will never come.
  if (auto v = getenv_string("NETAGG_WORLD_SIZE"); v && cfg.job.world_size() > 0) {
    const auto n = parse_env_int("NETAGG_WORLD_SIZE", *v, 1, 0xFFFF);
    if (static_cast<std::size_t>(n) != cfg.job.world_size())
      throw Error(Errc::kConfig, fmt::format("NETAGG_WORLD_SIZE={} but the job has {} workers", n,
                                             cfg.job.world_size()));
  }
  apply_env_epoch(cfg);
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

namespace {

// The rows of docs/configuration.md's table that are not settings of the table above: read by
// code of their own (from_file, from_env), described here so that the whole table is generated.
struct DocRow {
  std::string_view key, variable, type, default_text, meaning;
};
// clang-format off
constexpr DocRow kOwnRows[] = {
    {"", "`NETAGG_CONFIG`", "path", "none",
     "a config file read first; the variables override it"},
    {"`rank`", "`NETAGG_RANK`, else the first of `OMPI_COMM_WORLD_RANK` (Open MPI), `PMI_RANK` "
     "(MPICH, Slurm's PMI), `RANK` (torchrun)", "integer 0..65535",
     "none (required, in the file or the environment)",
     "this worker's rank in the job; its address is the job's entry for that rank"},
    {"", "`NETAGG_WORLD_SIZE`, else the first of `OMPI_COMM_WORLD_SIZE`, `PMI_SIZE`, "
     "`WORLD_SIZE`", "integer", "none",
     "checked against the job's worker count (`NETAGG_WORLD_SIZE` also by "
     "`apply_run_environment`, so by `netagg-allreduce --rank/--job`)"},
    {"`job_file`", "`NETAGG_JOB_FILE`", "path", "none",
     "a job description file; in a config file a relative path is relative to the file's folder, "
     "in the variable to the working directory"},
    {"`job`", "", "object", "none",
     "the job inline instead of `job_file` (same format); give exactly one of the two"},
    {"`job_id`", "`NETAGG_JOB_ID`", "integer", "none",
     "picks the job out of a `{\"jobs\": [...]}` file; required when the file holds several"},
    {"`dpdk`", "`NETAGG_DPDK_*`", "object", "see below",
     "the DPDK transport's settings, used when `transport` is `\"dpdk\"`"},
    {"", "`NETAGG_EPOCH`", "decimal or `0x` hex, not 0", "a hash of the launcher's run id",
     "the run's epoch, the same on every worker of the run and new for each run; never read from "
     "a file (a file outlives a run). Unset: a hash of the first of `TORCHELASTIC_RUN_ID` "
     "(torchrun), `OMPI_MCA_ess_base_jobid` (Open MPI), `PMIX_NAMESPACE` (PMIx), `SLURM_JOB_ID` "
     "with `SLURM_STEP_ID` (srun), unless that id is one every launch repeats (below)"},
};
// clang-format on

std::string cell(std::string_view text) { return text.empty() ? "" : std::string(text); }

}  // namespace

std::string config_settings_markdown(ConfigTable table) {
  if (table == ConfigTable::kSettings) {
    std::string out =
        "| file key | variable | `netagg-allreduce` | type | default | meaning |\n"
        "|---|---|---|---|---|---|\n";
    for (const DocRow& r : kOwnRows)
      out += fmt::format("| {} | {} |  | {} | {} | {} |\n", cell(r.key), cell(r.variable), r.type,
                         r.default_text, r.meaning);
    for (const Setting& s : kSettings) {
      std::string variable = fmt::format("`{}`", variable_of(s, false));
      if (!s.alias.empty()) variable += fmt::format(" (also `{}`)", s.alias);
      out += fmt::format("| `{}` | {} | {} | {} | {} | {}{} |\n", s.key, variable, s.cli, s.type,
                         s.default_text, s.meaning,
                         s.run ? "; its variable applies to a `Config` made in code too "
                                 "(`apply_run_environment`)"
                               : "");
    }
    return out;
  }
  std::string out = "| {} | variable | type | default | meaning |\n|---|---|---|---|---|\n";
  if (table == ConfigTable::kDpdk) {
    out = fmt::format(fmt::runtime(out), "field of `dpdk`");
    for (const Setting& s : kDpdkSettings)
      out += fmt::format("| `{}` | `{}` | {} | {} | {} |\n", s.key, variable_of(s, true), s.type,
                         s.default_text, s.meaning);
    return out;
  }
  out = fmt::format(fmt::runtime(out), "file key");
  for (const DocRow& r : kOwnRows)
    out += fmt::format("| {} | {} | {} | {} | {} |\n", cell(r.key), cell(r.variable), r.type,
                       r.default_text, r.meaning);
  for (const Setting& s : kSettings) {
    std::string variable = fmt::format("`{}`", variable_of(s, false));
    if (!s.alias.empty()) variable += fmt::format(" (also `{}`)", s.alias);
    out += fmt::format("| `{}` | {} | {} | {} | {}{} |\n", s.key, variable, s.type, s.default_text,
                       s.meaning,
                       s.run ? "; its variable applies to a `Config` made in code too "
                               "(`apply_run_environment`)"
                             : "");
  }
  return out;
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
  if (float_wire == FloatWire::kFp32Exact && job.covered() > wire::kExactMaxContributions)
    config_error("float_wire",
                 fmt::format("fp32-exact sums at most {} workers' lanes without overflow, and job "
                             "{} has {}: use float_wire fp32",
                             wire::kExactMaxContributions, job.job_id, job.covered()));
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
