// SPDX-License-Identifier: Apache-2.0
// How a job on several trees shares a tensor's chunks among them: by weight, in a smooth
// weighted round robin (equal weights: chunk c goes to tree c mod K). Each tree's engine runs its
// chunks as an operation of its own; tree k's chunk j is the tensor's chunk global(k, j).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace netagg {

class ChunkSplit {
 public:
  // One weight per tree, each at least 1 (Error(kInvalidArgument) otherwise); the pattern repeats
  // every sum(weights) chunks. One tree (or none given): every chunk is tree 0's.
  explicit ChunkSplit(std::span<const std::uint32_t> weights);

  std::size_t trees() const { return positions_.size(); }
  // The tree of the tensor's chunk c.
  std::size_t tree_of(std::uint64_t c) const { return pattern_[c % pattern_.size()]; }
  // How many of the first `chunks` chunks are tree k's.
  std::uint64_t count(std::size_t k, std::uint64_t chunks) const;
  // Tree k's chunk j: its index in the tensor.
  std::uint64_t global(std::size_t k, std::uint64_t j) const {
    const auto& pos = positions_[k];
    return j / pos.size() * pattern_.size() + pos[j % pos.size()];
  }

 private:
  std::vector<std::uint32_t> pattern_;                 // tree of each chunk of one period
  std::vector<std::vector<std::uint32_t>> positions_;  // per tree: its places in a period
};

}  // namespace netagg
