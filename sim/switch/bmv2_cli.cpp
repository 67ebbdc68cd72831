// SPDX-License-Identifier: Apache-2.0
#include "bmv2_cli.hpp"

#include <algorithm>
#include <charconv>

#include <fmt/format.h>

#include "netagg/address.hpp"
#include "netagg/error.hpp"

namespace netagg::sim {

namespace {

constexpr unsigned kPortBits = 9;  // BMv2/Tofino egress_spec width

std::vector<std::string_view> split_words(std::string_view line) {
  std::vector<std::string_view> words;
  std::size_t at = 0;
  while (at < line.size()) {
    while (at < line.size() && (line[at] == ' ' || line[at] == '\t' || line[at] == '\r')) ++at;
    const std::size_t begin = at;
    while (at < line.size() && line[at] != ' ' && line[at] != '\t' && line[at] != '\r') ++at;
    if (at > begin) words.push_back(line.substr(begin, at - begin));
  }
  return words;
}

class LineParser {
 public:
  LineParser(std::string_view source, std::size_t number, std::string_view text)
      : source_(source), line_{number, std::string(text)} {}

  [[noreturn]] void fail(const std::string& problem) const {
    bmv2_line_error(source_, line_, problem);
  }

  // An unsigned number of `bits` bits, decimal or 0x-hex (as simple_switch_CLI takes them).
  std::uint64_t number(std::string_view word, unsigned bits, std::string_view what) const {
    int base = 10;
    std::string_view digits = word;
    if (digits.size() > 2 && digits[0] == '0' && (digits[1] == 'x' || digits[1] == 'X')) {
      base = 16;
      digits.remove_prefix(2);
    }
    std::uint64_t v = 0;
    const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), v, base);
    if (ec != std::errc() || end != digits.data() + digits.size() || digits.empty())
      fail(fmt::format("{} '{}' is not a number", what, word));
    if (bits < 64 && v >> bits)
      fail(fmt::format("{} {} does not fit in {} bits", what, word, bits));
    return v;
  }

  wire::Mac mac(std::string_view word, std::string_view what) const {
    try {
      return parse_mac(word, what);
    } catch (const Error& e) {
      fail(e.what());
    }
  }

  std::uint32_t ip(std::string_view word, std::string_view what) const {
    try {
      return parse_ipv4(word, what);
    } catch (const Error& e) {
      fail(e.what());
    }
  }

  const Bmv2Config::Line& line() const { return line_; }

 private:
  std::string_view source_;
  Bmv2Config::Line line_;
};

struct TableSpec {
  std::string_view table, action;
  std::size_t keys, params;
};
constexpr TableSpec kTables[] = {
    {bmv2::kForward, "set_egress_port", 1, 1},
    {bmv2::kJobTable, "set_job", 1, 5},
    {bmv2::kWorkerTable, "set_worker", 3, 1},
    {bmv2::kResultDestination, "set_result_destination", 1, 4},
    {bmv2::kParentTable, "set_parent", 1, 7},
    {bmv2::kParentSource, "set_parent_source", 3, 1},
};

