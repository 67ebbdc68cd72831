// SPDX-License-Identifier: Apache-2.0
// The host fallback's peer groups: the in-process one and Gloo over TCP on loopback with a
// FileStore rendezvous, ranks as threads: buffers of any size (empty ones too) reach the right
// rank, in the right order, call after call.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <unistd.h>
#include <filesystem>
#include <functional>
#include <thread>
#include <vector>

#include "netagg/error.hpp"
#include "netagg/peers.hpp"

namespace netagg {
namespace {

using Bytes = Peers::Bytes;
constexpr std::chrono::milliseconds kTimeout{20000};

Bytes pattern(int from, int to, int call) {
  Bytes b(static_cast<std::size_t>((from * 7 + to * 3 + call) % 5) * 1000);  // 0 to 4000 bytes
  for (std::size_t i = 0; i < b.size(); ++i)
    b[i] = static_cast<std::byte>(from * 31 + to * 17 + call * 5 + static_cast<int>(i));
  return b;
}

// Each rank's group member from `make`, then rounds of allgather and alltoall, all checked.
void exchange(int n, const std::function<std::shared_ptr<Peers>(int)>& make) {
  std::vector<std::string> failures(static_cast<std::size_t>(n));
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r)
    threads.emplace_back([&, r] {
      try {
        const auto peers = make(r);
        if (peers->rank() != r || peers->size() != n) throw std::runtime_error("rank or size");
        for (int call = 0; call < 4; ++call) {
          const auto all = peers->allgather(pattern(r, r, call), kTimeout);
          for (int k = 0; k < n; ++k)
            if (all.at(static_cast<std::size_t>(k)) != pattern(k, k, call))
              throw std::runtime_error("allgather from rank " + std::to_string(k));
          std::vector<Bytes> to;
          for (int k = 0; k < n; ++k) to.push_back(pattern(r, k, call));
          const auto from = peers->alltoall(to, kTimeout);
          for (int k = 0; k < n; ++k)
            if (from.at(static_cast<std::size_t>(k)) != pattern(k, r, call))
              throw std::runtime_error("alltoall from rank " + std::to_string(k));
        }
        // Nobody gives anything: still one collective call.
        const auto none = peers->allgather({}, kTimeout);
        if (none.size() != static_cast<std::size_t>(n)) throw std::runtime_error("empty allgather");
      } catch (const std::exception& e) {
        failures[static_cast<std::size_t>(r)] = e.what();
      }
    });
  for (auto& t : threads) t.join();
  for (int r = 0; r < n; ++r) EXPECT_EQ(failures[static_cast<std::size_t>(r)], "") << "rank " << r;
}

TEST(Peers, InProcessGroupExchangesEveryRanksBytes) {
  InprocPeerGroup group(3);
  exchange(3, [&](int r) { return group.member(r); });
}

TEST(Peers, InProcessGroupTimesOutNamingWhoJoined) {
  InprocPeerGroup group(2);
  const auto lonely = group.member(0);
  try {
    lonely->allgather({}, std::chrono::milliseconds(50));
    FAIL() << "no timeout";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Errc::kTimeout);
    EXPECT_THAT(e.what(), ::testing::HasSubstr("1 of 2 ranks"));
  }
}

TEST(Peers, GlooOverTcpWithAFileStore) {
  if (!gloo_built()) GTEST_SKIP() << "libnetagg built without Gloo (NETAGG_GLOO=OFF)";
  const auto dir =
      std::filesystem::path(::testing::TempDir()) / ("netagg-peers-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  exchange(3, [&](int r) {
    return make_gloo_peers("file:" + dir.string(), "run1", "127.0.0.1", r, 3, kTimeout);
  });
  std::filesystem::remove_all(dir);
}

TEST(Peers, GlooRefusesAStoreItCannotUse) {
  if (!gloo_built()) GTEST_SKIP() << "libnetagg built without Gloo (NETAGG_GLOO=OFF)";
  for (const char* store : {"redis://x", "file:", "/tmp/x"}) {
    try {
      make_gloo_peers(store, "p", "127.0.0.1", 0, 1, kTimeout);
      ADD_FAILURE() << store;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), Errc::kConfig) << store;
      EXPECT_THAT(e.what(), ::testing::HasSubstr("file:DIR")) << store;
    }
  }
}

}  // namespace
}  // namespace netagg
