// SPDX-License-Identifier: Apache-2.0
// `netagg-ctl fpga` (driver/tools/ctl_fpga.cpp, in the test build netagg-ctl-fpga-test) against
// a live netagg-fpgad serving the Verilated RTL with an empty job table and its CSR control
// channel: job add -> a real all-reduce of two workers through the RTL and counters that show
// it; job remove -> contributions dropped as unknown job; reset; job add without --entry -> free
// entries, both jobs' workers finish, the same job again refused unless --replace, a full table
// named; job list; a job replaced on purpose -> its workers told within 2 s; bad job files and jobs
// the device cannot hold -> exit 2 naming the field;
// --device 0 on a machine without a card -> a clear error; malformed control requests answered
// and counted by the daemon.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "child_process.hpp"
#include "daemon.hpp"
#include "harness.hpp"
#include "netagg/communicator.hpp"
#include "netagg/error.hpp"
#include "netagg/fpga/csr_channel.hpp"
#include "netagg/job.hpp"
#include "netagg/wire.hpp"

namespace netagg {
namespace {

namespace fs = std::filesystem;
using ::testing::AllOf;
using ::testing::HasSubstr;

constexpr auto kGuard = std::chrono::seconds(30);  // against a hung daemon; never a measure
const fs::path kBin = NETAGG_BINARY_DIR;
const fs::path kDaemon = kBin / "sim" / "fpga" / "netagg-fpgad";
const fs::path kCtl = NETAGG_CTL_FPGA_TEST;  // the test build of netagg-ctl (CMake)

fs::path make_temp_dir() { return testing::make_temp_dir("ctl_fpga_test"); }

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

int udp_socket(const Endpoint& bind_to, int timeout_s) {
  const int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(bind_to.ip);
  sa.sin_port = htons(bind_to.port);
  if (fd < 0 || bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)) != 0)
    throw std::runtime_error("cannot bind a UDP socket");
  timeval tv{timeout_s, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  return fd;
}

void send_to(int fd, const Endpoint& to, std::span<const std::byte> bytes) {
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(to.ip);
  sa.sin_port = htons(to.port);
  ASSERT_EQ(sendto(fd, bytes.data(), bytes.size(), 0, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)),
            static_cast<ssize_t>(bytes.size()));
}

struct CtlRun {
  int code = -1;
  std::string out, err;
};

// Runs the ctl with `args`; env_set adds to its environment, which has no XILINX_XRT unless
// unset_xilinx_xrt is false.
CtlRun run_ctl(const fs::path& dir, const std::vector<std::string>& args,
               const std::vector<std::string>& env_set = {}, bool unset_xilinx_xrt = true) {
  std::vector<std::string> argv = {kCtl.string()};
  argv.insert(argv.end(), args.begin(), args.end());
  sim::ChildOptions options;
  options.stderr_to = sim::ChildStderr::kFile;
  options.stderr_file = dir / "ctl.err";
  options.set_env = env_set;
  if (unset_xilinx_xrt) options.unset_env = {"XILINX_XRT"};
  sim::ChildProcess ctl(argv, options);
  if (!ctl.wait_exit(sim::ChildProcess::Clock::now() + kGuard)) {
    ADD_FAILURE() << "netagg-ctl still running after " << kGuard.count() << " s; killed";
    ctl.signal(SIGKILL);
    ctl.wait_exit();
  }
  return {ctl.exit_code().value_or(-1), ctl.output(), ctl.stderr_text()};
}

// netagg-fpgad with an empty job table and the control channel, both on kernel-picked ports.
class Daemon : public testing::DaemonProcess {
 public:
  explicit Daemon(const fs::path& dir)
      : DaemonProcess("netagg-fpgad",
                      {kDaemon.string(), "--listen", "127.0.0.1:0", "--control", "127.0.0.1:0",
                       "--model", "rtl", "--counters-json", (dir / "counters.json").string()},
                      dir, kGuard),
        json_(dir / "counters.json") {
    data_ = wait_listening();  // printed after the control channel's line
    control_ = Endpoint::parse(wait_line("netagg-fpgad: control on "));
  }
  const Endpoint& control() const { return control_; }
  const Endpoint& data() const { return data_; }

