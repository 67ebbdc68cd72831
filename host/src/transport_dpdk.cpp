// SPDX-License-Identifier: Apache-2.0
// DPDK transport: one DPDK port per transport, frames built with wire::encode_frame straight into
// mbufs and parsed with wire::decode_frame, burst send/receive, ARP for the aggregator's MAC and
// ARP replies for our own IP (so that a kernel peer, such as netagg-switchd on kernel UDP, can
// send back to us). The protocol engine is the same as over kernel UDP; only the bytes' path
// differs.
//
// The EAL lives once per process (DPDK cannot start it twice): a process-wide registry remembers
// the options it was started with and the ports in use and set up. Ports stay configured and
// started for the life of the process; a transport claims one and releases it when destroyed.
#include <sched.h>
#include <sys/prctl.h>
#include <time.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>
#include <set>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_ether.h>
#include <rte_ip.h>
#include <rte_log.h>
#include <rte_mbuf.h>
#include <rte_mbuf_pool_ops.h>
#include <rte_mempool.h>
#include <rte_pause.h>
#include <rte_udp.h>

#include "netagg/address.hpp"
#include "netagg/dpdk.hpp"
#include "netagg/error.hpp"

#ifdef NETAGG_HAVE_LIBXDP
#include <arpa/inet.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <xdp/libxdp.h>

#include "netagg_steer.h"
#endif

