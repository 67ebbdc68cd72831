// netagg-switchd: serves the SwitchML switch model on UDP, so workers (netagg-allreduce, the
// end-to-end tests) can all-reduce through it on one machine. One socket, batched with
// recvmmsg/sendmmsg, one thread; signals arrive through a signalfd so no packet is lost to EINTR.
//
// stdout: "netagg-switchd: listening on IP:PORT" once ready (launchers wait for it), then the
// counters on SIGUSR1, every --stats-interval seconds and at exit. SIGHUP re-reads the job files
// and installs their jobs afresh (slots cleared), so a job can start again from packet 0 without
// a new daemon. Exit: 0 after SIGINT/SIGTERM, 2 on bad configuration, 1 if the socket fails while
// running.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "netagg/error.hpp"
#include "netagg/job.hpp"
#include "netagg/wire.hpp"
#include "switch_model.hpp"

namespace {

using netagg::Endpoint;
using netagg::Errc;
using netagg::Error;
namespace sim = netagg::sim;
namespace wire = netagg::wire;

constexpr int kExitConfig = 2;
constexpr int kExitRuntime = 1;
constexpr std::size_t kRecvBatch = 64;
constexpr std::size_t kSendBatch = 256;
// One byte more than the largest valid packet: a larger datagram arrives truncated and fails
// decoding as a length mismatch instead of passing as a shorter one.
constexpr std::size_t kRecvBufferSize = wire::kMaxPacketSize + 1;
constexpr int kSocketBufferBytes = 8 << 20;
constexpr std::size_t kBatchesPerPoll = 16;       // then look at signals again
constexpr std::size_t kMaxDrainAtExit = 1 << 20;  // datagrams processed after SIGTERM

struct Options {
  std::string listen = fmt::format("127.0.0.1:{}", wire::kUdpPort);
  std::vector<std::string> job_files;
  std::size_t slots = 1024;
  std::size_t max_elements = sim::kMaxLanes;
  double stats_interval = 0;
  bool quiet = false;
  std::string counters_json;
};

struct DaemonCounters {
  std::uint64_t datagrams_sent = 0;
  std::uint64_t send_errors = 0;
};

// Like Endpoint::parse, but port 0 (the kernel picks one) is allowed.
Endpoint parse_listen(const std::string& text) {
  const auto colon = text.rfind(':');
  if (colon == std::string::npos)
    throw Error(Errc::kConfig, fmt::format("--listen: '{}' is not \"a.b.c.d:port\"", text));
  in_addr a{};
  const std::string ip = text.substr(0, colon);
  if (inet_pton(AF_INET, ip.c_str(), &a) != 1)
    throw Error(Errc::kConfig, fmt::format("--listen: '{}' is not an IPv4 address", ip));
  unsigned port = 0;
  const char* first = text.data() + colon + 1;
  const char* last = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(first, last, port);
  if (first == last || ec != std::errc() || ptr != last || port > 0xFFFF)
    throw Error(Errc::kConfig,
                fmt::format("--listen: '{}' is not a port in 0..65535", std::string(first, last)));
  return Endpoint{ntohl(a.s_addr), static_cast<std::uint16_t>(port)};
}

sockaddr_in to_sockaddr(const Endpoint& e) {
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(e.ip);
  sa.sin_port = htons(e.port);
  return sa;
}

class BatchSender : public sim::PacketSink {
 public:
  BatchSender(int fd, DaemonCounters& counters)
      : fd_(fd), counters_(counters), buffers_(kSendBatch * wire::kMaxPacketSize) {
    for (std::size_t i = 0; i < kSendBatch; ++i) {
      iov_[i].iov_base = buffers_.data() + i * wire::kMaxPacketSize;
      msgs_[i].msg_hdr.msg_iov = &iov_[i];
      msgs_[i].msg_hdr.msg_iovlen = 1;
      msgs_[i].msg_hdr.msg_name = &addrs_[i];
      msgs_[i].msg_hdr.msg_namelen = sizeof(sockaddr_in);
    }
  }

  void send(const Endpoint& destination, std::span<const std::byte> packet) override {
    if (pending_ == kSendBatch) flush();
    std::memcpy(iov_[pending_].iov_base, packet.data(), packet.size());
    iov_[pending_].iov_len = packet.size();
    addrs_[pending_] = to_sockaddr(destination);
    ++pending_;
  }

