// SPDX-License-Identifier: Apache-2.0
#include "netagg/fpga/device.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

#include <fmt/format.h>

#include "netagg/error.hpp"
#include "netagg/fpga/csr_channel.hpp"
#include "netagg/fpga_csr.hpp"

namespace netagg::fpga {
namespace {

namespace reg = netagg::fpga::csr;

void put32(std::byte* p, std::uint32_t v) {
  p[0] = std::byte(v >> 24);
  p[1] = std::byte(v >> 16);
  p[2] = std::byte(v >> 8);
  p[3] = std::byte(v);
}
std::uint32_t get32(const std::byte* p) {
  return (std::uint32_t(p[0]) << 24) | (std::uint32_t(p[1]) << 16) | (std::uint32_t(p[2]) << 8) |
         std::uint32_t(p[3]);
}

channel::Bytes encode(const channel::Message& m, bool response) {
  channel::Bytes b{};
  put32(&b[0], channel::kMagic);
  put32(&b[4], m.tag);
  b[8] = std::byte(static_cast<std::uint8_t>(m.op));
  b[9] = response ? std::byte(static_cast<std::uint8_t>(m.status)) : std::byte{0};
  put32(&b[12], m.address);
  put32(&b[16], m.value);
  return b;
}

// The netagg-fpgad control channel as a CsrBus: one datagram per access, answered by one.
class ChannelBus final : public CsrBus {
 public:
  // A response may wait for the daemon's current traffic batch (milliseconds, at worst seconds
  // for a very long batch); a request or response lost on loopback is sent again. Repeating an
  // access is harmless: COMMIT and CONTROL act once per sequence number, the rest are plain
  // registers.
  static constexpr int kAttempts = 4;
  static constexpr int kAttemptTimeoutMs = 2000;

  explicit ChannelBus(const Endpoint& daemon) : daemon_(daemon) {
    fd_ = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd_ < 0) throw Error(Errc::kTransport, fmt::format("socket: {}", std::strerror(errno)));
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(daemon.ip);
    sa.sin_port = htons(daemon.port);
    // connect(): only the daemon's datagrams reach this socket, and ICMP port unreachable
    // (nothing listening) comes back as ECONNREFUSED.
    if (::connect(fd_, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)) != 0) {
      const int e = errno;
      ::close(fd_);
      throw Error(Errc::kTransport, fmt::format("netagg-fpgad control channel {}: connect: {}",
                                                daemon.to_string(), std::strerror(e)));
    }
  }
  ~ChannelBus() override { ::close(fd_); }

  std::uint32_t read32(std::uint32_t address) override {
    return transact(channel::Op::kRead32, address, 0);
  }
  void write32(std::uint32_t address, std::uint32_t value) override {
    transact(channel::Op::kWrite32, address, value);
  }

