// SPDX-License-Identifier: Apache-2.0
// sim/common's ChildProcess, which netagg-local and the daemon and tool tests run programs with:
// stdout on demand and by line, stderr to a file or into stdout, exit descriptions, environment,
// deadlines, the kill when the object goes or its owner dies; and free_loopback_ports. The
// children are sh, sleep and head, so nothing here depends on the rest of the build.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "child_process.hpp"

namespace netagg::sim {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using Clock = ChildProcess::Clock;
using namespace std::chrono_literals;

// Bounds every wait: a child that does not behave fails the test instead of hanging it.
constexpr auto kGuard = 10s;

Clock::time_point guard() { return Clock::now() + kGuard; }

ChildProcess shell(const std::string& script, const ChildOptions& options = {}) {
  return ChildProcess({"sh", "-c", script}, options);
}

// Gone, or a zombie nobody has reaped yet: either way no longer running.
bool is_dead(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  if (!stat) return true;
  std::string line;
  std::getline(stat, line);
  const auto close = line.rfind(')');
  return close != std::string::npos && line.size() > close + 2 && line[close + 2] == 'Z';
}

bool becomes_dead(pid_t pid) {
  const auto deadline = guard();
  while (!is_dead(pid)) {
    if (Clock::now() > deadline) return false;
    std::this_thread::sleep_for(10ms);
  }
  return true;
}

class TempDir {
 public:
  TempDir() {
    std::string t = (fs::temp_directory_path() / "child_process_test.XXXXXX").string();
    if (::mkdtemp(t.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    path_ = t;
  }
  ~TempDir() { fs::remove_all(path_); }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

TEST(ChildProcess, StdoutIsCollectedAndTheExitDescribed) {
  ChildProcess c = shell("echo one; echo two");
  EXPECT_GT(c.pid(), 0);
  ASSERT_TRUE(c.wait_exit(guard()));
  EXPECT_EQ(c.output(), "one\ntwo\n");
  EXPECT_TRUE(c.exited());
  EXPECT_TRUE(c.succeeded());
  EXPECT_EQ(c.exit_code(), 0);
  EXPECT_EQ(c.term_signal(), std::nullopt);
  EXPECT_EQ(c.describe_exit(), "exited with status 0");
  EXPECT_FALSE(c.read_available()) << "stdout is closed once read to its end";
  EXPECT_EQ(c.stdout_fd(), -1);
}

TEST(ChildProcess, ExitStatusAndSignalAreTold) {
  ChildProcess failed = shell("exit 3");
  ASSERT_TRUE(failed.wait_exit(guard()));
  EXPECT_EQ(failed.exit_code(), 3);
  EXPECT_FALSE(failed.succeeded());
  EXPECT_EQ(failed.describe_exit(), "exited with status 3");

  ChildProcess killed = shell("kill -9 $$");
  ASSERT_TRUE(killed.wait_exit(guard()));
  EXPECT_EQ(killed.exit_code(), std::nullopt);
  EXPECT_EQ(killed.term_signal(), SIGKILL);
  EXPECT_FALSE(killed.succeeded());
  EXPECT_EQ(killed.describe_exit(), "killed by signal 9 (Killed)");
}

TEST(ChildProcess, WaitLineGivesTheRestOfAWholeLine) {
  ChildProcess c = shell(
      "echo starting; echo 'd: listening on 127.0.0.1:5'; printf 'half'; "
      "exec sleep 30");
  EXPECT_EQ(c.wait_line("listening on ", guard()), "127.0.0.1:5");
  EXPECT_EQ(c.line_after("d: "), "listening on 127.0.0.1:5");
  EXPECT_EQ(c.line_after("nowhere"), std::nullopt);
  // A line without its '\n' yet is not a line: the wait ends at its deadline.
  const auto t0 = Clock::now();
  EXPECT_EQ(c.wait_line("hal", Clock::now() + 100ms), std::nullopt);
  EXPECT_GE(Clock::now() - t0, 100ms);
  EXPECT_THAT(c.output(), HasSubstr("half"));
  EXPECT_FALSE(c.exited());
  EXPECT_EQ(c.describe_exit(), "still running");
}

TEST(ChildProcess, ReadUntilStopsWhenStdoutCloses) {
  ChildProcess c = shell("echo a");
  EXPECT_FALSE(c.read_until([](const std::string& s) { return s.find('b') != s.npos; }, guard()));
  EXPECT_EQ(c.output(), "a\n");
  EXPECT_TRUE(c.read_until([](const std::string& s) { return s == "a\n"; }, guard()));
}

TEST(ChildProcess, StderrToAFileOrIntoStdout) {
  const TempDir dir;
  ChildOptions to_file;
  to_file.stderr_to = ChildStderr::kFile;
  to_file.stderr_file = dir.path() / "stderr";
  ChildProcess c = shell("echo out; echo err >&2", to_file);
  ASSERT_TRUE(c.wait_exit(guard()));
  EXPECT_EQ(c.output(), "out\n");
  EXPECT_EQ(c.stderr_text(), "err\n");

  ChildOptions merged;
  merged.stderr_to = ChildStderr::kStdout;
  ChildProcess m = shell("echo out; echo err >&2; echo again", merged);
  ASSERT_TRUE(m.wait_exit(guard()));
  EXPECT_EQ(m.output(), "out\nerr\nagain\n");
  EXPECT_EQ(m.stderr_text(), "");
}

TEST(ChildProcess, EnvironmentIsOursWithChanges) {
  ::setenv("NETAGG_CHILD_TEST_KEPT", "kept", 1);
  ::setenv("NETAGG_CHILD_TEST_GONE", "gone", 1);
  ::setenv("NETAGG_CHILD_TEST_REPLACED", "old", 1);
  ChildOptions o;
  o.unset_env = {"NETAGG_CHILD_TEST_GONE"};
  o.set_env = {"NETAGG_CHILD_TEST_REPLACED=new", "NETAGG_CHILD_TEST_ADDED=added"};
  ChildProcess c = shell(
      "echo $NETAGG_CHILD_TEST_KEPT ${NETAGG_CHILD_TEST_GONE-unset} $NETAGG_CHILD_TEST_REPLACED "
      "$NETAGG_CHILD_TEST_ADDED",
      o);
  ASSERT_TRUE(c.wait_exit(guard()));
  EXPECT_EQ(c.output(), "kept unset new added\n");
  for (const char* name :
       {"NETAGG_CHILD_TEST_KEPT", "NETAGG_CHILD_TEST_GONE", "NETAGG_CHILD_TEST_REPLACED"})
    ::unsetenv(name);
}

TEST(ChildProcess, AProgramThatCannotStartThrows) {
  try {
    ChildProcess c({"/nonexistent/netagg-program"});
    ADD_FAILURE() << "started";
  } catch (const std::system_error& e) {
    EXPECT_EQ(e.code(), std::errc::no_such_file_or_directory);
    EXPECT_THAT(e.what(), HasSubstr("cannot start /nonexistent/netagg-program"));
  }
  try {
    ChildProcess c({"netagg-no-such-program"});
    ADD_FAILURE() << "started";
  } catch (const std::system_error& e) {
    EXPECT_THAT(e.what(), HasSubstr("netagg-no-such-program: not found in PATH"));
  }
  const TempDir dir;
  const fs::path not_executable = dir.path() / "script";
  std::ofstream(not_executable) << "#!/bin/sh\n";
  EXPECT_THROW(ChildProcess({not_executable.string()}), std::system_error);
}

TEST(ChildProcess, WaitExitHasADeadlineAndSignalsStopIt) {
  ChildProcess c({"sleep", "30"});
  const auto t0 = Clock::now();
  EXPECT_FALSE(c.wait_exit(Clock::now() + 100ms));
  EXPECT_GE(Clock::now() - t0, 100ms);
  EXPECT_FALSE(c.poll_exit());
  c.signal(SIGTERM);
  ASSERT_TRUE(c.wait_exit(guard()));
  EXPECT_EQ(c.term_signal(), SIGTERM);
  c.signal(SIGKILL);  // after the exit: nothing is signalled
}

TEST(ChildProcess, AChildWritingMoreThanThePipeHoldsExits) {
  ChildProcess c = shell("head -c 1000000 /dev/zero");
  ASSERT_TRUE(c.wait_exit(guard()));
  EXPECT_TRUE(c.succeeded());
  EXPECT_EQ(c.output().size(), 1000000u);
}

TEST(ChildProcess, KilledWhenTheObjectGoes) {
  pid_t pid;
  {
    ChildProcess c({"sleep", "30"});
    pid = c.pid();
    EXPECT_FALSE(is_dead(pid));
  }
  EXPECT_TRUE(is_dead(pid));
}

TEST(ChildProcess, KilledWhenItsOwnerDies) {
  // An owner that dies without running destructors, as a crashed or SIGKILLed launcher does.
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  const pid_t owner = ::fork();
  ASSERT_GE(owner, 0);
  if (owner == 0) {
    ::close(fds[0]);
    ChildProcess c({"sleep", "30"});
    const pid_t pid = c.pid();
    [[maybe_unused]] auto n = ::write(fds[1], &pid, sizeof pid);
    ::_exit(0);
  }
  ::close(fds[1]);
  pid_t child = -1;
  ASSERT_EQ(::read(fds[0], &child, sizeof child), static_cast<ssize_t>(sizeof child));
  ::close(fds[0]);
  ::waitpid(owner, nullptr, 0);
  EXPECT_TRUE(becomes_dead(child));
}

TEST(ChildProcess, MovedChildrenKeepRunning) {
  std::vector<ChildProcess> children;
  for (int i = 0; i < 4; ++i) children.push_back(ChildProcess({"sleep", "30"}));
  std::vector<pid_t> pids;
  for (const auto& c : children) pids.push_back(c.pid());
  ChildProcess moved = std::move(children[0]);
  EXPECT_EQ(moved.pid(), pids[0]);
  EXPECT_EQ(children[0].pid(), -1);
  children[1] = std::move(moved);  // the child that was there is killed
  EXPECT_TRUE(is_dead(pids[1]));
  EXPECT_EQ(children[1].pid(), pids[0]);
  for (pid_t pid : {pids[0], pids[2], pids[3]}) EXPECT_FALSE(is_dead(pid));
  children.clear();
  for (pid_t pid : pids) EXPECT_TRUE(is_dead(pid));
}

TEST(ChildProcess, WaitForOutputServesSeveralChildren) {
  ChildProcess slow = shell("sleep 0.2; echo slow");
  ChildProcess fast = shell("echo fast; exec sleep 30");
  ChildProcess quiet = shell("exec sleep 30");
  const std::vector<ChildProcess*> all{&slow, &fast, &quiet};
  const auto deadline = guard();
  while ((slow.output().empty() || fast.output().empty()) && Clock::now() < deadline)
    wait_for_output(all, 50ms);
  EXPECT_EQ(slow.output(), "slow\n");
  EXPECT_EQ(fast.output(), "fast\n");
  EXPECT_EQ(quiet.output(), "");
  // Nothing to read: the wait takes its timeout.
  const auto t0 = Clock::now();
  wait_for_output(std::vector<ChildProcess*>{&quiet}, 100ms);
  EXPECT_GE(Clock::now() - t0, 100ms);
}

TEST(FreeLoopbackPorts, DifferAndCanBeBound) {
  const std::vector<std::uint16_t> ports = free_loopback_ports(8);
  ASSERT_EQ(ports.size(), 8u);
  EXPECT_EQ(std::set<std::uint16_t>(ports.begin(), ports.end()).size(), 8u);
  for (std::uint16_t port : ports) {
    EXPECT_NE(port, 0);
    const int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    ASSERT_GE(fd, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(port);
    EXPECT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0) << "port " << port;
    ::close(fd);
  }
  EXPECT_TRUE(free_loopback_ports(0).empty());
}

}  // namespace
}  // namespace netagg::sim
