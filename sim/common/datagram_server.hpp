// SPDX-License-Identifier: Apache-2.0
// The UDP side of the aggregator daemons (netagg-switchd, netagg-fpgad): one socket, batched
// with recvmmsg/sendmmsg, one thread, and the signals that steer a daemon (SIGINT/SIGTERM stop
// it, SIGUSR1/SIGHUP are handed to it) read from a signalfd, so no datagram is lost to EINTR.
//
// A daemon constructs the server after its configuration checks (errors there exit 2 before any
// "listening" line), prints the line with announce(), then calls serve(). Each received batch
// goes to the daemon whole, so a daemon that runs a model per batch (netagg-fpgad) can first take
// every datagram and then run; whatever it send()s during a batch leaves in sendmmsg batches
// when the handler returns.
//
// With offload (the default) the socket takes UDP GRO-coalesced datagrams (split here, so a
// handler sees single datagrams), and a flush sends each destination's queued datagrams as UDP
// GSO messages (one pass through the kernel for up to 64). Datagrams to one destination keep
// their order; those to different destinations may leave in another order than queued.
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "netagg/config.hpp"
#include "netagg/job.hpp"
#include "netagg/wire.hpp"

namespace netagg::sim {

class FrameIo;

// "a.b.c.d:port" like Endpoint::parse, but port 0 (the kernel picks one) and address 0.0.0.0
// (every local address) are allowed. Throws Error(kConfig) with a message starting "--listen: ".
Endpoint parse_listen_address(std::string_view text);

// Blocks SIGINT, SIGTERM, SIGUSR1 and SIGHUP in the calling thread, so that they wait for the
// server's signalfd. DatagramServer's constructor does this; a daemon whose libraries start
// threads (the Verilator runtime does) must call it first, before any thread exists, because
// threads inherit the mask and a process-directed signal goes to any thread not blocking it.
void block_daemon_signals();

struct Datagram {
  Endpoint source;       // the sender
  Endpoint destination;  // the local address it was sent to (from IP_PKTINFO)
  std::span<const std::byte> bytes;
  std::uint8_t ecn = 0;  // the IPv4 ECN bits it arrived with (IP_RECVTOS)
};

// Written by the server's thread; atomic so that another thread (a daemon's reporter, serving
// from several threads) reads them safely.
struct ServerCounters {
  std::atomic<std::uint64_t> datagrams_sent{0};
  std::atomic<std::uint64_t> send_errors{0};   // datagrams sendmmsg refused (e.g. unreachable)
  std::atomic<std::uint64_t> gso_messages{0};  // messages that carried more than one datagram

  ServerCounters() = default;
  ServerCounters(const ServerCounters& o)
      : datagrams_sent(o.datagrams_sent.load()),
        send_errors(o.send_errors.load()),
        gso_messages(o.gso_messages.load()) {}
  ServerCounters& operator=(const ServerCounters&) = delete;
  ServerCounters& operator+=(const ServerCounters& o) {
    datagrams_sent += o.datagrams_sent.load();
    send_errors += o.send_errors.load();
    gso_messages += o.gso_messages.load();
    return *this;
  }
};

struct ServerOptions {
  bool offload = true;  // UDP GSO on send, GRO on receive
  // SO_REUSEPORT: several servers (one per thread) share the address; the kernel spreads the
  // datagrams over them (by the sender's address, or by slot after steer_by_slot()). A run of
  // datagrams that arrives as one (a sender's UDP GSO message on loopback, or GRO) is steered
  // whole, by its first datagram.
  bool reuse_port = false;
  // Read the daemon signals from a signalfd in serve(). One server per process does; the others
  // stop through request_stop().
  bool signals = true;
  // Fault injection (tests): when the datagram of this number (1-based, counted by this server)
  // arrives, the ones before it in its batch are served and the process kills itself with
  // SIGKILL, as `kill -9` would at that moment: every round it held is lost. 0: never.
  std::uint64_t die_at_datagram = 0;
  // Serve on this DPDK port instead of a UDP socket (frame_io.hpp): the listen address must name
  // the IPv4 address and port; no offload, no reuse_port. The loop polls the port, spinning 20 µs
  // after the last frame and then napping 20 µs at a time.
  std::optional<DpdkConfig> dpdk;
};

class DatagramServer {
  static ServerOptions options_with_offload(bool offload) {
    ServerOptions o;
    o.offload = offload;
    return o;
  }

 public:
  static constexpr std::size_t kRecvBatch = 64;
  static constexpr std::size_t kSendBatch = 256;
  // Room for one byte more than the largest valid netagg packet: a larger datagram arrives cut to
  // this size and fails decoding as a length mismatch instead of passing as a shorter one.
  static constexpr std::size_t kRecvBufferSize = wire::kMaxPacketSize + 1;
  static constexpr std::size_t kGroBufferSize = 65536;  // a GRO-coalesced datagram
  static constexpr std::size_t kMaxSendSize = wire::kMaxPacketSize;