  void flush() {
    std::size_t done = 0;
    while (done < pending_) {
      const int n = sendmmsg(fd_, msgs_ + done, static_cast<unsigned>(pending_ - done), 0);
      if (n < 0) {
        if (errno == EINTR) continue;
        // The first unsent datagram failed (e.g. unreachable destination): skip it, keep going.
        ++counters_.send_errors;
        ++done;
        continue;
      }
      done += static_cast<std::size_t>(n);
      counters_.datagrams_sent += static_cast<std::uint64_t>(n);
    }
    pending_ = 0;
  }

 private:
  int fd_;
  DaemonCounters& counters_;
  std::vector<std::byte> buffers_;
  iovec iov_[kSendBatch]{};
  sockaddr_in addrs_[kSendBatch]{};
  mmsghdr msgs_[kSendBatch]{};
  std::size_t pending_ = 0;
};

class Receiver {
 public:
  explicit Receiver(int fd) : fd_(fd), buffers_(kRecvBatch * kRecvBufferSize) {
    for (std::size_t i = 0; i < kRecvBatch; ++i) {
      iov_[i].iov_base = buffers_.data() + i * kRecvBufferSize;
      iov_[i].iov_len = kRecvBufferSize;
      msgs_[i].msg_hdr.msg_iov = &iov_[i];
      msgs_[i].msg_hdr.msg_iovlen = 1;
      msgs_[i].msg_hdr.msg_name = &addrs_[i];
    }
  }

  // Processes one batch of queued datagrams without waiting. Returns how many; 0 when the queue
  // is empty. Throws Error(kTransport) on socket failure.
  std::size_t process_batch(sim::SwitchModel& model, BatchSender& sender) {
    for (std::size_t i = 0; i < kRecvBatch; ++i) msgs_[i].msg_hdr.msg_namelen = sizeof(sockaddr_in);
    const int n = recvmmsg(fd_, msgs_, kRecvBatch, MSG_DONTWAIT, nullptr);
    if (n < 0) {
      // ECONNREFUSED: an ICMP error for an earlier send; it concerns no queued datagram.
      if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR || errno == ECONNREFUSED)
        return 0;
      throw Error(Errc::kTransport, fmt::format("recvmmsg: {}", std::strerror(errno)));
    }
    for (int i = 0; i < n; ++i) {
      const Endpoint source{ntohl(addrs_[i].sin_addr.s_addr), ntohs(addrs_[i].sin_port)};
      model.process(source, {buffers_.data() + i * kRecvBufferSize, msgs_[i].msg_len}, sender);
    }
    sender.flush();
    return static_cast<std::size_t>(n);
  }

 private:
  int fd_;
  std::vector<std::byte> buffers_;
  iovec iov_[kRecvBatch]{};
  sockaddr_in addrs_[kRecvBatch]{};
  mmsghdr msgs_[kRecvBatch]{};
};

std::vector<std::pair<std::string_view, std::uint64_t>> all_counters(const sim::SwitchModel& model,
                                                                     const DaemonCounters& daemon) {
  auto named = model.counters().named();
  named.emplace_back("datagrams_sent", daemon.datagrams_sent);
  named.emplace_back("send_errors", daemon.send_errors);
  return named;
}

void print_counters(const sim::SwitchModel& model, const DaemonCounters& daemon,
                    std::string_view when) {
  std::string text = fmt::format("netagg-switchd: counters ({}):\n", when);
  for (const auto& [name, value] : all_counters(model, daemon))
    text += fmt::format("  {:<34} {}\n", name, value);
  std::fputs(text.c_str(), stdout);
  std::fflush(stdout);
}

// Written to a temporary name and renamed, so a reader never sees half a file.
void write_counters_json(const std::string& file, const sim::SwitchModel& model,
                         const DaemonCounters& daemon) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [name, value] : all_counters(model, daemon)) j[std::string(name)] = value;
  const std::string tmp = file + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << j.dump(2) << '\n';
    if (!out) throw Error(Errc::kConfig, fmt::format("--counters-json: cannot write {}", tmp));
  }
  std::error_code ec;
  std::filesystem::rename(tmp, file, ec);
  if (ec)
    throw Error(Errc::kConfig,
                fmt::format("--counters-json: cannot write {}: {}", file, ec.message()));
}

std::string describe(const netagg::JobSpec& job) {
  return fmt::format("job {}: {} workers, slots [{}, {}), {} elements per packet", job.job_id,
                     job.workers.size(), job.slot_base, job.slot_base + job.slot_count,
                     job.elements_per_packet);
}