 private:
  std::uint32_t transact(channel::Op op, std::uint32_t address, std::uint32_t value) {
    const channel::Message request{++tag_, op, channel::CsrStatus::kOk, address, value};
    const channel::Bytes bytes = channel::encode_request(request);
    const char* what = op == channel::Op::kRead32 ? "read" : "write";
    for (int attempt = 0; attempt < kAttempts; ++attempt) {
      if (::send(fd_, bytes.data(), bytes.size(), 0) < 0) fail_errno(what, address);
      const auto deadline =
          std::chrono::steady_clock::now() + std::chrono::milliseconds(kAttemptTimeoutMs);
      for (;;) {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                              deadline - std::chrono::steady_clock::now())
                              .count();
        if (left <= 0) break;
        pollfd p{fd_, POLLIN, 0};
        const int ready = ::poll(&p, 1, static_cast<int>(left));
        if (ready < 0 && errno != EINTR) fail_errno(what, address);
        if (ready <= 0) continue;
        std::array<std::byte, 64> in{};
        const ssize_t n = ::recv(fd_, in.data(), in.size(), 0);
        if (n < 0) {
          if (errno == EINTR) continue;
          fail_errno(what, address);
        }
        const auto response = channel::decode_response({in.data(), static_cast<std::size_t>(n)});
        // Answers to earlier (repeated) requests and stray datagrams are skipped.
        if (!response || response->tag != request.tag) continue;
        if (response->status != channel::CsrStatus::kOk)
          throw Error(
              Errc::kTransport,
              fmt::format("netagg-fpgad at {}: CSR {} of 0x{:03x} refused: {}", daemon_.to_string(),
                          what, address, channel::to_string(response->status)));
        return response->value;
      }
    }
    throw Error(Errc::kTransport,
                fmt::format("netagg-fpgad at {} did not answer a CSR {} of 0x{:03x} ({} tries, "
                            "{} ms each): is the daemon running with --control {}?",
                            daemon_.to_string(), what, address, kAttempts, kAttemptTimeoutMs,
                            daemon_.to_string()));
  }

  [[noreturn]] void fail_errno(const char* what, std::uint32_t address) {
    const int e = errno;
    if (e == ECONNREFUSED)
      throw Error(Errc::kTransport,
                  fmt::format("netagg-fpgad control channel {}: connection refused (nothing "
                              "listens there: start netagg-fpgad with --control {})",
                              daemon_.to_string(), daemon_.to_string()));
    throw Error(Errc::kTransport,
                fmt::format("netagg-fpgad control channel {}: CSR {} of 0x{:03x}: {}",
                            daemon_.to_string(), what, address, std::strerror(e)));
  }

  Endpoint daemon_;
  int fd_ = -1;
  std::uint32_t tag_ = 0;
};

}  // namespace

// --- channel codec ---------------------------------------------------------------------------

namespace channel {

std::string_view to_string(CsrStatus status) {
  switch (status) {
    case CsrStatus::kOk:
      return "ok";
    case CsrStatus::kMalformed:
      return "malformed request";
    case CsrStatus::kBadAddress:
      return "address not 4-aligned or outside the CSR space";
    case CsrStatus::kDeviceError:
      return "the model did not complete the AXI4-Lite transaction";
  }
  return "unknown status";
}

Bytes encode_request(const Message& request) { return encode(request, /*response=*/false); }
Bytes encode_response(const Message& response) { return encode(response, /*response=*/true); }

std::optional<Message> decode_request(std::span<const std::byte> d) {
  if (d.size() < 8 || get32(&d[0]) != kMagic) return std::nullopt;
  Message m;
  m.tag = get32(&d[4]);
  if (d.size() != kMessageSize) {
    m.status = CsrStatus::kMalformed;
    return m;
  }
  const auto op = static_cast<std::uint8_t>(d[8]);
  m.address = get32(&d[12]);
  m.value = get32(&d[16]);
  const bool reserved_zero = d[9] == std::byte{0} && d[10] == std::byte{0} && d[11] == std::byte{0};
  if ((op != 1 && op != 2) || !reserved_zero || (op == 1 && m.value != 0)) {
    m.status = CsrStatus::kMalformed;
    m.op = (op == 1 || op == 2) ? static_cast<Op>(op) : Op::kNone;
    return m;
  }
  m.op = static_cast<Op>(op);
  return m;
}

std::optional<Message> decode_response(std::span<const std::byte> d) {
  if (d.size() != kMessageSize || get32(&d[0]) != kMagic) return std::nullopt;
  if (d[10] != std::byte{0} || d[11] != std::byte{0}) return std::nullopt;
  const auto status = static_cast<std::uint8_t>(d[9]);
  if (status > static_cast<std::uint8_t>(CsrStatus::kDeviceError)) return std::nullopt;
  Message m;
  m.tag = get32(&d[4]);
  m.op =
      static_cast<Op>(static_cast<std::uint8_t>(d[8]) <= 2 ? static_cast<std::uint8_t>(d[8]) : 0);
  m.status = static_cast<CsrStatus>(status);
  m.address = get32(&d[12]);
  m.value = get32(&d[16]);
  return m;
}

}  // namespace channel

