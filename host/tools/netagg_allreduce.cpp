// netagg-allreduce: all-reduces a deterministic pseudo-random tensor through an aggregator and
// checks the result against a reference every worker computes locally.
//
//   netagg-allreduce --rank R --job FILE [--target IP:PORT] ...   one worker (or rank/job from
//                                                                  the environment, NETAGG_*)
//   netagg-allreduce --local N ...                                  N workers on loopback and
//                                                                  the aggregator's daemon
//
// In --local mode this process is a launcher: it writes a loopback job file, starts the daemon
// of the target (netagg-switchd for switch-sim, netagg-fpgad for fpga-sim), runs N copies of
// itself as workers (--json, so it can read their results), stops the daemon and prints a
// summary. Exit status: 0 ok, 1 wrong result, 2 usage or
// configuration error, 3 an all-reduce failed (timeout, transport) or a worker died.
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "allreduce_report.hpp"
#include "netagg/codec.hpp"
#include "netagg/communicator.hpp"
#include "netagg/config.hpp"
#include "netagg/error.hpp"
#include "netagg/job.hpp"
#include "netagg/transport.hpp"

namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using netagg::Endpoint;
using netagg::Errc;
using netagg::Error;
using netagg::report::median;
using netagg::report::Mismatch;
using netagg::report::mismatch_text;
using netagg::report::rate_text;

constexpr int kExitOk = 0;
constexpr int kExitMismatch = 1;
constexpr int kExitUsage = 2;
constexpr int kExitFailed = 3;

struct Options {
  // one worker
  int rank = -1;
  std::string job_file;
  // launcher
  int local = 0;
  std::string switchd;
  std::string fpgad;
  std::string fpga_model = "rtl";
  int port_base = 0;
  int kill_rank = -1;  // hidden: this rank dies after kill_after_packets
  std::int64_t kill_after_packets = -1;
  bool verbose = false;
  // both
  std::string target = "switch-sim";
  std::string transport;  // empty: the config's (NETAGG_TRANSPORT, else udp)
  std::string dtype = "fp32";
  std::string float_wire;  // empty: what the target needs
  std::uint64_t count = 1 << 20;
  double loss = 0.0;
  std::uint64_t seed = 1;
  double timeout_s = 10.0;
  int iterations = 1;
  int elements_per_packet = 1024;  // loopback: no 1500-byte MTU to respect (fpga-sim: below)
  int window = 128;
  bool json = false;
  std::int64_t die_after_packets = -1;  // hidden, worker side of --kill-rank
  int wrong_input_rank = -1;            // hidden: this rank's input is not what the others expect
  bool wrong_input = false;             // hidden, worker side of --wrong-input-rank
};

[[noreturn]] void usage_error(const std::string& what) { throw Error(Errc::kConfig, what); }

// ---- the test tensor -------------------------------------------------------------------------