void table_add(Bmv2Config& c, const LineParser& p, const std::vector<std::string_view>& w) {
  if (w.size() < 3) p.fail("table_add needs a table, an action, keys, '=>' and parameters");
  const TableSpec* spec = nullptr;
  for (const auto& t : kTables)
    if (t.table == w[1]) spec = &t;
  if (!spec) {
    if (w[1] == bmv2::kSwitchIdentity)
      p.fail("switch_identity is keyless: set it with table_set_default");
    p.fail(fmt::format("unknown table '{}'", w[1]));
  }
  if (w[2] != spec->action)
    p.fail(fmt::format("table {} has no action '{}' (its action is {})", spec->table, w[2],
                       spec->action));
  const auto arrow = std::find(w.begin(), w.end(), std::string_view("=>"));
  if (arrow == w.end()) p.fail("missing '=>' between the keys and the action parameters");
  const std::vector<std::string_view> keys(w.begin() + 3, arrow);
  const std::vector<std::string_view> params(arrow + 1, w.end());
  if (keys.size() != spec->keys)
    p.fail(fmt::format("table {} takes {} key(s), got {}", spec->table, spec->keys, keys.size()));
  if (params.size() != spec->params)
    p.fail(fmt::format("action {} takes {} parameter(s), got {}", spec->action, spec->params,
                       params.size()));

  if (spec->table == bmv2::kForward) {
    const wire::Mac mac = p.mac(keys[0], "hdr.ethernet.dst_addr");
    const auto port = static_cast<std::uint16_t>(p.number(params[0], kPortBits, "port"));
    if (!c.forward.emplace(mac, std::pair{port, p.line()}).second)
      p.fail(fmt::format("duplicate entry: {} has a forward entry already (line {})", keys[0],
                         c.forward.at(mac).second.number));
  } else if (spec->table == bmv2::kJobTable) {
    Bmv2Config::JobEntry e;
    e.job_id = static_cast<std::uint16_t>(p.number(keys[0], 16, "hdr.netagg.job_id"));
    e.worker_count = static_cast<std::uint8_t>(p.number(params[0], 8, "worker_count"));
    e.slot_base = static_cast<std::uint16_t>(p.number(params[1], 16, "slot_base"));
    e.slot_count = static_cast<std::uint16_t>(p.number(params[2], 16, "slot_count"));
    e.elements_per_packet =
        static_cast<std::uint16_t>(p.number(params[3], 16, "elements_per_packet"));
    e.mcast_grp = static_cast<std::uint16_t>(p.number(params[4], 16, "mcast_grp"));
    e.line = p.line();
    if (c.jobs.count(e.job_id))
      p.fail(fmt::format("duplicate entry: job {} is in the job_table already (line {})", e.job_id,
                         c.jobs.at(e.job_id).line.number));
    c.jobs.emplace(e.job_id, e);
  } else if (spec->table == bmv2::kWorkerTable) {
    Bmv2Config::WorkerEntry e;
    e.job_id = static_cast<std::uint16_t>(p.number(keys[0], 16, "hdr.netagg.job_id"));
    e.ip = p.ip(keys[1], "hdr.ipv4.src_addr");
    e.udp_port = static_cast<std::uint16_t>(p.number(keys[2], 16, "hdr.udp.src_port"));
    e.rank = static_cast<std::uint8_t>(p.number(params[0], 8, "rank"));
    e.line = p.line();
    for (const auto& o : c.workers)
      if (o.job_id == e.job_id && o.ip == e.ip && o.udp_port == e.udp_port)
        p.fail(fmt::format("duplicate entry: the worker_table has this key already (line {})",
                           o.line.number));
    c.workers.push_back(e);
  } else if (spec->table == bmv2::kParentTable) {
    Bmv2Config::ParentEntry e;
    e.job_id = static_cast<std::uint16_t>(p.number(keys[0], 16, "hdr.netagg.job_id"));
    e.mac = p.mac(params[0], "mac");
    e.ip = p.ip(params[1], "ip");
    e.udp_port = static_cast<std::uint16_t>(p.number(params[2], 16, "udp_port"));
    e.port = static_cast<std::uint16_t>(p.number(params[3], kPortBits, "port"));
    e.parent_job_id = static_cast<std::uint16_t>(p.number(params[4], 16, "job_id"));
    e.rank = static_cast<std::uint16_t>(p.number(params[5], 16, "rank"));
    e.slot_base = static_cast<std::uint16_t>(p.number(params[6], 16, "slot_base"));
    e.line = p.line();
    if (c.parents.count(e.job_id))
      p.fail(fmt::format("duplicate entry: job {} is in the parent_table already (line {})",
                         e.job_id, c.parents.at(e.job_id).line.number));
    c.parents.emplace(e.job_id, e);
  } else if (spec->table == bmv2::kParentSource) {
    Bmv2Config::ParentSourceEntry e;
    e.parent_job_id = static_cast<std::uint16_t>(p.number(keys[0], 16, "hdr.netagg.job_id"));
    e.ip = p.ip(keys[1], "hdr.ipv4.src_addr");
    e.udp_port = static_cast<std::uint16_t>(p.number(keys[2], 16, "hdr.udp.src_port"));
    e.job_id = static_cast<std::uint16_t>(p.number(params[0], 16, "job_id"));
    e.line = p.line();
    for (const auto& o : c.parent_sources)
      if (o.parent_job_id == e.parent_job_id && o.ip == e.ip && o.udp_port == e.udp_port)
        p.fail(
            fmt::format("duplicate entry: the parent_source table has this key already (line {})",
                        o.line.number));
    c.parent_sources.push_back(e);
  } else {
    const auto rid = static_cast<std::uint16_t>(p.number(keys[0], 16, "egress_rid"));
    Bmv2Config::ResultDestination d;
    d.mac = p.mac(params[0], "mac");
    d.ip = p.ip(params[1], "ip");
    d.udp_port = static_cast<std::uint16_t>(p.number(params[2], 16, "udp_port"));
    d.rank = static_cast<std::uint8_t>(p.number(params[3], 8, "rank"));
    d.line = p.line();
    if (c.result_destinations.count(rid))
      p.fail(fmt::format("duplicate entry: rid {} has a result_destination already (line {})", rid,
                         c.result_destinations.at(rid).line.number));
    c.result_destinations.emplace(rid, d);
  }
}