// --- Device ------------------------------------------------------------------------------------

Device::Device(std::unique_ptr<CsrBus> bus, std::string name)
    : owned_(std::move(bus)), bus_(owned_.get()), name_(std::move(name)) {
  if (!bus_) throw Error(Errc::kInvalidArgument, "Device: no CSR bus");
}
Device::Device(CsrBus& bus, std::string name) : bus_(&bus), name_(std::move(name)) {}
Device::~Device() = default;

DeviceInfo Device::identify() {
  const std::uint32_t version = bus_->read32(reg::kVersion);
  const unsigned design = version >> 16;
  const unsigned wire_version = version & 0xFF;
  if (design != kDesignVersion || wire_version != wire::kVersion)
    throw Error(Errc::kUnsupported,
                fmt::format("{}: VERSION reads 0x{:08x} (design {}, wire format {}); this driver "
                            "programs the netagg aggregator design {} with wire format {}: a "
                            "different kernel or version is loaded",
                            name_, version, design, wire_version, kDesignVersion, wire::kVersion));
  try {
    return read_device_info(*bus_);
  } catch (const Error& e) {
    throw Error(e.code(), fmt::format("{}: {}", name_, e.what()));
  }
}

AggregatorAddress Device::aggregator_address() {
  AggregatorAddress a;
  const std::uint32_t lo = bus_->read32(reg::kAggMacLo);
  const std::uint32_t hi = bus_->read32(reg::kAggMacHi);
  a.mac = {std::uint8_t(hi >> 8),  std::uint8_t(hi),      std::uint8_t(lo >> 24),
           std::uint8_t(lo >> 16), std::uint8_t(lo >> 8), std::uint8_t(lo)};
  a.ip = bus_->read32(reg::kAggIp);
  a.udp_port = static_cast<std::uint16_t>(bus_->read32(reg::kAggUdpPort));
  return a;
}

std::vector<JobTableEntry> Device::job_table() {
  const DeviceInfo info = identify();
  if (!info.job_table_readback)
    throw Error(Errc::kUnsupported,
                fmt::format("{}: cannot read its job table back (FEATURES bit 4 clear: a design "
                            "without JOB_ENTRY_*)",
                            name_));
  std::vector<JobTableEntry> table;
  for (unsigned e = 0; e < info.max_jobs; ++e) table.push_back(read_job_entry(*bus_, e));
  return table;
}

std::vector<PlacedJob> Device::add_jobs(std::span<const JobSpec> jobs, const Placement& placement,
                                        const AggregatorAddress& aggregator) {
  const DeviceInfo info = identify();
  std::vector<JobTableEntry> table;
  if (info.job_table_readback)
    for (unsigned e = 0; e < info.max_jobs; ++e) table.push_back(read_job_entry(*bus_, e));
  const std::vector<PlacedJob> placed = place_jobs(info, jobs, table, placement);
  for (std::size_t i = 0; i < jobs.size(); ++i)
    program_job(*bus_, jobs[i], placed[i].entry, aggregator);
  return placed;
}

void Device::remove_job(unsigned entry) {
  const DeviceInfo info = identify();
  if (entry >= info.max_jobs)
    throw Error(Errc::kConfig, fmt::format("{}: job table entry {} does not exist (entries 0..{})",
                                           name_, entry, info.max_jobs - 1));
  fpga::remove_job(*bus_, entry);
}

std::vector<Counter> Device::counters() { return read_counters(*bus_); }
void Device::clear_counters() { fpga::clear_counters(*bus_); }
void Device::reset() { soft_reset(*bus_); }

std::unique_ptr<Device> open_sim_device(const std::string& control_address) {
  const Endpoint daemon = Endpoint::parse(control_address, "--sim");
  auto device = std::make_unique<Device>(std::make_unique<ChannelBus>(daemon),
                                         fmt::format("netagg-fpgad at {}", daemon.to_string()));
  device->bus().read32(reg::kVersion);  // fails now, naming the address, if nothing answers
  return device;
}

}  // namespace netagg::fpga