std::vector<netagg::JobSpec> load_job_files(const std::vector<std::string>& files) {
  std::vector<netagg::JobSpec> jobs;
  for (const auto& file : files)
    for (auto& job : netagg::load_jobs(file)) jobs.push_back(std::move(job));
  return jobs;
}

// SIGHUP: the job files as they are now become the job table, every job's slots cleared. All or
// nothing: if a file cannot be read or its jobs do not fit, the running jobs keep their state.
// The report goes to stdout (as the counters on SIGUSR1), one line per job, ending with a line
// "netagg-switchd: SIGHUP: done ..." or "netagg-switchd: SIGHUP: failed ...".
void reload_jobs(const Options& opt, sim::SwitchModel& model) {
  std::map<std::uint16_t, netagg::JobSpec> before;
  for (const std::uint16_t id : model.job_ids()) before.emplace(id, *model.find_job(id));
  std::vector<netagg::JobSpec> jobs;
  try {
    jobs = load_job_files(opt.job_files);
    model.replace_jobs(jobs);
  } catch (const std::exception& e) {
    const std::string line =
        fmt::format("netagg-switchd: SIGHUP: failed, jobs unchanged: {}\n", e.what());
    std::fputs(line.c_str(), stderr);
    std::fputs(line.c_str(), stdout);
    std::fflush(stdout);
    return;
  }
  std::string text;
  for (const auto& job : jobs) {
    const auto old = before.find(job.job_id);
    const char* what = old == before.end()                                    ? "new"
                       : netagg::to_json(old->second) == netagg::to_json(job) ? "re-installed"
                                                                              : "changed";
    text += fmt::format("netagg-switchd: SIGHUP: {} ({}, slots cleared)\n", describe(job), what);
    if (old != before.end()) before.erase(old);
  }
  for (const auto& [id, job] : before)
    text += fmt::format("netagg-switchd: SIGHUP: job {}: removed, slots [{}, {}) cleared\n", id,
                        job.slot_base, job.slot_base + job.slot_count);
  text += fmt::format("netagg-switchd: SIGHUP: done, {} jobs installed from {} files, {} removed\n",
                      jobs.size(), opt.job_files.size(), before.size());
  std::fputs(text.c_str(), stdout);
  std::fflush(stdout);
}

int open_socket(const Endpoint& listen, Endpoint& bound) {
  const int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) throw Error(Errc::kConfig, fmt::format("socket: {}", std::strerror(errno)));
  // Best effort: the kernel caps these at net.core.{r,w}mem_max.
  setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &kSocketBufferBytes, sizeof(kSocketBufferBytes));
  setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &kSocketBufferBytes, sizeof(kSocketBufferBytes));
  const sockaddr_in sa = to_sockaddr(listen);
  if (bind(fd, reinterpret_cast<const sockaddr*>(&sa), sizeof(sa)) != 0) {
    const int err = errno;
    close(fd);
    throw Error(Errc::kConfig,
                fmt::format("cannot listen on {}: {}", listen.to_string(), std::strerror(err)));
  }
  sockaddr_in actual{};
  socklen_t len = sizeof(actual);
  getsockname(fd, reinterpret_cast<sockaddr*>(&actual), &len);
  bound = Endpoint{ntohl(actual.sin_addr.s_addr), ntohs(actual.sin_port)};
  return fd;
}

