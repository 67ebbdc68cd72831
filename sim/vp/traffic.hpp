// SPDX-License-Identifier: Apache-2.0
// Traffic for the virtual platform: jobs programmed through driver/fpga, workers that send their
// contributions as netagg frames (built by the host's wire encoder, tests/common) on the port of
// their rank, at most one window of slots ahead of the results they received, as the host's
// protocol engine does; every result is checked byte for byte against the frame the host's
// encoder builds from an independently computed sum.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "netagg/fpga/csr_bus.hpp"
#include "netagg/job.hpp"
#include "netagg/wire.hpp"
#include "platform.hpp"

namespace netagg::vp {

struct JobPattern {
  std::uint16_t job_id = 1;
  unsigned workers = 4;  // rank r on port r mod 4
  std::uint16_t slot_base = 0;
  std::uint16_t slot_count = 32;
  wire::DataType dtype = wire::DataType::kFp32;
  // Elements per packet (1..1024); 0: header-only packets (block floating point's exponent
  // preamble: count 0, the chunk's exponent; the result carries the max).
  std::uint16_t elements = 256;
  std::uint32_t packets = 8;  // per worker
};

// "fp32", "bf16", "int32" (Error(kInvalidArgument) otherwise).
wire::DataType parse_dtype(const std::string& name);

struct TrafficReport {
  std::uint64_t results_expected = 0;
  std::uint64_t results_ok = 0;
  std::uint64_t results_bad = 0;         // a result that differs from the expected frame
  std::uint64_t results_unexpected = 0;  // a frame no worker waits for (or a duplicate)
  std::vector<std::string> errors;       // the first few, readable
  bool ok() const {
    return results_ok == results_expected && results_bad == 0 && results_unexpected == 0;
  }
};

class Traffic {
 public:
  // Checks the patterns (Error(kInvalidArgument): no workers, more than 32, elements beyond
  // the wire's 1024, no packets, overlapping slots, repeated job ids).
  Traffic(std::vector<JobPattern> patterns, std::uint64_t seed);

  // From the platform's host thread: programs every job through driver/fpga (job i in entry i).
  void program(fpga::CsrBus& bus) const;
  // Connects the workers to the platform's ports (before run()); they send nothing until start().
  void attach(Platform& platform);
  // The workers begin sending (once the jobs are programmed).
  void start() { started_ = true; }
  // Every worker sent every packet and received every result.
  bool done() const;
  TrafficReport report() const { return report_; }
  const std::vector<JobSpec>& jobs() const { return jobs_; }
  std::uint64_t elements_per_frame(std::size_t job) const;

 private:
  struct Worker {
    std::size_t job = 0;
    std::uint16_t rank = 0;
    std::uint32_t next = 0;      // next packet to send
    std::vector<bool> received;  // results received, by packet
    std::uint32_t received_count = 0;
  };
  bool next_frame(unsigned port, MacPort::Outgoing& out);
  void on_result(unsigned port, std::vector<std::byte> bytes);
  void error(std::string what);
  std::vector<std::uint32_t> values(std::size_t job, std::uint16_t rank,
                                    std::uint32_t packet) const;
  std::int16_t exponent(std::size_t job, std::uint16_t rank, std::uint32_t packet) const;
  std::vector<std::byte> expected(std::size_t job, std::uint16_t rank, std::uint32_t packet) const;

  std::vector<JobPattern> patterns_;
  std::vector<JobSpec> jobs_;
  std::uint64_t seed_;
  std::vector<Worker> workers_;
  std::array<std::vector<std::size_t>, kPorts> port_workers_;  // indices into workers_
  std::array<std::size_t, kPorts> round_robin_{};
  TrafficReport report_;
  bool started_ = false;
};

}  // namespace netagg::vp