namespace netagg::dpdk {
namespace {

constexpr std::size_t kMaxFrame = wire::kFrameOverhead + wire::kMaxPacketSize;
constexpr std::uint16_t kRxDescriptors = 1024, kTxDescriptors = 1024;
constexpr std::uint32_t kDefaultNoHugeMemoryMb = 256;
// How long send() keeps offering packets to a full transmit queue before it gives the rest up to
// retransmission (as the UDP transport does with a full socket buffer).
constexpr auto kSendStall = std::chrono::milliseconds(200);
constexpr auto kArpRetry = std::chrono::milliseconds(200);
// Receive polls: DPDK has no blocking receive on these PMDs, so an idle worker spins a little
// (a result usually follows within microseconds when the window is full) and then sleeps in
// short steps, leaving the core to the others (the aggregator daemon may share it).
constexpr auto kSpinBeforeSleep = std::chrono::microseconds(20);
constexpr auto kIdleSleep = std::chrono::microseconds(20);

wire::Mac to_mac(const rte_ether_addr& a) {
  wire::Mac m;
  std::copy(std::begin(a.addr_bytes), std::end(a.addr_bytes), m.begin());
  return m;
}

rte_ether_addr to_ether(const wire::Mac& m) {
  rte_ether_addr a{};
  std::copy(m.begin(), m.end(), std::begin(a.addr_bytes));
  return a;
}

// Whether the port is an AF_XDP socket (DPDK's net_af_xdp).
bool is_af_xdp(std::uint16_t port) {
  rte_eth_dev_info info{};
  return rte_eth_dev_info_get(port, &info) == 0 && info.driver_name != nullptr &&
         std::string_view(info.driver_name) == "net_af_xdp";
}

std::string port_name(std::uint16_t port) {
  char name[RTE_ETH_NAME_MAX_LEN] = {};
  if (rte_eth_dev_get_name_by_port(port, name) != 0) return "?";
  return name;
}

// One's complement sum over pseudo-header and datagram, checksum field included, is 0xFFFF for
// a correct checksum (rte_ipv4_udptcp_cksum_verify does this too, but is not stable ABI in 22.11).
bool udp_checksum_ok(const rte_ipv4_hdr* ip, const rte_udp_hdr* udp, std::size_t udp_len) {
  std::uint32_t sum = rte_raw_cksum(udp, udp_len);
  sum += rte_ipv4_phdr_cksum(ip, 0);
  sum = (sum & 0xFFFF) + (sum >> 16);
  sum = (sum & 0xFFFF) + (sum >> 16);
  return sum == 0xFFFF;
}

// ---- the process's EAL and ports -------------------------------------------------------------

struct PortState {
  rte_mempool* pool = nullptr;
  bool claimed = false;
};

struct Registry {
  std::mutex mutex;
  bool started = false;
  std::optional<Error> failure;  // the EAL failed to start: it cannot be tried again
  std::vector<std::string> arguments;
  std::map<std::uint16_t, PortState> ports;
};

Registry& registry() {
  static Registry r;
  return r;
}

// The last lines the EAL logged, for error messages.
std::string log_tail(const std::string& log, std::size_t lines) {
  std::vector<std::string> all;
  std::size_t start = 0;
  while (start < log.size()) {
    std::size_t end = log.find('\n', start);
    if (end == std::string::npos) end = log.size();
    std::string line = log.substr(start, end - start);
    if (!line.empty() && line.find_first_not_of(" \t") != std::string::npos)
      all.push_back(std::move(line));
    start = end + 1;
  }
  if (all.size() > lines) all.erase(all.begin(), all.end() - static_cast<std::ptrdiff_t>(lines));
  return fmt::format("{}", fmt::join(all, " | "));
}

bool contains_nocase(std::string text, std::string_view what) {
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return text.find(what) != std::string::npos;
}

Error eal_start_error(int err, const std::string& log, const std::vector<std::string>& args) {
  const std::string said = log_tail(log, 3);
  std::string advice;
  if (contains_nocase(said, "hugepage") || err == EACCES || err == ENOMEM) {
    advice =
        "no usable hugepages. Reserve some as root (echo 512 > "
        "/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages; hugetlbfs mounted on "
        "/dev/hugepages), or set dpdk.no_huge = true (NETAGG_DPDK_NO_HUGE=1) to run the EAL on "
        "ordinary memory (tests, veth and af_packet; slower with real NICs)";
  } else if (contains_nocase(said, "vdev") || contains_nocase(said, "probe") ||
             contains_nocase(said, "iface")) {
    advice =
        "a device could not be created: check dpdk.vdevs (NETAGG_DPDK_VDEVS), e.g. that the "
        "interface of net_af_packet's iface= exists and is up, and that this process is root";
  } else if (contains_nocase(said, "lcore") || contains_nocase(said, "core")) {
    advice = "check dpdk.lcores (NETAGG_DPDK_LCORES): the cores must exist and be allowed";
  } else if (err == EALREADY) {
    advice = "something else in this process started the EAL already; start it through netagg";
  } else {
    advice = "see the EAL's message; dpdk.eal_args (NETAGG_DPDK_EAL_ARGS) passes more options";
  }
  return Error(Errc::kConfig,
               fmt::format("dpdk: the EAL could not start (rte_eal_init: {}; EAL said: {}): {}. "
                           "EAL arguments: {}",
                           rte_strerror(err), said.empty() ? "nothing" : said, advice,
                           fmt::join(args, " ")));
}

// Calls rte_eal_init with the registry locked. The EAL's start-up chatter goes to a buffer,
// shown only if it fails; the calling thread's CPU affinity is restored afterwards (the EAL pins
// it to the main lcore, and the communicator's thread would inherit that).
void start_eal_locked(Registry& reg, const std::vector<std::string>& args) {
  cpu_set_t affinity;
  const bool have_affinity = ::sched_getaffinity(0, sizeof affinity, &affinity) == 0;
  char* log_buffer = nullptr;
  std::size_t log_size = 0;
  FILE* log = ::open_memstream(&log_buffer, &log_size);
  if (log) rte_openlog_stream(log);
  std::vector<std::string> copy = args;  // rte_eal_init may permute argv
  std::vector<char*> argv;
  for (auto& a : copy) argv.push_back(a.data());
  argv.push_back(nullptr);
  const int rc = rte_eal_init(static_cast<int>(argv.size() - 1), argv.data());
  const int err = rte_errno;
  rte_openlog_stream(stderr);
  std::string text;
  if (log) {
    std::fclose(log);
    if (log_buffer) text.assign(log_buffer, log_size);
    std::free(log_buffer);
  }
  if (have_affinity) ::sched_setaffinity(0, sizeof affinity, &affinity);
  if (rc < 0) {
    reg.failure = eal_start_error(err, text, args);
    throw *reg.failure;
  }
  reg.started = true;
  reg.arguments = args;
}

void init_eal_locked(Registry& reg, const DpdkConfig& cfg) {
  const auto args = eal_arguments(cfg);
  if (reg.failure)
    throw Error(reg.failure->code(),
                fmt::format("{} (the EAL failed earlier in this process and cannot be started "
                            "again)",
                            reg.failure->what()));
  if (reg.started) {
    if (args == reg.arguments) return;
    throw Error(Errc::kConfig,
                fmt::format("dpdk: the EAL of this process was started with [{}], this transport "
                            "asks for [{}]. DPDK's EAL can be initialised once per process: every "
                            "DPDK transport of a process must have the same dpdk.lcores, vdevs, "
                            "no_huge, no_pci, memory_mb, file_prefix and eal_args (ports may "
                            "differ)",
                            fmt::join(reg.arguments, " "), fmt::join(args, " ")));
  }
  start_eal_locked(reg, args);
}

// An mbuf pool whose objects lie back to back in one block of memory. net_af_xdp registers the
// pool as its umem, sized (object count) x (object size) from the first object: a pool laid out
// with gaps (rte_pktmbuf_pool_create keeps objects within 4 KB pages without hugepages) puts its
// last mbufs outside the umem, and the kernel refuses them as transmit descriptors and fill
// buffers, silently, once the transport gets that far into the pool. Without page alignment
// (RTE_MEMPOOL_F_NO_IOVA_CONTIG: the XDP socket copies or maps by virtual address) every object
// is inside. Null with rte_errno set on failure; a pool in several chunks fails with ENOMEM.
rte_mempool* packed_pool(const char* name, unsigned count, std::uint16_t data_room, int socket) {
  rte_pktmbuf_pool_private priv{};
  priv.mbuf_data_room_size = data_room;
  priv.mbuf_priv_size = 0;
  rte_mempool* pool = rte_mempool_create_empty(name, count, sizeof(rte_mbuf) + data_room, 0,
                                               sizeof priv, socket, RTE_MEMPOOL_F_NO_IOVA_CONTIG);
  if (pool == nullptr) return nullptr;
  int rc = rte_mempool_set_ops_byname(pool, rte_mbuf_best_mempool_ops(), nullptr);
  if (rc == 0) {
    rte_pktmbuf_pool_init(pool, &priv);
    rc = rte_mempool_populate_default(pool);
  }
  if (rc >= 0 && pool->nb_mem_chunks != 1) rc = -ENOMEM;
  if (rc < 0) {
    rte_mempool_free(pool);
    rte_errno = -rc;
    return nullptr;
  }
  rte_mempool_obj_iter(pool, rte_pktmbuf_init, nullptr);
  return pool;
}

// At the process's exit: the ports it set up and no transport holds any more are stopped and
// closed, so that their drivers undo what they did to the host (net_af_xdp detaches the XDP
// program it attached to the interface, which would otherwise stay and take the interface's
// frames from the kernel). A port still held (a transport never destroyed, whose thread may still
// poll it) is left as it is, as is every port of a process that is killed (ip link set dev IFACE
// xdp off removes the program).
void close_ports_at_exit() {
  Registry& reg = registry();
  std::lock_guard lock(reg.mutex);
  for (auto& [port, state] : reg.ports) {
    if (state.pool == nullptr || state.claimed) continue;
    [[maybe_unused]] const int stopped = rte_eth_dev_stop(port);
    [[maybe_unused]] const int closed = rte_eth_dev_close(port);
    state.pool = nullptr;  // (the pool goes with the process)
  }
}

// Configures and starts `port` the first time a transport asks for it; claims it.
rte_mempool* claim_port_locked(Registry& reg, const DpdkConfig& cfg) {
  const std::uint16_t port = cfg.port;
  if (!rte_eth_dev_is_valid_port(port)) {
    std::vector<std::string> have;
    std::uint16_t id;
    RTE_ETH_FOREACH_DEV(id) { have.push_back(fmt::format("{} ({})", id, port_name(id))); }
    throw Error(
        Errc::kConfig,
        fmt::format("dpdk.port: there is no DPDK port {}; the EAL has {}. Add one with "
                    "dpdk.vdevs (e.g. net_af_packet0,iface=eth1) or bind a NIC to a DPDK "
                    "driver",
                    port, have.empty() ? "none" : fmt::format("{}", fmt::join(have, ", "))));
  }
  PortState& st = reg.ports[port];
  if (st.claimed)
    throw Error(Errc::kConfig,
                fmt::format("dpdk.port: port {} ({}) is in use by another transport of this "
                            "process; give each communicator its own port",
                            port, port_name(port)));
  if (st.pool == nullptr) {
    const std::string pool_name = fmt::format("netagg_pool_{}", port);
    // An AF_XDP port's mbufs are its umem's frames, which must fit a page: the default mbuf
    // size (2 KB of data), and jobs whose frames fit it (checked in the constructor).
    const auto data_room = static_cast<std::uint16_t>(
        is_af_xdp(port) ? RTE_MBUF_DEFAULT_BUF_SIZE
                        : RTE_PKTMBUF_HEADROOM + ((kMaxFrame + 63) / 64) * 64);
    const int socket_id = static_cast<int>(rte_eth_dev_socket_id(port));
    rte_mempool* pool =
        is_af_xdp(port)
            ? packed_pool(pool_name.c_str(), cfg.mbufs, data_room, socket_id)
            : rte_pktmbuf_pool_create(pool_name.c_str(), cfg.mbufs, 0, 0, data_room, socket_id);
    if (pool == nullptr)
      throw Error(Errc::kConfig,
                  fmt::format("dpdk.mbufs: cannot allocate {} mbufs of {} bytes for port {}: {}; "
                              "lower dpdk.mbufs or give the EAL more memory (dpdk.memory_mb)",
                              cfg.mbufs, data_room, port, rte_strerror(rte_errno)));
    rte_eth_conf conf{};
    int rc = rte_eth_dev_configure(port, 1, 1, &conf);
    std::uint16_t rxd = kRxDescriptors, txd = kTxDescriptors;
    if (rc == 0) rc = rte_eth_dev_adjust_nb_rx_tx_desc(port, &rxd, &txd);
    const auto socket = static_cast<unsigned>(rte_eth_dev_socket_id(port));
    if (rc == 0) rc = rte_eth_rx_queue_setup(port, 0, rxd, socket, nullptr, pool);
    if (rc == 0) rc = rte_eth_tx_queue_setup(port, 0, txd, socket, nullptr);
    if (rc == 0) rc = rte_eth_dev_start(port);
    if (rc != 0) {
      rte_mempool_free(pool);
      throw Error(Errc::kTransport, fmt::format("dpdk: cannot set up port {} ({}): {}", port,
                                                port_name(port), rte_strerror(-rc)));
    }
    st.pool = pool;
    static std::once_flag at_exit;
    std::call_once(at_exit, [] { std::atexit(close_ports_at_exit); });
  }
  st.claimed = true;
  return st.pool;
}

#ifdef NETAGG_HAVE_LIBXDP
// The map called `name` of the BPF program `program_fd`, as a new descriptor, or -1.
int map_of(int program_fd, const char* name) {
  bpf_prog_info info{};
  std::uint32_t length = sizeof info;
  if (bpf_obj_get_info_by_fd(program_fd, &info, &length) != 0) return -1;
  std::vector<std::uint32_t> ids(info.nr_map_ids);
  info = bpf_prog_info{};
  info.nr_map_ids = static_cast<std::uint32_t>(ids.size());
  info.map_ids = reinterpret_cast<std::uintptr_t>(ids.data());
  length = sizeof info;
  if (bpf_obj_get_info_by_fd(program_fd, &info, &length) != 0) return -1;
  for (const std::uint32_t id : ids) {
    const int fd = bpf_map_get_fd_by_id(id);
    if (fd < 0) continue;
    bpf_map_info map{};
    std::uint32_t map_length = sizeof map;
    if (bpf_obj_get_info_by_fd(fd, &map, &map_length) == 0 && std::strcmp(map.name, name) == 0)
      return fd;
    ::close(fd);
  }
  return -1;
}
#endif

// An AF_XDP port whose interface runs netagg's steering program (xdp/netagg_steer.bpf.c, loaded
// by the driver for the vdev argument xdp_prog=...): points it at `ip`:`udp_port`, so that only
// netagg's frames (and ARP for that address) come to the socket. False when the interface runs
// another program (the driver's default takes every frame) or libnetagg was built without
// libxdp; Error(kTransport) when the program is there but its map cannot be written.
bool steer_to(std::uint16_t port, std::uint32_t ip, std::uint16_t udp_port) {
#ifdef NETAGG_HAVE_LIBXDP
  rte_eth_dev_info info{};
  if (!is_af_xdp(port) || rte_eth_dev_info_get(port, &info) != 0 || info.if_index == 0)
    return false;
  xdp_multiprog* programs = xdp_multiprog__get_from_ifindex(static_cast<int>(info.if_index));
  if (libxdp_get_error(programs) != 0 || programs == nullptr) return false;
  int map = -1;
  if (xdp_multiprog__is_legacy(programs)) {
    if (xdp_program* p = xdp_multiprog__main_prog(programs))
      map = map_of(xdp_program__fd(p), NETAGG_STEER_ADDRESS_MAP);
  } else {  // behind libxdp's dispatcher (bpffs mounted)
    for (xdp_program* p = xdp_multiprog__next_prog(nullptr, programs); p != nullptr && map < 0;
         p = xdp_multiprog__next_prog(p, programs))
      map = map_of(xdp_program__fd(p), NETAGG_STEER_ADDRESS_MAP);
  }
  xdp_multiprog__close(programs);
  if (map < 0) return false;
  const netagg_steer_address address{htonl(ip), htons(udp_port), 0};
  const std::uint32_t key = 0;
  const int rc = bpf_map_update_elem(map, &key, &address, BPF_ANY);
  const int err = errno;
  ::close(map);
  if (rc != 0)
    throw Error(Errc::kTransport,
                fmt::format("dpdk: port {} ({}) runs netagg's XDP steering program, but its map {} "
                            "cannot be written: {}",
                            port, port_name(port), NETAGG_STEER_ADDRESS_MAP, std::strerror(err)));
  return true;
#else
  (void)port, (void)ip, (void)udp_port;
  return false;
#endif
}

// Hands frames to the port until all are taken or the queue stays full for kSendStall; frees
// what it could not send. Returns how many were sent.
std::uint16_t transmit(std::uint16_t port, rte_mbuf** frames, std::uint16_t n) {
  std::uint16_t sent = 0;
  std::optional<TimePoint> stalled_since;
  while (sent < n) {
    const std::uint16_t k = rte_eth_tx_burst(port, 0, frames + sent, n - sent);
    sent += k;
    if (k > 0) {
      stalled_since.reset();
      continue;
    }
    const auto now = Clock::now();
    if (!stalled_since) stalled_since = now;
    if (now - *stalled_since > kSendStall) break;
    rte_pause();
  }
  if (sent < n) rte_pktmbuf_free_bulk(frames + sent, n - sent);
  return sent;
}

// Frames shorter than Ethernet's minimum (60 bytes without the CRC) get zero padding.
void pad_frame(rte_mbuf* m, std::size_t len) {
  const std::size_t wire_len = std::max<std::size_t>(len, RTE_ETHER_MIN_LEN - RTE_ETHER_CRC_LEN);
  if (wire_len > len) std::memset(rte_pktmbuf_mtod(m, std::byte*) + len, 0, wire_len - len);
  m->data_len = static_cast<std::uint16_t>(wire_len);
  m->pkt_len = static_cast<std::uint32_t>(wire_len);
}

// ---- the transport ---------------------------------------------------------------------------

class DpdkTransport final : public Transport {
 public:
  DpdkTransport(const DpdkConfig& cfg, const Endpoint& local, const Endpoint& aggregator,
                std::size_t max_packet)
      : cfg_(cfg),
        local_(local),
        aggregator_(aggregator),
        port_(cfg.port),
        max_packet_(max_packet) {
    {
      Registry& reg = registry();
      std::lock_guard lock(reg.mutex);
      init_eal_locked(reg, cfg);
      pool_ = claim_port_locked(reg, cfg);
    }
    try {
      setup();
    } catch (...) {
      release();
      throw;
    }
  }

