// SPDX-License-Identifier: Apache-2.0
#include "daemon.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

namespace netagg::testing {

std::vector<std::byte> contribution(std::uint16_t job, std::uint16_t rank, std::uint16_t slot,
                                    std::uint8_t set, std::uint32_t seq,
                                    const std::vector<std::int32_t>& values, std::int16_t exponent,
                                    wire::DataType dtype) {
  wire::Header h;
  h.job_id = job;
  h.rank = rank;
  h.slot = slot;
  h.set = set;
  h.seq = seq;
  h.dtype = dtype;
  h.count = static_cast<std::uint16_t>(values.size());
  h.exponent = exponent;
  std::vector<std::byte> bytes(h.packet_size());
  wire::encode_header(h, bytes);
  for (std::size_t i = 0; i < values.size(); ++i)
    wire::store_be32(bytes.data() + wire::kHeaderSize + 4 * i, std::uint32_t(values[i]));
  return bytes;
}

std::vector<std::byte> contribution_frame(const JobSpec& job, std::uint16_t rank, std::uint32_t seq,
                                          const std::vector<std::int32_t>& values,
                                          const wire::Mac& worker_mac,
                                          const wire::Mac& aggregator_mac,
                                          const Endpoint& aggregator) {
  const auto packet = contribution(
      job.job_id, rank, static_cast<std::uint16_t>(job.slot_base + seq % job.slot_count),
      static_cast<std::uint8_t>((seq / job.slot_count) % 2), seq, values);
  const WorkerSpec& w = job.workers.at(rank);
  wire::FrameAddress a;
  a.src_mac = worker_mac;
  a.dst_mac = aggregator_mac;
  a.src_ip = w.address.ip;
  a.src_port = w.address.port;
  a.dst_ip = aggregator.ip;
  a.dst_port = aggregator.port;
  std::vector<std::byte> out(wire::kFrameOverhead + packet.size());
  out.resize(wire::encode_frame(a, packet, out));
  return out;
}

Result parse_result(const std::vector<std::byte>& bytes) {
  const wire::Decoded d = wire::decode(bytes);
  EXPECT_TRUE(d) << wire::to_string(d.error);
  Result r{d.header, {}};
  if (!d) return r;
  for (std::size_t i = 0; i < d.header.count; ++i)
    r.values.push_back(std::int32_t(wire::load_be32(d.payload.data() + 4 * i)));
  return r;
}

Counters DaemonProcess::wait_for_counter(const std::string& name, std::uint64_t n) {
  const auto deadline = std::chrono::steady_clock::now() + guard_;
  Counters c;
  do {
    c = request_counters();
    if (c[name] >= n) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  } while (std::chrono::steady_clock::now() < deadline);
  EXPECT_EQ(c[name], n);
  return c;
}

LoopbackUdpSocket::LoopbackUdpSocket() {
  fd_ = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (fd_ < 0 || bind(fd_, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)) != 0)
    throw std::runtime_error("cannot bind a loopback UDP socket");
  socklen_t len = sizeof(sa);
  getsockname(fd_, reinterpret_cast<sockaddr*>(&sa), &len);
  local_ = Endpoint{ntohl(sa.sin_addr.s_addr), ntohs(sa.sin_port)};
  timeval tv{kReceiveGuardSeconds, 0};
  setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
}

LoopbackUdpSocket::~LoopbackUdpSocket() { close(fd_); }

void LoopbackUdpSocket::send_to(const Endpoint& to, const std::vector<std::byte>& bytes) {
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(to.ip);
  sa.sin_port = htons(to.port);
  ASSERT_EQ(
      sendto(fd_, bytes.data(), bytes.size(), 0, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)),
      static_cast<ssize_t>(bytes.size()));
}

std::optional<std::vector<std::byte>> LoopbackUdpSocket::receive(Endpoint* from) {
  std::vector<std::byte> buf(65536);
  sockaddr_in sa{};
  socklen_t len = sizeof(sa);
  const ssize_t n =
      recvfrom(fd_, buf.data(), buf.size(), 0, reinterpret_cast<sockaddr*>(&sa), &len);
  if (n < 0) return std::nullopt;
  if (from) *from = Endpoint{ntohl(sa.sin_addr.s_addr), ntohs(sa.sin_port)};
  buf.resize(static_cast<std::size_t>(n));
  return buf;
}

bool LoopbackUdpSocket::has_pending() {
  pollfd p{fd_, POLLIN, 0};
  return poll(&p, 1, 0) > 0;
}