std::uint64_t mix(std::uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// Element `index` of worker `rank`'s input: a pure function, so every worker can compute every
// other worker's input and the exact sum without talking to anybody.
std::uint64_t element_bits(std::uint64_t seed, int rank, std::uint64_t index) {
  return mix(mix(mix(seed + 0x9E3779B97F4A7C15ull) ^ static_cast<std::uint64_t>(rank)) + index);
}

std::int32_t int32_input(std::uint64_t seed, int rank, std::uint64_t index) {
  // Full range, so that the sum wraps around: the switch adds modulo 2^32 and so must we.
  return static_cast<std::int32_t>(
      static_cast<std::uint32_t>(element_bits(seed, rank, index) >> 32));
}

float fp32_input(std::uint64_t seed, int rank, std::uint64_t index) {
  // Uniform in [-1, 1) times 2^k, k in [-10, 9] changing every 1024 elements: chunks with
  // different magnitudes exercise the block exponents.
  const int k = static_cast<int>(mix(seed ^ (index >> 10) ^ 0xA5A5A5A5ull) % 20) - 10;
  const double u = static_cast<double>(element_bits(seed, rank, index) >> 40) / (1 << 23) - 1.0;
  return static_cast<float>(std::ldexp(u, k));
}

// ---- verification ----------------------------------------------------------------------------

std::optional<Mismatch> verify_int32(std::span<const std::int32_t> got, std::uint64_t seed,
                                     int world) {
  for (std::uint64_t i = 0; i < got.size(); ++i) {
    std::uint32_t want = 0;
    for (int r = 0; r < world; ++r) want += static_cast<std::uint32_t>(int32_input(seed, r, i));
    if (static_cast<std::uint32_t>(got[i]) != want)
      return Mismatch{i, double(got[i]), double(static_cast<std::int32_t>(want)), 0};
  }
  return std::nullopt;
}

// Block floating point: per chunk, the global exponent is the max of the workers' block
// exponents, and codec::error_bound(e, world) bounds each element's error against the exact sum.
// fp32 on the wire (an fp32 aggregator): world - 1 additions, each off by half an ulp of at
// most the sum of magnitudes.
std::optional<Mismatch> verify_fp32(std::span<const float> got, std::uint64_t seed, int world,
                                    std::size_t per_packet, netagg::FloatWire wire_format) {
  std::vector<std::vector<float>> inputs(world, std::vector<float>(per_packet));
  for (std::uint64_t base = 0; base < got.size(); base += per_packet) {
    const std::size_t n = std::min<std::uint64_t>(per_packet, got.size() - base);
    std::int16_t e = netagg::wire::kExponentNone;
    for (int r = 0; r < world; ++r) {
      for (std::size_t i = 0; i < n; ++i) inputs[r][i] = fp32_input(seed, r, base + i);
      e = std::max(e, netagg::codec::block_exponent(std::span<const float>(inputs[r].data(), n)));
    }
    for (std::size_t i = 0; i < n; ++i) {
      double want = 0, magnitude = 0;
      for (int r = 0; r < world; ++r) {
        want += inputs[r][i];
        magnitude += std::fabs(inputs[r][i]);
      }
      const double g = got[base + i];
      double bound;
      if (wire_format == netagg::FloatWire::kBlockInt32) {
        if (e == netagg::wire::kExponentNonFinite) {
          if (std::isnan(g)) continue;
          return Mismatch{base + i, g, std::nan(""), 0};
        }
        bound = e == netagg::wire::kExponentNone ? 0.0 : netagg::codec::error_bound(e, world);
      } else {
        bound = (world - 1) * std::ldexp(magnitude, -24) + std::ldexp(std::fabs(want), -24);
      }
      if (!(std::fabs(g - want) <= bound)) return Mismatch{base + i, g, want, bound};
    }
  }
  return std::nullopt;
}

// ---- one worker ------------------------------------------------------------------------------

// Hidden test hook (--die-after-packets): the worker SIGKILLs itself once it has sent K
// packets, deterministically mid-way through an all-reduce, as a crashed worker would.
class DyingTransport final : public netagg::Transport {
 public:
  DyingTransport(std::unique_ptr<Transport> inner, std::int64_t packets)
      : inner_(std::move(inner)), left_(packets) {}
  void send(std::span<const std::span<const std::byte>> packets) override {
    if (static_cast<std::int64_t>(packets.size()) >= left_) {
      inner_->send(packets.first(static_cast<std::size_t>(left_)));
      std::fflush(nullptr);
      ::raise(SIGKILL);
    }
    left_ -= static_cast<std::int64_t>(packets.size());
    inner_->send(packets);
  }
  std::size_t receive(netagg::Duration t, const PacketHandler& h) override {
    return inner_->receive(t, h);
  }
  std::string name() const override { return inner_->name(); }
  netagg::TransportCounters counters() const override { return inner_->counters(); }

 private:
  std::unique_ptr<Transport> inner_;
  std::int64_t left_;
};

bool is_address(const std::string& target) { return target.find(':') != std::string::npos; }

// The FPGA aggregator's defaults (docs/fpga-aggregator.md, "Parameters"): a slot holds
// MAX_BEATS * LANES = 256 32-bit elements, the pool has SLOTS = 64 slots.
constexpr int kFpgaMaxElementsPerPacket = 256;
constexpr int kFpgaSlots = 64;
// The Verilated RTL simulates some 10^5 cycles a second: with a window of 64 the frames in
// flight take longer than the workers' first retransmission timeout (20 ms) and every packet is
// sent twice. 16 keeps all ports busy without that.
constexpr int kFpgaSimWindow = 16;

void check_target(const Options& o) {
  if (o.target == "switch-sim" || o.target == "fpga-sim" || is_address(o.target)) return;
  usage_error(fmt::format("--target: '{}' is not switch-sim, fpga-sim or IP:PORT", o.target));
}

// What the target takes when the command line does not say: fp32 as is for the FPGA aggregator
// (it adds floats), packets and a window that fit its slots. `given` says which options the
// command line set.
void apply_target_defaults(Options& o, bool elements_given, bool window_given) {
  if (o.target != "fpga-sim") return;
  if (o.float_wire.empty()) o.float_wire = "fp32";
  if (!elements_given) o.elements_per_packet = kFpgaMaxElementsPerPacket;
  if (!window_given) o.window = kFpgaSimWindow;
}

netagg::FloatWire float_wire_of(const Options& o) {
  if (!o.float_wire.empty()) return netagg::parse_float_wire(o.float_wire);
  return netagg::FloatWire::kBlockInt32;  // switch-sim and unknown addresses: integer adds
}

netagg::Config worker_config(const Options& o) {
  netagg::Config cfg;
  if (is_address(o.target)) {
    // The command line names the aggregator: it overrides the environment's.
    ::setenv("NETAGG_AGGREGATOR", o.target.c_str(), 1);
  }
  if (o.transport == "dpdk" && !o.job_file.empty()) {
    // DPDK takes its options from NETAGG_DPDK_* (or a NETAGG_CONFIG file): read the job and
    // rank through the environment too, so that all of them apply.
    if (o.rank < 0) usage_error("--job needs --rank");
    ::setenv("NETAGG_JOB_FILE", o.job_file.c_str(), 1);
    ::setenv("NETAGG_RANK", std::to_string(o.rank).c_str(), 1);
    ::setenv("NETAGG_TRANSPORT", "dpdk", 1);
    cfg = netagg::Config::from_env();
  } else if (!o.job_file.empty()) {
    if (o.rank < 0) usage_error("--job needs --rank");
    cfg.job = netagg::load_job(o.job_file);
    cfg.rank = o.rank;
    if (is_address(o.target)) cfg.aggregator = Endpoint::parse(o.target, "--target");
  } else {
    if (o.rank >= 0) ::setenv("NETAGG_RANK", std::to_string(o.rank).c_str(), 1);
    if (!o.transport.empty()) ::setenv("NETAGG_TRANSPORT", o.transport.c_str(), 1);
    cfg = netagg::Config::from_env();
  }
  if (!o.transport.empty()) cfg.transport = o.transport;
  cfg.float_wire = float_wire_of(o);
  cfg.job_timeout =
      std::chrono::duration_cast<netagg::Duration>(std::chrono::duration<double>(o.timeout_s));
  cfg.retransmit_timeout = std::min(cfg.retransmit_timeout, cfg.job_timeout);
  cfg.max_retransmit_timeout =
      std::clamp(cfg.max_retransmit_timeout, cfg.retransmit_timeout, cfg.job_timeout);
  cfg.loss = o.loss;
  cfg.loss_seed = o.seed;
  cfg.validate();
  return cfg;
}

std::string_view errc_name(Errc c) {
  switch (c) {
    case Errc::kConfig:
      return "config";
    case Errc::kTimeout:
      return "timeout";
    case Errc::kTransport:
      return "transport";
    case Errc::kUnsupported:
      return "unsupported";
    case Errc::kInvalidArgument:
      return "invalid_argument";
  }
  return "unknown";
}

int run_worker(const Options& o) {
  netagg::Config cfg = worker_config(o);
  const int rank = cfg.rank;
  const int world = static_cast<int>(cfg.job.world_size());
  const bool is_float = o.dtype == "fp32";

  json out{{"rank", rank},
           {"target", o.target},
           {"dtype", o.dtype},
           {"float_wire", is_float ? std::string(netagg::to_string(cfg.float_wire)) : "int32"},
           {"workers", world},
           {"count", o.count},
           {"bytes", o.count * 4},
           {"elements_per_packet", cfg.job.elements_per_packet},
           {"window", cfg.job.slot_count},
           {"loss", o.loss},
           {"iterations", o.iterations}};
  std::vector<double> seconds;
  std::optional<Mismatch> mismatch;
  int status = kExitOk;

  std::unique_ptr<netagg::Communicator> comm;
  try {
    auto transport = netagg::make_transport(cfg);
    if (o.die_after_packets >= 0)
      transport = std::make_unique<DyingTransport>(std::move(transport), o.die_after_packets);
    comm = std::make_unique<netagg::Communicator>(cfg, std::move(transport));

    std::vector<std::int32_t> ints(is_float ? 0 : o.count);
    std::vector<float> floats(is_float ? o.count : 0);
    // A one-element all-reduce before each timed one lines the workers up, so the time is the
    // all-reduce's and not the slowest worker's start-up or verification.
    const auto barrier = [&] {
      std::int32_t one = 1;
      comm->allreduce(std::span<std::int32_t>(&one, 1));
      if (one != world)
        throw Error(Errc::kTransport,
                    fmt::format("barrier all-reduce summed to {}, expected {}", one, world));
    };
    for (int it = 0; it < o.iterations && !mismatch; ++it) {
      // --wrong-input (a test of the verification itself): another seed than the reference's.
      const std::uint64_t input_seed = o.wrong_input ? o.seed + 1 : o.seed;
      if (is_float)
        for (std::uint64_t i = 0; i < o.count; ++i) floats[i] = fp32_input(input_seed, rank, i);
      else
        for (std::uint64_t i = 0; i < o.count; ++i) ints[i] = int32_input(input_seed, rank, i);
      barrier();
      const auto t0 = std::chrono::steady_clock::now();
      if (is_float)
        comm->allreduce(std::span<float>(floats));
      else
        comm->allreduce(std::span<std::int32_t>(ints));
      const auto t1 = std::chrono::steady_clock::now();
      seconds.push_back(std::chrono::duration<double>(t1 - t0).count());
      mismatch =
          is_float ? verify_fp32(floats, o.seed, world, cfg.job.elements_per_packet, cfg.float_wire)
                   : verify_int32(ints, o.seed, world);
    }
    if (mismatch) {
      status = kExitMismatch;
      out["verification"] = "mismatch";
      out["mismatch"] = netagg::report::to_json(*mismatch);
    } else {
      out["verification"] = "ok";
    }
  } catch (const Error& e) {
    status = e.code() == Errc::kConfig || e.code() == Errc::kUnsupported ? kExitUsage : kExitFailed;
    out["verification"] = "error";
    out["error"] = e.what();
    out["error_kind"] = errc_name(e.code());
    // With --json the error travels in the JSON (the launcher prints it once, per rank).
    if (!o.json)
      std::fprintf(stderr, "netagg-allreduce: rank %d: error (%s): %s\n", rank,
                   std::string(errc_name(e.code())).c_str(), e.what());
  }

  const double best = seconds.empty() ? 0 : *std::min_element(seconds.begin(), seconds.end());
  out["seconds_all"] = seconds;
  out["seconds"] = best;
  out["seconds_median"] = median(seconds);
  out["goodput_gbps"] = best > 0 ? o.count * 4 * 8 / best / 1e9 : 0.0;
  out["ate_per_second"] = best > 0 ? o.count / best : 0.0;
  if (comm) {
    const auto s = comm->stats();
    const auto t = comm->transport_counters();
    out["retransmissions"] = s.retransmissions;
    out["packets_sent"] = s.packets_sent;
    out["duplicates"] = s.duplicates;
    out["rejected"] = s.rejected;
    out["injected_drops"] = t.injected_drops;
    out["dropped_foreign"] = t.dropped_foreign;
  }

  if (o.json) {
    std::printf("%s\n", out.dump().c_str());
  } else {
    std::printf("netagg-allreduce: rank %d of %d, %s, %s, %llu elements\n", rank, world,
                o.target.c_str(), o.dtype.c_str(), static_cast<unsigned long long>(o.count));
    if (out["verification"] == "ok") std::printf("verification: ok\n");
    if (mismatch) std::printf("%s\n", mismatch_text(*mismatch).c_str());
    if (!seconds.empty())
      std::printf("time: %.6f s (best of %zu, median %.6f s)\n%s\nretransmissions: %llu\n", best,
                  seconds.size(), median(seconds), rate_text(best, o.count * 4, o.count).c_str(),
                  static_cast<unsigned long long>(out.value("retransmissions", 0ull)));
  }
  std::fflush(stdout);
  return status;
}

// ---- the launcher ----------------------------------------------------------------------------

std::atomic<int> g_stop_signal{0};  // set by SIGINT/SIGTERM while launching
extern "C" void on_stop_signal(int sig) { g_stop_signal = sig; }

fs::path self_executable() {
  std::error_code ec;
  auto p = fs::read_symlink("/proc/self/exe", ec);
  if (ec)
    throw Error(Errc::kConfig, fmt::format("cannot find my own executable: {}", ec.message()));
  return p;
}

struct Child {
  pid_t pid = -1;
  int out_fd = -1;  // its stdout
  std::string output;
  bool exited = false;
  int status = 0;
  bool killed_by_launcher = false;
};

// fork + exec with stdout (and with merge_stderr, stderr) into a pipe, else stderr shared with
// ours. The child dies with us.
Child spawn(const std::vector<std::string>& argv, bool merge_stderr = false) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0)
    throw Error(Errc::kTransport, fmt::format("pipe: {}", std::strerror(errno)));
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) throw Error(Errc::kTransport, fmt::format("fork: {}", std::strerror(errno)));
  if (pid == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(127);
    ::dup2(fds[1], STDOUT_FILENO);
    if (merge_stderr) ::dup2(fds[1], STDERR_FILENO);
    ::execv(args[0], args.data());
    const char msg[] = "netagg-allreduce: exec failed\n";
    [[maybe_unused]] auto n = ::write(STDERR_FILENO, msg, sizeof msg - 1);
    ::_exit(127);
  }
  ::close(fds[1]);
  ::fcntl(fds[0], F_SETFL, O_NONBLOCK);
  Child c;
  c.pid = pid;
  c.out_fd = fds[0];
  return c;
}

