// SPDX-License-Identifier: Apache-2.0
// netagg-fpgad: serves the FPGA aggregator's simulation on UDP (the Verilated RTL by default, the
// HLS C model, or the RTL on the card's SystemC virtual platform where the build has it), so
// workers (netagg-allreduce --target fpga-sim, the end-to-end tests) all-reduce through the RTL
// on one machine.
//
// Each datagram (a netagg packet) becomes a whole Ethernet/IPv4/UDP frame (wire::encode_frame)
// on the ingress port of its worker (the job's switch_port, else rank mod NUM_PORTS; a source
// that is no job's worker goes to port 0, where the device drops it as foreign), or, for a
// datagram from a job's parent (trees), on the job's port towards the parent. A received batch
// is pushed whole, then the model runs until idle in slices of kCyclesPerSlice cycles; after each
// slice every egress frame's netagg packet goes out as a datagram to the address in its IPv4/UDP
// header (a worker's, or the parent's for a child's sums), and the datagrams that arrived
// meanwhile are pushed as well.
//
// Trees: a job file whose job has trees becomes this aggregator's part of each tree it is in
// (netagg::jobs_at_aggregator), found by --as NAME, else by the --listen address; a part with a
// parent is programmed with it (JOB_PARENT_*), so the device sends its completed rounds' sums
// up and takes the parent's results. Jobs are programmed and counters read
// through the CSRs (driver/fpga), as on a card.
//
// --control IP:PORT opens the CSR control channel (driver/fpga/include/netagg/fpga/
// csr_channel.hpp): read32/write32 requests on a second UDP socket, served between batches, so
// netagg-ctl (`fpga --sim IP:PORT`) programs, reads and resets the running model through the same
// Device interface as a card. Workers a job added that way enter the port their WORKER_UDP_PORT
// names: the daemon follows the worker commits on the channel, as a switch's L2 table would.
//
// stdout: "netagg-fpgad: control on IP:PORT" (with --control), then "netagg-fpgad: listening on
// IP:PORT" once ready (launchers wait for it), then the counters on SIGUSR1, every
// --stats-interval seconds and at exit. Exit: 0 after SIGINT/SIGTERM,
// 2 on bad configuration, 1 if the socket or the model fails while running.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

#include <cstdio>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include "daemon_main.hpp"
#include "datagram_server.hpp"
#include "harness.hpp"
#include "netagg/error.hpp"
#include "netagg/fpga/control.hpp"
#include "netagg/fpga/csr_channel.hpp"
#include "netagg/fpga_csr.hpp"
#include "netagg/job.hpp"
#include "netagg/wire.hpp"
#ifdef NETAGG_HAVE_VP
#include "vp_model.hpp"  // sim/vp: --model vp
#endif

