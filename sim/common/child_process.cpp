// SPDX-License-Identifier: Apache-2.0
#include "child_process.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <system_error>
#include <thread>
#include <utility>

extern char** environ;

namespace netagg::sim {
namespace {

[[noreturn]] void fail(int error, const std::string& what) {
  throw std::system_error(error, std::generic_category(), what);
}

class Fd {
 public:
  explicit Fd(int fd = -1) : fd_(fd) {}
  ~Fd() { reset(); }
  Fd(Fd&& other) noexcept : fd_(other.release()) {}
  Fd& operator=(Fd&& other) noexcept {
    if (this != &other) {
      reset();
      fd_ = other.release();
    }
    return *this;
  }
  int get() const { return fd_; }
  int release() { return std::exchange(fd_, -1); }
  void reset() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  int fd_;
};

bool is_executable_file(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(path.c_str(), X_OK) == 0;
}

// Resolved before fork: the child of a process with threads may only make async-signal-safe
// calls, and a PATH search allocates.
std::string resolve_program(const std::string& name) {
  if (name.empty()) fail(EINVAL, "cannot start a program with an empty name");
  if (name.find('/') != std::string::npos) return name;
  const char* path = std::getenv("PATH");
  std::istringstream dirs(path ? path : "/usr/local/bin:/usr/bin:/bin");
  for (std::string dir; std::getline(dirs, dir, ':');) {
    const std::string candidate = (dir.empty() ? std::string(".") : dir) + "/" + name;
    if (is_executable_file(candidate)) return candidate;
  }
  fail(ENOENT, "cannot start " + name + ": not found in PATH");
}

std::vector<std::string> child_environment(const ChildOptions& options) {
  const auto name_of = [](std::string_view entry) { return entry.substr(0, entry.find('=')); };
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string_view name = name_of(*e);
    const auto same = [&](const std::string& s) { return name_of(s) == name; };
    if (std::any_of(options.unset_env.begin(), options.unset_env.end(), same) ||
        std::any_of(options.set_env.begin(), options.set_env.end(), same))
      continue;
    env.emplace_back(*e);
  }
  env.insert(env.end(), options.set_env.begin(), options.set_env.end());
  return env;
}

std::vector<char*> pointers(std::vector<std::string>& strings) {
  std::vector<char*> p;
  for (auto& s : strings) p.push_back(s.data());
  p.push_back(nullptr);
  return p;
}

// Only async-signal-safe calls from here to exec. An exec failure travels to the parent as
// errno through `report`, which exec closes on success.
[[noreturn]] void exec_child(pid_t parent, const char* program, char* const* argv,
                             char* const* envp, int out, int err, int report) {
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  // The parent died before prctl took effect: nobody would kill us.
  if (::getppid() != parent) ::_exit(127);
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  if (::dup2(out, STDOUT_FILENO) < 0 || (err >= 0 && ::dup2(err, STDERR_FILENO) < 0)) {
    const int e = errno;
    [[maybe_unused]] auto n = ::write(report, &e, sizeof e);
    ::_exit(127);
  }
  ::execve(program, argv, envp);
  const int e = errno;
  [[maybe_unused]] auto n = ::write(report, &e, sizeof e);
  ::_exit(127);
}

}  // namespace

ChildProcess::ChildProcess(const std::vector<std::string>& argv, const ChildOptions& options) {
  if (argv.empty()) fail(EINVAL, "cannot start a program without argv");
  std::string program = resolve_program(argv[0]);
  std::vector<std::string> args = argv;
  std::vector<std::string> env = child_environment(options);
  const std::vector<char*> arg_pointers = pointers(args);
  const std::vector<char*> env_pointers = pointers(env);

  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) fail(errno, "pipe");
  Fd out_read(fds[0]), out_write(fds[1]);
  if (::pipe2(fds, O_CLOEXEC) != 0) fail(errno, "pipe");
  Fd report_read(fds[0]), report_write(fds[1]);
  Fd err_file;
  if (options.stderr_to == ChildStderr::kFile) {
    err_file =
        Fd(::open(options.stderr_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
    if (err_file.get() < 0) fail(errno, "cannot open " + options.stderr_file.string());
    stderr_file_ = options.stderr_file;
  }
  const int err = options.stderr_to == ChildStderr::kFile     ? err_file.get()
                  : options.stderr_to == ChildStderr::kStdout ? out_write.get()
                                                              : -1;

  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) fail(errno, "fork");
  if (pid == 0)
    exec_child(parent, program.c_str(), arg_pointers.data(), env_pointers.data(), out_write.get(),
               err, report_write.get());
  out_write.reset();
  report_write.reset();
  err_file.reset();

  int exec_error = 0;
  ssize_t n;
  do {
    n = ::read(report_read.get(), &exec_error, sizeof exec_error);
  } while (n < 0 && errno == EINTR);
  if (n > 0) {
    ::waitpid(pid, nullptr, 0);
    fail(exec_error, "cannot start " + program);
  }
  ::fcntl(out_read.get(), F_SETFL, O_NONBLOCK);
  pid_ = pid;
  stdout_fd_ = out_read.release();
}

ChildProcess::~ChildProcess() { release(); }

