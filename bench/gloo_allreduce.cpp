// SPDX-License-Identifier: Apache-2.0
// The peer netagg is measured against: Gloo's ring all-reduce (Debian libgloo-dev) of an fp32
// tensor, sum, over Gloo's TCP transport on loopback with a FileStore rendezvous.
//
// Two ways to run it:
//   gloo_allreduce --ranks N --bytes 4096,1048576      starts N rank processes itself
//   gloo_allreduce --rank R --size N --store DIR ...    one rank, started by an external launcher
// Rank 0 prints one JSON object per size on its own line (JSON Lines):
//   {"peer":"gloo-ring","ranks":N,"bytes":B,"seconds_median":..,"seconds_min":..,...}
//
// We use the current `gloo::allreduce` API with the ring algorithm because that is what PyTorch's
// Gloo process group calls for dense CPU tensors, and the all-reduce runs in place as it does
// there. The time of one iteration is the slowest rank's time: every iteration starts after a
// barrier and the per-rank times are max-reduced before the statistics are taken.

#include <gloo/allreduce.h>
#include <gloo/barrier.h>
#include <gloo/math.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/transport/tcp/device.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <numeric>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

struct Options {
  int ranks = 0;  // launcher mode: start this many rank processes
  int rank = -1;  // rank mode: this process's rank
  int size = 0;   // rank mode: world size
  std::string store_dir;
  std::vector<std::uint64_t> sizes_bytes{4096, 65536, 1 << 20, 16 << 20, 64 << 20};
  int warmup = 10;
  int iterations = 20;
  double timeout_seconds = 120;
  std::string hostname = "127.0.0.1";
};

using Clock = std::chrono::steady_clock;

// Small integers, so the fp32 sum over ranks is exact and the check below can compare with ==.
float input_value(int rank, std::size_t index) {
  return static_cast<float>((rank + 1) * static_cast<int>(index % 251 + 1));
}

float expected_sum(int world_size, std::size_t index) {
  return static_cast<float>(world_size * (world_size + 1) / 2 * static_cast<int>(index % 251 + 1));
}

void barrier(const std::shared_ptr<gloo::Context>& context) {
  gloo::BarrierOptions options(context);
  gloo::barrier(options);
}

template <typename T>
void allreduce(const std::shared_ptr<gloo::Context>& context, T* data, std::size_t count,
               void (*reduce)(void*, const void*, const void*, std::size_t)) {
  gloo::AllreduceOptions options(context);
  options.setAlgorithm(gloo::AllreduceOptions::Algorithm::RING);
  options.setOutput(data, count);
  options.setReduceFunction(reduce);
  gloo::allreduce(options);
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const std::size_t mid = values.size() / 2;
  return values.size() % 2 ? values[mid] : (values[mid - 1] + values[mid]) / 2;
}