namespace {

using netagg::Endpoint;
using netagg::Errc;
using netagg::Error;
namespace fpga = netagg::fpga;
namespace channel = netagg::fpga::channel;
namespace sim = netagg::sim;
namespace wire = netagg::wire;

using sim::kExitConfig;
using sim::kExitRuntime;
// A batch that keeps the model busy this long is a hung model, not traffic: a full batch (64
// frames of 17 beats, their results) takes a few thousand cycles; the RTL simulates about
// 2.5 * 10^5 cycles a second.
constexpr std::uint64_t kMaxCyclesPerBatch = 2'000'000;
// Egress is sent, and the datagrams that arrived are pushed, after every slice. Short slices keep
// the workers' ports fed: a result reaches its worker, and the worker's next contribution the
// model, within a slice or two (`make demo`'s tensor: about 300 000 model cycles with slices of
// 64, 500 000 with 256, 730 000 with 1024; docs/performance.md, "The simulator's speed").
constexpr std::uint64_t kCyclesPerSlice = 64;
// How long one batch's processing takes in the datagrams that arrive while the model runs.
constexpr std::chrono::milliseconds kFeedTime{50};

struct Options {
  std::string listen = fmt::format("127.0.0.1:{}", wire::kUdpPort);
  std::vector<std::string> job_files;
  std::string model = "rtl";
  std::optional<double> vp_clock_mhz;  // --model vp: the kernel clock; unset: the platform's
  std::string trace;
  std::string counters_json;
  std::string control;            // CSR control channel address; empty: none
  std::string as;                 // this aggregator's name in the jobs' trees; empty: by address
  std::uint64_t idle_cycles = 0;  // 0: the model's default
  double stats_interval = 0;
  bool quiet = false;
  bool no_udp_offload = false;
  std::uint64_t die_at_datagram = 0;  // fault injection: SIGKILL at this datagram; 0: never
};

// What the daemon itself counts; the device's counters come from its CSRs.
struct DaemonCounters {
  std::uint64_t datagrams_in = 0;
  std::uint64_t egress_frames = 0;
  std::uint64_t egress_undecodable = 0;  // egress frames that are no valid netagg frame
  // The CSR control channel.
  std::uint64_t control_requests = 0;       // well-formed requests served (status ok)
  std::uint64_t control_malformed = 0;      // answered with status malformed
  std::uint64_t control_bad_address = 0;    // answered with status bad address
  std::uint64_t control_device_errors = 0;  // the model did not complete the access
  std::uint64_t control_ignored = 0;        // datagrams without the magic: not answered
};

struct Route {
  unsigned port = 0;
  wire::Mac mac{};
};

std::uint64_t endpoint_key(const Endpoint& e) { return (std::uint64_t(e.ip) << 16) | e.port; }

std::string describe(const netagg::JobSpec& job, unsigned num_ports) {
  std::string ports;
  for (const auto& w : job.workers)
    ports += fmt::format("{}{}", ports.empty() ? "" : " ", fpga::worker_port(w, num_ports));
  std::string text =
      fmt::format("job {}: {} workers, slots [{}, {}), {} elements per packet, ports by rank {}",
                  job.job_id, job.workers.size(), job.slot_base, job.slot_base + job.slot_count,
                  job.elements_per_packet, ports);
  if (job.covered() != job.workers.size())
    text += fmt::format(" (members covering {} workers)", job.covered());
  if (job.parent)
    text += fmt::format(", child of {} as rank {} of job {} (its slots from {}, port {})",
                        job.parent->address.to_string(), job.parent->rank, job.parent->job_id,
                        job.parent->slot_base, fpga::parent_port(*job.parent));
  return text;
}

// The jobs of the --job files as this aggregator holds them: a job with trees becomes this
// aggregator's part of each tree it is in (found by --as, else by the listen address).
std::vector<netagg::JobSpec> load_job_files(const Options& opt) {
  std::vector<netagg::JobSpec> jobs;
  const Endpoint listen = sim::parse_listen_address(opt.listen);
  for (const auto& file : opt.job_files)
    for (auto& part : netagg::load_aggregator_jobs(file, opt.as, listen))
      jobs.push_back(std::move(part));
  return jobs;
}

class Daemon {
 public:
  Daemon(const Options& opt, std::unique_ptr<sim::FpgaModel> model)
      : opt_(opt), model_(std::move(model)) {
    quiet_cycles_ = opt.idle_cycles ? opt.idle_cycles : model_->default_quiet_cycles();
  }

  // Configuration: everything that can be wrong about the jobs is found here (exit 2).
  void load_jobs() {
    jobs_ = load_job_files(opt_);
    info_ = fpga::read_device_info(*model_);
    fpga::check_jobs(info_, jobs_);
    for (const auto& job : jobs_) {
      for (const auto& w : job.workers)
        routes_[endpoint_key(w.address)] = {fpga::worker_port(w, info_.num_ports),
                                            fpga::worker_mac(w)};
      // The parent's results enter on the port towards it.
      if (job.parent)
        routes_[endpoint_key(job.parent->address)] = {fpga::parent_port(*job.parent),
                                                      fpga::parent_mac(*job.parent)};
    }
  }

  // Programs the device once the UDP port is known (results come from it).
  void program(const Endpoint& bound) {
    aggregator_.udp_port = bound.port;
    aggregator_.ip = bound.ip;
    if (aggregator_.ip == 0) {
      // Listening on every address: results say they come from the first job's aggregator
      // address if a job file names one, else loopback.
      aggregator_.ip = 0x7F000001;
      for (const auto& job : jobs_)
        if (job.aggregator) {
          aggregator_.ip = job.aggregator->ip;
          break;
        }
      reply_from_ = aggregator_.ip;
    }
    fpga::set_aggregator_address(*model_, aggregator_);
    for (std::size_t i = 0; i < jobs_.size(); ++i) {
      fpga::program_job(*model_, jobs_[i], static_cast<unsigned>(i), aggregator_);
      if (!opt_.quiet)
        std::fprintf(stderr, "netagg-fpgad: %s\n", describe(jobs_[i], info_.num_ports).c_str());
    }
    if (!opt_.quiet)
      std::fprintf(stderr,
                   "netagg-fpgad: %s model, %u ports, %u slots, %u jobs, %u elements per packet "
                   "(32-bit)\n",
                   model_->name().c_str(), info_.num_ports, info_.slots, info_.max_jobs,
                   info_.max_elements());
  }

