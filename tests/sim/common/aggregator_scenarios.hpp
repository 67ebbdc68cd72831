// SPDX-License-Identifier: Apache-2.0
// What the tests of both aggregator daemons (netagg-switchd, netagg-fpgad) run alike, from UDP
// sockets on loopback: the rounds of a job of three workers and a retransmission, the junk (no
// result, a notice for the drops a worker can act on), a quiet stop on SIGINT. Each test adds what
// only its daemon does and checks the counters in its daemon's names.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "daemon.hpp"

namespace netagg::testing {

// The sockets of the tests: workers, strangers, parents.
using UdpSocket = LoopbackUdpSocket;

// An aggregator daemon under test: `program` started with `args`, its stderr in `dir`, its lines
// prefixed with the program's name.
class AggregatorDaemon : public DaemonProcess {
 public:
  // Bounds every wait: a hung daemon fails the test; no wait measures speed.
  static constexpr std::chrono::seconds kGuard{30};
  AggregatorDaemon(const std::filesystem::path& program, const std::filesystem::path& dir,
                   std::vector<std::string> args);
};

// Two jobs in one job file: job 5 of three workers on slots [16, 18) with 3 elements a packet,
// and job 6 of one worker on slots [0, 4), whose worker sends into job 5. A stranger, registered
// nowhere, too.
class TwoJobs {
 public:
  static constexpr std::uint16_t kJob = 5, kBase = 16, kWindow = 2, kOtherJob = 6;
  // Packets per worker that reduce_and_retransmit() sends.
  static constexpr std::uint32_t kPackets = 8;
  // What reduce_and_retransmit() sends: its rounds and the retransmission.
  static constexpr std::uint64_t kRoundDatagrams = 3 * kPackets + 1;
  // What send_junk() sends.
  static constexpr std::uint64_t kJunk = 18;

  // The job file; rank 2 on `rank2_switch_port` where given.
  std::string job_file(std::optional<int> rank2_switch_port = {}) const;

  // kPackets packets per worker through the window of 2 (slot kBase + P % 2, set (P / 2) % 2),
  // every result checked at every rank, each from `aggregator`; then rank 1 retransmits the
  // last packet and gets the stored result, alone.
  void reduce_and_retransmit(const Endpoint& aggregator);

  // Junk of every kind, once each, from the workers of both jobs and the stranger: truncated,
  // bad version, type, dtype, flags, count, length, foreign source, unknown job, rank and slot
  // out of range, a count beyond the job's, a result. None gets a result; which get a
  // notice each test checks (notices_received).
  void send_junk(const Endpoint& aggregator);

  // A test failure for each socket with a datagram queued (call it once the daemon's counters
  // show that it has processed everything sent to it).
  void expect_nothing_pending();

  LoopbackUdpSocket workers[3];
  LoopbackUdpSocket other_job_worker, stranger;
};

// The notices a socket holds, up to `n`, each as its reason's name and the waiting ranks' bitmap
// (0 but for a duplicate), sorted; each from `aggregator`. Stops at the first receive that times
// out, so a missing notice shows as a shorter list.
using Notices = std::vector<std::pair<std::string, std::uint32_t>>;
Notices notices_received(LoopbackUdpSocket& socket, std::size_t n, const Endpoint& aggregator);

// Job 1: `worker` alone on slot 0, one element a packet; `aggregator` where given.
std::string one_slot_job(const Endpoint& worker, const std::optional<Endpoint>& aggregator = {});

// `d` (started --quiet with one_slot_job(worker)) answers a contribution, then stops on SIGINT
// with exit code 0, no counters on stdout and nothing on stderr.
void expect_answer_then_quiet_stop_on_sigint(DaemonProcess& d, LoopbackUdpSocket& worker);

// Job 1 of one_slot_job(worker) with "aggregator" 127.0.0.1:9, which the daemon does not serve.
std::string job_of_another_aggregator(const Endpoint& worker);

// `d` (started with --listen 127.0.0.1:0 and job_of_another_aggregator, in `file`) refuses it:
// exit 2 before any "listening" line, and a message naming both addresses and the fixes.
void expect_job_of_another_aggregator_refused(DaemonProcess& d, const std::string& file);

}  // namespace netagg::testing