  ~DpdkTransport() override {
    drain();
    release();
  }

  void send(std::span<const std::span<const std::byte>> packets) override {
    std::size_t done = 0;
    while (done < packets.size()) {
      const std::size_t n = std::min<std::size_t>(cfg_.burst, packets.size() - done);
      if (rte_pktmbuf_alloc_bulk(pool_, tx_.data(), static_cast<unsigned>(n)) != 0) {
        // The pool is empty (mbufs stuck in the transmit ring): what is not sent now is
        // retransmitted on timeout, as after a loss.
        ++counters_.dropped_malformed;  // never happens with the sizes validate() enforces
        return;
      }
      for (std::size_t i = 0; i < n; ++i) build_frame(tx_[i], packets[done + i]);
      transmit(tx_.data(), static_cast<std::uint16_t>(n));
      done += n;
    }
  }

  std::size_t receive(Duration timeout, const PacketHandler& on_packet) override {
    const auto start = Clock::now();
    const auto deadline = start + std::max(Duration::zero(), timeout);
    auto last_activity = start;
    for (;;) {
      const std::uint16_t n = rte_eth_rx_burst(port_, 0, rx_.data(), cfg_.burst);
      std::size_t handed = 0;
      for (std::uint16_t i = 0; i < n; ++i) {
        handed += handle_frame(rx_[i], on_packet);
        rte_pktmbuf_free(rx_[i]);
      }
      if (handed > 0) return handed;
      const auto now = Clock::now();
      if (n > 0) last_activity = now;
      if (now >= deadline) return 0;
      if (now - last_activity < kSpinBeforeSleep) {
        rte_pause();
      } else {
        const auto nap = std::min<Duration>(kIdleSleep, deadline - now);
        const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(nap).count();
        const timespec ts{0, static_cast<long>(ns)};
        ::nanosleep(&ts, nullptr);
      }
    }
  }