int run(const Options& opt) {
  // Configuration first: every error here exits 2 before the "listening" line.
  sim::SwitchModel model(opt.slots, opt.max_elements);
  for (const auto& file : opt.job_files)
    for (const auto& job : netagg::load_jobs(file)) {
      try {
        model.add_job(job);
      } catch (const Error& e) {
        throw Error(Errc::kConfig, fmt::format("{}: {}", file, e.what()));
      }
      if (!opt.quiet) std::fprintf(stderr, "netagg-switchd: %s\n", describe(job).c_str());
    }
  DaemonCounters daemon;
  if (!opt.counters_json.empty()) write_counters_json(opt.counters_json, model, daemon);

  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGUSR1);
  sigaddset(&signals, SIGHUP);
  sigprocmask(SIG_BLOCK, &signals, nullptr);
  const int sigfd = signalfd(-1, &signals, SFD_CLOEXEC | SFD_NONBLOCK);
  if (sigfd < 0) throw Error(Errc::kConfig, fmt::format("signalfd: {}", std::strerror(errno)));

  Endpoint bound;
  const int fd = open_socket(parse_listen(opt.listen), bound);
  BatchSender sender(fd, daemon);
  Receiver receiver(fd);

  std::printf("netagg-switchd: listening on %s\n", bound.to_string().c_str());
  std::fflush(stdout);

  using Clock = std::chrono::steady_clock;
  const auto interval = std::chrono::duration_cast<Clock::duration>(
      std::chrono::duration<double>(opt.stats_interval));
  auto next_stats = Clock::now() + interval;

  int exit_code = 0;
  bool stop = false;
  try {
    while (!stop) {
      int timeout_ms = -1;
      if (opt.stats_interval > 0) {
        const auto left =
            std::chrono::duration_cast<std::chrono::milliseconds>(next_stats - Clock::now());
        timeout_ms = static_cast<int>(std::max<std::int64_t>(0, left.count()));
      }
      pollfd fds[2] = {{fd, POLLIN, 0}, {sigfd, POLLIN, 0}};
      if (poll(fds, 2, timeout_ms) < 0 && errno != EINTR)
        throw Error(Errc::kTransport, fmt::format("poll: {}", std::strerror(errno)));

      signalfd_siginfo info{};
      while (read(sigfd, &info, sizeof(info)) == static_cast<ssize_t>(sizeof(info))) {
        if (info.ssi_signo == SIGUSR1) {
          print_counters(model, daemon, "SIGUSR1");
          if (!opt.counters_json.empty()) write_counters_json(opt.counters_json, model, daemon);
        } else if (info.ssi_signo == SIGHUP) {
          reload_jobs(opt, model);
        } else {
          stop = true;
        }
      }
      if (stop) {
        // What was queued before the signal is counted.
        for (std::size_t drained = 0; drained < kMaxDrainAtExit;) {
          const std::size_t n = receiver.process_batch(model, sender);
          if (n == 0) break;
          drained += n;
        }
        break;
      }
      if (fds[0].revents & POLLIN)
        for (std::size_t b = 0; b < kBatchesPerPoll; ++b)
          if (receiver.process_batch(model, sender) < kRecvBatch) break;

      if (opt.stats_interval > 0 && Clock::now() >= next_stats) {
        print_counters(model, daemon, "periodic");
        next_stats += interval;
        if (next_stats < Clock::now()) next_stats = Clock::now() + interval;
      }
    }
  } catch (const Error& e) {
    std::fprintf(stderr, "netagg-switchd: %s\n", e.what());
    exit_code = kExitRuntime;
  }

  if (!opt.quiet) print_counters(model, daemon, "exit");
  if (!opt.counters_json.empty()) {
    try {
      write_counters_json(opt.counters_json, model, daemon);
    } catch (const Error& e) {
      std::fprintf(stderr, "netagg-switchd: %s\n", e.what());
      exit_code = kExitRuntime;
    }
  }
  close(fd);
  close(sigfd);
  return exit_code;
}

}  // namespace

int main(int argc, char** argv) {
  ::signal(SIGPIPE, SIG_IGN);  // a launcher that closed our stdout must not kill us
  Options opt;
  CLI::App app{"netagg-switchd: the SwitchML switch model served on UDP"};
  app.add_option("--listen", opt.listen, "UDP address to serve, IP:PORT (port 0: any free port)")
      ->capture_default_str();
  app.add_option("--job", opt.job_files, "job description file (docs/job-format.md); repeatable")
      ->required();
  app.add_option("--slots", opt.slots, "slots in the switch's pool (each with two sets)")
      ->capture_default_str();
  app.add_option("--max-elements", opt.max_elements,
                 "value lanes per slot: the largest elements_per_packet a job may use")
      ->capture_default_str();
  app.add_option("--stats-interval", opt.stats_interval, "print the counters every S seconds")
      ->check(CLI::Range(0.0, 86400.0));
  app.add_flag("--quiet", opt.quiet, "print neither the job summary nor the counters at exit");
  app.add_option("--counters-json", opt.counters_json,
                 "write the counters as JSON to FILE at start, on SIGUSR1 and at exit");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? 0 : kExitConfig;
  }
  try {
    return run(opt);
  } catch (const Error& e) {
    std::fprintf(stderr, "netagg-switchd: %s\n", e.what());
    return kExitConfig;
  }
}
