// SPDX-License-Identifier: Apache-2.0
// The switch's control plane as simple_switch_CLI lines: the commands, tables and actions of the
// P4 control-plane contract (sim/switch/pipeline.md), read into a Bmv2Config that SwitchPipeline
// (pipeline.hpp) is built from.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "netagg/wire.hpp"

namespace netagg::sim {

// Table and action names of the contract (BMv2 control names NetaggIngress / NetaggEgress).
namespace bmv2 {
inline constexpr std::string_view kSwitchIdentity = "NetaggIngress.switch_identity";
inline constexpr std::string_view kForward = "NetaggIngress.forward";
inline constexpr std::string_view kJobTable = "NetaggIngress.job_table";
inline constexpr std::string_view kWorkerTable = "NetaggIngress.worker_table";
inline constexpr std::string_view kResultDestination = "NetaggEgress.result_destination";
inline constexpr std::string_view kParentTable = "NetaggIngress.parent_table";
inline constexpr std::string_view kParentSource = "NetaggIngress.parent_source";
}  // namespace bmv2

// The switch's configuration as the CLI lines leave it. Each entry remembers its line, so that
// errors found when the tables are put together can name it.
struct Bmv2Config {
  struct Line {
    std::size_t number = 0;  // 1-based line of the text
    std::string text;
  };
  struct Identity {
    wire::Mac mac{};
    std::uint32_t ip = 0;
    Line line;
  };
  struct JobEntry {
    std::uint16_t job_id = 0;
    std::uint8_t worker_count = 0;
    std::uint16_t slot_base = 0, slot_count = 0, elements_per_packet = 0, mcast_grp = 0;
    Line line;
  };
  struct WorkerEntry {
    std::uint16_t job_id = 0;
    std::uint32_t ip = 0;
    std::uint16_t udp_port = 0;
    std::uint8_t rank = 0;
    Line line;
  };
  struct ResultDestination {
    wire::Mac mac{};
    std::uint32_t ip = 0;
    std::uint16_t udp_port = 0;
    std::uint8_t rank = 0;
    Line line;
  };
  // Trees: the parent of a job (parent_table, keyed by the job's id) and where the parent's
  // results come from (parent_source: the parent's job id and address, the child job's id).
  struct ParentEntry {
    std::uint16_t job_id = 0;
    wire::Mac mac{};
    std::uint32_t ip = 0;
    std::uint16_t udp_port = 0;
    std::uint16_t port = 0;           // bit<9>: the switch port towards the parent
    std::uint16_t parent_job_id = 0;  // the job's id at the parent
    std::uint16_t rank = 0;           // this switch's rank among the parent's members
    std::uint16_t slot_base = 0;      // the job's first slot at the parent
    Line line;
  };
  struct ParentSourceEntry {
    std::uint16_t parent_job_id = 0;
    std::uint32_t ip = 0;
    std::uint16_t udp_port = 0;
    std::uint16_t job_id = 0;  // the child job the results belong to
    Line line;
  };
  struct MirrorSession {
    std::uint16_t port = 0;
    Line line;
  };
  struct McNode {
    std::uint16_t rid = 0;
    std::vector<std::uint16_t> ports;  // bit<9> each
    std::optional<std::uint16_t> group;
    Line line;
  };

  std::string source;  // where the lines came from (the first apply_bmv2_cli's source)
  std::optional<Identity> identity;
  std::map<wire::Mac, std::pair<std::uint16_t, Line>> forward;     // dst MAC -> egress port
  std::map<std::uint16_t, JobEntry> jobs;                          // by job_id
  std::vector<WorkerEntry> workers;                                // in line order
  std::map<std::uint16_t, ResultDestination> result_destinations;  // by rid
  std::map<std::uint16_t, std::vector<std::size_t>> groups;  // group -> node handles, in order
  std::vector<McNode> nodes;                                 // index = node handle
  std::map<std::uint16_t, ParentEntry> parents;              // by the child job's id
  std::vector<ParentSourceEntry> parent_sources;             // in line order
  std::map<std::uint16_t, MirrorSession> mirror_sessions;    // by session id (mirroring_add)
};

// Parses simple_switch_CLI lines (the contract's commands, plus `reset_state`; blank lines are
// skipped). Lines apply in order on top of `config`, as the CLI applies them to a running
// switch. Throws Error(kConfig) "SOURCE:LINE: 'TEXT': PROBLEM" for anything else: unknown
// command, table or action, wrong number of keys or parameters, a value that does not fit its
// field, a duplicate entry, an unknown group or node handle.
void apply_bmv2_cli(Bmv2Config& config, std::string_view text, std::string_view source = "cli");
Bmv2Config parse_bmv2_cli(std::string_view text, std::string_view source = "cli");

// Throws Error(kConfig) "SOURCE:LINE: 'TEXT': PROBLEM": an error about one line, found while it
// was read or when the tables are put together.
[[noreturn]] void bmv2_line_error(std::string_view source, const Bmv2Config::Line& line,
                                  const std::string& problem);

}  // namespace netagg::sim
