// SPDX-License-Identifier: Apache-2.0
// Checks jobs against a P4 program's limits and numbers their groups, rids and nodes.
#include "netagg/p4/control.hpp"

#include <map>
#include <optional>
#include <string>
#include <utility>

#include <fmt/format.h>

#include "netagg/error.hpp"
#include "tables.hpp"

namespace netagg::p4 {
namespace {

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

bool is_loopback(std::uint32_t ip) { return ip >> 24 == 127; }

// A host's loopback addresses (127.0.0.0/8) never leave it: the kernel sends no packet from or to
// one out of an interface, and drops one that comes in. A host (`who`: a worker, the parent) and
// the switch are both on loopback (a test on one machine) or both on the network.
void check_loopback(const JobInput& job, const std::string& field, std::string_view who,
                    std::uint32_t host_ip, std::uint32_t switch_ip,
                    std::optional<std::uint16_t> switch_port) {
  if (is_loopback(host_ip) == is_loopback(switch_ip)) return;
  if (is_loopback(host_ip))
    job_error(job, field,
              fmt::format("{} is a loopback address, but the switch's IP (--switch-ip, else the "
                          "jobs' \"aggregator\") is {}: no packet from or to a loopback address "
                          "leaves its host, so the {} and the switch would never reach each other. "
                          "Give the {} the address of its interface{}",
                          format_ipv4(host_ip), format_ipv4(switch_ip), who, who,
                          switch_port ? fmt::format(" cabled to switch_port {}", *switch_port)
                                      : std::string(" towards the switch")));
  job_error(job, field,
            fmt::format("{} is on the network, but the switch's IP (--switch-ip, else the jobs' "
                        "\"aggregator\") is {}, a loopback address: no packet to it leaves the "
                        "{}'s host. Give the switch its address on the network",
                        format_ipv4(host_ip), format_ipv4(switch_ip), who));
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
      check_loopback(job, field + ".address", "worker", w.address.ip, config.switch_ip,
                     w.switch_port);
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
      check_loopback(job, "parent.address", "parent", p.address.ip, config.switch_ip,
                     p.switch_port);
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

}  // namespace netagg::p4