std::filesystem::path make_temp_dir(const std::string& prefix) {
  std::string tmpl = (std::filesystem::temp_directory_path() / (prefix + ".XXXXXX")).string();
  if (!mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed");
  return tmpl;
}

std::vector<std::string> command(const std::filesystem::path& program,
                                 std::vector<std::string> args) {
  args.insert(args.begin(), program.string());
  return args;
}

Counters read_json_counters(const std::filesystem::path& file) {
  std::ifstream in(file);
  const auto j = nlohmann::json::parse(in);
  Counters c;
  for (const auto& [k, v] : j.items()) c[k] = v.get<std::uint64_t>();
  return c;
}

std::string worker_json(std::uint16_t rank, const Endpoint& address,
                        std::optional<int> switch_port) {
  if (switch_port)
    return fmt::format(R"({{"rank": {}, "address": "{}", "switch_port": {}}})", rank,
                       address.to_string(), *switch_port);
  return fmt::format(R"({{"rank": {}, "address": "{}"}})", rank, address.to_string());
}

void ScratchTest::SetUp() {
  if (!std::filesystem::exists(program_)) GTEST_SKIP() << program_ << " is not built";
  dir_ = make_temp_dir(prefix_);
}

void ScratchTest::TearDown() {
  if (!dir_.empty()) std::filesystem::remove_all(dir_);
}

std::filesystem::path ScratchTest::write(const std::string& name, const std::string& text) const {
  const std::filesystem::path p = dir_ / name;
  std::ofstream(p) << text;
  return p;
}

namespace {

sim::ChildOptions stderr_to(const std::filesystem::path& file) {
  sim::ChildOptions o;
  o.stderr_to = sim::ChildStderr::kFile;
  o.stderr_file = file;
  return o;
}

}  // namespace

DaemonProcess::DaemonProcess(std::string name, const std::vector<std::string>& argv,
                             const std::filesystem::path& dir, std::chrono::seconds guard)
    : name_(std::move(name)), guard_(guard), process_(argv, stderr_to(dir / "stderr")) {}

bool DaemonProcess::read_until(const std::function<bool(const std::string&)>& done) {
  return process_.read_until(done, deadline());
}

std::string DaemonProcess::wait_line(const std::string& prefix) {
  const auto rest = process_.wait_line(prefix, deadline());
  EXPECT_TRUE(rest) << "no line '" << prefix << "'; stdout: " << stdout_text()
                    << " stderr: " << stderr_text();
  return rest.value_or("");
}

Endpoint DaemonProcess::wait_listening() {
  const std::string address = wait_line(name_ + ": listening on ");
  if (address.empty()) throw std::runtime_error(name_ + " did not start");
  return Endpoint::parse(address);
}

Counters DaemonProcess::request_counters() {
  const std::size_t blocks = count_blocks(stdout_text());
  signal(SIGUSR1);
  EXPECT_TRUE(read_until([&](const std::string& s) { return complete_blocks(s) > blocks; }));
  return last_counters();
}

int DaemonProcess::stop(int signal) {
  process_.signal(signal);
  return wait_exit();
}

int DaemonProcess::wait_exit() {
  if (!process_.wait_exit(deadline())) {
    ADD_FAILURE() << name_ << " still running after " << guard_.count() << " s; killed";
    process_.signal(SIGKILL);
    process_.wait_exit();
  }
  process_.read_until([](const std::string&) { return false; }, deadline());  // stdout to EOF
  return process_.exit_code().value_or(-1);
}

std::size_t DaemonProcess::count_blocks(const std::string& s) const {
  const std::string head = name_ + ": counters (";
  std::size_t n = 0;
  for (auto at = s.find(head); at != std::string::npos; at = s.find(head, at + 1)) ++n;
  return n;
}

std::size_t DaemonProcess::complete_blocks(const std::string& s) {
  std::size_t n = 0;
  for (auto at = s.find("send_errors"); at != std::string::npos; at = s.find("send_errors", at + 1))
    if (s.find('\n', at) != std::string::npos) ++n;
  return n;
}

Counters DaemonProcess::last_block(const std::string& s, const std::string& name) {
  Counters c;
  const auto at = s.rfind(name + ": counters (");
  if (at == std::string::npos) return c;
  std::istringstream in(s.substr(s.find('\n', at) + 1));
  std::string counter;
  std::uint64_t value;
  while (in >> counter >> value) c[counter] = value;
  return c;
}

}  // namespace netagg::testing