  // SIGTERM; the exit status and the counters it wrote at exit.
  int stop(nlohmann::json& counters) {
    const int code = DaemonProcess::stop(SIGTERM);
    counters = nlohmann::json::parse(slurp(json_));
    return code;
  }

 private:
  fs::path json_;
  Endpoint control_, data_;
};

class CtlFpgaTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!sim::rtl_model_available()) GTEST_SKIP() << "this build has no RTL model";
    dir_ = make_temp_dir();
    daemon_ = std::make_unique<Daemon>(dir_);
    sim_ = daemon_->control().to_string();
  }
  void TearDown() override { fs::remove_all(dir_); }

  CtlRun ctl(std::vector<std::string> args) {
    args.insert(args.begin(), {"fpga", "--sim", sim_});
    return run_ctl(dir_, args);
  }
  nlohmann::json stats() {
    const CtlRun r = ctl({"stats", "--json"});
    EXPECT_EQ(r.code, 0) << r.err;
    return nlohmann::json::parse(r.out);
  }
  // A job of two workers on loopback, sending to the daemon, on slots [slot_base, +8).
  JobSpec make_job(std::uint16_t id, std::uint16_t slot_base = 8) {
    const std::vector<std::uint16_t> ports = sim::free_loopback_ports(2);
    JobSpec job = make_local_job(id, 2, ports[0], slot_base, 8, 256, daemon_->data());
    job.workers[1].address.port = ports[1];
    return job;
  }
  JobSpec write_job(const fs::path& file, std::uint16_t id, std::uint16_t slot_base = 8) {
    JobSpec job = make_job(id, slot_base);
    std::ofstream(file) << to_json(job);
    return job;
  }

  fs::path dir_;
  std::unique_ptr<Daemon> daemon_;
  std::string sim_;
};