  std::string name() const override {
    return fmt::format("dpdk port {} ({}{}) {} {} -> {} {}", port_, port_name(port_),
                       steered_ ? ", XDP steering" : "", format_mac(mac_), local_.to_string(),
                       format_mac(aggregator_mac_), aggregator_.to_string());
  }

  TransportCounters counters() const override { return counters_; }

 private:
  void setup() {
    if (local_.ip == 0 || local_.port == 0)
      throw Error(Errc::kConfig,
                  fmt::format("dpdk: the worker's address {} in the job (workers[].address) "
                              "must name its IPv4 address and UDP port: DPDK has no kernel to "
                              "pick them",
                              local_.to_string()));
    tx_.resize(cfg_.burst);
    rx_.resize(cfg_.burst);
    rte_ether_addr port_mac;
    if (rte_eth_macaddr_get(port_, &port_mac) != 0)
      throw Error(Errc::kTransport, fmt::format("dpdk: cannot read the MAC of port {}", port_));
    mac_ = to_mac(port_mac);
    const std::optional<wire::Mac>& wanted = cfg_.mac;
    if (wanted && *wanted != mac_) {
      rte_ether_addr a = to_ether(*wanted);
      if (rte_eth_dev_default_mac_addr_set(port_, &a) != 0 &&
          rte_eth_promiscuous_enable(port_) != 0)
        throw Error(Errc::kConfig,
                    fmt::format("dpdk.mac: port {} ({}) can neither take MAC {} nor receive in "
                                "promiscuous mode; leave dpdk.mac out to use the port's {}",
                                port_, port_name(port_), format_mac(*wanted), format_mac(mac_)));
      mac_ = *wanted;
    }
    std::uint16_t mtu = 0;
    const std::size_t datagram = max_packet_ + wire::kIpv4HeaderSize + wire::kUdpHeaderSize;
    if (rte_eth_dev_get_mtu(port_, &mtu) == 0 && datagram > mtu) {
      const std::size_t fits =
          (mtu - wire::kIpv4HeaderSize - wire::kUdpHeaderSize - wire::kHeaderSize) / 4;
      throw Error(Errc::kConfig,
                  fmt::format("job: elements_per_packet makes IP datagrams of up to {} bytes, but "
                              "port {} ({}) has MTU {}: at most {} elements per packet, or raise "
                              "the interface's MTU",
                              datagram, port_, port_name(port_), mtu, fits));
    }
    steered_ = steer_to(port_, local_.ip, local_.port);
    drain();  // whatever arrived while nobody held the port is stale
    if (cfg_.aggregator_mac) {
      aggregator_mac_ = *cfg_.aggregator_mac;
    } else {
      aggregator_mac_ = resolve(cfg_.next_hop.value_or(aggregator_.ip));
    }
    address_.src_mac = mac_;
    address_.dst_mac = aggregator_mac_;
    address_.src_ip = local_.ip;
    address_.dst_ip = aggregator_.ip;
    address_.src_port = local_.port;
    address_.dst_port = aggregator_.port;
  }

