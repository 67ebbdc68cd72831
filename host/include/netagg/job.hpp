// SPDX-License-Identifier: Apache-2.0
// The job description: one format, read by the host runtime, the aggregator daemons and the
// device control planes (docs/job-format.md). A job is a set of workers that all-reduce
// together through a range of the aggregator's slots.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "netagg/wire.hpp"

namespace netagg {

struct Endpoint {
  std::uint32_t ip = 0;  // host order
  std::uint16_t port = 0;

  // "a.b.c.d:port"; throws Error(kConfig) naming `what` on bad input.
  static Endpoint parse(std::string_view text, std::string_view what = "address");
  std::string to_string() const;
  friend bool operator==(const Endpoint&, const Endpoint&) = default;
};

// Throws Error(kConfig) naming `what` unless e's address can be one host's: not 0.0.0.0/8
// ("this network"), 224.0.0.0/4 (multicast), 240.0.0.0/4 (reserved) or 255.255.255.255.
// Packets of a worker or an aggregator always come from a host address, so any other would
// only make them look foreign.
void check_host_address(const Endpoint& e, std::string_view what);

struct WorkerSpec {
  std::uint16_t rank = 0;
  Endpoint address;              // the worker's UDP source address
  std::optional<wire::Mac> mac;  // for the switch/FPGA control planes
  std::optional<std::uint16_t> switch_port;
};

struct JobSpec {
  std::uint16_t job_id = 0;
  std::uint16_t slot_base = 0;            // first slot of the job's range in the aggregator
  std::uint16_t slot_count = 0;           // slots in the range = the workers' window
  std::uint16_t elements_per_packet = 0;  // payload elements of a full packet
  std::vector<WorkerSpec> workers;        // index == rank; ranks are 0..n-1
  std::optional<Endpoint> aggregator;     // where workers send (optional in the file)

  std::size_t world_size() const { return workers.size(); }
  const WorkerSpec* find_worker(const Endpoint& source) const;
};

// Parses one job (a JSON object). Every error is Error(kConfig) naming `source` and the field.
JobSpec parse_job(std::string_view json_text, std::string_view source = "job");
// A file holding either one job object or {"jobs": [ ... ]}.
std::vector<JobSpec> load_jobs(const std::filesystem::path& file);
JobSpec load_job(const std::filesystem::path& file);  // exactly one job
std::string to_json(const JobSpec& job);

// A job on loopback: ranks 0..n-1 at 127.0.0.1:(first_port + rank).
JobSpec make_local_job(std::uint16_t job_id, std::uint16_t workers, std::uint16_t first_port,
                       std::uint16_t slot_base, std::uint16_t slot_count,
                       std::uint16_t elements_per_packet, Endpoint aggregator);

}  // namespace netagg
