// SPDX-License-Identifier: Apache-2.0
#include "netagg/p4/control.hpp"

#include <arpa/inet.h>

#include <algorithm>
#include <charconv>
#include <map>
#include <stdexcept>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "netagg/error.hpp"

namespace netagg::p4 {
namespace {

constexpr std::uint64_t kMax48 = (std::uint64_t{1} << 48) - 1;
constexpr std::uint64_t kMax32 = 0xFFFFFFFFull;
constexpr std::uint64_t kMax16 = 0xFFFF;

constexpr std::uint16_t rid_of(std::size_t job_index, std::size_t rank) {
  return static_cast<std::uint16_t>(1 + kRidsPerJob * job_index + rank);
}
static_assert(rid_of(kMaxJobs - 1, kMaxWorkersPerJob - 1) ==
              1 + kRidsPerJob * (kMaxJobs - 1) + kMaxWorkersPerJob - 1);
static_assert(1 + kRidsPerJob * (kMaxJobs - 1) + kMaxWorkersPerJob - 1 <= kMax16);
static_assert(1 + kRidsPerJob * kMaxJobs + kMaxWorkersPerJob - 1 > kMax16,
              "kMaxJobs is the largest job count whose rids fit in bit<16>");

// Every error names where the job came from and the job id, then the field and the problem.
[[noreturn]] void job_error(const JobInput& job, std::string_view field, std::string_view problem) {
  const std::string where = job.origin.empty()
                                ? fmt::format("job {}", job.spec.job_id)
                                : fmt::format("{}: job {}", job.origin, job.spec.job_id);
  throw Error(Errc::kConfig, fmt::format("{}: {}: {}", where, field, problem));
}

std::string describe(const JobInput& job) {
  return job.origin.empty() ? fmt::format("job {}", job.spec.job_id)
                            : fmt::format("job {} ({})", job.spec.job_id, job.origin);
}

// The switch IP: --switch-ip, else the aggregator address every job gives (all the same).
std::uint32_t resolve_switch_ip(std::span<const JobInput> jobs, const SwitchIdentity& identity) {
  std::optional<std::uint32_t> ip = identity.ip;
  const JobInput* ip_from = nullptr;  // the job that fixed `ip`, if not --switch-ip
  for (const JobInput& job : jobs) {
    const auto& aggregator = job.spec.aggregator;
    if (!aggregator) {
      if (!identity.ip)
        job_error(job, "aggregator",
                  "missing; the switch's IP comes from the jobs' aggregator address or "
                  "--switch-ip");
      continue;
    }
    if (aggregator->port != wire::kUdpPort)
      job_error(job, "aggregator",
                fmt::format("port {}; the P4 switch takes netagg packets on UDP port {} only "
                            "(NETAGG_UDP_PORT)",
                            aggregator->port, wire::kUdpPort));
    if (!ip) {
      ip = aggregator->ip;
      ip_from = &job;
    } else if (*ip != aggregator->ip) {
      const std::string other = ip_from ? fmt::format("the aggregator of {}", describe(*ip_from))
                                        : std::string("--switch-ip");
      job_error(job, "aggregator",
                fmt::format("{} differs from {} {}; one switch has one IP",
                            format_ipv4(aggregator->ip), other, format_ipv4(*ip)));
    }
  }
  return *ip;  // jobs is non-empty, so either --switch-ip or the first job set it
}

void check_job(const JobInput& job, Target target) {
  const JobSpec& spec = job.spec;
  if (spec.workers.empty()) job_error(job, "workers", "no workers");
  if (spec.workers.size() > kMaxWorkersPerJob)
    job_error(job, "workers",
              fmt::format("{} workers; the switch's bit<32> worker bitmap allows at most {}",
                          spec.workers.size(), kMaxWorkersPerJob));
  const std::uint32_t end = std::uint32_t{spec.slot_base} + spec.slot_count;
  if (spec.slot_count == 0 || end > kPoolSlots)
    job_error(job, "slots",
              fmt::format("[{}, {}) is outside the switch's pool of {} slots (NETAGG_POOL_SLOTS)",
                          spec.slot_base, end, kPoolSlots));
  const std::uint32_t max_elements = max_elements_per_packet(target);
  if (spec.elements_per_packet == 0 || spec.elements_per_packet > max_elements)
    job_error(job, "elements_per_packet",
              fmt::format("{} is out of range [1, {}]: the {} program adds {} lanes per pass in at "
                          "most {} passes",
                          spec.elements_per_packet, max_elements,
                          target == Target::kBmv2 ? "BMv2" : "Tofino", kLanesPerPass,
                          max_elements / kLanesPerPass));
  for (const WorkerSpec& w : spec.workers) {
    const std::string rank = fmt::format("workers (rank {})", w.rank);
    if (!w.mac)
      job_error(job, rank + ".mac",
                "missing; the switch needs every worker's MAC (forward and result_destination "
                "tables)");
    if (!w.switch_port)
      job_error(job, rank + ".switch_port",
                "missing; the switch needs the port every worker is cabled to (forward table, "
                "multicast node)");
    if (*w.switch_port > kMaxPort)
      job_error(job, rank + ".switch_port",
                fmt::format("{} is out of range [0, {}] (switch ports are bit<9>)", *w.switch_port,
                            kMaxPort));
    const unsigned pipe = *w.switch_port >> kTofinoPipeShift;
    const WorkerSpec& first = spec.workers.front();
    const unsigned first_pipe = *first.switch_port >> kTofinoPipeShift;
    if (target == Target::kTofino && pipe != first_pipe)
      job_error(job, rank + ".switch_port",
                fmt::format("{} is in pipe {} but rank {}'s port {} in pipe {}; a job's registers "
                            "live in one pipe, so all its workers must be on ports of one pipe "
                            "(dev port >> {})",
                            *w.switch_port, pipe, first.rank, *first.switch_port, first_pipe,
                            kTofinoPipeShift));
  }
  if (spec.parent) {
    const ParentSpec& parent = *spec.parent;
    if (!parent.mac)
      job_error(job, "parent.mac",
                "missing; the switch needs the parent's MAC (parent_table): give it in the job "
                "or with --peer IP=MAC,PORT");
    if (!parent.switch_port)
      job_error(job, "parent.switch_port",
                "missing; the switch needs the port the parent is cabled to (parent_table): give "
                "it in the job or with --peer IP=MAC,PORT");
    if (*parent.switch_port > kMaxPort)
      job_error(job, "parent.switch_port",
                fmt::format("{} is out of range [0, {}] (switch ports are bit<9>)",
                            *parent.switch_port, kMaxPort));
    if (std::uint32_t{parent.slot_base} + spec.slot_count > 0x10000)
      job_error(job, "parent.slot_base",
                fmt::format("{} + {} slots exceeds the 16-bit slot space", parent.slot_base,
                            spec.slot_count));
    const unsigned pipe = *parent.switch_port >> kTofinoPipeShift;
    const WorkerSpec& first = spec.workers.front();
    const unsigned first_pipe = *first.switch_port >> kTofinoPipeShift;
    if (target == Target::kTofino && pipe != first_pipe)
      job_error(job, "parent.switch_port",
                fmt::format("{} is in pipe {} but rank {}'s port {} in pipe {}; the parent's "
                            "results update the job's registers, which live in the workers' pipe",
                            *parent.switch_port, pipe, first.rank, *first.switch_port, first_pipe));
  }
}

void check_between_jobs(std::span<const JobInput> jobs) {
  for (std::size_t b = 0; b < jobs.size(); ++b)
    for (std::size_t a = 0; a < b; ++a) {
      const JobSpec& x = jobs[a].spec;
      const JobSpec& y = jobs[b].spec;
      if (x.job_id == y.job_id)
        job_error(jobs[b], "job_id",
                  fmt::format("{} is also the id of {}", y.job_id, describe(jobs[a])));
      if (x.parent && y.parent && x.parent->job_id == y.parent->job_id &&
          x.parent->address == y.parent->address)
        job_error(jobs[b], "parent",
                  fmt::format("job {} at {} is also the parent of {}; the switch tells the "
                              "parent's results apart by its job id and address only",
                              y.parent->job_id, y.parent->address.to_string(), describe(jobs[a])));
      const std::uint32_t x_end = std::uint32_t{x.slot_base} + x.slot_count;
      const std::uint32_t y_end = std::uint32_t{y.slot_base} + y.slot_count;
      if (y.slot_base < x_end && x.slot_base < y_end)
        job_error(jobs[b], "slots",
                  fmt::format("[{}, {}) overlap slots [{}, {}) of {}", y.slot_base, y_end,
                              x.slot_base, x_end, describe(jobs[a])));
    }
}

}  // namespace

std::vector<JobInput> load_job_inputs(std::span<const std::filesystem::path> files) {
  std::vector<JobInput> out;
  for (const auto& file : files) {
    std::vector<JobSpec> jobs = load_jobs(file);
    const bool listed = jobs.size() > 1;
    for (std::size_t k = 0; k < jobs.size(); ++k) {
      std::string origin = file.string();
      if (listed) origin += fmt::format(": jobs[{}]", k);
      out.push_back({std::move(jobs[k]), std::move(origin)});
    }
  }
  return out;
}

std::vector<JobInput> expand_trees(std::span<const JobInput> jobs, std::string_view name,
                                   const std::optional<Endpoint>& address) {
  std::vector<JobInput> out;
  for (const JobInput& job : jobs) {
    if (job.spec.trees.empty()) {
      out.push_back(job);
      continue;
    }
    const std::string where = job.origin.empty()
                                  ? fmt::format("job {}", job.spec.job_id)
                                  : fmt::format("{}: job {}", job.origin, job.spec.job_id);
    if (name.empty() && !address)
      throw Error(Errc::kConfig,
                  fmt::format("{}: trees: name this switch's part of the job's trees with --as "
                              "NAME (or give --switch-ip, its address)",
                              where));
    std::vector<JobSpec> parts;
    try {
      parts = jobs_at_aggregator(job.spec, name, address);
    } catch (const Error& e) {
      throw Error(Errc::kConfig, fmt::format("{}: {}", job.origin, e.what()));
    }
    // jobs_at_aggregator keeps the trees' order; name each part by its tree and aggregator.
    std::size_t part = 0;
    for (std::size_t t = 0; t < job.spec.trees.size() && part < parts.size(); ++t) {
      const TreeSpec& tree = job.spec.trees[t];
      const auto node = !name.empty() ? find_tree_node(tree, name) : find_tree_node(tree, *address);
      if (!node) continue;
      out.push_back({std::move(parts[part++]),
                     fmt::format("{}: tree {} ({})", job.origin, t, tree.aggregators[*node].name)});
    }
  }
  return out;
}

Peer parse_peer(std::string_view text, std::string_view what) {
  const auto eq = text.find('=');
  const auto comma = text.find(',', eq == std::string_view::npos ? 0 : eq);
  if (eq == std::string_view::npos || comma == std::string_view::npos)
    throw Error(
        Errc::kConfig,
        fmt::format("{}: '{}' is not IP=MAC,PORT (e.g. 10.0.0.1=02:00:00:00:00:01,9)", what, text));
  Peer peer;
  peer.ip = parse_ipv4(text.substr(0, eq), what);
  peer.mac = parse_mac(text.substr(eq + 1, comma - eq - 1), what);
  const std::string_view port = text.substr(comma + 1);
  unsigned v = 0;
  const auto [ptr, ec] = std::from_chars(port.data(), port.data() + port.size(), v);
  if (ec != std::errc() || ptr != port.data() + port.size() || port.empty() || v > kMaxPort)
    throw Error(Errc::kConfig,
                fmt::format("{}: port '{}' is not a switch port [0, {}]", what, port, kMaxPort));
  peer.switch_port = static_cast<std::uint16_t>(v);
  return peer;
}

void apply_peers(std::vector<JobInput>& jobs, std::span<const Peer> peers) {
  for (std::size_t b = 0; b < peers.size(); ++b)
    for (std::size_t a = 0; a < b; ++a)
      if (peers[a].ip == peers[b].ip)
        throw Error(Errc::kConfig,
                    fmt::format("--peer: {} is given twice", format_ipv4(peers[b].ip)));
  for (JobInput& job : jobs)
    for (const Peer& peer : peers) {
      for (WorkerSpec& w : job.spec.workers)
        if (w.address.ip == peer.ip) {
          if (!w.mac) w.mac = peer.mac;
          if (!w.switch_port) w.switch_port = peer.switch_port;
        }
      if (job.spec.parent && job.spec.parent->address.ip == peer.ip) {
        if (!job.spec.parent->mac) job.spec.parent->mac = peer.mac;
        if (!job.spec.parent->switch_port) job.spec.parent->switch_port = peer.switch_port;
      }
    }
}

SwitchConfig plan_switch(std::span<const JobInput> jobs, const SwitchIdentity& identity,
                         Target target) {
  if (jobs.empty()) throw Error(Errc::kConfig, "no job: give at least one job file");
  if (jobs.size() > kMaxJobs)
    throw Error(Errc::kConfig,
                fmt::format("{} jobs; replication ids (1 + {} * job index + rank) are bit<16>, "
                            "which allows at most {} jobs",
                            jobs.size(), kRidsPerJob, kMaxJobs));
  for (const JobInput& job : jobs) check_job(job, target);
  check_between_jobs(jobs);

  SwitchConfig config;
  config.target = target;
  config.switch_mac = identity.mac;
  config.switch_ip = resolve_switch_ip(jobs, identity);

  std::map<wire::Mac, std::pair<std::uint16_t, std::string>> port_of_mac;  // for conflicts
  std::uint32_t next_node = 0;
  for (std::size_t k = 0; k < jobs.size(); ++k) {
    const JobInput& job = jobs[k];
    JobEntry entry{job.spec.job_id,
                   job.spec.slot_base,
                   job.spec.slot_count,
                   job.spec.elements_per_packet,
                   static_cast<std::uint16_t>(k + 1),
                   {},
                   std::nullopt};
    for (const WorkerSpec& w : job.spec.workers) {
      const std::string field = fmt::format("workers (rank {})", w.rank);
      if (*w.mac == config.switch_mac)
        job_error(job, field + ".mac",
                  fmt::format("{} is the switch's own MAC (--switch-mac)", format_mac(*w.mac)));
      if (w.address.ip == config.switch_ip)
        job_error(job, field + ".address",
                  fmt::format("{} is the switch's own IP", format_ipv4(w.address.ip)));
      const std::string who = fmt::format("rank {} of {}", w.rank, describe(job));
      auto [it, inserted] = port_of_mac.try_emplace(*w.mac, *w.switch_port, who);
      if (inserted) {
        config.forward.push_back({*w.mac, *w.switch_port});
      } else if (it->second.first != *w.switch_port) {
        job_error(
            job, field + ".switch_port",
            fmt::format("{}, but MAC {} is on switch_port {} for {}; the forward table "
                        "maps one MAC to one port",
                        *w.switch_port, format_mac(*w.mac), it->second.first, it->second.second));
      }
      entry.workers.push_back({static_cast<std::uint8_t>(w.rank), *w.mac, w.address.ip,
                               w.address.port, *w.switch_port, rid_of(k, w.rank), next_node++});
    }
    if (job.spec.parent) {
      const ParentSpec& p = *job.spec.parent;
      if (*p.mac == config.switch_mac)
        job_error(job, "parent.mac",
                  fmt::format("{} is the switch's own MAC (--switch-mac)", format_mac(*p.mac)));
      if (p.address.ip == config.switch_ip)
        job_error(job, "parent.address",
                  fmt::format("{} is the switch's own IP; a switch is not its own parent",
                              format_ipv4(p.address.ip)));
      const std::string who = fmt::format("the parent of {}", describe(job));
      auto [it, inserted] = port_of_mac.try_emplace(*p.mac, *p.switch_port, who);
      if (inserted) {
        config.forward.push_back({*p.mac, *p.switch_port});
      } else if (it->second.first != *p.switch_port) {
        job_error(
            job, "parent.switch_port",
            fmt::format("{}, but MAC {} is on switch_port {} for {}; the forward table "
                        "maps one MAC to one port",
                        *p.switch_port, format_mac(*p.mac), it->second.first, it->second.second));
      }
      entry.parent = ParentEntry{*p.mac,   p.address.ip, p.address.port, *p.switch_port,
                                 p.job_id, p.rank,       p.slot_base,    entry.mcast_grp};
    }
    config.jobs.push_back(std::move(entry));
  }
  return config;
}

namespace {

enum Use : std::size_t {  // index into p4_schema()
  kSwitchIdentity,
  kForward,
  kJobTable,
  kWorkerTable,
  kResultDestination,
  kParentTable,
  kParentSource,
};

// "table_add <control>.<table> <action> <keys> => <params>", or table_set_default for the
// keyless default: the names come from p4_schema(), so the consistency test covers them.
std::string bmv2_entry(Use use, const std::vector<std::string>& keys,
                       const std::vector<std::string>& params) {
  const P4TableUse& t = p4_schema()[use];
  if (keys.size() != t.bmv2_keys.size() || params.size() != t.params.size())
    throw std::logic_error(fmt::format("bmv2_entry({}): wrong number of values", t.table));
  if (t.default_action)
    return fmt::format("table_set_default {}.{} {} {}", t.bmv2_control, t.table, t.action,
                       fmt::join(params, " "));
  return fmt::format("table_add {}.{} {} {} => {}", t.bmv2_control, t.table, t.action,
                     fmt::join(keys, " "), fmt::join(params, " "));
}

// "bfrt.netagg.pipe.<control>.<table>.add_with_<action>(<key>=v, .., <param>=v, ..)".
std::string tofino_entry(Use use, const std::vector<std::string>& keys,
                         const std::vector<std::string>& params) {
  const P4TableUse& t = p4_schema()[use];
  if (keys.size() != t.tofino_keys.size() || params.size() != t.params.size())
    throw std::logic_error(fmt::format("tofino_entry({}): wrong number of values", t.table));
  std::vector<std::string> args;
  for (std::size_t i = 0; i < keys.size(); ++i)
    args.push_back(fmt::format("{}={}", bfrt_key_name(t.tofino_keys[i].name), keys[i]));
  for (std::size_t i = 0; i < params.size(); ++i)
    args.push_back(fmt::format("{}={}", t.params[i].name, params[i]));
  return fmt::format("bfrt.netagg.pipe.{}.{}.{}_with_{}({})", t.tofino_control, t.table,
                     t.default_action ? "set_default" : "add", t.action, fmt::join(args, ", "));
}

std::string dec(std::uint64_t v) { return std::to_string(v); }
// bfrt_python takes an integer for every field whatever its P4 type; MAC and IP are spelled out
// in comments next to them.
std::string hex_mac(const wire::Mac& m) {
  std::uint64_t v = 0;
  for (const std::uint8_t b : m) v = (v << 8) | b;
  return fmt::format("0x{:012x}", v);
}
std::string hex_ip(std::uint32_t a) { return fmt::format("0x{:08x}", a); }

}  // namespace

std::string bmv2_commands(const SwitchConfig& config) {
  if (config.target != Target::kBmv2)
    throw Error(Errc::kInvalidArgument, "bmv2_commands: the jobs were checked for Tofino");
  std::string out;
  auto line = [&out](const std::string& text) {
    out += text;
    out += '\n';
  };
  line(bmv2_entry(kSwitchIdentity, {},
                  {format_mac(config.switch_mac), format_ipv4(config.switch_ip)}));
  for (const ForwardEntry& f : config.forward)
    line(bmv2_entry(kForward, {format_mac(f.mac)}, {dec(f.port)}));
  for (const JobEntry& job : config.jobs) {
    line(bmv2_entry(kJobTable, {dec(job.job_id)},
                    {dec(job.workers.size()), dec(job.slot_base), dec(job.slot_count),
                     dec(job.elements_per_packet), dec(job.mcast_grp)}));
    for (const WorkerEntry& w : job.workers)
      line(bmv2_entry(kWorkerTable, {dec(job.job_id), format_ipv4(w.ip), dec(w.udp_port)},
                      {dec(w.rank)}));
    for (const WorkerEntry& w : job.workers)
      line(bmv2_entry(kResultDestination, {dec(w.rid)},
                      {format_mac(w.mac), format_ipv4(w.ip), dec(w.udp_port), dec(w.rank)}));
    if (job.parent) {
      const ParentEntry& p = *job.parent;
      line(bmv2_entry(kParentTable, {dec(job.job_id)},
                      {format_mac(p.mac), format_ipv4(p.ip), dec(p.udp_port), dec(p.switch_port),
                       dec(p.job_id), dec(p.rank), dec(p.slot_base)}));
      line(bmv2_entry(kParentSource, {dec(p.job_id), format_ipv4(p.ip), dec(p.udp_port)},
                      {dec(job.job_id)}));
      line(fmt::format("mirroring_add {} {}", p.mirror_session, p.switch_port));
    }
    line(fmt::format("mc_mgrp_create {}", job.mcast_grp));
    for (const WorkerEntry& w : job.workers)
      line(fmt::format("mc_node_create {} {}", w.rid, w.switch_port));
    for (const WorkerEntry& w : job.workers)
      line(fmt::format("mc_node_associate {} {}", job.mcast_grp, w.bmv2_node));
  }
  return out;
}

std::string tofino_script(const SwitchConfig& config, std::string_view header_comment) {
  if (config.target != Target::kTofino)
    throw Error(Errc::kInvalidArgument, "tofino_script: the jobs were checked for BMv2");
  std::string out;
  auto line = [&out](const std::string& text) {
    out += text;
    out += '\n';
  };
  line("# bfrt_python script for the Tofino program p4/tofino/netagg.p4, loaded as \"netagg\".");
  line("# Run it in the SDE's shell: bfshell -b <this file>, on a freshly loaded program (the");
  line("# entries and multicast nodes below must not exist yet). docs/control-plane.md");
  if (!header_comment.empty()) line(fmt::format("# {}", header_comment));
  line("");
  line(fmt::format("# switch identity: {} {}", format_mac(config.switch_mac),
                   format_ipv4(config.switch_ip)));
  line(tofino_entry(kSwitchIdentity, {}, {hex_mac(config.switch_mac), hex_ip(config.switch_ip)}));
  line("");
  line("# L2 forwarding to the workers (and the parents of jobs in a tree)");
  for (const ForwardEntry& f : config.forward)
    line(fmt::format("{}  # {}", tofino_entry(kForward, {hex_mac(f.mac)}, {dec(f.port)}),
                     format_mac(f.mac)));
  for (const JobEntry& job : config.jobs) {
    line("");
    line(fmt::format(
        "# job {}: {} worker{}, slots [{}, {}), {} elements per packet, "
        "multicast group {}",
        job.job_id, job.workers.size(), job.workers.size() == 1 ? "" : "s", job.slot_base,
        std::uint32_t{job.slot_base} + job.slot_count, job.elements_per_packet, job.mcast_grp));
    line(tofino_entry(kJobTable, {dec(job.job_id)},
                      {dec(job.workers.size()), dec(job.slot_base), dec(job.slot_count),
                       dec(job.elements_per_packet), dec(job.mcast_grp)}));
    for (const WorkerEntry& w : job.workers) {
      line(fmt::format("# rank {}: {}:{}, {}, switch port {}, rid {}", w.rank, format_ipv4(w.ip),
                       w.udp_port, format_mac(w.mac), w.switch_port, w.rid));
      line(tofino_entry(kWorkerTable, {dec(job.job_id), hex_ip(w.ip), dec(w.udp_port)},
                        {dec(w.rank)}));
      line(tofino_entry(kResultDestination, {dec(w.rid)},
                        {hex_mac(w.mac), hex_ip(w.ip), dec(w.udp_port), dec(w.rank)}));
      // One node per worker; its id is the rid (unique, never 0).
      line(
          fmt::format("bfrt.pre.node.entry(MULTICAST_NODE_ID={}, MULTICAST_RID={}, "
                      "MULTICAST_LAG_ID=[], DEV_PORT=[{}]).push()",
                      w.rid, w.rid, w.switch_port));
    }
    if (job.parent) {
      const ParentEntry& p = *job.parent;
      line(fmt::format("# parent: {}:{}, {}, switch port {}; job {} there, rank {}, slots from {}",
                       format_ipv4(p.ip), p.udp_port, format_mac(p.mac), p.switch_port, p.job_id,
                       p.rank, p.slot_base));
      line(tofino_entry(kParentTable, {dec(job.job_id)},
                        {hex_mac(p.mac), hex_ip(p.ip), dec(p.udp_port), dec(p.switch_port),
                         dec(p.job_id), dec(p.rank), dec(p.slot_base)}));
      line(tofino_entry(kParentSource, {dec(p.job_id), hex_ip(p.ip), dec(p.udp_port)},
                        {dec(job.job_id)}));
    }
    std::vector<std::string> nodes, valid, xid;
    for (const WorkerEntry& w : job.workers) {
      nodes.push_back(dec(w.rid));
      valid.push_back("False");
      xid.push_back("0");
    }
    line(fmt::format(
        "bfrt.pre.mgid.entry(MGID={}, MULTICAST_NODE_ID=[{}], "
        "MULTICAST_NODE_L1_XID_VALID=[{}], MULTICAST_NODE_L1_XID=[{}]).push()",
        job.mcast_grp, fmt::join(nodes, ", "), fmt::join(valid, ", "), fmt::join(xid, ", ")));
  }
  line("");
  line("bfrt.complete_operations()");
  return out;
}

std::string bfrt_key_name(std::string_view key_expression) {
  std::string name(key_expression);
  for (char& c : name)
    if (c == '.') c = '_';
  return name;
}

const std::vector<P4TableUse>& p4_schema() {
  static const std::vector<P4TableUse> schema = {
      {"NetaggIngress",
       "Ingress",
       "switch_identity",
       "set_switch_identity",
       true,
       {},
       {},
       {{"mac", kMax48}, {"ip", kMax32}}},
      {"NetaggIngress",
       "Ingress",
       "forward",
       "set_egress_port",
       false,
       {{"hdr.ethernet.dst_addr", kMax48}},
       {{"hdr.ethernet.dst_addr", kMax48}},
       {{"port", kMaxPort}}},
      {"NetaggIngress",
       "Ingress",
       "job_table",
       "set_job",
       false,
       {{"hdr.netagg.job_id", kMax16}},
       {{"hdr.netagg.job_id", kMax16}},
       {{"worker_count", kMaxWorkersPerJob},
        {"slot_base", kPoolSlots - 1},
        {"slot_count", kPoolSlots},
        {"elements_per_packet", std::max(max_elements_per_packet(Target::kBmv2),
                                         max_elements_per_packet(Target::kTofino))},
        {"mcast_grp", kMaxJobs}}},
      {"NetaggIngress",
       "Ingress",
       "worker_table",
       "set_worker",
       false,
       {{"hdr.netagg.job_id", kMax16}, {"hdr.ipv4.src_addr", kMax32}, {"hdr.udp.src_port", kMax16}},
       {{"hdr.netagg.job_id", kMax16}, {"hdr.ipv4.src_addr", kMax32}, {"hdr.udp.src_port", kMax16}},
       {{"rank", kMaxWorkersPerJob - 1}}},
      {"NetaggEgress",
       "Egress",
       "result_destination",
       "set_result_destination",
       false,
       {{"standard_metadata.egress_rid", rid_of(kMaxJobs - 1, kMaxWorkersPerJob - 1)}},
       {{"eg_intr_md.egress_rid", rid_of(kMaxJobs - 1, kMaxWorkersPerJob - 1)}},
       {{"mac", kMax48}, {"ip", kMax32}, {"udp_port", kMax16}, {"rank", kMaxWorkersPerJob - 1}}},
      {"NetaggIngress",
       "Ingress",
       "parent_table",
       "set_parent",
       false,
       {{"hdr.netagg.job_id", kMax16}},
       {{"hdr.netagg.job_id", kMax16}},
       {{"mac", kMax48},
        {"ip", kMax32},
        {"udp_port", kMax16},
        {"port", kMaxPort},
        {"job_id", kMax16},
        {"rank", kMax16},
        {"slot_base", kMax16}}},
      {"NetaggIngress",
       "Ingress",
       "parent_source",
       "set_parent_source",
       false,
       {{"hdr.netagg.job_id", kMax16}, {"hdr.ipv4.src_addr", kMax32}, {"hdr.udp.src_port", kMax16}},
       {{"hdr.netagg.job_id", kMax16}, {"hdr.ipv4.src_addr", kMax32}, {"hdr.udp.src_port", kMax16}},
       {{"job_id", kMax16}}},
  };
  return schema;
}

}  // namespace netagg::p4