  // A received batch: each datagram becomes a frame on its port, then the model runs in slices
  // until idle, and what each slice completed is sent at once: results leave as the device makes
  // them, not in one burst per batch (a burst a batch long looks like a lost packet to the
  // workers' retransmission timers). Between slices, datagrams that arrived meanwhile join the
  // traffic, so the pipelines stay full instead of draining at every batch (for kFeedTime at
  // most, then the daemon's loop gets its turn: signals, the control channel). Idle stretches
  // cost the RTL nothing (its idle fast path), so running on while they come does not take CPU
  // time from the workers.
  void process(std::span<const sim::Datagram> batch, sim::DatagramServer& server) {
    push(batch);
    const auto feed_until = std::chrono::steady_clock::now() + kFeedTime;
    std::uint64_t start = model_->cycles();
    for (;;) {
      const bool idle = model_->run_until_idle(quiet_cycles_, kCyclesPerSlice);
      send_egress(server);
      server.flush();
      if (std::chrono::steady_clock::now() < feed_until &&
          server.receive_batch([&](std::span<const sim::Datagram> more) { push(more); }) > 0) {
        start = model_->cycles();  // new traffic: the hang guard starts again
        continue;
      }
      if (idle) break;
      if (model_->cycles() - start >= kMaxCyclesPerBatch)
        throw Error(Errc::kTransport, fmt::format("the {} model did not go idle within {} cycles",
                                                  model_->name(), kMaxCyclesPerBatch));
    }
  }

  // Each datagram as a frame on its ingress port.
  void push(std::span<const sim::Datagram> batch) {
    for (const sim::Datagram& d : batch) {
      ++counters_.datagrams_in;
      const auto r = routes_.find(endpoint_key(d.source));
      const Route route = r != routes_.end()
                              ? r->second
                              : Route{0, fpga::worker_mac(netagg::WorkerSpec{
                                             0, d.source, std::nullopt, std::nullopt})};
      wire::FrameAddress a;
      a.src_mac = route.mac;
      a.dst_mac = aggregator_.mac;
      a.src_ip = d.source.ip;
      a.src_port = d.source.port;
      a.dst_ip = d.destination.ip;
      a.dst_port = d.destination.port;
      a.ecn = d.ecn;  // the device ORs a round's marks into its results
      const std::size_t n = wire::encode_frame(a, d.bytes, frame_);
      if (n == 0)  // cannot happen: the buffer holds the largest datagram the server takes
        throw Error(Errc::kTransport, "a datagram does not fit a frame");
      model_->push_frame(route.port, {frame_.data(), n});
    }
  }

  // Sends the netagg packet of every egress frame the model completed so far.
  void send_egress(sim::DatagramServer& server) {
    for (const sim::EgressFrame& f : model_->pop_egress()) {
      ++counters_.egress_frames;
      const wire::DecodedFrame d = wire::decode_frame(f.bytes, /*udp_port=*/0);
      if (!d) {
        if (counters_.egress_undecodable++ == 0)
          std::fprintf(stderr,
                       "netagg-fpgad: an egress frame on port %u is not a netagg frame "
                       "(%s); such frames are counted, not sent\n",
                       f.port, std::string(wire::to_string(d.error)).c_str());
        continue;
      }
      const std::span<const std::byte> packet(f.bytes.data() + wire::kFrameOverhead,
                                              d.packet.header.packet_size());
      server.send(Endpoint{d.address.dst_ip, d.address.dst_port}, packet, reply_from_,
                  d.address.ecn);
    }
  }

  // One request of the CSR control channel: the access on the model's AXI4-Lite port, or why
  // not. The clock runs during an access, so frames may complete: the caller sends them.
  channel::Message serve_csr(const channel::Message& request) {
    channel::Message response = request;
    response.value = 0;
    if (request.status != channel::CsrStatus::kOk) {
      ++counters_.control_malformed;
      return response;
    }
    if (request.address % 4 != 0 || request.address >= (1u << fpga::csr::kAddrBits)) {
      ++counters_.control_bad_address;
      response.status = channel::CsrStatus::kBadAddress;
      return response;
    }
    try {
      if (request.op == channel::Op::kRead32) {
        response.value = model_->read32(request.address);
      } else {
        model_->write32(request.address, request.value);
        observe_write(request.address, request.value);
      }
      ++counters_.control_requests;
    } catch (const Error& e) {
      ++counters_.control_device_errors;
      response.status = channel::CsrStatus::kDeviceError;
      std::fprintf(stderr, "netagg-fpgad: control channel: %s\n", e.what());
    }
    return response;
  }