void ChildProcess::release() {
  if (pid_ > 0 && !exited_) {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
  if (stdout_fd_ >= 0) ::close(stdout_fd_);
  pid_ = -1;
  stdout_fd_ = -1;
}

ChildProcess::ChildProcess(ChildProcess&& other) noexcept
    : pid_(std::exchange(other.pid_, -1)),
      stdout_fd_(std::exchange(other.stdout_fd_, -1)),
      output_(std::move(other.output_)),
      stderr_file_(std::move(other.stderr_file_)),
      exited_(other.exited_),
      status_(other.status_) {}

ChildProcess& ChildProcess::operator=(ChildProcess&& other) noexcept {
  if (this != &other) {
    release();
    pid_ = std::exchange(other.pid_, -1);
    stdout_fd_ = std::exchange(other.stdout_fd_, -1);
    output_ = std::move(other.output_);
    stderr_file_ = std::move(other.stderr_file_);
    exited_ = other.exited_;
    status_ = other.status_;
  }
  return *this;
}

bool ChildProcess::read_available() {
  if (stdout_fd_ < 0) return false;
  char buf[4096];
  for (;;) {
    const ssize_t n = ::read(stdout_fd_, buf, sizeof buf);
    if (n > 0) {
      output_.append(buf, static_cast<std::size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return true;
    ::close(stdout_fd_);
    stdout_fd_ = -1;
    return false;
  }
}

namespace {

// Milliseconds from now to `deadline` for poll(), rounded up so that a wait does not spin
// through its last fraction of a millisecond; at most `cap`.
int poll_timeout(ChildProcess::Clock::time_point deadline, std::chrono::milliseconds cap) {
  const auto now = ChildProcess::Clock::now();
  if (deadline <= now) return 0;
  const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - now);
  return static_cast<int>(std::min(left, cap).count());
}

}  // namespace

bool ChildProcess::read_until(const std::function<bool(const std::string&)>& done,
                              Clock::time_point deadline) {
  while (!done(output_)) {
    if (stdout_fd_ < 0 || Clock::now() >= deadline) return false;
    pollfd p{stdout_fd_, POLLIN, 0};
    ::poll(&p, 1, poll_timeout(deadline, std::chrono::milliseconds(INT_MAX)));
    read_available();
  }
  return true;
}

std::optional<std::string> ChildProcess::line_after(std::string_view marker) const {
  for (auto at = output_.find(marker); at != std::string::npos; at = output_.find(marker, at + 1)) {
    const auto begin = at + marker.size();
    const auto end = output_.find('\n', begin);
    if (end == std::string::npos) return std::nullopt;
    return output_.substr(begin, end - begin);
  }
  return std::nullopt;
}

std::optional<std::string> ChildProcess::wait_line(std::string_view marker,
                                                   Clock::time_point deadline) {
  read_until([&](const std::string&) { return line_after(marker).has_value(); }, deadline);
  return line_after(marker);
}

std::string ChildProcess::stderr_text() const {
  if (stderr_file_.empty()) return "";
  std::ifstream in(stderr_file_);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void ChildProcess::signal(int sig) const {
  if (pid_ > 0 && !exited_) ::kill(pid_, sig);
}

bool ChildProcess::poll_exit() {
  if (exited_) return true;
  if (pid_ <= 0) return false;
  int status = 0;
  pid_t r;
  do {
    r = ::waitpid(pid_, &status, WNOHANG);
  } while (r < 0 && errno == EINTR);
  if (r != pid_) return false;
  exited_ = true;
  status_ = status;
  // Everything it wrote is in the pipe by now; a descendant that still holds the pipe may add
  // more later, which read_available() picks up.
  read_available();
  return true;
}

bool ChildProcess::wait_exit(Clock::time_point deadline) {
  // The pipe's end of file does not say it exited (a descendant may hold the pipe, and the
  // exit status comes a moment after it), so short slices bound the delay after the exit.
  constexpr auto kSlice = std::chrono::milliseconds(20);
  while (!poll_exit()) {
    if (Clock::now() >= deadline) return false;
    if (stdout_fd_ >= 0) {
      pollfd p{stdout_fd_, POLLIN, 0};
      ::poll(&p, 1, poll_timeout(deadline, kSlice));
      read_available();
    } else {
      std::this_thread::sleep_for(std::min<Clock::duration>(kSlice, deadline - Clock::now()));
    }
  }
  return true;
}

std::optional<int> ChildProcess::exit_code() const {
  if (!exited_ || !WIFEXITED(status_)) return std::nullopt;
  return WEXITSTATUS(status_);
}

std::optional<int> ChildProcess::term_signal() const {
  if (!exited_ || !WIFSIGNALED(status_)) return std::nullopt;
  return WTERMSIG(status_);
}

std::string ChildProcess::describe_exit() const {
  if (!exited_) return "still running";
  if (const auto code = exit_code()) return "exited with status " + std::to_string(*code);
  if (const auto sig = term_signal())
    return "killed by signal " + std::to_string(*sig) + " (" + ::strsignal(*sig) + ")";
  return "ended";
}

void wait_for_output(std::span<ChildProcess* const> children, std::chrono::milliseconds timeout) {
  std::vector<pollfd> fds;
  for (const ChildProcess* c : children)
    if (c->stdout_fd() >= 0) fds.push_back({c->stdout_fd(), POLLIN, 0});
  if (fds.empty()) {
    std::this_thread::sleep_for(timeout);
    return;
  }
  ::poll(fds.data(), fds.size(), static_cast<int>(timeout.count()));
  for (ChildProcess* c : children) c->read_available();
}

std::vector<std::uint16_t> free_loopback_ports(std::size_t n) {
  std::vector<Fd> sockets;
  std::vector<std::uint16_t> ports;
  for (std::size_t i = 0; i < n; ++i) {
    sockets.emplace_back(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
    if (sockets.back().get() < 0) fail(errno, "socket");
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    if (::bind(sockets.back().get(), reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
        ::getsockname(sockets.back().get(), reinterpret_cast<sockaddr*>(&a), &len) != 0)
      fail(errno, "bind 127.0.0.1:0");
    ports.push_back(ntohs(a.sin_port));
  }
  return ports;
}

}  // namespace netagg::sim