  void release() {
    Registry& reg = registry();
    std::lock_guard lock(reg.mutex);
    reg.ports[port_].claimed = false;
  }

  void drain() {
    for (;;) {
      const std::uint16_t n = rte_eth_rx_burst(port_, 0, rx_.data(), cfg_.burst);
      if (n == 0) return;
      rte_pktmbuf_free_bulk(rx_.data(), n);
    }
  }

  void build_frame(rte_mbuf* m, std::span<const std::byte> packet) {
    auto* data = rte_pktmbuf_mtod(m, std::byte*);
    const std::size_t room = rte_pktmbuf_tailroom(m);
    const std::size_t len = wire::encode_frame(address_, packet, {data, room});
    // (an exponent-only netagg packet is 64 bytes framed, so padding only guards odd sizes)
    pad_frame(m, len);
    auto* ip = reinterpret_cast<rte_ipv4_hdr*>(data + wire::kEthHeaderSize);
    auto* udp = reinterpret_cast<rte_udp_hdr*>(data + wire::kEthHeaderSize + wire::kIpv4HeaderSize);
    udp->dgram_cksum = 0;
    udp->dgram_cksum = rte_ipv4_udptcp_cksum(ip, udp);
  }

  void transmit(rte_mbuf** frames, std::uint16_t n) {
    counters_.sent += dpdk::transmit(port_, frames, n);
  }