  void count_ignored_control() { ++counters_.control_ignored; }

  // One snapshot: reading the device's counters takes (simulated) cycles, so the text and the
  // JSON of one moment are made from the same reading (sim::CounterReport takes one per report).
  sim::CounterList counters(const sim::ServerCounters& server) {
    sim::CounterList all;
    for (const auto& c : fpga::read_counters(*model_))
      all.emplace_back(std::string(c.name), c.value);
    all.emplace_back("datagrams_in", counters_.datagrams_in);
    all.emplace_back("egress_frames", counters_.egress_frames);
    all.emplace_back("egress_undecodable", counters_.egress_undecodable);
    if (!opt_.control.empty()) {
      all.emplace_back("control_requests", counters_.control_requests);
      all.emplace_back("control_malformed", counters_.control_malformed);
      all.emplace_back("control_bad_address", counters_.control_bad_address);
      all.emplace_back("control_device_errors", counters_.control_device_errors);
      all.emplace_back("control_ignored", counters_.control_ignored);
    }
    all.emplace_back("egress_protocol_errors", model_->egress_protocol_errors());
    all.emplace_back("model_cycles", model_->cycles());
    all.emplace_back("model_cycles_skipped", model_->cycles_skipped());
    all.emplace_back("datagrams_sent", server.datagrams_sent);
    all.emplace_back("send_errors", server.send_errors);
    return all;
  }

 private:
  // Worker commits through the control channel: the staged WORKER_* registers become the route
  // of the worker's address (its ingress port and MAC), as for the --job workers.
  void observe_write(std::uint32_t address, std::uint32_t value) {
    namespace reg = fpga::csr;
    switch (address) {
      case reg::kWorkerIp:
        staged_.ip = value;
        break;
      case reg::kWorkerUdpPort:
        staged_.udp_port = value;
        break;
      case reg::kWorkerMacLo:
        staged_.mac_lo = value;
        break;
      case reg::kWorkerMacHi:
        staged_.mac_hi = value;
        break;
      case reg::kJobParentId:
        staged_parent_.id = value;
        break;
      case reg::kJobParentIp:
        staged_parent_.ip = value;
        break;
      case reg::kJobParentUdpPort:
        staged_parent_.udp_port = value;
        break;
      case reg::kJobParentMacLo:
        staged_parent_.mac_lo = value;
        break;
      case reg::kJobParentMacHi:
        staged_parent_.mac_hi = value;
        break;
      case reg::kCommit:
        if ((value & 3) == 1 && (value >> 16) != last_commit_sequence_ &&
            (staged_parent_.id & reg::kJobParentValid) != 0)
          add_route(staged_parent_);
        if ((value & 3) == 2 && (value >> 16) != last_commit_sequence_) {
          add_route(staged_);
        }
        last_commit_sequence_ = value >> 16;
        break;
      default:
        break;
    }
  }

  // The staged registers of a worker (WORKER_*) or a parent (JOB_PARENT_*): `id` only for a
  // parent.
  struct StagedWorker {
    std::uint32_t ip = 0, udp_port = 0, mac_lo = 0, mac_hi = 0, id = 0;
  };

  // The staged address becomes a route: its port bits 19:16 (0 if the device has no such port)
  // and its MAC.
  void add_route(const StagedWorker& s) {
    const unsigned port = (s.udp_port >> 16) & 0xF;
    const wire::Mac mac{std::uint8_t(s.mac_hi >> 8),  std::uint8_t(s.mac_hi),
                        std::uint8_t(s.mac_lo >> 24), std::uint8_t(s.mac_lo >> 16),
                        std::uint8_t(s.mac_lo >> 8),  std::uint8_t(s.mac_lo)};
    routes_[endpoint_key(Endpoint{s.ip, std::uint16_t(s.udp_port)})] = {
        port < model_->num_ports() ? port : 0, mac};
  }

