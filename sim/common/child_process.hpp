// SPDX-License-Identifier: Apache-2.0
// A program run as a child process, for the programs that supervise others: the local launcher
// (netagg-local) and the tests that drive the daemons and tools. Its stdout is a pipe read on
// demand, its stderr goes to ours, to that pipe or to a file; it is killed when the object goes
// and when this process dies, so neither a failed test nor a killed launcher leaves it running.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace netagg::sim {

enum class ChildStderr {
  kInherit,  // ours
  kStdout,   // the stdout pipe, interleaved as the child writes
  kFile,     // ChildOptions::stderr_file, created or truncated
};

struct ChildOptions {
  ChildStderr stderr_to = ChildStderr::kInherit;
  std::filesystem::path stderr_file;
  // The child's environment is ours with the names in unset_env removed and set_env's
  // "NAME=value" entries added (replacing ours of the same name).
  std::vector<std::string> set_env;
  std::vector<std::string> unset_env;
};

class ChildProcess {
 public:
  using Clock = std::chrono::steady_clock;

  // Starts argv[0] with argv; a name without '/' is looked up in PATH. Throws std::system_error
  // if it cannot start, a program that does not exist or cannot be executed included.
  explicit ChildProcess(const std::vector<std::string>& argv, const ChildOptions& options = {});
  ~ChildProcess();  // SIGKILL and reap, unless it has exited
  ChildProcess(ChildProcess&& other) noexcept;
  ChildProcess& operator=(ChildProcess&& other) noexcept;
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  pid_t pid() const { return pid_; }

  // ---- stdout: what it printed so far, read on demand ----
  const std::string& output() const { return output_; }
  // Reads what the pipe holds without blocking; false once stdout is closed.
  bool read_available();
  // Reads until done(output()) holds, stdout closes or `deadline` passes; returns done(output()).
  bool read_until(const std::function<bool(const std::string&)>& done, Clock::time_point deadline);
  // The rest of the first whole line (ended by '\n') of the output in which `marker` occurs,
  // after the marker.
  std::optional<std::string> line_after(std::string_view marker) const;
  // read_until such a line is there; the rest of it, or nullopt.
  std::optional<std::string> wait_line(std::string_view marker, Clock::time_point deadline);
  // The stdout pipe, -1 once closed: for waiting on several children at once.
  int stdout_fd() const { return stdout_fd_; }

  // With ChildStderr::kFile: the file's contents so far.
  std::string stderr_text() const;

  // ---- signals and exit ----
  // No-op once it has exited, so a pid the system reused is never signalled.
  void signal(int sig) const;
  // Reaps it if it has exited (what it printed is read first); true if it has.
  bool poll_exit();
  // Waits for it to exit, reading stdout meanwhile (a child blocked on a full pipe would never
  // exit); false if it still runs at `deadline`.
  bool wait_exit(Clock::time_point deadline);
  void wait_exit() { wait_exit(Clock::time_point::max()); }

  bool exited() const { return exited_; }
  std::optional<int> exit_code() const;    // if it exited normally
  std::optional<int> term_signal() const;  // if a signal killed it
  bool succeeded() const { return exit_code() == 0; }
  // "still running", "exited with status 3", "killed by signal 9 (Killed)".
  std::string describe_exit() const;

 private:
  void release();

  pid_t pid_ = -1;
  int stdout_fd_ = -1;
  std::string output_;
  std::filesystem::path stderr_file_;
  bool exited_ = false;
  int status_ = 0;
};

// Waits until one of `children` has output or closes stdout, or `timeout` passes, then reads
// what each has. Returns early on a signal. Without any open stdout it sleeps `timeout`.
void wait_for_output(std::span<ChildProcess* const> children, std::chrono::milliseconds timeout);

// `n` different UDP ports on 127.0.0.1 that are free right now: bound all at once, so they
// differ, and released for the caller's children to bind.
std::vector<std::uint16_t> free_loopback_ports(std::size_t n);

}  // namespace netagg::sim