  // A contiguous view of the frame (copied if the PMD chained segments).
  std::span<const std::byte> frame_of(rte_mbuf* m) {
    if (m->nb_segs == 1) return {rte_pktmbuf_mtod(m, const std::byte*), m->data_len};
    if (m->pkt_len > scratch_.size()) scratch_.resize(m->pkt_len);
    const void* p = rte_pktmbuf_read(m, 0, m->pkt_len, scratch_.data());
    return {static_cast<const std::byte*>(p), m->pkt_len};
  }

  // Returns 1 if the frame was handed to on_packet.
  std::size_t handle_frame(rte_mbuf* m, const PacketHandler& on_packet) {
    const auto frame = frame_of(m);
    if (frame.size() < wire::kEthHeaderSize) {
      ++counters_.dropped_malformed;
      return 0;
    }
    const std::uint16_t ether_type = wire::load_be16(frame.data() + 12);
    if (ether_type == wire::kEtherTypeArp) {
      handle_arp(frame);
      return 0;
    }
    wire::Mac dst;
    std::copy_n(reinterpret_cast<const std::uint8_t*>(frame.data()), 6, dst.begin());
    if (dst != mac_) {  // for somebody else (the port may be promiscuous) or broadcast
      ++counters_.dropped_foreign;
      return 0;
    }
    if (frame.size() > kMaxFrame + RTE_ETHER_CRC_LEN) {
      ++counters_.dropped_malformed;
      return 0;
    }
    const wire::DecodedFrame f = wire::decode_frame(frame, local_.port);
    using E = wire::Error;
    switch (f.error) {
      case E::kNotIpv4:  // IPv6, LLDP, ...: traffic of the link, not ours
      case E::kNotUdp:   // ICMP and others
      case E::kWrongPort:
        ++counters_.dropped_foreign;
        return 0;
      case E::kBadIpHeader:
      case E::kIpLengthMismatch:
      case E::kUdpLengthMismatch:
        ++counters_.dropped_malformed;
        return 0;
      case E::kTruncated:
        if (frame.size() < wire::kFrameOverhead) {
          ++counters_.dropped_malformed;
          return 0;
        }
        break;
      default:
        break;  // ok, or a netagg-level error: the engine judges the packet (as over UDP)
    }
    if (f.address.dst_ip != local_.ip || f.address.src_ip != aggregator_.ip ||
        f.address.src_port != aggregator_.port) {
      ++counters_.dropped_foreign;
      return 0;
    }
    const auto* ip = reinterpret_cast<const rte_ipv4_hdr*>(frame.data() + wire::kEthHeaderSize);
    const std::size_t ip_len = rte_be_to_cpu_16(ip->total_length);
    const auto* udp = reinterpret_cast<const rte_udp_hdr*>(frame.data() + wire::kEthHeaderSize +
                                                           wire::kIpv4HeaderSize);
    if (cfg_.verify_udp_checksum && udp->dgram_cksum != 0 &&
        !udp_checksum_ok(ip, udp, ip_len - wire::kIpv4HeaderSize)) {
      ++counters_.dropped_malformed;
      return 0;
    }
    const auto payload =
        frame.subspan(wire::kFrameOverhead, ip_len - wire::kIpv4HeaderSize - wire::kUdpHeaderSize);
    if (payload.size() > wire::kMaxPacketSize) {
      ++counters_.dropped_malformed;
      return 0;
    }
    ++counters_.received;
    on_packet(payload);
    return 1;
  }