  const Options& opt_;
  std::unique_ptr<sim::FpgaModel> model_;
  std::uint64_t quiet_cycles_ = 0;
  std::vector<netagg::JobSpec> jobs_;
  fpga::DeviceInfo info_;
  fpga::AggregatorAddress aggregator_;
  std::uint32_t reply_from_ = 0;  // the local address replies leave from (0: the kernel's choice)
  std::map<std::uint64_t, Route> routes_;
  DaemonCounters counters_;
  StagedWorker staged_, staged_parent_;
  std::uint32_t last_commit_sequence_ = 0x10000;  // none yet
  std::array<std::byte, wire::kFrameOverhead + sim::DatagramServer::kRecvBufferSize> frame_{};
};

// The CSR control channel's socket: non-blocking, served from the daemon's poll loop.
class ControlSocket {
 public:
  // Requests served per wake-up at most, so traffic is not starved by a flood on the channel.
  static constexpr int kMaxPerWakeup = 256;

  explicit ControlSocket(const std::string& address) {
    const Endpoint at = sim::parse_listen_address(address);
    fd_ = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd_ < 0)
      throw Error(Errc::kConfig, fmt::format("--control: socket: {}", std::strerror(errno)));
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(at.ip);
    sa.sin_port = htons(at.port);
    if (::bind(fd_, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)) != 0) {
      const int e = errno;
      ::close(fd_);
      throw Error(Errc::kConfig, fmt::format("--control: cannot listen on {}: {}", at.to_string(),
                                             std::strerror(e)));
    }
    socklen_t len = sizeof(sa);
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&sa), &len);
    bound_ = Endpoint{ntohl(sa.sin_addr.s_addr), ntohs(sa.sin_port)};
  }
  ~ControlSocket() { ::close(fd_); }
  ControlSocket(const ControlSocket&) = delete;
  ControlSocket& operator=(const ControlSocket&) = delete;

  int fd() const { return fd_; }
  const Endpoint& address() const { return bound_; }

  void serve(Daemon& daemon, sim::DatagramServer& server) {
    for (int i = 0; i < kMaxPerWakeup; ++i) {
      std::array<std::byte, 512> in{};
      sockaddr_in from{};
      socklen_t from_len = sizeof(from);
      const ssize_t n =
          ::recvfrom(fd_, in.data(), in.size(), 0, reinterpret_cast<sockaddr*>(&from), &from_len);
      if (n < 0) {
        if (errno == EINTR) continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) break;
        throw Error(Errc::kTransport, fmt::format("control channel: {}", std::strerror(errno)));
      }
      const auto request = channel::decode_request({in.data(), static_cast<std::size_t>(n)});
      if (!request) {
        daemon.count_ignored_control();
        continue;
      }
      const channel::Bytes out = channel::encode_response(daemon.serve_csr(*request));
      // A client gone away is its problem, not the daemon's: the answer is dropped.
      ::sendto(fd_, out.data(), out.size(), 0, reinterpret_cast<sockaddr*>(&from), from_len);
    }
    daemon.send_egress(server);
    server.flush();
  }

 private:
  int fd_ = -1;
  Endpoint bound_;
};

// The model --model names: rtl and hls from sim/fpga, vp (the virtual platform) from sim/vp.
std::unique_ptr<sim::FpgaModel> make_model(const Options& opt) {
  if (opt.model != "vp") {
    if (opt.vp_clock_mhz) throw Error(Errc::kConfig, "--vp-clock-mhz: only with --model vp");
    return sim::make_fpga_model(opt.model, opt.trace);
  }
  if (!opt.trace.empty())
    throw Error(Errc::kConfig, "--trace: the virtual platform has no waveform; use --model rtl");
#ifdef NETAGG_HAVE_VP
  netagg::vp::VpModelOptions vp;
  if (opt.vp_clock_mhz) vp.kernel_mhz = *opt.vp_clock_mhz;
  return netagg::vp::make_vp_model(vp);
#else
  throw Error(Errc::kUnsupported,
              "--model vp: this build has no virtual platform: it was configured without "
              "SystemC (NETAGG_VP; Debian: libsystemc-dev)");
#endif
}

