// SPDX-License-Identifier: Apache-2.0
// The planned entries as a bfrt_python script for the Tofino SDE.
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

// bfrt_python takes an integer for every field whatever its P4 type; MAC and IP are spelled out
// in comments next to them.
std::string hex_mac(const wire::Mac& m) {
  std::uint64_t v = 0;
  for (const std::uint8_t b : m) v = (v << 8) | b;
  return fmt::format("0x{:012x}", v);
}
std::string hex_ip(std::uint32_t a) { return fmt::format("0x{:08x}", a); }

}  // namespace

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

}  // namespace netagg::p4