  // Answers requests for our IP; takes the reply we wait for while resolving.
  void handle_arp(std::span<const std::byte> frame) {
    const std::optional<wire::Arp> arp = wire::decode_arp_frame(frame);
    if (!arp) return;
    const bool for_us = arp->op == wire::ArpOp::kRequest && arp->target_ip == local_.ip;
    if (resolving_ && arp->sender_ip == *resolving_ && (arp->op == wire::ArpOp::kReply || for_us))
      resolved_ = arp->sender_mac;
    if (for_us) send_arp(wire::ArpOp::kReply, arp->sender_mac, arp->sender_mac, arp->sender_ip);
  }

  void send_arp(wire::ArpOp op, const wire::Mac& eth_dst, const wire::Mac& target_mac,
                std::uint32_t target_ip) {
    rte_mbuf* m = rte_pktmbuf_alloc(pool_);
    if (m == nullptr) return;  // the peer asks again
    wire::Arp arp;
    arp.op = op;
    arp.sender_mac = mac_;
    arp.sender_ip = local_.ip;
    arp.target_mac = target_mac;
    arp.target_ip = target_ip;
    const std::size_t len = wire::encode_arp_frame(
        eth_dst, mac_, arp, {rte_pktmbuf_mtod(m, std::byte*), rte_pktmbuf_tailroom(m)});
    pad_frame(m, len);  // to Ethernet's 60 bytes
    if (rte_eth_tx_burst(port_, 0, &m, 1) != 1) rte_pktmbuf_free(m);
  }

  wire::Mac resolve(std::uint32_t ip) {
    resolving_ = ip;
    resolved_.reset();
    const auto give_up = Clock::now() + cfg_.arp_timeout;
    auto next_request = Clock::now();
    const PacketHandler ignore = [](std::span<const std::byte>) {};
    while (!resolved_) {
      const auto now = Clock::now();
      if (now >= give_up) {
        resolving_.reset();
        const bool via_router = cfg_.next_hop.has_value();
        throw Error(
            Errc::kTransport,
            fmt::format(
                "dpdk: no ARP reply from {} ({}) on port {} ({}) within {} ms. Check that "
                "the port is linked to it and that {} is its address, or set "
                "dpdk.aggregator_mac (NETAGG_DPDK_AGGREGATOR_MAC){}",
                format_ipv4(ip), via_router ? "dpdk.next_hop" : "the aggregator", port_,
                port_name(port_),
                std::chrono::duration_cast<std::chrono::milliseconds>(cfg_.arp_timeout).count(),
                format_ipv4(ip),
                via_router ? "" : " or dpdk.next_hop if a router stands in between"));
      }
      if (now >= next_request) {
        send_arp(wire::ArpOp::kRequest, wire::Mac{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, wire::Mac{},
                 ip);
        next_request = now + kArpRetry;
      }
      // Frames other than ARP cannot be ours yet (nothing was sent): receive() drops them.
      receive(std::min<Duration>(std::chrono::milliseconds(10), give_up - now), ignore);
    }
    resolving_.reset();
    return *resolved_;
  }

  DpdkConfig cfg_;
  Endpoint local_, aggregator_;
  std::uint16_t port_;
  rte_mempool* pool_ = nullptr;
  wire::Mac mac_{}, aggregator_mac_{};
  wire::FrameAddress address_;
  std::size_t max_packet_;
  std::optional<std::uint32_t> resolving_;
  std::optional<wire::Mac> resolved_;
  bool steered_ = false;  // the interface's XDP program sends only our frames to the socket
  std::vector<rte_mbuf*> tx_, rx_;
  std::vector<std::byte> scratch_;
  TransportCounters counters_;
};

// ---- a port of whole frames (an aggregator daemon's) ------------------------------------------

class DpdkFramePort final : public FramePort {
 public:
  explicit DpdkFramePort(const DpdkConfig& cfg) : cfg_(cfg), port_(cfg.port) {
    {
      Registry& reg = registry();
      std::lock_guard lock(reg.mutex);
      init_eal_locked(reg, cfg);
      pool_ = claim_port_locked(reg, cfg);
    }
    rx_.resize(cfg.burst);
    tx_.resize(cfg.burst);
    frames_.resize(cfg.burst);
    scratch_.resize(cfg.burst);
    rte_ether_addr a;
    if (rte_eth_macaddr_get(port_, &a) != 0) {
      release();
      throw Error(Errc::kTransport, fmt::format("dpdk: cannot read the MAC of port {}", port_));
    }
    mac_ = to_mac(a);
    if (rte_eth_dev_get_mtu(port_, &mtu_) != 0) mtu_ = RTE_ETHER_MTU;
  }