int run(const Options& opt) {
  if (opt.job_files.empty() && opt.control.empty()) {
    // Without a job and without a way to add one the daemon could only drop traffic.
    std::fputs(
        "netagg-fpgad: --job is required (or --control, to fill the job table with "
        "netagg-ctl fpga --sim)\n",
        stderr);
    return kExitConfig;
  }
  // Configuration first: every error here exits 2 before the "listening" line.
  Daemon daemon(opt, make_model(opt));
  daemon.load_jobs();
  sim::ServerOptions server_options;
  server_options.offload = !opt.no_udp_offload;
  server_options.die_at_datagram = opt.die_at_datagram;
  const Endpoint listen = sim::parse_listen_address(opt.listen);
  sim::DatagramServer server(listen, server_options);
  sim::check_job_aggregators(opt.job_files, listen, server.address());
  std::unique_ptr<ControlSocket> control;
  if (!opt.control.empty()) control = std::make_unique<ControlSocket>(opt.control);
  daemon.program(server.address());
  const sim::CounterReport report("netagg-fpgad", opt.counters_json,
                                  [&] { return daemon.counters(server.counters()); });
  report.report("start", /*print=*/false);
  if (control) {
    std::printf("netagg-fpgad: control on %s\n", control->address().to_string().c_str());
    std::fflush(stdout);
  }
  server.announce("netagg-fpgad");

  sim::DatagramServer::Hooks hooks;
  hooks.on_batch = [&](std::span<const sim::Datagram> batch) { daemon.process(batch, server); };
  report.add_hooks(hooks, opt.stats_interval, [] {
    std::fputs("netagg-fpgad: SIGHUP: ignored (restart the daemon to change its jobs)\n", stdout);
    std::fflush(stdout);
  });
  if (control) hooks.watches.push_back({control->fd(), [&] { control->serve(daemon, server); }});

  int exit_code = 0;
  try {
    server.serve(hooks);
  } catch (const Error& e) {
    std::fprintf(stderr, "netagg-fpgad: %s\n", e.what());
    exit_code = kExitRuntime;
  }
  if (report.report_at_exit(/*print=*/!opt.quiet) != 0) exit_code = kExitRuntime;
  return exit_code;
}

}  // namespace

int main(int argc, char** argv) {
  // Before the Verilator runtime starts its threads: they inherit the mask.
  sim::block_daemon_signals();
  Options opt;
  CLI::App app{
      "netagg-fpgad: the FPGA aggregator's simulation (Verilated RTL or HLS C model) "
      "served on UDP"};
  app.add_option("--listen", opt.listen, "UDP address to serve, IP:PORT (port 0: any free port)")
      ->capture_default_str();
  app.add_option("--job", opt.job_files,
                 "job description file (docs/job-format.md); repeatable. Required unless "
                 "--control is given (then the table may start empty: netagg-ctl fpga --sim)");
  app.add_option("--as", opt.as,
                 "this aggregator's name in the jobs' trees (default: the one whose address is "
                 "--listen)");
  app.add_option("--control", opt.control,
                 "serve the CSR control channel on UDP IP:PORT (port 0: any free port; bind it to "
                 "loopback: it has no authentication)");
  app.add_option("--model", opt.model,
                 "rtl (the Verilated SystemVerilog), hls (the C model) or vp (the RTL on the "
                 "SystemC virtual platform of the card: MACs, clock crossings, CSRs over TLM)")
      ->check(CLI::IsMember({"rtl", "hls", "vp"}))
      ->capture_default_str();
  app.add_option("--vp-clock-mhz", opt.vp_clock_mhz,
                 "--model vp: the kernel clock (ap_clk) in MHz (default 250)")
      ->check(CLI::Range(1.0, 1000.0));
  app.add_option("--trace", opt.trace, "write an FST waveform of the RTL to FILE (slow, large)");
  app.add_option("--counters-json", opt.counters_json,
                 "write the counters as JSON to FILE at start, on SIGUSR1 and at exit");
  app.add_option("--idle-cycles", opt.idle_cycles,
                 "cycles without egress activity after which a batch is done (default: the "
                 "model's)");
  app.add_option("--stats-interval", opt.stats_interval, "print the counters every S seconds")
      ->check(CLI::Range(0.0, 86400.0));
  app.add_option("--die-at-datagram", opt.die_at_datagram,
                 "fault injection for tests: kill this process with SIGKILL (as kill -9 would) "
                 "when its N-th datagram arrives, before serving it")
      ->check(CLI::PositiveNumber);
  app.add_flag("--quiet", opt.quiet, "print neither the job summary nor the counters at exit");
  app.add_flag("--no-udp-offload", opt.no_udp_offload,
               "send and receive one datagram per system call's message (no UDP GSO/GRO)");
  return sim::daemon_main(
      "netagg-fpgad", app, argc, argv, [&] { return run(opt); },
      [](const Error& e) {
        return e.code() == Errc::kConfig || e.code() == Errc::kUnsupported ? kExitConfig
                                                                           : kExitRuntime;
      });
}
