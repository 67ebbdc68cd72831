// SPDX-License-Identifier: Apache-2.0
// A daemon under test as a child process (netagg-switchd, netagg-fpgad, netagg-frame-switchd):
// stdout on a pipe read on demand, stderr in a file, killed when the object goes. The daemons
// share the conventions this relies on: "<name>: listening on ..." once ready, counter blocks
// "<name>: counters (WHY):" whose last line is "send_errors N", printed on SIGUSR1.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "child_process.hpp"
#include "netagg/job.hpp"
#include "netagg/wire.hpp"

namespace netagg::testing {

// An int32 (or any 32-bit dtype) contribution packet with `values` as its payload.
std::vector<std::byte> contribution(std::uint16_t job, std::uint16_t rank, std::uint16_t slot,
                                    std::uint8_t set, std::uint32_t seq,
                                    const std::vector<std::int32_t>& values,
                                    std::int16_t exponent = wire::kExponentNone,
                                    wire::DataType dtype = wire::DataType::kInt32);

// Worker `rank`'s int32 contribution for its packet `seq` (slot_base + seq mod W, set
// (seq / W) mod 2 of the job's window W), framed from its registered address to `aggregator`.
std::vector<std::byte> contribution_frame(const JobSpec& job, std::uint16_t rank, std::uint32_t seq,
                                          const std::vector<std::int32_t>& values,
                                          const wire::Mac& worker_mac,
                                          const wire::Mac& aggregator_mac,
                                          const Endpoint& aggregator);

// A result packet decoded (a decode failure fails the test), payload as int32.
struct Result {
  wire::Header header;
  std::vector<std::int32_t> values;
};
Result parse_result(const std::vector<std::byte>& bytes);

// A UDP socket bound to an ephemeral loopback port: a worker (or a stranger) talking to a daemon
// under test. receive() gives up after kReceiveGuardSeconds: a guard against a hung daemon that
// fails the test, never a measurement.
class LoopbackUdpSocket {
 public:
  static constexpr int kReceiveGuardSeconds = 15;
  LoopbackUdpSocket();
  ~LoopbackUdpSocket();
  LoopbackUdpSocket(const LoopbackUdpSocket&) = delete;
  LoopbackUdpSocket& operator=(const LoopbackUdpSocket&) = delete;

  const Endpoint& local() const { return local_; }
  void send_to(const Endpoint& to, const std::vector<std::byte>& bytes);
  // The next datagram and who sent it; nullopt if none came within the guard time.
  std::optional<std::vector<std::byte>> receive(Endpoint* from = nullptr);
  // True if a datagram is queued right now (tests call it only after the daemon's counters or a
  // barrier proved that it has sent all it was going to).
  bool has_pending();

 private:
  int fd_ = -1;
  Endpoint local_;
};

using Counters = std::map<std::string, std::uint64_t>;

// A daemon (or a tool) under test: a sim::ChildProcess with the daemons' conventions on top.
class DaemonProcess {
 public:
  // Starts `argv[0]` with the rest of `argv`; stderr goes to dir/stderr. `name` is the prefix
  // of the daemon's lines ("netagg-switchd"). `guard` bounds every wait: a hung daemon fails the
  // test, no wait measures speed. Throws std::runtime_error if the process cannot start.
  DaemonProcess(std::string name, const std::vector<std::string>& argv,
                const std::filesystem::path& dir, std::chrono::seconds guard);

  // Reads stdout until `done(text so far)` holds or the daemon closes stdout. Returns whether
  // `done` held.
  bool read_until(const std::function<bool(const std::string&)>& done);
  // Waits for a whole line starting with `prefix` and returns the rest of it ("" and a test
  // failure if none came).
  std::string wait_line(const std::string& prefix);
  // The address of the "<name>: listening on IP:PORT" line.
  Endpoint wait_listening();
  // Sends SIGUSR1 and returns the counter block it printed.
  Counters request_counters();
  // Requests counters until counter `name` reaches `n` (or the guard time passes, which fails
  // the test): then the daemon has processed every datagram sent to it.
  Counters wait_for_counter(const std::string& name, std::uint64_t n);

  void signal(int signal) const { process_.signal(signal); }
  // Sends `signal`, waits for exit and returns the exit code (-1 if killed by a signal).
  int stop(int signal);
  // Waits for exit (a failure and SIGKILL after the guard time) and returns the exit code (-1
  // if killed by a signal).
  int wait_exit();

  pid_t pid() const { return process_.pid(); }
  const std::string& name() const { return name_; }
  const std::string& stdout_text() const { return process_.output(); }
  std::string stderr_text() const { return process_.stderr_text(); }

  // The last counter block printed so far.
  Counters last_counters() const { return last_block(stdout_text(), name_); }

  // Counter blocks begun / complete (last line printed) in `s`; the last block of `s` printed
  // by daemon `name`.
  std::size_t count_blocks(const std::string& s) const;
  static std::size_t complete_blocks(const std::string& s);
  static Counters last_block(const std::string& s, const std::string& name);

 private:
  sim::ChildProcess::Clock::time_point deadline() const {
    return sim::ChildProcess::Clock::now() + guard_;
  }

  std::string name_;
  std::chrono::seconds guard_;
  sim::ChildProcess process_;
};

// A fresh folder under the temp dir, "<prefix>.XXXXXX".
std::filesystem::path make_temp_dir(const std::string& prefix);

// `program` followed by `args`: an argv for DaemonProcess.
std::vector<std::string> command(const std::filesystem::path& program,
                                 std::vector<std::string> args);

// The counters a daemon wrote with --counters-json.
Counters read_json_counters(const std::filesystem::path& file);

// One entry of a job file's "workers" list; `switch_port` only where given.
std::string worker_json(std::uint16_t rank, const Endpoint& address,
                        std::optional<int> switch_port = {});

// A fixture's scratch folder: made by SetUp (skipping the test when `program` is not built),
// removed by TearDown; write() puts a file in it.
class ScratchTest : public ::testing::Test {
 protected:
  ScratchTest(std::filesystem::path program, std::string prefix)
      : program_(std::move(program)), prefix_(std::move(prefix)) {}
  void SetUp() override;
  void TearDown() override;
  std::filesystem::path write(const std::string& name, const std::string& text) const;

  std::filesystem::path program_;
  std::string prefix_;
  std::filesystem::path dir_;
};

}  // namespace netagg::testing