// Runs one rank: rendezvous, then every size. Returns the process exit status.
int run_rank(const Options& options) {
  gloo::transport::tcp::attr attr;
  attr.hostname = options.hostname;
  attr.ai_family = AF_INET;
  auto device = gloo::transport::tcp::CreateDevice(attr);
  gloo::rendezvous::FileStore store(options.store_dir);
  auto context = std::make_shared<gloo::rendezvous::Context>(options.rank, options.size);
  context->setTimeout(std::chrono::milliseconds(static_cast<long>(options.timeout_seconds * 1e3)));
  context->connectFullMesh(store, device);

  int mismatches_total = 0;
  for (const std::uint64_t bytes : options.sizes_bytes) {
    const std::size_t count = bytes / sizeof(float);
    std::vector<float> pristine(count);
    for (std::size_t i = 0; i < count; ++i) pristine[i] = input_value(options.rank, i);
    std::vector<float> data(count);

    std::vector<double> seconds;
    seconds.reserve(options.iterations);
    double mismatches = 0;
    for (int iteration = -options.warmup; iteration < options.iterations; ++iteration) {
      // In place, as a training framework calls it; refilling keeps the result checkable.
      std::copy(pristine.begin(), pristine.end(), data.begin());
      barrier(context);
      const auto start = Clock::now();
      allreduce(context, data.data(), count, &gloo::sum<float>);
      const auto stop = Clock::now();
      if (iteration >= 0) seconds.push_back(std::chrono::duration<double>(stop - start).count());

      for (std::size_t i = 0; i < count; ++i) {
        if (data[i] == expected_sum(options.size, i)) continue;
        if (mismatches == 0) {
          std::cerr << "gloo_allreduce: rank " << options.rank << ", " << bytes
                    << " bytes, iteration " << iteration << ": element " << i << " is " << data[i]
                    << ", expected " << expected_sum(options.size, i) << "\n";
        }
        ++mismatches;
      }
    }

    // The slowest rank sets the time of an iteration; mismatches are summed over ranks.
    allreduce(context, seconds.data(), seconds.size(), &gloo::max<double>);
    allreduce(context, &mismatches, 1, &gloo::sum<double>);
    mismatches_total += mismatches > 0;

    if (options.rank == 0) {
      const double seconds_median = median(seconds);
      nlohmann::json result = {
          {"peer", "gloo-ring"},
          {"algorithm", "gloo::allreduce ring, in place, tcp transport"},
          {"ranks", options.size},
          {"dtype", "fp32"},
          {"bytes", count * sizeof(float)},
          {"count", count},
          {"warmup", options.warmup},
          {"iterations", options.iterations},
          {"seconds_median", seconds_median},
          {"seconds_min", *std::min_element(seconds.begin(), seconds.end())},
          {"seconds_mean", std::accumulate(seconds.begin(), seconds.end(), 0.0) / seconds.size()},
          {"goodput_gbps", count * sizeof(float) * 8 / seconds_median / 1e9},
          {"verification", mismatches == 0 ? "ok" : "mismatch"},
          {"seconds_all", seconds},
      };
      std::cout << result.dump() << std::endl;
    }
  }
  return mismatches_total == 0 ? 0 : 1;
}

// The launcher's children, for the signal handler: a SIGINT/SIGTERM to the launcher (Ctrl-C,
// `timeout`) stops the ranks too instead of leaving them to wait for each other.
constexpr int kMaxRanks = 64;
pid_t g_children[kMaxRanks];
volatile sig_atomic_t g_stop_signal = 0;

void kill_children() {
  for (const pid_t child : g_children) {
    if (child > 0) kill(child, SIGTERM);
  }
}

void on_stop_signal(int signal_number) {
  g_stop_signal = signal_number;
  kill_children();
}

// Starts `ranks` copies of this program in rank mode and waits for all of them. If one fails,
// the others are stopped rather than left waiting for their peer until the timeout.
int launch_ranks(const Options& options) {
  std::error_code error;
  const std::string self = std::filesystem::read_symlink("/proc/self/exe", error);
  if (error) {
    std::cerr << "gloo_allreduce: cannot find this program: " << error.message() << "\n";
    return 1;
  }
  char store_template[] = "/tmp/gloo_allreduce.XXXXXX";
  if (mkdtemp(store_template) == nullptr) {
    std::perror("gloo_allreduce: mkdtemp");
    return 1;
  }
  const std::string store_dir = store_template;

  std::string sizes;
  for (const std::uint64_t bytes : options.sizes_bytes) {
    sizes += (sizes.empty() ? "" : ",") + std::to_string(bytes);
  }

  // Signals stay blocked while a child is forked and recorded, so the handler sees every child.
  sigset_t stop_signals, previous_mask;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGHUP);
  struct sigaction action {};
  action.sa_handler = on_stop_signal;
  action.sa_mask = stop_signals;
  for (const int signal_number : {SIGINT, SIGTERM, SIGHUP}) {
    sigaction(signal_number, &action, nullptr);
  }

  int started = 0;
  for (int rank = 0; rank < options.ranks && g_stop_signal == 0; ++rank) {
    std::vector<std::string> args = {self,
                                     "--rank",
                                     std::to_string(rank),
                                     "--size",
                                     std::to_string(options.ranks),
                                     "--store",
                                     store_dir,
                                     "--bytes",
                                     sizes,
                                     "--warmup",
                                     std::to_string(options.warmup),
                                     "--iterations",
                                     std::to_string(options.iterations),
                                     "--timeout",
                                     std::to_string(options.timeout_seconds),
                                     "--hostname",
                                     options.hostname};
    sigprocmask(SIG_BLOCK, &stop_signals, &previous_mask);
    const pid_t pid = fork();
    if (pid == 0) {
      for (const int signal_number : {SIGINT, SIGTERM, SIGHUP}) signal(signal_number, SIG_DFL);
      sigprocmask(SIG_SETMASK, &previous_mask, nullptr);
      std::vector<char*> argv;
      for (auto& arg : args) argv.push_back(arg.data());
      argv.push_back(nullptr);
      execv(self.c_str(), argv.data());
      std::perror("gloo_allreduce: execv");
      _exit(127);
    }
    if (pid > 0) g_children[started++] = pid;
    sigprocmask(SIG_SETMASK, &previous_mask, nullptr);
    if (pid < 0) {
      std::perror("gloo_allreduce: fork");
      kill_children();
      break;
    }
  }

  int status_total = started == options.ranks ? 0 : 1;
  bool stopping = status_total != 0;
  for (int running = started; running > 0;) {
    int status = 0;
    const pid_t pid = waitpid(-1, &status, 0);
    if (pid < 0) {
      if (errno == EINTR) continue;
      break;
    }
    pid_t* const child = std::find(g_children, g_children + started, pid);
    if (child == g_children + started) continue;
    const long rank = child - g_children;
    sigprocmask(SIG_BLOCK, &stop_signals, &previous_mask);
    *child = -1;
    sigprocmask(SIG_SETMASK, &previous_mask, nullptr);
    --running;
    const bool ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
    if (!ok && !stopping && g_stop_signal == 0) {
      std::cerr << "gloo_allreduce: rank " << rank << " failed ("
                << (WIFEXITED(status) ? "exit " + std::to_string(WEXITSTATUS(status))
                                      : "signal " + std::to_string(WTERMSIG(status)))
                << "), stopping the other ranks\n";
      kill_children();
      stopping = true;
    }
    if (!ok) status_total = 1;
  }
  std::filesystem::remove_all(store_dir, error);
  if (g_stop_signal != 0) {
    std::cerr << "gloo_allreduce: stopped by signal " << g_stop_signal << "\n";
    return 128 + g_stop_signal;
  }
  return status_total;
}

}  // namespace