// Reads what is there; false at end of file.
bool drain(Child& c) {
  if (c.out_fd < 0) return false;
  char buf[4096];
  for (;;) {
    const ssize_t n = ::read(c.out_fd, buf, sizeof buf);
    if (n > 0) {
      c.output.append(buf, static_cast<std::size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return true;
    ::close(c.out_fd);
    c.out_fd = -1;
    return false;
  }
}

bool reap(Child& c, bool block) {
  if (c.exited) return true;
  int st = 0;
  const pid_t r = ::waitpid(c.pid, &st, block ? 0 : WNOHANG);
  if (r == c.pid) {
    c.exited = true;
    c.status = st;
    drain(c);
    return true;
  }
  return false;
}

void poll_children(std::vector<Child*> children, int timeout_ms) {
  std::vector<pollfd> fds;
  for (auto* c : children)
    if (c->out_fd >= 0) fds.push_back({c->out_fd, POLLIN, 0});
  if (fds.empty()) {
    ::usleep(static_cast<useconds_t>(timeout_ms) * 1000);
    return;
  }
  ::poll(fds.data(), fds.size(), timeout_ms);
  for (auto* c : children) drain(*c);
}

std::string describe_exit(const Child& c) {
  if (!c.exited) return "still running";
  if (WIFEXITED(c.status)) return fmt::format("exited with status {}", WEXITSTATUS(c.status));
  if (WIFSIGNALED(c.status)) {
    const int sig = WTERMSIG(c.status);
    return fmt::format("killed by signal {} ({}){}", sig, ::strsignal(sig),
                       c.killed_by_launcher ? " by the launcher after the grace period" : "");
  }
  return "ended";
}

bool child_ok(const Child& c) {
  return c.exited && WIFEXITED(c.status) && WEXITSTATUS(c.status) == 0;
}

void terminate(Child& c, int sig) {
  if (!c.exited && c.pid > 0) ::kill(c.pid, sig);
}

// Free UDP ports on loopback, all held at once so they differ, then released for the workers.
std::vector<std::uint16_t> free_loopback_ports(int n) {
  std::vector<int> fds;
  std::vector<std::uint16_t> ports;
  for (int i = 0; i < n; ++i) {
    const int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0) throw Error(Errc::kTransport, fmt::format("socket: {}", std::strerror(errno)));
    fds.push_back(fd);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0)
      throw Error(Errc::kTransport, fmt::format("bind 127.0.0.1:0: {}", std::strerror(errno)));
    ports.push_back(ntohs(a.sin_port));
  }
  for (int fd : fds) ::close(fd);
  return ports;
}

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "netagg-allreduce-XXXXXX").string();
    if (::mkdtemp(tmpl.data()) == nullptr)
      throw Error(Errc::kConfig, fmt::format("mkdtemp: {}", std::strerror(errno)));
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