void apply_line(Bmv2Config& c, const LineParser& p, const std::vector<std::string_view>& w) {
  const std::string_view cmd = w[0];
  auto want_args = [&](std::size_t n, std::string_view usage) {
    if (w.size() != n + 1) p.fail(fmt::format("usage: {}", usage));
  };
  if (cmd == "table_add") return table_add(c, p, w);
  if (cmd == "table_set_default") {
    if (w.size() < 2) p.fail("usage: table_set_default TABLE ACTION PARAMS...");
    if (w[1] != bmv2::kSwitchIdentity)
      p.fail(fmt::format("the contract sets the default action of {} only, not of '{}'",
                         bmv2::kSwitchIdentity, w[1]));
    want_args(4, "table_set_default NetaggIngress.switch_identity set_switch_identity MAC IP");
    if (w[2] != "set_switch_identity")
      p.fail(fmt::format("table {} has no action '{}' (its action is set_switch_identity)", w[1],
                         w[2]));
    c.identity = Bmv2Config::Identity{p.mac(w[3], "mac"), p.ip(w[4], "ip"), p.line()};
    return;
  }
  if (cmd == "mc_mgrp_create") {
    want_args(1, "mc_mgrp_create GROUP");
    const auto grp = static_cast<std::uint16_t>(p.number(w[1], 16, "group"));
    if (!c.groups.emplace(grp, std::vector<std::size_t>{}).second)
      p.fail(fmt::format("multicast group {} exists already", grp));
    return;
  }
  if (cmd == "mc_node_create") {
    if (w.size() < 3) p.fail("usage: mc_node_create RID PORT...");
    Bmv2Config::McNode node;
    node.rid = static_cast<std::uint16_t>(p.number(w[1], 16, "rid"));
    for (std::size_t i = 2; i < w.size(); ++i) {
      if (w[i] == "|") p.fail("LAG lists are not part of the contract");
      node.ports.push_back(static_cast<std::uint16_t>(p.number(w[i], kPortBits, "port")));
    }
    node.line = p.line();
    c.nodes.push_back(node);
    return;
  }
  if (cmd == "mc_node_associate") {
    want_args(2, "mc_node_associate GROUP NODE_HANDLE");
    const auto grp = static_cast<std::uint16_t>(p.number(w[1], 16, "group"));
    const auto handle = p.number(w[2], 32, "node handle");
    auto g = c.groups.find(grp);
    if (g == c.groups.end()) p.fail(fmt::format("multicast group {} was not created", grp));
    if (handle >= c.nodes.size())
      p.fail(fmt::format("no node handle {} (nodes created so far: {})", handle, c.nodes.size()));
    auto& node = c.nodes[handle];
    if (node.group)
      p.fail(fmt::format("node {} is associated with group {} already", handle, *node.group));
    node.group = grp;
    g->second.push_back(handle);
    return;
  }
  if (cmd == "mirroring_add") {
    want_args(2, "mirroring_add SESSION PORT");
    // simple_switch's mirroring sessions are numbered 0..32767
    const auto session = static_cast<std::uint16_t>(p.number(w[1], 15, "mirroring session"));
    const auto port = static_cast<std::uint16_t>(p.number(w[2], kPortBits, "port"));
    if (c.mirror_sessions.count(session))
      p.fail(fmt::format("mirroring session {} exists already (line {})", session,
                         c.mirror_sessions.at(session).line.number));
    c.mirror_sessions.emplace(session, Bmv2Config::MirrorSession{port, p.line()});
    return;
  }
  if (cmd == "reset_state") {
    want_args(0, "reset_state");
    std::string source = std::move(c.source);
    c = Bmv2Config{};
    c.source = std::move(source);
    return;
  }
  p.fail(
      fmt::format("unknown command '{}' (the contract uses table_add, table_set_default, "
                  "mc_mgrp_create, mc_node_create, mc_node_associate, mirroring_add, "
                  "reset_state)",
                  cmd));
}

}  // namespace

void bmv2_line_error(std::string_view source, const Bmv2Config::Line& line,
                     const std::string& problem) {
  throw Error(Errc::kConfig,
              fmt::format("{}:{}: '{}': {}", source, line.number, line.text, problem));
}

void apply_bmv2_cli(Bmv2Config& config, std::string_view text, std::string_view source) {
  if (config.source.empty()) config.source = source;
  std::size_t number = 0;
  while (!text.empty()) {
    const auto nl = text.find('\n');
    const std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view{} : text.substr(nl + 1);
    ++number;
    const auto words = split_words(line);
    if (words.empty()) continue;
    std::string_view shown = line;
    while (!shown.empty() && (shown.back() == '\r' || shown.back() == ' ')) shown.remove_suffix(1);
    apply_line(config, LineParser(source, number, shown), words);
  }
}

Bmv2Config parse_bmv2_cli(std::string_view text, std::string_view source) {
  Bmv2Config config;
  apply_bmv2_cli(config, text, source);
  return config;
}

}  // namespace netagg::sim