int main(int argc, char** argv) {
  Options options;
  CLI::App app{"Gloo ring all-reduce benchmark (fp32 sum, TCP on loopback), the peer of netagg"};
  auto* ranks_option = app.add_option("--ranks", options.ranks, "start this many rank processes")
                           ->check(CLI::Range(1, kMaxRanks));
  auto* rank_option =
      app.add_option("--rank", options.rank, "this process's rank (launched externally)")
          ->check(CLI::NonNegativeNumber);
  auto* size_option = app.add_option("--size", options.size, "world size (with --rank)")
                          ->check(CLI::Range(1, kMaxRanks));
  auto* store_option =
      app.add_option("--store", options.store_dir, "FileStore directory shared by all ranks")
          ->check(CLI::ExistingDirectory);
  ranks_option->excludes(rank_option)->excludes(size_option)->excludes(store_option);
  rank_option->needs(size_option)->needs(store_option);
  app.add_option("--bytes", options.sizes_bytes, "tensor sizes in bytes, multiples of 4")
      ->delimiter(',')
      ->check(CLI::PositiveNumber);
  app.add_option("--warmup", options.warmup, "untimed iterations per size")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--iterations", options.iterations, "timed iterations per size")
      ->check(CLI::Range(1, 1000000));
  app.add_option("--timeout", options.timeout_seconds, "Gloo operation timeout in seconds")
      ->check(CLI::PositiveNumber);
  app.add_option("--hostname", options.hostname, "address the TCP device binds to");
  CLI11_PARSE(app, argc, argv);

  for (const std::uint64_t bytes : options.sizes_bytes) {
    if (bytes % sizeof(float) != 0) {
      std::cerr << "gloo_allreduce: --bytes " << bytes << " is not a multiple of 4 (fp32)\n";
      return 2;
    }
  }
  if (options.rank >= 0) {
    if (options.rank >= options.size) {
      std::cerr << "gloo_allreduce: --rank " << options.rank << " is not below --size "
                << options.size << "\n";
      return 2;
    }
    try {
      return run_rank(options);
    } catch (const std::exception& error) {
      std::cerr << "gloo_allreduce: rank " << options.rank << ": " << error.what() << "\n";
      return 1;
    }
  }
  if (options.ranks == 0) {
    std::cerr << "gloo_allreduce: give --ranks N, or --rank R --size N --store DIR\n";
    return 2;
  }
  return launch_ranks(options);
}
