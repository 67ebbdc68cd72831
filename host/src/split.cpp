// SPDX-License-Identifier: Apache-2.0
#include "netagg/split.hpp"

#include <numeric>

#include <fmt/format.h>

#include "netagg/error.hpp"

namespace netagg {

ChunkSplit::ChunkSplit(std::span<const std::uint32_t> weights) {
  const std::vector<std::uint32_t> w =
      weights.empty() ? std::vector<std::uint32_t>{1}
                      : std::vector<std::uint32_t>(weights.begin(), weights.end());
  std::uint64_t total = 0;
  for (std::size_t k = 0; k < w.size(); ++k) {
    if (w[k] == 0)
      throw Error(Errc::kInvalidArgument, fmt::format("tree {} has weight 0; weights are >= 1", k));
    total += w[k];
  }
  if (total > (1u << 24))
    throw Error(Errc::kInvalidArgument,
                fmt::format("the trees' weights add up to {}; at most 2^24", total));
  // Smooth weighted round robin: each step every tree gains its weight, the richest one takes
  // the chunk and pays the total; ties go to the lower index. Trees' chunks interleave as evenly
  // as their weights allow.
  std::vector<std::int64_t> credit(w.size(), 0);
  positions_.resize(w.size());
  for (std::uint64_t c = 0; c < total; ++c) {
    std::size_t best = 0;
    for (std::size_t k = 0; k < w.size(); ++k) {
      credit[k] += w[k];
      if (credit[k] > credit[best]) best = k;
    }
    credit[best] -= static_cast<std::int64_t>(total);
    pattern_.push_back(static_cast<std::uint32_t>(best));
    positions_[best].push_back(static_cast<std::uint32_t>(c));
  }
}

std::uint64_t ChunkSplit::count(std::size_t k, std::uint64_t chunks) const {
  const std::uint64_t period = pattern_.size();
  std::uint64_t n = chunks / period * positions_[k].size();
  for (const std::uint32_t p : positions_[k])
    if (p < chunks % period) ++n;
  return n;
}

}  // namespace netagg