std::vector<std::string> worker_args(const fs::path& self, const Options& o, int rank,
                                     const fs::path& job, const Endpoint& aggregator) {
  std::vector<std::string> a{self.string(),
                             "--rank",
                             std::to_string(rank),
                             "--job",
                             job.string(),
                             "--target",
                             aggregator.to_string(),
                             "--dtype",
                             o.dtype,
                             "--count",
                             std::to_string(o.count),
                             "--loss",
                             fmt::format("{}", o.loss),
                             "--seed",
                             std::to_string(o.seed),
                             "--timeout",
                             fmt::format("{}", o.timeout_s),
                             "--iterations",
                             std::to_string(o.iterations),
                             "--json"};
  if (!o.float_wire.empty()) a.insert(a.end(), {"--float-wire", o.float_wire});
  if (rank == o.wrong_input_rank) a.push_back("--wrong-input");
  if (rank == o.kill_rank && o.kill_after_packets >= 0)
    a.insert(a.end(), {"--die-after-packets", std::to_string(o.kill_after_packets)});
  return a;
}

// The daemon that serves --target: netagg-switchd (switch-sim) or netagg-fpgad (fpga-sim).
struct DaemonCommand {
  std::string name;
  fs::path binary;
  std::vector<std::string> args;  // after the binary
};