TEST_F(CtlFpgaTest, JobAddAllReduceStatsRemoveReset) {
  CtlRun r = ctl({"load"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, AllOf(HasSubstr("design 1"), HasSubstr("64 slots"),
                           HasSubstr(daemon_->data().to_string())));

  const fs::path file = dir_ / "job.json";
  const JobSpec job = write_job(file, 9);
  r = ctl({"job", "add", file.string(), "--entry", "3"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("job 9 -> entry 3: 2 workers, slots [8, 16)"));

  // Two workers all-reduce through the RTL: int32 exactly, fp32 (block floating point).
  constexpr std::size_t kInts = 3000, kFloats = 1500;
  std::vector<std::vector<std::int32_t>> ints(2, std::vector<std::int32_t>(kInts));
  std::vector<std::vector<float>> floats(2, std::vector<float>(kFloats));
  for (int rank = 0; rank < 2; ++rank)
    for (std::size_t i = 0; i < kInts; ++i) {
      ints[rank][i] = static_cast<std::int32_t>(i) * (rank + 1) - 700;
      if (i < kFloats) floats[rank][i] = 0.25f * static_cast<float>(i % 97) - rank * 1.5f;
    }
  std::vector<std::string> failures(2);
  std::vector<std::thread> workers;
  for (int rank = 0; rank < 2; ++rank)
    workers.emplace_back([&, rank] {
      try {
        Config cfg;
        cfg.rank = rank;
        cfg.job = job;
        cfg.epoch = 7;
        Communicator comm(cfg);
        comm.allreduce(std::span(ints[rank]));
        comm.allreduce(std::span(floats[rank]));
      } catch (const std::exception& e) {
        failures[rank] = e.what();
      }
    });
  for (auto& t : workers) t.join();
  ASSERT_EQ(failures[0] + failures[1], "") << daemon_->stderr_text();
  for (int rank = 0; rank < 2; ++rank) {
    for (std::size_t i = 0; i < kInts; ++i)
      ASSERT_EQ(ints[rank][i], 3 * static_cast<std::int32_t>(i) - 1400)
          << "rank " << rank << " i " << i;
    for (std::size_t i = 0; i < kFloats; ++i)
      ASSERT_NEAR(floats[rank][i], 0.5f * static_cast<float>(i % 97) - 1.5f, 1e-3) << i;
  }
  nlohmann::json s = stats();
  EXPECT_GE(s["frames_in"].get<std::uint64_t>(), 2 * (kInts / 256));
  EXPECT_GE(s["completions"].get<std::uint64_t>(), kInts / 256);
  EXPECT_EQ(s["dropped_unknown_job"], 0);
  EXPECT_EQ(s["dropped_foreign_source"], 0);
  // --nonzero lists the counters that are not 0 and only those (a retransmission on a busy
  // machine may make some drop counter nonzero: what matters is that each listed one is).
  r = ctl({"stats", "--nonzero"});
  EXPECT_THAT(r.out,
              AllOf(HasSubstr("completions"), ::testing::Not(HasSubstr("dropped_unknown_job")),
                    ::testing::Not(HasSubstr("dropped_foreign_source"))));
  {
    std::istringstream lines(r.out);
    std::string line;
    std::getline(lines, line);  // "netagg-fpgad at ...: counters"
    int listed = 0;
    while (std::getline(lines, line)) {
      std::istringstream fields(line);
      std::string name;
      std::uint64_t value = 0;
      ASSERT_TRUE(fields >> name >> value) << line;
      EXPECT_NE(value, 0u) << line;
      ++listed;
    }
    EXPECT_GE(listed, 3) << r.out;  // frames in and out, completions at least
  }

  r = ctl({"job", "remove", "3"});
  ASSERT_EQ(r.code, 0) << r.err;
  // A contribution of the removed job: the device drops it as an unknown job. (Loopback UDP
  // queues it before this returns; the daemon serves its data socket before the control one.)
  const int fd = udp_socket(job.workers[0].address, 5);
  wire::Header h;
  h.job_id = job.job_id;
  h.slot = job.slot_base;
  h.seq = 1000;
  h.count = 1;
  std::vector<std::byte> packet(h.packet_size());
  wire::encode_header(h, packet);
  send_to(fd, daemon_->data(), packet);
  close(fd);
  std::uint64_t unknown = 0;
  for (int i = 0; i < 50 && unknown == 0; ++i) {
    unknown = stats()["dropped_unknown_job"].get<std::uint64_t>();
    if (unknown == 0) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_EQ(unknown, 1u);

  r = ctl({"reset"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("soft reset"));
  s = stats();
  for (const auto& [name, value] : s.items()) EXPECT_EQ(value, 0) << name;
}

// Each worker of each job all-reduces `n` int32 elements (rank r contributes i * (r + 1) + id),
// all jobs at once, as a run with its own epoch; returns the failures (empty when every worker got
// the exact sum).
std::string all_reduce(const std::vector<JobSpec>& jobs, std::size_t n, std::uint32_t epoch) {
  std::vector<std::string> failures(2 * jobs.size());
  std::vector<std::thread> workers;
  for (std::size_t j = 0; j < jobs.size(); ++j)
    for (std::uint16_t rank = 0; rank < 2; ++rank)
      workers.emplace_back([&, j, rank] {
        std::string& failure = failures[2 * j + rank];
        try {
          Config cfg;
          cfg.rank = rank;
          cfg.job = jobs[j];
          cfg.epoch = epoch;
          Communicator comm(cfg);
          std::vector<std::int32_t> v(n);
          const std::int32_t id = jobs[j].job_id;
          for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<std::int32_t>(i) * (rank + 1) + id;
          comm.allreduce(std::span(v));
          for (std::size_t i = 0; i < n && failure.empty(); ++i)
            if (v[i] != 3 * static_cast<std::int32_t>(i) + 2 * id)
              failure = fmt::format("job {} rank {}: element {} is {}", id, rank, i, v[i]);
        } catch (const std::exception& e) {
          failure = fmt::format("job {} rank {}: {}", jobs[j].job_id, rank, e.what());
        }
      });
  for (auto& t : workers) t.join();
  std::string all;
  for (const std::string& f : failures)
    if (!f.empty()) all += f + "\n";
  return all;
}

// `job add` without --entry: each job into a free entry, both jobs' workers finish; the same job
// again is refused naming its entry, and replaced with --replace; --entry on another job's entry
// is refused, replaced with --replace; a full table is an error naming its size; `job list`.
TEST_F(CtlFpgaTest, JobAddTakesFreeEntriesAndReplacesOnlyWhenAsked) {
  const fs::path file_a = dir_ / "a.json", file_b = dir_ / "b.json";
  const JobSpec a = write_job(file_a, 9, 8);
  const JobSpec b = write_job(file_b, 10, 16);
  CtlRun r = ctl({"job", "add", file_a.string()});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("job 9 -> entry 0: 2 workers, slots [8, 16)"));
  r = ctl({"job", "add", file_b.string()});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("job 10 -> entry 1: 2 workers, slots [16, 24)"));
  EXPECT_THAT(r.out, ::testing::Not(HasSubstr("replacing")));

  r = ctl({"job", "list"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out,
              AllOf(HasSubstr("2 of 8 entries hold jobs"),
                    HasSubstr("entry 0: job 9, 2 workers, slots [8, 16), 256 elements per packet"),
                    HasSubstr("entry 1: job 10, 2 workers, slots [16, 24), 256 elements")));
  r = ctl({"job", "list", "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  const nlohmann::json listed = nlohmann::json::parse(r.out);
  EXPECT_EQ(listed["entries"], 8);
  ASSERT_EQ(listed["jobs"].size(), 2u);
  EXPECT_EQ(listed["jobs"][1]["job_id"], 10);
  EXPECT_EQ(listed["jobs"][1]["entry"], 1);
  EXPECT_EQ(listed["jobs"][1]["slots"]["base"], 16);

  // Both jobs' workers at once: neither job replaced the other.
  ASSERT_EQ(all_reduce({a, b}, 2000, 11), "") << daemon_->stderr_text();
  EXPECT_EQ(stats()["dropped_unknown_job"], 0);

  // The same job again: refused.
  r = ctl({"job", "add", file_a.string()});
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, AllOf(HasSubstr("job 9 already in entry 0"), HasSubstr("--replace")));
  EXPECT_EQ(r.out, "");
  r = ctl({"job", "add", file_a.string(), "--entry", "0"});
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("job 9 already in entry 0"));
  r = ctl({"job", "add", file_a.string(), "--entry", "4", "--replace"});
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("job 9 already in entry 0: storing it in entry 4 as well"));
  // With --replace: into its own entry, said so.
  r = ctl({"job", "add", file_a.string(), "--replace"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, AllOf(HasSubstr("replacing job 9 in entry 0"),
                           HasSubstr("job 9 -> entry 0: 2 workers")));
  ASSERT_EQ(all_reduce({a, b}, 600, 12), "") << daemon_->stderr_text();

  // --entry on another job's entry: refused; replaced with --replace.
  const fs::path file_c = dir_ / "c.json";
  write_job(file_c, 11, 16);
  r = ctl({"job", "add", file_c.string(), "--entry", "1"});
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("entry 1 holds job 10: give --replace"));
  r = ctl({"job", "add", file_c.string()});
  EXPECT_EQ(r.code, 2) << "a free entry, but the slots of job 10";
  EXPECT_THAT(r.err,
              HasSubstr("job 11: slots [16, 24) overlap slots [16, 24) of job 10 in entry 1"));
  r = ctl({"job", "add", file_c.string(), "--entry", "1", "--replace"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out,
              AllOf(HasSubstr("replacing job 10 in entry 1"), HasSubstr("job 11 -> entry 1")));

  // Six more jobs fill the table; the next one finds no entry.
  nlohmann::json six = {{"jobs", nlohmann::json::array()}};
  for (std::uint16_t k = 0; k < 6; ++k)
    six["jobs"].push_back(nlohmann::json::parse(to_json(make_job(20 + k, 24 + 4 * k))));
  for (auto& job : six["jobs"]) job["slots"]["count"] = 4;
  std::ofstream(dir_ / "six.json") << six.dump();
  r = ctl({"job", "add", (dir_ / "six.json").string()});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, AllOf(HasSubstr("job 20 -> entry 2"), HasSubstr("job 25 -> entry 7")));
  write_job(file_b, 12, 48);  // free slots, no free entry
  r = ctl({"job", "add", file_b.string()});
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, AllOf(HasSubstr("job 12: no free entry"), HasSubstr("8 entries")));
  r = ctl({"job", "list"});
  EXPECT_THAT(r.out, AllOf(HasSubstr("8 of 8 entries hold jobs"), HasSubstr("entry 1: job 11")));
}

// A job replaced on purpose (--entry E --replace): its workers, started after, are told within
// 2 s that the aggregator has no such job, each by a notice; not after the job timeout.
TEST_F(CtlFpgaTest, AReplacedJobsWorkersAreToldWithin2s) {
  const fs::path file_a = dir_ / "a.json", file_c = dir_ / "c.json";
  const JobSpec a = write_job(file_a, 9, 8);
  write_job(file_c, 11, 8);
  CtlRun r = ctl({"job", "add", file_a.string()});
  ASSERT_EQ(r.code, 0) << r.err;
  r = ctl({"job", "add", file_c.string(), "--entry", "0", "--replace"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("replacing job 9 in entry 0"));

  std::vector<std::string> messages(2);
  std::vector<Errc> codes(2, Errc::kInvalidArgument);
  std::vector<std::chrono::steady_clock::duration> took(2);
  std::vector<std::thread> workers;
  for (int rank = 0; rank < 2; ++rank)
    workers.emplace_back([&, rank] {
      const auto start = std::chrono::steady_clock::now();
      try {
        Config cfg;
        cfg.rank = rank;
        cfg.job = a;
        cfg.epoch = 13;
        Communicator comm(cfg);
        std::vector<std::int32_t> v(600, rank);
        comm.allreduce(std::span(v));
        messages[rank] = "finished";
      } catch (const Error& e) {
        codes[rank] = e.code();
        messages[rank] = e.what();
      }
      took[rank] = std::chrono::steady_clock::now() - start;
    });
  for (auto& t : workers) t.join();
  for (int rank = 0; rank < 2; ++rank) {
    EXPECT_EQ(codes[rank], Errc::kRejected) << messages[rank];
    EXPECT_THAT(messages[rank], HasSubstr("it has no job 9"));
    EXPECT_LT(took[rank], std::chrono::seconds(2)) << "rank " << rank;
  }
  EXPECT_GT(stats()["notices"].get<std::uint64_t>(), 0u);
}

TEST_F(CtlFpgaTest, BadJobFilesExit2NamingTheField) {
  const fs::path file = dir_ / "bad.json";
  std::ofstream(file) << R"({"job_id": 1, "slots": {"base": 0, "count": 8},
    "elements_per_packet": 2000, "workers": [{"rank": 0, "address": "127.0.0.1:4000"}]})";
  CtlRun r = ctl({"job", "add", file.string()});
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, AllOf(HasSubstr(file.string()), HasSubstr("elements_per_packet")));

  std::ofstream(file) << R"({"slots": {"base": 0, "count": 8}, "elements_per_packet": 16,
    "workers": [{"rank": 0, "address": "127.0.0.1:4000"}]})";
  r = ctl({"job", "add", file.string()});
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("job_id: missing"));

  r = ctl({"job", "add", (dir_ / "absent.json").string()});
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("absent.json"));

  // Valid as a file, too big for the device: named, exit 2, nothing written.
  std::ofstream(file) << R"({"job_id": 1, "slots": {"base": 32, "count": 64},
    "elements_per_packet": 16, "workers": [{"rank": 0, "address": "127.0.0.1:4000"}]})";
  r = ctl({"job", "add", file.string()});
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("slots [32, 96) but the FPGA aggregator has 64 slots"));
  r = ctl({"job", "add", file.string(), "--entry", "9"});
  EXPECT_EQ(r.code, 2);
  r = ctl({"job", "remove", "8"});
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("entry 8 does not exist"));
  EXPECT_EQ(stats()["frames_in"], 0);
}

