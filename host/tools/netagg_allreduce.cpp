// SPDX-License-Identifier: Apache-2.0
// netagg-allreduce: one worker of an all-reduce through an in-network aggregator. It all-reduces
// a deterministic pseudo-random tensor and checks the result against a reference it computes
// locally from every worker's input.
//
//   netagg-allreduce --rank R --job FILE [options]   rank and job from the command line
//   netagg-allreduce [options]                       from the environment (NETAGG_RANK, ...)
//
// --json prints the report as one JSON line, for a launcher that runs several workers and
// merges their reports. Exit status: 0 ok, 1 wrong result, 2 usage or configuration error, 3 the
// all-reduce failed (timeout, transport).
#include <signal.h>
#include <sys/resource.h>

#include <algorithm>
#include <bit>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "allreduce_report.hpp"
#include "netagg/codec.hpp"
#include "netagg/communicator.hpp"
#include "netagg/config.hpp"
#include "netagg/error.hpp"
#include "netagg/exact.hpp"
#include "netagg/job.hpp"
#include "netagg/transport.hpp"

namespace {

using json = nlohmann::json;
using netagg::Endpoint;
using netagg::Errc;
using netagg::Error;
using netagg::report::median;
using netagg::report::Mismatch;
using netagg::report::mismatch_text;
using netagg::report::rate_text;

constexpr int kExitOk = 0;
constexpr int kExitMismatch = 1;
using netagg::report::kExitUsage;
constexpr int kExitFailed = 3;

// CPU seconds (user + system) of every thread of this process so far.
double process_cpu_seconds() {
  rusage usage{};
  ::getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
         static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) * 1e-6;
}

struct Options : netagg::report::TensorOptions {
  int rank = -1;
  std::string job_file;
  std::string target = "switch-sim";
  std::string transport;             // empty: the config's (NETAGG_TRANSPORT, else udp)
  std::optional<std::string> epoch;  // none: NETAGG_EPOCH, else the launcher's run id
  std::optional<double> pace_gbps;   // unset: NETAGG_PACE_GBPS (or the config file's), else off
  std::string fallback;              // empty: NETAGG_FALLBACK (or the config file's), else gloo
  std::string store;                 // empty: NETAGG_STORE (or the config file's)
  std::optional<double> fallback_after_ms;
  bool json = false;
  std::int64_t die_after_packets = -1;  // hidden: SIGKILL itself mid-way, as a crashed worker
  bool wrong_input = false;             // hidden: an input the others' references do not expect
};

[[noreturn]] void usage_error(const std::string& what) { throw Error(Errc::kConfig, what); }

// ---- the test tensor -------------------------------------------------------------------------