  ~DpdkFramePort() override {
    rte_pktmbuf_free_bulk(rx_.data(), held_);
    release();
  }

  wire::Mac mac() const override { return mac_; }
  std::uint16_t mtu() const override { return mtu_; }

  std::span<const std::span<const std::byte>> receive() override {
    rte_pktmbuf_free_bulk(rx_.data(), held_);
    held_ = rte_eth_rx_burst(port_, 0, rx_.data(), cfg_.burst);
    for (unsigned i = 0; i < held_; ++i) {
      rte_mbuf* m = rx_[i];
      if (m->nb_segs == 1) {
        frames_[i] = {rte_pktmbuf_mtod(m, const std::byte*), m->data_len};
      } else {  // chained segments (not on af_packet or af_xdp): one contiguous copy
        scratch_[i].resize(m->pkt_len);
        const void* p = rte_pktmbuf_read(m, 0, m->pkt_len, scratch_[i].data());
        frames_[i] = {static_cast<const std::byte*>(p), m->pkt_len};
      }
    }
    return {frames_.data(), held_};
  }

  std::size_t send(std::span<const std::span<const std::byte>> frames) override {
    std::size_t sent = 0;
    for (std::size_t done = 0; done < frames.size();) {
      const auto n =
          static_cast<std::uint16_t>(std::min<std::size_t>(cfg_.burst, frames.size() - done));
      if (rte_pktmbuf_alloc_bulk(pool_, tx_.data(), n) != 0) return sent;  // pool empty
      for (std::uint16_t i = 0; i < n; ++i) {
        const auto frame = frames[done + i];
        const std::size_t len = std::min<std::size_t>(frame.size(), rte_pktmbuf_tailroom(tx_[i]));
        std::memcpy(rte_pktmbuf_mtod(tx_[i], std::byte*), frame.data(), len);
        pad_frame(tx_[i], len);
      }
      sent += transmit(port_, tx_.data(), n);
      done += n;
    }
    return sent;
  }

  bool steer(const Endpoint& address) override { return steer_to(port_, address.ip, address.port); }

  std::string name() const override {
    return fmt::format("dpdk port {} ({}) {}", port_, port_name(port_), format_mac(mac_));
  }

 private:
  void release() {
    Registry& reg = registry();
    std::lock_guard lock(reg.mutex);
    reg.ports[port_].claimed = false;
  }

  DpdkConfig cfg_;
  std::uint16_t port_;
  rte_mempool* pool_ = nullptr;
  wire::Mac mac_{};
  std::uint16_t mtu_ = 0;
  std::vector<rte_mbuf*> rx_, tx_;
  unsigned held_ = 0;  // rx_[0, held_) are the frames of the last receive()
  std::vector<std::span<const std::byte>> frames_;
  std::vector<std::vector<std::byte>> scratch_;
};

}  // namespace

std::unique_ptr<FramePort> open_frame_port(const DpdkConfig& cfg) {
  return std::make_unique<DpdkFramePort>(cfg);
}

std::vector<std::string> eal_arguments(const DpdkConfig& cfg) {
  std::vector<std::string> a{"netagg", "-l", cfg.lcores};
  if (cfg.no_huge) a.push_back("--no-huge");
  if (cfg.no_pci) a.push_back("--no-pci");
  const std::uint32_t mb = cfg.memory_mb ? cfg.memory_mb : cfg.no_huge ? kDefaultNoHugeMemoryMb : 0;
  if (mb) a.insert(a.end(), {"-m", std::to_string(mb)});
  // Without a prefix no shared files at all, so that independent processes (one per worker) do
  // not collide on the default prefix's lock.
  if (cfg.file_prefix.empty())
    a.push_back("--no-shconf");
  else
    a.insert(a.end(), {"--file-prefix", cfg.file_prefix});
  for (const auto& v : cfg.vdevs) a.insert(a.end(), {"--vdev", v});
  a.insert(a.end(), cfg.eal_args.begin(), cfg.eal_args.end());
  return a;
}

void init_eal(const DpdkConfig& cfg) {
  Registry& reg = registry();
  std::lock_guard lock(reg.mutex);
  init_eal_locked(reg, cfg);
}

std::unique_ptr<Transport> make_transport(const DpdkConfig& cfg, const Endpoint& local,
                                          const std::optional<wire::Mac>& job_mac,
                                          const Endpoint& aggregator, std::size_t max_packet) {
  if (aggregator.port == 0 || aggregator.ip == 0)
    throw Error(Errc::kConfig, fmt::format("dpdk: aggregator address {} is not a destination",
                                           aggregator.to_string()));
  DpdkConfig c = cfg;
  if (!c.mac && job_mac) c.mac = job_mac;
  return std::make_unique<DpdkTransport>(c, local, aggregator,
                                         std::min(max_packet, wire::kMaxPacketSize));
}

}  // namespace netagg::dpdk