TEST_F(CtlFpgaTest, MalformedControlRequestsAreAnsweredAndCounted) {
  using namespace fpga::channel;
  const int fd = udp_socket(Endpoint{0x7F000001, 0}, 5);
  Bytes req = encode_request({42, Op::kRead32, CsrStatus::kOk, 0, 0});
  std::vector<std::vector<std::byte>> bad;
  bad.emplace_back(req.begin(), req.begin() + 12);  // short
  Bytes op = req;
  op[8] = std::byte{7};
  bad.emplace_back(op.begin(), op.end());
  Bytes unaligned = encode_request({43, Op::kRead32, CsrStatus::kOk, 0x2, 0});
  Bytes beyond = encode_request({44, Op::kWrite32, CsrStatus::kOk, 0x4000, 1});
  for (const auto& b : bad) {
    send_to(fd, daemon_->control(), b);
    std::array<std::byte, 64> in{};
    const ssize_t n = recv(fd, in.data(), in.size(), 0);
    ASSERT_EQ(n, 20);
    const auto response = decode_response({in.data(), 20});
    ASSERT_TRUE(response);
    EXPECT_EQ(response->status, CsrStatus::kMalformed);
    EXPECT_EQ(response->tag, 42u);
  }
  for (const Bytes& b : {unaligned, beyond}) {
    send_to(fd, daemon_->control(), b);
    std::array<std::byte, 64> in{};
    ASSERT_EQ(recv(fd, in.data(), in.size(), 0), 20);
    EXPECT_EQ(decode_response({in.data(), 20})->status, CsrStatus::kBadAddress);
  }
  const std::string stranger = "hello";
  send_to(fd, daemon_->control(), std::as_bytes(std::span(stranger)));
  send_to(fd, daemon_->control(), req);  // a good one still works after them
  std::array<std::byte, 64> in{};
  ASSERT_EQ(recv(fd, in.data(), in.size(), 0), 20) << "the stranger got no answer, this did";
  const auto version = decode_response({in.data(), 20});
  ASSERT_TRUE(version);
  EXPECT_EQ(version->tag, 42u);
  EXPECT_EQ(version->value >> 16, 1u);
  close(fd);

  nlohmann::json c;
  EXPECT_EQ(daemon_->stop(c), 0);
  EXPECT_EQ(c["control_malformed"], 2);
  EXPECT_EQ(c["control_bad_address"], 2);
  EXPECT_EQ(c["control_ignored"], 1);
  EXPECT_GE(c["control_requests"].get<std::uint64_t>(), 1u);
  EXPECT_EQ(c["control_device_errors"], 0);
}