std::uint64_t mix(std::uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// Element `index` of worker `rank`'s input: a pure function, so every worker can compute every
// other worker's input and the exact sum without talking to anybody.
std::uint64_t element_bits(std::uint64_t seed, int rank, std::uint64_t index) {
  return mix(mix(mix(seed + 0x9E3779B97F4A7C15ull) ^ static_cast<std::uint64_t>(rank)) + index);
}

std::int32_t int32_input(std::uint64_t seed, int rank, std::uint64_t index) {
  // Full range, so that the sum wraps around: the switch adds modulo 2^32 and so must we.
  return static_cast<std::int32_t>(
      static_cast<std::uint32_t>(element_bits(seed, rank, index) >> 32));
}

float fp32_input(std::uint64_t seed, int rank, std::uint64_t index) {
  // Uniform in [-1, 1) times 2^(k - 10), k in [0, 19] changing every 1024 elements: chunks with
  // different magnitudes exercise the block exponents. The product is exact (a power of two, far
  // from overflow and underflow): a multiplication, not ldexp, which the verification would call
  // for every element of every rank.
  const auto k = mix(seed ^ (index >> 10) ^ 0xA5A5A5A5ull) % 20;
  const double u = static_cast<double>(element_bits(seed, rank, index) >> 40) / (1 << 23) - 1.0;
  return static_cast<float>(u * (static_cast<double>(1u << k) * 0x1p-10));
}

// ---- verification ----------------------------------------------------------------------------

std::optional<Mismatch> verify_int32(std::span<const std::int32_t> got, std::uint64_t seed,
                                     int world) {
  for (std::uint64_t i = 0; i < got.size(); ++i) {
    std::uint32_t want = 0;
    for (int r = 0; r < world; ++r) want += static_cast<std::uint32_t>(int32_input(seed, r, i));
    if (static_cast<std::uint32_t>(got[i]) != want)
      return Mismatch{i, double(got[i]), double(static_cast<std::int32_t>(want)), 0};
  }
  return std::nullopt;
}

// Block floating point: per chunk, the global exponent is the max of the workers' block
// exponents, and codec::error_bound(e, world) bounds each element's error against the exact sum.
// fp32 on the wire (an fp32 aggregator): world - 1 additions, each off by half an ulp of at
// most the sum of magnitudes. fp32-exact: the exact reference's bits.
std::optional<Mismatch> verify_fp32(std::span<const float> got, std::uint64_t seed, int world,
                                    std::size_t per_packet, netagg::FloatWire wire_format) {
  std::vector<std::vector<float>> inputs(world, std::vector<float>(per_packet));
  for (std::uint64_t base = 0; base < got.size(); base += per_packet) {
    const std::size_t n = std::min<std::uint64_t>(per_packet, got.size() - base);
    std::int16_t e = netagg::wire::kExponentNone;
    for (int r = 0; r < world; ++r) {
      for (std::size_t i = 0; i < n; ++i) inputs[r][i] = fp32_input(seed, r, base + i);
      e = std::max(e, netagg::codec::block_exponent(std::span<const float>(inputs[r].data(), n)));
    }
    if (wire_format == netagg::FloatWire::kFp32Exact) {
      // Exact fp32: bit for bit the reference's sum (netagg/exact.hpp), whatever the order.
      std::vector<std::span<const float>> views;
      for (int r = 0; r < world; ++r) views.emplace_back(inputs[r].data(), n);
      std::vector<float> want(n);
      netagg::exact::sum(views, want);
      for (std::size_t i = 0; i < n; ++i)
        if (std::bit_cast<std::uint32_t>(got[base + i]) != std::bit_cast<std::uint32_t>(want[i]))
          return Mismatch{base + i, got[base + i], want[i], 0};
      continue;
    }
    for (std::size_t i = 0; i < n; ++i) {
      double want = 0, magnitude = 0;
      for (int r = 0; r < world; ++r) {
        want += inputs[r][i];
        magnitude += std::fabs(inputs[r][i]);
      }
      const double g = got[base + i];
      double bound;
      if (wire_format == netagg::FloatWire::kBlockInt32) {
        if (e == netagg::wire::kExponentNonFinite) {
          if (std::isnan(g)) continue;
          return Mismatch{base + i, g, std::nan(""), 0};
        }
        bound = e == netagg::wire::kExponentNone ? 0.0 : netagg::codec::error_bound(e, world);
      } else {
        bound = ((world - 1) * magnitude + std::fabs(want)) * 0x1p-24;
      }
      if (!(std::fabs(g - want) <= bound)) return Mismatch{base + i, g, want, bound};
    }
  }
  return std::nullopt;
}

// ---- one worker ------------------------------------------------------------------------------

// Hidden test hook (--die-after-packets): the worker SIGKILLs itself once it has sent K
// packets, deterministically mid-way through an all-reduce, as a crashed worker would.
class DyingTransport final : public netagg::Transport {
 public:
  DyingTransport(std::unique_ptr<Transport> inner, std::int64_t packets)
      : inner_(std::move(inner)), left_(packets) {}
  void send(std::span<const std::span<const std::byte>> packets) override {
    if (static_cast<std::int64_t>(packets.size()) >= left_) {
      inner_->send(packets.first(static_cast<std::size_t>(left_)));
      std::fflush(nullptr);
      ::raise(SIGKILL);
    }
    left_ -= static_cast<std::int64_t>(packets.size());
    inner_->send(packets);
  }
  std::size_t receive(netagg::Duration t, const PacketHandler& h) override {
    return inner_->receive(t, h);
  }
  std::string name() const override { return inner_->name(); }
  netagg::TransportCounters counters() const override { return inner_->counters(); }

 private:
  std::unique_ptr<Transport> inner_;
  std::int64_t left_;
};

bool is_address(const std::string& target) { return target.find(':') != std::string::npos; }

void check_target(const Options& o) {
  if (o.target == "switch-sim" || o.target == "fpga-sim" || is_address(o.target)) return;
  usage_error(fmt::format("--target: '{}' is not switch-sim, fpga-sim or IP:PORT", o.target));
}

// What fp32 travels as when the command line does not say: summed exactly by the FPGA aggregator,
// else as int32 with a block exponent (the switch adds integers only).
netagg::FloatWire float_wire_of(const Options& o) {
  if (!o.float_wire.empty()) return netagg::parse_float_wire(o.float_wire);
  return o.target == "fpga-sim" ? netagg::FloatWire::kFp32Exact : netagg::FloatWire::kBlockInt32;
}

netagg::Config worker_config(const Options& o) {
  netagg::Config cfg;
  bool from_env = true;  // Config::from_env applied the whole environment
  if (is_address(o.target)) {
    // The command line names the aggregator: it overrides the environment's.
    ::setenv("NETAGG_AGGREGATOR", o.target.c_str(), 1);
  }
  if (o.transport == "dpdk" && !o.job_file.empty()) {
    // DPDK takes its options from NETAGG_DPDK_* (or a NETAGG_CONFIG file): read the job and
    // rank through the environment too, so that all of them apply.
    if (o.rank < 0) usage_error("--job needs --rank");
    ::setenv("NETAGG_JOB_FILE", o.job_file.c_str(), 1);
    ::setenv("NETAGG_RANK", std::to_string(o.rank).c_str(), 1);
    ::setenv("NETAGG_TRANSPORT", "dpdk", 1);
    cfg = netagg::Config::from_env();
  } else if (!o.job_file.empty()) {
    if (o.rank < 0) usage_error("--job needs --rank");
    from_env = false;
    cfg.job = netagg::load_job(o.job_file);
    cfg.rank = o.rank;
    if (is_address(o.target)) {
      cfg.aggregator = Endpoint::parse(o.target, "--target");
      check_host_address(cfg.aggregator, "--target");
    }
  } else {
    if (o.rank >= 0) ::setenv("NETAGG_RANK", std::to_string(o.rank).c_str(), 1);
    if (!o.transport.empty()) ::setenv("NETAGG_TRANSPORT", o.transport.c_str(), 1);
    cfg = netagg::Config::from_env();
  }
  if (!o.transport.empty()) cfg.transport = o.transport;
  cfg.float_wire = float_wire_of(o);
  // --timeout is at most a day (its check), so the conversion cannot overflow.
  cfg.job_timeout =
      std::chrono::duration_cast<netagg::Duration>(std::chrono::duration<double>(o.timeout_s));
  cfg.adaptive_retransmit = o.retransmit == "adaptive";
  cfg.retransmit_timeout = std::chrono::duration_cast<netagg::Duration>(
      std::chrono::duration<double, std::milli>(o.retransmit_timeout_ms));
  cfg.retransmit_timeout = std::min(cfg.retransmit_timeout, cfg.job_timeout);
  cfg.max_retransmit_timeout =
      std::clamp(cfg.max_retransmit_timeout, cfg.retransmit_timeout, cfg.job_timeout);
  cfg.loss = o.loss;
  cfg.loss_seed = o.loss_seed.value_or(o.seed);
  // The run's switches and epoch from the environment apply with --job too; --epoch wins.
  if (!from_env) netagg::apply_run_environment(cfg);
  if (o.epoch) {  // given, even empty: parsed (an empty one is refused, as NETAGG_EPOCH="" is)
    cfg.epoch = netagg::parse_epoch(*o.epoch, "--epoch");
    netagg::check_epoch(*cfg.epoch, "--epoch");
  }
  if (o.pace_gbps) cfg.pace_gbps = *o.pace_gbps;
  if (!o.fallback.empty()) cfg.fallback = netagg::parse_fallback(o.fallback);
  if (!o.store.empty()) cfg.store = o.store;
  if (o.fallback_after_ms)
    cfg.fallback_after = std::chrono::duration_cast<netagg::Duration>(
        std::chrono::duration<double, std::milli>(*o.fallback_after_ms));
  else if (cfg.fallback_after >= cfg.job_timeout)
    cfg.fallback_after = cfg.job_timeout / 2;  // a short --timeout: the fallback still comes first
  // --timeout is how long this tool waits for anything, the other workers in a fallback too.
  cfg.fallback_timeout = std::min(cfg.fallback_timeout, cfg.job_timeout);
  cfg.validate();
  return cfg;
}

std::string_view errc_name(Errc c) {
  switch (c) {
    case Errc::kConfig:
      return "config";
    case Errc::kTimeout:
      return "timeout";
    case Errc::kTransport:
      return "transport";
    case Errc::kUnsupported:
      return "unsupported";
    case Errc::kInvalidArgument:
      return "invalid_argument";
    case Errc::kRejected:
      return "rejected";
  }
  return "unknown";
}

int run_worker(const Options& o) {
  netagg::Config cfg = worker_config(o);
  const int rank = cfg.rank;
  const int world = static_cast<int>(cfg.job.world_size());
  const bool is_float = o.dtype == "fp32";

  json out{{"rank", rank},
           {"target", o.target},
           {"dtype", o.dtype},
           {"float_wire", is_float ? std::string(netagg::to_string(cfg.float_wire)) : "int32"},
           {"workers", world},
           {"count", o.count},
           {"bytes", o.count * 4},
           {"elements_per_packet", cfg.job.elements_per_packet},
           {"window", cfg.job.slot_count},
           {"loss", o.loss},
           {"pace_gbps", cfg.pace_gbps},
           {"iterations", o.iterations}};
  std::vector<double> seconds;
  double allreduce_cpu = 0;  // CPU seconds of the process inside the timed all-reduces
  std::optional<Mismatch> mismatch;
  int status = kExitOk;

  std::unique_ptr<netagg::Communicator> comm;
  try {
    auto transport = netagg::make_transport(cfg);
    if (o.die_after_packets >= 0)
      transport = std::make_unique<DyingTransport>(std::move(transport), o.die_after_packets);
    comm = std::make_unique<netagg::Communicator>(cfg, std::move(transport));

    std::vector<std::int32_t> ints(is_float ? 0 : o.count);
    std::vector<float> floats(is_float ? o.count : 0);
    // A one-element all-reduce before each timed one lines the workers up, so the time is the
    // all-reduce's and not the slowest worker's start-up or verification.
    const auto barrier = [&] {
      std::int32_t one = 1;
      comm->allreduce(std::span<std::int32_t>(&one, 1));
      if (one != world)
        throw Error(Errc::kTransport,
                    fmt::format("barrier all-reduce summed to {}, expected {}", one, world));
    };
    for (int it = 0; it < o.iterations && !mismatch; ++it) {
      // --wrong-input (a test of the verification itself): another seed than the reference's.
      const std::uint64_t input_seed = o.wrong_input ? o.seed + 1 : o.seed;
      if (is_float)
        for (std::uint64_t i = 0; i < o.count; ++i) floats[i] = fp32_input(input_seed, rank, i);
      else
        for (std::uint64_t i = 0; i < o.count; ++i) ints[i] = int32_input(input_seed, rank, i);
      barrier();
      // --stagger-ms: rank r starts its all-reduce r times that late (other arrival orders)
      if (o.stagger_ms > 0)
        std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(o.stagger_ms * rank));
      const double cpu0 = process_cpu_seconds();
      const auto t0 = std::chrono::steady_clock::now();
      if (is_float)
        comm->allreduce(std::span<float>(floats));
      else
        comm->allreduce(std::span<std::int32_t>(ints));
      const auto t1 = std::chrono::steady_clock::now();
      allreduce_cpu += process_cpu_seconds() - cpu0;
      seconds.push_back(std::chrono::duration<double>(t1 - t0).count());
      mismatch =
          is_float ? verify_fp32(floats, o.seed, world, cfg.job.elements_per_packet, cfg.float_wire)
                   : verify_int32(ints, o.seed, world);
    }
    if (mismatch) {
      status = kExitMismatch;
      out["verification"] = "mismatch";
      out["mismatch"] = netagg::report::to_json(*mismatch);
    } else {
      out["verification"] = "ok";
    }
    // The last result's bits, to compare runs: FNV-1a 64 over its elements' bytes.
    const auto* bytes = is_float ? reinterpret_cast<const unsigned char*>(floats.data())
                                 : reinterpret_cast<const unsigned char*>(ints.data());
    std::uint64_t digest = 0xcbf29ce484222325ull;
    for (std::size_t i = 0; i < 4 * o.count; ++i) digest = (digest ^ bytes[i]) * 0x100000001b3ull;
    out["result_digest"] = fmt::format("{:016x}", digest);
  } catch (const Error& e) {
    status = e.code() == Errc::kConfig || e.code() == Errc::kUnsupported ? kExitUsage : kExitFailed;
    out["verification"] = "error";
    out["error"] = e.what();
    out["error_kind"] = errc_name(e.code());
    // With --json the error travels in the JSON (the launcher prints it once, per rank).
    if (!o.json)
      std::fprintf(stderr, "netagg-allreduce: rank %d: error (%s): %s\n", rank,
                   std::string(errc_name(e.code())).c_str(), e.what());
  }

  const double best = seconds.empty() ? 0 : *std::min_element(seconds.begin(), seconds.end());
  out["seconds_all"] = seconds;
  out["seconds"] = best;
  out["seconds_median"] = median(seconds);
  out["goodput_gbps"] = best > 0 ? o.count * 4 * 8 / best / 1e9 : 0.0;
  out["ate_per_second"] = best > 0 ? o.count / best : 0.0;
  if (comm) {
    const auto s = comm->stats();
    const auto t = comm->transport_counters();
    const auto ms = [](netagg::Duration d) {
      return std::chrono::duration<double, std::milli>(d).count();
    };
    out["retransmissions"] = s.retransmissions;
    out["spurious_retransmissions"] = s.spurious_retransmissions;
    out["overtaken_retransmissions"] = s.overtaken_retransmissions;
    out["rtt_samples"] = s.rtt_samples;
    out["rto_ms"] = ms(s.rto);
    out["srtt_ms"] = ms(s.srtt);
    out["rttvar_ms"] = ms(s.rttvar);
    out["start_rto_ms"] = ms(s.start_rto);
    out["packets_sent"] = s.packets_sent;
    out["duplicates"] = s.duplicates;
    out["foreign_epoch"] = s.foreign_epoch;
    out["notices"] = s.notices;
    out["notices_ignored"] = s.notices_ignored;
    out["recovery_resends"] = s.recovery_resends;
    out["congestion_control"] = cfg.congestion_control;
    out["cwnd"] = s.cwnd;
    out["window_cuts"] = s.window_cuts;
    out["ce_results"] = s.ce_results;
    out["rejected"] = s.rejected;
    out["injected_drops"] = t.injected_drops;
    out["dropped_foreign"] = t.dropped_foreign;
    // The host fallback (docs/fallback.md): how much of the run the workers finished themselves.
    const auto f = comm->fallback_stats();
    out["fallback"] = comm->has_fallback() ? std::string(netagg::to_string(cfg.fallback)) : "none";
    out["fallback_sessions"] = f.sessions;
    out["fallback_chunks"] = f.host_packets;
    out["fallback_copied_results"] = f.shared_results;
    out["fallback_resumed"] = f.resumed;
    out["fallback_seconds"] = f.seconds;
    out["fallback_to_hosts"] = f.to_hosts;
    out["fallback_to_network"] = f.to_network;
    out["fallback_probes"] = f.probes;
    out["host_results"] = s.host_results;
  }
  // CPU time of the whole process (set-up, verification and all), and of its timed all-reduces
  // alone (the transport and the engine, without input generation and checks), for packets per
  // CPU second.
  out["cpu_seconds"] = process_cpu_seconds();
  out["allreduce_cpu_seconds"] = allreduce_cpu;

  if (o.json) {
    std::printf("%s\n", out.dump().c_str());
  } else {
    std::printf("netagg-allreduce: rank %d of %d, %s, %s, %llu elements\n", rank, world,
                o.target.c_str(), o.dtype.c_str(), static_cast<unsigned long long>(o.count));
    if (out["verification"] == "ok") std::printf("verification: ok\n");
    if (mismatch) std::printf("%s\n", mismatch_text(*mismatch).c_str());
    if (!seconds.empty())
      std::printf("time: %.6f s (best of %zu, median %.6f s)\n%s\nretransmissions: %llu\n", best,
                  seconds.size(), median(seconds), rate_text(best, o.count * 4, o.count).c_str(),
                  static_cast<unsigned long long>(out.value("retransmissions", 0ull)));
  }
  std::fflush(stdout);
  return status;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  CLI::App app{
      "netagg-allreduce: one worker of an all-reduce of a test tensor through an in-network "
      "aggregator; it verifies the result.\nRank and job: --rank R --job FILE, or NETAGG_* "
      "variables."};
  app.add_option("--rank", o.rank, "this worker's rank");
  app.add_option("--job", o.job_file, "job description file");
  app.add_option("--target", o.target,
                 "the aggregator: IP:PORT (instead of the job's), or which one the job's is: "
                 "switch-sim (the switch model) or fpga-sim (the FPGA aggregator, which adds fp32 "
                 "as is)")
      ->capture_default_str();
  app.add_option("--transport", o.transport,
                 "udp or dpdk (DPDK options from NETAGG_DPDK_* or NETAGG_CONFIG); default: the "
                 "config's, else udp")
      ->check(CLI::IsMember({"udp", "dpdk"}));
  app.add_option("--epoch", o.epoch,
                 "the run's token, the same on every worker of the run and new for each run "
                 "(decimal or 0x hex); default: NETAGG_EPOCH, else derived from the launcher's "
                 "run id (mpirun, torchrun, srun)");
  app.add_option("--pace-gbps", o.pace_gbps,
                 "send at most G Gbit/s of UDP payload (netagg header and data), all trees "
                 "together, each tree its share by weight; 0: unpaced. Default: "
                 "NETAGG_PACE_GBPS, else unpaced")
      ->check(CLI::Range(0.0, 1e4));
  netagg::report::add_tensor_options(app, o);
  app.add_option("--fallback", o.fallback,
                 "when the aggregator stops answering: gloo (finish on the hosts, "
                 "docs/fallback.md) or off (fail); default NETAGG_FALLBACK, else gloo")
      ->check(CLI::IsMember({"gloo", "off"}));
  app.add_option("--store", o.store,
                 "the host fallback's rendezvous, file:DIR (a directory every worker sees); "
                 "default NETAGG_STORE");
  app.add_option("--fallback-after-ms", o.fallback_after_ms,
                 "the fallback starts after this long without a result (default 1000)")
      ->check(CLI::PositiveNumber);
  app.add_flag("--json", o.json, "the report as one JSON line on stdout");
  // Test hooks, hidden from --help.
  app.add_option("--die-after-packets", o.die_after_packets)->group("");
  app.add_flag("--wrong-input", o.wrong_input)->group("");
  if (const auto exit_code = netagg::report::parse_command_line(app, argc, argv)) return *exit_code;

  try {
    check_target(o);
    return run_worker(o);
  } catch (const Error& e) {
    std::fprintf(stderr, "netagg-allreduce: %s\n", e.what());
    return e.code() == Errc::kConfig || e.code() == Errc::kUnsupported ? kExitUsage : kExitFailed;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "netagg-allreduce: %s\n", e.what());
    return kExitFailed;
  }
}