DaemonCommand daemon_command(const fs::path& self, const Options& o, const fs::path& job,
                             const fs::path& counters, std::uint16_t port) {
  const fs::path build = self.parent_path() / ".." / "..";
  std::vector<std::string> args{"--listen", fmt::format("127.0.0.1:{}", port), "--job",
                                job.string(), "--counters-json", counters.string()};
  if (o.target == "fpga-sim") {
    args.insert(args.end(), {"--model", o.fpga_model});
    return {"netagg-fpgad",
            o.fpgad.empty() ? build / "sim" / "fpga" / "netagg-fpgad" : fs::path(o.fpgad), args};
  }
  args.insert(args.end(), {"--slots", std::to_string(o.window)});
  return {"netagg-switchd",
          o.switchd.empty() ? build / "sim" / "switch" / "netagg-switchd" : fs::path(o.switchd),
          args};
}

// Starts the daemon and waits for its "listening on" line; returns the address it serves.
Endpoint start_daemon(Child& daemon, const DaemonCommand& cmd) {
  const std::string& name = cmd.name;
  if (!fs::exists(cmd.binary))
    throw Error(Errc::kConfig,
                fmt::format("{} not found at {} (build it, or pass --{} PATH)", name,
                            cmd.binary.string(), name.substr(name.find('-') + 1)));
  std::vector<std::string> argv{cmd.binary.string()};
  argv.insert(argv.end(), cmd.args.begin(), cmd.args.end());
  daemon = spawn(argv, /*merge_stderr=*/true);
  const std::string ready = name + ": listening on ";
  // The RTL model builds its job table through simulated CSR accesses before it is ready.
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  for (;;) {
    if (auto at = daemon.output.find(ready); at != std::string::npos) {
      const auto eol = daemon.output.find('\n', at);
      if (eol != std::string::npos) {
        const auto begin = at + ready.size();
        return Endpoint::parse(daemon.output.substr(begin, eol - begin), name + " address");
      }
    }
    if (reap(daemon, false)) {
      // Exit 2 is a configuration the daemon refused: the launcher's usage error too.
      const bool config = WIFEXITED(daemon.status) && WEXITSTATUS(daemon.status) == kExitUsage;
      throw Error(config ? Errc::kConfig : Errc::kTransport,
                  fmt::format("{} {} before it was ready:\n{}", name, describe_exit(daemon),
                              daemon.output));
    }
    if (std::chrono::steady_clock::now() > give_up) {
      terminate(daemon, SIGKILL);
      reap(daemon, true);
      throw Error(Errc::kTransport,
                  fmt::format("{} did not report \"listening\" within 30 s", name));
    }
    if (g_stop_signal) throw Error(Errc::kTransport, "interrupted");
    poll_children({&daemon}, 100);
  }
}

