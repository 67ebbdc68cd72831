// SPDX-License-Identifier: Apache-2.0
// netagg's C++ API under an MPI launcher: every rank takes its rank, the world size and the run's
// epoch from the environment mpirun sets (OMPI_COMM_WORLD_RANK, OMPI_COMM_WORLD_SIZE,
// OMPI_MCA_ess_base_jobid; netagg::Config::from_env), all-reduces an int32 and a float32 tensor
// through the job's aggregator and checks the sums against its own computation of every rank's
// input. No MPI library is linked: MPI starts the processes, netagg all-reduces.
//
//   mpirun -np 4 -x NETAGG_JOB_FILE=job.json build/examples/mpi/allreduce_mpi --count 1000000
//
// Exit status: 0 the sums are right, 1 a sum is wrong, 2 configuration error, 3 the all-reduce
// failed (timeout, socket error).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <span>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include "netagg/communicator.hpp"
#include "netagg/config.hpp"
#include "netagg/error.hpp"

namespace {

// Rank r's input at index i: a function every rank can evaluate for every other rank.
std::int32_t int_input(int r, std::size_t i) {
  return static_cast<std::int32_t>(static_cast<std::uint32_t>(i) * 2654435761u +
                                   static_cast<std::uint32_t>(r) * 40503u);
}
float float_input(int r, std::size_t i) {
  const int k = static_cast<int>((i * 7 + static_cast<std::size_t>(r) * 13) % 2001) - 1000;
  return std::ldexp(static_cast<float>(k), -static_cast<int>(i % 11));  // varied magnitudes
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"all-reduce through netagg, launched by mpirun"};
  std::size_t count = 1 << 20;
  app.add_option("--count", count, "elements per tensor")->check(CLI::Range(1, 1 << 28));
  CLI11_PARSE(app, argc, argv);

  netagg::Config cfg;
  try {
    cfg = netagg::Config::from_env();  // rank, world size, job, epoch: see docs/configuration.md
  } catch (const netagg::Error& e) {
    std::fprintf(stderr, "allreduce_mpi: %s\n", e.what());
    return 2;
  }
  const int rank = cfg.rank;
  const int world = static_cast<int>(cfg.job.world_size());
  try {
    netagg::Communicator comm(cfg);

    std::vector<std::int32_t> ints(count);
    std::vector<float> floats(count);
    for (std::size_t i = 0; i < count; ++i) {
      ints[i] = int_input(rank, i);
      floats[i] = float_input(rank, i);
    }
    const auto start = std::chrono::steady_clock::now();
    auto pending = comm.allreduce_async(std::span<float>(floats));  // queued, runs second
    comm.allreduce(std::span<std::int32_t>(ints));
    pending.wait();
    const double seconds = seconds_since(start);

    std::size_t wrong_ints = 0;
    double worst = 0, largest = 0;
    for (std::size_t i = 0; i < count; ++i) {
      std::uint32_t s = 0;  // the aggregators add int32 modulo 2^32
      double f = 0;
      for (int r = 0; r < world; ++r) {
        s += static_cast<std::uint32_t>(int_input(r, i));
        f += float_input(r, i);
      }
      wrong_ints += ints[i] != static_cast<std::int32_t>(s);
      worst = std::max(worst, std::abs(floats[i] - f));
      largest = std::max(largest, std::abs(f));
    }
    // Block floating point to the switch loses at most a few units of 2^-31 of a chunk's
    // largest sum (docs/numerics.md); fp32 adds at the FPGA one rounding per add.
    const double bound = 1e-6 * largest;
    const bool ok = wrong_ints == 0 && worst <= bound;
    if (!ok || rank == 0)
      fmt::print(
          "allreduce_mpi: rank {} of {}, {} elements, int32 {}, float32 {} (largest "
          "error {:.3g}, bound {:.3g}, float_wire {}), {:.3f} s\n",
          rank, world, count, wrong_ints == 0 ? "ok" : fmt::format("{} wrong", wrong_ints),
          worst <= bound ? "ok" : "WRONG", worst, bound, netagg::to_string(cfg.float_wire),
          seconds);
    return ok ? 0 : 1;
  } catch (const netagg::Error& e) {
    std::fprintf(stderr, "allreduce_mpi: rank %d: %s\n", rank, e.what());
    return e.code() == netagg::Errc::kConfig ? 2 : 3;
  }
}