  using BatchHandler = std::function<void(std::span<const Datagram>)>;

  struct Hooks {
    BatchHandler on_batch;                      // every received batch, whole
    std::function<void(int signal)> on_signal;  // SIGUSR1 and SIGHUP
    std::function<void()> on_tick;              // every tick_seconds, if > 0
    double tick_seconds = 0;
    // Further descriptors serve() polls (netagg-fpgad's CSR control socket): on_readable runs
    // when its descriptor is readable, between batches.
    struct Watch {
      int fd = -1;
      std::function<void()> on_readable;
    };
    std::vector<Watch> watches;
  };

  // Blocks the daemon signals (block_daemon_signals: they are read from a signalfd from now on,
  // so a launcher that signals right after the "listening" line is served), then binds the
  // socket.
  // Throws Error(kConfig) naming the problem, e.g. "cannot listen on 127.0.0.1:20033: ...".
  explicit DatagramServer(const Endpoint& listen, bool offload = true)
      : DatagramServer(listen, options_with_offload(offload)) {}
  DatagramServer(const Endpoint& listen, const ServerOptions& options);
  ~DatagramServer();
  DatagramServer(const DatagramServer&) = delete;
  DatagramServer& operator=(const DatagramServer&) = delete;

  const Endpoint& address() const { return bound_; }  // the bound address (the real port)

  // Prints "<daemon>: listening on IP:PORT" on stdout and flushes: launchers wait for it.
  void announce(std::string_view daemon) const;

  // Queues a datagram (at most kMaxSendSize bytes); a full queue is sent at once. source_ip != 0
  // chooses the local address it leaves from (for a server listening on 0.0.0.0); 0 lets the
  // kernel choose.
  // `ecn`: the IPv4 ECN bits it leaves with (IP_TOS).
  void send(const Endpoint& to, std::span<const std::byte> bytes, std::uint32_t source_ip = 0,
            std::uint8_t ecn = 0);
  void flush();
  const ServerCounters& counters() const { return counters_; }

  // One batch of what is queued on the socket, without waiting: the handler gets it whole, then
  // the queued sends are flushed. Returns the number of datagrams; 0 when nothing was queued.
  // Throws Error(kTransport) if the socket fails.
  std::size_t receive_batch(const BatchHandler& handler);

  // Serves until SIGINT or SIGTERM (or request_stop()); then processes what was queued on the
  // socket before it and returns. Throws Error(kTransport) if the socket fails (or what a hook
  // throws).
  void serve(const Hooks& hooks);

  // Makes serve() return as after SIGTERM; callable from any thread.
  void request_stop();

  // For the servers of a reuse_port group, bound in order 0..groups-1: a classic BPF program
  // on the group sends each datagram to server (slot mod groups), the slot read from the netagg
  // header; a datagram too short to hold one goes to server 0. Throws Error(kConfig) if the
  // kernel refuses the program.
  void steer_by_slot(unsigned groups);

 private:
  int fd_ = -1;
  int signal_fd_ = -1;  // -1 without options.signals
  int stop_fd_ = -1;    // an eventfd: request_stop()
  Endpoint bound_;
  std::uint64_t die_at_ = 0;    // ServerOptions::die_at_datagram
  std::uint64_t received_ = 0;  // datagrams handed to the batch handler
  ServerCounters counters_;

  std::vector<std::byte> recv_buffers_;
  std::vector<iovec> recv_iov_;
  std::vector<sockaddr_in> recv_addrs_;
  std::vector<mmsghdr> recv_msgs_;
  std::vector<std::byte> recv_control_;
  std::vector<Datagram> batch_;

  std::size_t build_messages(std::size_t from);
  // Reads the stop request and the daemon signals (on_signal for SIGUSR1/SIGHUP); true to stop.
  bool take_stop_and_signals(const Hooks& hooks);
  void handle(const BatchHandler& handler);
  void serve_frames(const Hooks& hooks);  // serve() on a DPDK port

  std::unique_ptr<FrameIo> frames_;  // ServerOptions::dpdk: the port instead of the socket

  bool gro_ = false, gso_ = false;
  std::size_t recv_size_ = kRecvBufferSize;  // bytes per receive buffer

  // Queued datagrams (pending_ of kSendBatch): bytes, size, destination, source address.
  std::vector<std::byte> send_buffers_;
  std::vector<std::size_t> send_sizes_;
  std::vector<sockaddr_in> send_addrs_;
  std::vector<std::uint32_t> send_sources_;
  std::vector<std::uint8_t> send_ecn_;
  std::size_t pending_ = 0;
  // A flush: the queued datagrams in sending order, and the messages that carry them.
  std::vector<std::uint32_t> send_order_;
  std::vector<iovec> send_iov_;
  std::vector<mmsghdr> send_msgs_;
  std::vector<std::size_t> send_counts_;  // datagrams per message
  std::vector<std::byte> send_control_;
};

}  // namespace netagg::sim