int run_local(const Options& o) {
  const int n = o.local;
  if (n < 1 || n > 32) usage_error(fmt::format("--local: {} workers; 1..32 are supported", n));
  if (o.kill_rank >= n)
    usage_error(fmt::format("--kill-rank {} but only {} workers", o.kill_rank, n));
  if (o.window < 1 || o.window > 0xFFFF) usage_error("--window: must be in 1..65535");
  if (o.elements_per_packet < 1 || o.elements_per_packet > netagg::wire::kMaxCount)
    usage_error(fmt::format("--elements-per-packet: must be in 1..{}", netagg::wire::kMaxCount));
  if (o.target == "fpga-sim") {
    if (o.elements_per_packet > kFpgaMaxElementsPerPacket)
      usage_error(fmt::format("--elements-per-packet: the FPGA aggregator's slots hold at most {} "
                              "elements (MAX_BEATS * LANES)",
                              kFpgaMaxElementsPerPacket));
    if (o.window > kFpgaSlots)
      usage_error(fmt::format("--window: the FPGA aggregator has {} slots", kFpgaSlots));
  }

  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  ::sigaction(SIGINT, &sa, nullptr);
  ::sigaction(SIGTERM, &sa, nullptr);

  const fs::path self = self_executable();
  const TempDir tmp;
  const fs::path job_path = tmp.path() / "job.json";
  const fs::path counters_path = tmp.path() / "aggregator-counters.json";

  // Ports: consecutive from --port-base (switch first), or whatever the kernel says is free.
  std::vector<std::uint16_t> ports;
  if (o.port_base > 0) {
    if (o.port_base + n > 0xFFFF) usage_error("--port-base: too high for that many workers");
    for (int i = 0; i <= n; ++i) ports.push_back(static_cast<std::uint16_t>(o.port_base + i));
  } else {
    ports = free_loopback_ports(n);
    ports.insert(ports.begin(), 0);  // the daemon picks its own
  }
  netagg::JobSpec job;
  job.job_id = 1;
  job.slot_base = 0;
  job.slot_count = static_cast<std::uint16_t>(o.window);
  job.elements_per_packet = static_cast<std::uint16_t>(o.elements_per_packet);
  for (int r = 0; r < n; ++r)
    job.workers.push_back({static_cast<std::uint16_t>(r), Endpoint{0x7F000001, ports[r + 1]},
                           std::nullopt, std::nullopt});

  Child daemon;
  Endpoint aggregator;
  const bool own_daemon = !is_address(o.target);
  if (own_daemon) {
    std::ofstream(job_path) << netagg::to_json(job) << "\n";
    aggregator = start_daemon(daemon, daemon_command(self, o, job_path, counters_path, ports[0]));
  } else {
    aggregator = Endpoint::parse(o.target, "--target");
  }
  job.aggregator = aggregator;
  std::ofstream(job_path) << netagg::to_json(job) << "\n";

  std::vector<Child> workers;
  for (int r = 0; r < n; ++r)
    workers.push_back(spawn(worker_args(self, o, r, job_path, aggregator)));

  // Wait for the workers. When one fails, the others should fail by their own --timeout; who is
  // still running after that and a grace period is killed, so nothing hangs the launcher.
  const auto grace = std::chrono::duration_cast<std::chrono::steady_clock::duration>(
      std::chrono::duration<double>(o.timeout_s + 5.0));
  std::optional<std::chrono::steady_clock::time_point> first_failure;
  for (;;) {
    std::vector<Child*> live;
    for (auto& w : workers) {
      if (!w.exited && reap(w, false) && !child_ok(w) && !first_failure)
        first_failure = std::chrono::steady_clock::now();
      if (!w.exited) live.push_back(&w);
    }
    if (live.empty()) break;
    if (g_stop_signal) {
      for (auto* w : live) terminate(*w, SIGKILL);
      for (auto* w : live) reap(*w, true);
      break;
    }
    if (first_failure && std::chrono::steady_clock::now() > *first_failure + grace) {
      for (auto* w : live) {
        w->killed_by_launcher = true;
        terminate(*w, SIGKILL);
        reap(*w, true);
      }
      break;
    }
    if (own_daemon) {
      live.push_back(&daemon);
      reap(daemon, false);
    }
    poll_children(live, 100);
  }

  json switch_counters;
  std::string daemon_status;
  if (own_daemon) {
    if (!daemon.exited) {
      terminate(daemon, SIGTERM);
      const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(5);
      while (!reap(daemon, false) && std::chrono::steady_clock::now() < give_up)
        poll_children({&daemon}, 50);
      if (!daemon.exited) {
        terminate(daemon, SIGKILL);
        reap(daemon, true);
      }
    } else {
      daemon_status = fmt::format("{} {} while the workers ran",
                                  o.target == "fpga-sim" ? "netagg-fpgad" : "netagg-switchd",
                                  describe_exit(daemon));
    }
    if (o.verbose) std::fprintf(stderr, "%s", daemon.output.c_str());
    std::ifstream in(counters_path);
    if (in) switch_counters = json::parse(in, nullptr, false);
    if (switch_counters.is_discarded()) switch_counters = nullptr;
  }

  // Results: each worker printed one JSON line (unless it died).
  std::vector<json> results(n);
  json ranks = json::array();
  bool all_ok = true, any_mismatch = false;
  std::optional<std::pair<int, json>> first_mismatch;
  std::vector<std::string> problems;
  for (int r = 0; r < n; ++r) {
    Child& w = workers[r];
    std::istringstream lines(w.output);
    for (std::string line; std::getline(lines, line);) {
      auto j = json::parse(line, nullptr, false);
      if (j.is_object()) results[r] = j;
    }
    json entry{{"rank", r}, {"status", describe_exit(w)}};
    if (results[r].is_object()) {
      entry["verification"] = results[r].value("verification", "");
      if (results[r].contains("error")) {
        entry["error"] = results[r]["error"];
        entry["error_kind"] = results[r]["error_kind"];
      }
      if (results[r].contains("mismatch")) {
        any_mismatch = true;
        if (!first_mismatch) first_mismatch = {r, results[r]["mismatch"]};
      }
    }
    if (!child_ok(w)) {
      all_ok = false;
      std::string why = fmt::format("rank {} {}", r, describe_exit(w));
      if (entry.contains("error"))
        why += fmt::format(": {} error: {}", entry["error_kind"].get<std::string>(),
                           entry["error"].get<std::string>());
      problems.push_back(why);
    }
    ranks.push_back(entry);
  }
  if (!daemon_status.empty()) problems.push_back(daemon_status);
  if (g_stop_signal)
    problems.push_back(fmt::format("interrupted by signal {}", int(g_stop_signal)));

  // Per iteration the slowest worker's time is the all-reduce's time.
  std::vector<double> per_iteration;
  for (int it = 0; it < o.iterations; ++it) {
    double slowest = 0;
    bool complete = true;
    for (const auto& res : results) {
      if (!res.is_object() || !res.contains("seconds_all") ||
          res["seconds_all"].size() <= static_cast<std::size_t>(it)) {
        complete = false;
        break;
      }
      slowest = std::max(slowest, res["seconds_all"][it].get<double>());
    }
    if (complete) per_iteration.push_back(slowest);
  }
  const double best =
      per_iteration.empty() ? 0 : *std::min_element(per_iteration.begin(), per_iteration.end());
  std::uint64_t retransmissions = 0, packets_sent = 0, injected_drops = 0;
  for (const auto& res : results)
    if (res.is_object()) {
      retransmissions += res.value("retransmissions", 0ull);
      packets_sent += res.value("packets_sent", 0ull);
      injected_drops += res.value("injected_drops", 0ull);
    }
  const std::string verification = all_ok ? "ok" : any_mismatch ? "mismatch" : "error";
  const std::uint64_t bytes = o.count * 4;

  if (o.json) {
    json summary{
        {"target", o.target},
        {"dtype", o.dtype},
        {"float_wire",
         o.dtype == "fp32" ? (o.float_wire.empty() ? "int32-bfp" : o.float_wire) : "int32"},
        {"workers", n},
        {"count", o.count},
        {"bytes", bytes},
        {"elements_per_packet", o.elements_per_packet},
        {"window", o.window},
        {"loss", o.loss},
        {"seed", o.seed},
        {"iterations", o.iterations},
        {"seconds", best},
        {"seconds_median", median(per_iteration)},
        {"seconds_all", per_iteration},
        {"goodput_gbps", best > 0 ? bytes * 8 / best / 1e9 : 0.0},
        {"ate_per_second", best > 0 ? o.count / best : 0.0},
        {"verification", verification},
        {"retransmissions", retransmissions},
        {"packets_sent", packets_sent},
        {"injected_drops", injected_drops},
        {"ranks", ranks},
        {"problems", problems},
        {o.target == "fpga-sim" ? "fpga_counters" : "switch_counters", switch_counters}};
    if (first_mismatch) {
      summary["mismatch"] = first_mismatch->second;
      summary["mismatch"]["rank"] = first_mismatch->first;
    }
    std::printf("%s\n", summary.dump(2).c_str());
  } else {
    std::printf(
        "netagg-allreduce: %d workers through %s, %s, %llu elements (%.1f MiB), "
        "%d iteration%s%s\n",
        n, o.target.c_str(), o.dtype.c_str(), static_cast<unsigned long long>(o.count),
        bytes / 1048576.0, o.iterations, o.iterations == 1 ? "" : "s",
        o.loss > 0 ? fmt::format(", loss {}", o.loss).c_str() : "");
    for (const auto& p : problems) std::printf("%s\n", p.c_str());
    if (first_mismatch) {
      const json& m = first_mismatch->second;
      std::printf("rank %d: %s\n", first_mismatch->first,
                  mismatch_text(netagg::report::mismatch_from_json(m)).c_str());
    }
    std::printf("verification: %s\n", verification == "ok" ? "ok" : "FAILED");
    if (best > 0) {
      std::printf("time: %.6f s (best of %zu, median %.6f s; slowest worker)\n%s\n", best,
                  per_iteration.size(), median(per_iteration),
                  rate_text(best, bytes, o.count).c_str());
      std::printf("retransmissions: %llu\n", static_cast<unsigned long long>(retransmissions));
    }
  }
  std::fflush(stdout);
  if (all_ok && problems.empty()) return kExitOk;
  return any_mismatch ? kExitMismatch : kExitFailed;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  CLI::App app{
      "netagg-allreduce: all-reduce a test tensor through an in-network aggregator and verify "
      "the result.\nOne worker: --rank R --job FILE (or NETAGG_* variables). Locally: --local N."};
  app.add_option("--local", o.local, "launch N workers and the aggregator's daemon on loopback");
  app.add_option("--rank", o.rank, "this worker's rank (one-worker mode)");
  app.add_option("--job", o.job_file, "job description file (one-worker mode)");
  app.add_option("--target", o.target,
                 "switch-sim (the switch model), fpga-sim (the FPGA aggregator's RTL in "
                 "Verilator), or an aggregator IP:PORT")
      ->capture_default_str();
  app.add_option("--transport", o.transport,
                 "one worker: udp or dpdk (DPDK options from NETAGG_DPDK_* or NETAGG_CONFIG); "
                 "default: the config's, else udp")
      ->check(CLI::IsMember({"udp", "dpdk"}));
  app.add_option("--dtype", o.dtype, "element type")
      ->check(CLI::IsMember({"fp32", "int32"}))
      ->capture_default_str();
  app.add_option("--float-wire", o.float_wire,
                 "how fp32 travels; default: what the target needs (fpga-sim: fp32, else "
                 "int32-bfp)")
      ->check(CLI::IsMember({"int32-bfp", "fp32"}));
  app.add_option("--count", o.count, "elements in the tensor")
      ->check(CLI::Range(1ull, 1ull << 31))
      ->capture_default_str();
  app.add_option("--loss", o.loss, "injected loss per packet and direction, 0..1")
      ->check(CLI::Range(0.0, 0.99))
      ->capture_default_str();
  app.add_option("--seed", o.seed, "seed of the test tensor and of the injected loss")
      ->capture_default_str();
  app.add_option("--timeout", o.timeout_s, "seconds without progress before an all-reduce fails")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--iterations", o.iterations, "timed all-reduces; best and median reported")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000000));
  auto* elements_option =
      app.add_option("--elements-per-packet", o.elements_per_packet,
                     "elements per packet (--local; otherwise the job's); fpga-sim: 256 and at "
                     "most that")
          ->capture_default_str();
  auto* window_option =
      app.add_option("--window", o.window,
                     "slots per worker (--local; otherwise the job's); fpga-sim: 16, at most 64")
          ->capture_default_str();
  app.add_option("--port-base", o.port_base,
                 "--local: switch at this UDP port, workers above it (default: free ports)");
  app.add_option("--switchd", o.switchd, "path of netagg-switchd (default: next to this build)");
  app.add_option("--fpgad", o.fpgad, "path of netagg-fpgad (default: next to this build)");
  app.add_option("--fpga-model", o.fpga_model,
                 "fpga-sim: the Verilated RTL (rtl) or the HLS C model (hls)")
      ->check(CLI::IsMember({"rtl", "hls"}))
      ->capture_default_str();
  app.add_flag("--json", o.json, "machine-readable result on stdout");
  app.add_flag("--verbose", o.verbose, "--local: show the daemon's output");
  // Test hooks, hidden from --help.
  app.add_option("--die-after-packets", o.die_after_packets)->group("");
  app.add_option("--kill-rank", o.kill_rank)->group("");
  app.add_option("--wrong-input-rank", o.wrong_input_rank)->group("");
  app.add_flag("--wrong-input", o.wrong_input)->group("");
  app.add_option("--kill-after-packets", o.kill_after_packets)->group("");
  CLI11_PARSE(app, argc, argv);

  try {
    check_target(o);
    apply_target_defaults(o, elements_option->count() > 0, window_option->count() > 0);
    if (o.local > 0) {
      if (o.rank >= 0 || !o.job_file.empty())
        usage_error("--local launches its own workers: leave out --rank and --job");
      if (o.transport == "dpdk")
        usage_error("--local runs its workers over kernel UDP on loopback; DPDK workers need a "
                    "port each: run them one by one (--rank, --job, --transport dpdk)");
      const int rc = run_local(o);
      return rc;
    }
    return run_worker(o);
  } catch (const Error& e) {
    std::fprintf(stderr, "netagg-allreduce: %s\n", e.what());
    return e.code() == Errc::kConfig || e.code() == Errc::kUnsupported ? kExitUsage : kExitFailed;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "netagg-allreduce: %s\n", e.what());
    return kExitFailed;
  }
}
