// How a worker is configured: from a JSON file and/or the environment a launcher sets.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

#include "netagg/engine.hpp"
#include "netagg/job.hpp"

namespace netagg {

// How fp32 tensors travel: block floating point int32 (for integer aggregators: the switch),
// or fp32 as is (the FPGA aggregator).
enum class FloatWire { kBlockInt32, kFp32 };

struct Config {
  int rank = -1;
  JobSpec job;
  Endpoint aggregator;            // defaults to job.aggregator (port 0 = not set)
  std::string transport = "udp";  // "udp" (later "dpdk")
  FloatWire float_wire = FloatWire::kBlockInt32;
  Duration retransmit_timeout = std::chrono::milliseconds(20);
  Duration max_retransmit_timeout = std::chrono::milliseconds(500);
  Duration job_timeout = std::chrono::seconds(10);
  double loss = 0.0;  // injected loss per packet and direction, 0..1
  std::uint64_t loss_seed = 1;

  // JSON file (docs/configuration.md). Relative job_file paths resolve against the file's folder.
  static Config from_file(const std::filesystem::path& file);
  // The environment: NETAGG_CONFIG names a file read first; then NETAGG_JOB_FILE (with
  // NETAGG_JOB_ID to pick from a multi-job file), NETAGG_RANK (else OMPI_COMM_WORLD_RANK,
  // PMI_RANK, RANK), NETAGG_WORLD_SIZE (else OMPI_COMM_WORLD_SIZE, PMI_SIZE, WORLD_SIZE; must
  // match the job), NETAGG_AGGREGATOR, NETAGG_TRANSPORT, NETAGG_FLOAT_WIRE, NETAGG_TIMEOUT_MS,
  // NETAGG_RETRANSMIT_TIMEOUT_MS, NETAGG_LOSS, NETAGG_LOSS_SEED. Validated before returning.
  static Config from_env();
  // Throws Error(kConfig) naming the first problem (kUnsupported for a transport not built in).
  void validate() const;
  EngineParams engine_params() const;
  // `aggregator` if set, else the job's aggregator; throws Error(kConfig) if neither is.
  Endpoint aggregator_address() const;
  // The address this worker sends from: the job's entry for `rank`.
  Endpoint local_address() const;
};

FloatWire parse_float_wire(std::string_view text);  // "int32-bfp" | "fp32"
std::string_view to_string(FloatWire w);

}  // namespace netagg
