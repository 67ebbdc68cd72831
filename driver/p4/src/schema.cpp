// SPDX-License-Identifier: Apache-2.0
// The tables, actions, keys and parameters the printers write, and the largest value of each.
#include "netagg/p4/control.hpp"

#include <algorithm>
#include <string>
#include <vector>

#include "tables.hpp"

namespace netagg::p4 {

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