TEST(CtlFpga, DeviceWithoutACardIsAClearError) {
  const fs::path dir = make_temp_dir();
  CtlRun r = run_ctl(dir, {"fpga", "--device", "0", "stats"});
#if NETAGG_HAVE_XRT
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, AllOf(HasSubstr("Alveo device 0"), HasSubstr("XILINX_XRT is not set")));
  // With a usable XILINX_XRT, XRT itself finds no card.
  const fs::path lib = "/usr/lib/x86_64-linux-gnu";
  if (fs::exists(lib / "libxrt_core.so.2")) {
    fs::create_directory_symlink(lib, dir / "lib");
    r = run_ctl(dir, {"fpga", "--device", "0", "stats"}, {"XILINX_XRT=" + dir.string()});
    EXPECT_EQ(r.code, 1);
    EXPECT_THAT(r.err, AllOf(HasSubstr("cannot open Alveo device 0"), HasSubstr("xbutil")));
  }
  r = run_ctl(dir, {"fpga", "--device", "0", "load"});
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("--xclbin FILE is required"));
  r = run_ctl(dir, {"fpga", "--device", "0", "--xclbin", (dir / "none.xclbin").string(), "load"});
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("none.xclbin: no such xclbin file"));
#else
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("no XRT support"));
#endif
  r = run_ctl(dir, {"fpga", "stats"});
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("--device N"));
  r = run_ctl(dir, {"fpga", "--sim", "127.0.0.1:1", "--xclbin", "x", "load"});
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("--xclbin is for --device"));
  fs::remove_all(dir);
}

}  // namespace
}  // namespace netagg
