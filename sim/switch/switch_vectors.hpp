// SPDX-License-Identifier: Apache-2.0
// The switch conformance vectors (tests/vectors/switch/*.vec, format in tests/vectors/README.md)
// and their replay against a target: the in-process SwitchPipeline, or a switch behind network
// interfaces (netagg-replay --iface). Shared by the CI test and netagg-replay.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "pipeline.hpp"

namespace netagg::sim {

struct SwitchVectorStep {
  std::size_t line = 0;  // of the "step:" line
  std::string note;
  std::uint16_t in_port = 0;
  std::vector<std::byte> in;
  std::string expect;         // FrameOutcome::to_string() words
  std::vector<FrameOut> out;  // in any order
};

struct SwitchVector {
  std::filesystem::path file;
  std::string description;
  std::string name;
  wire::Mac switch_mac{};
  std::uint32_t switch_ip = 0;
  std::vector<std::string> jobs_json;  // one docs/job-format.md job per entry
  std::string bmv2;                    // the simple_switch_CLI lines, newline-separated
  std::vector<SwitchVectorStep> steps;
  std::map<std::string, std::uint64_t> counters;  // every counter not listed is 0
  std::vector<std::uint16_t> ports() const;       // every port a frame enters or leaves by
};

// Throws std::runtime_error "FILE:LINE: problem" on a malformed file.
SwitchVector load_switch_vector(const std::filesystem::path& file);
// A folder: every *.vec in it, sorted by name; a file: that one.
std::vector<SwitchVector> load_switch_vectors(const std::filesystem::path& path);

// Where the frames go. A target sees one vector at a time, from start() on.
class FrameTarget {
 public:
  virtual ~FrameTarget() = default;
  // Makes the switch fresh and configured for `v` (tables from its bmv2 lines, slots clear).
  virtual void start(const SwitchVector& v) = 0;
  // Sends `frame` in on `port`; returns the frames that came out. `expected` is how many the
  // vector expects: a target behind a network waits for that many, then a quiet time for more.
  virtual std::vector<FrameOut> exchange(std::uint16_t port, std::span<const std::byte> frame,
                                         std::size_t expected) = 0;
  // What the switch says it did with the last frame, and its counters, if the target can tell.
  virtual std::optional<std::string> last_outcome() { return std::nullopt; }
  virtual std::optional<std::vector<std::pair<std::string, std::uint64_t>>> counters() {
    return std::nullopt;
  }
};

// The in-process pipeline, configured from the vector's bmv2 lines.
class ModelTarget : public FrameTarget {
 public:
  explicit ModelTarget(PipelineLimits limits = {}) : limits_(limits) {}
  void start(const SwitchVector& v) override;
  std::vector<FrameOut> exchange(std::uint16_t port, std::span<const std::byte> frame,
                                 std::size_t expected) override;
  std::optional<std::string> last_outcome() override;
  std::optional<std::vector<std::pair<std::string, std::uint64_t>>> counters() override;
  SwitchPipeline& pipeline() { return *pipeline_; }

 private:
  PipelineLimits limits_;
  std::optional<SwitchPipeline> pipeline_;
};

struct ReplayResult {
  std::string name;
  std::size_t steps = 0;
  std::vector<std::string> failures;  // empty = the target behaved as the vector says
  bool ok() const { return failures.empty(); }
};

// Replays every step; compares the frames out (as a multiset per step; a received frame may
// carry Ethernet padding up to 60 bytes beyond the expected bytes), the outcome and the
// counters when the target reports them. Errors of the target (std::exception) end the vector
// with a failure naming the step.
// `notices` false: a target that sends no notices (docs/wire-format.md, "Notices"): the
// vectors' notice frames are not expected, and its counters are not compared.
ReplayResult replay(const SwitchVector& v, FrameTarget& target, bool notices = true);

// Whether `frame` is an IPv4/UDP frame carrying a netagg notice.
bool is_notice_frame(std::span<const std::byte> frame);

std::string hex(std::span<const std::byte> bytes);

}  // namespace netagg::sim
