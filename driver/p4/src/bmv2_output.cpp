// SPDX-License-Identifier: Apache-2.0
// The planned entries as simple_switch_CLI commands.
#include "netagg/p4/control.hpp"

#include <stdexcept>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "netagg/error.hpp"
#include "tables.hpp"

namespace netagg::p4 {
namespace {

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

}  // namespace netagg::p4
