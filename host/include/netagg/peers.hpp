// SPDX-License-Identifier: Apache-2.0
// The job's workers as a group that exchanges bytes without the aggregator: what the host
// fallback (netagg/fallback.hpp) runs on when an aggregator stops answering.
//
// Implementations: Gloo over TCP (make_gloo_peers; a rendezvous store that all ranks reach),
// and an in-process group for tests (InprocPeerGroup: every rank a thread of one process).
// Every call is collective: all ranks make the same calls in the same order.
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace netagg {

class Peers {
 public:
  using Bytes = std::vector<std::byte>;
  virtual ~Peers() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // Every rank gives `mine` (sizes may differ); returns every rank's bytes, indexed by rank.
  // Throws Error(kTimeout) when the others do not all join within `timeout`.
  virtual std::vector<Bytes> allgather(std::span<const std::byte> mine,
                                       std::chrono::milliseconds timeout) = 0;
  // to[r] goes to rank r (to[rank()] comes back to this rank); returns from[r], what rank r
  // sent here. Throws Error(kTimeout) as allgather.
  virtual std::vector<Bytes> alltoall(const std::vector<Bytes>& to,
                                      std::chrono::milliseconds timeout) = 0;
  // What it is, for messages: "gloo (file:/shared/run7)", "in-process".
  virtual std::string name() const = 0;
};

// `size` ranks in one process; member(r) is rank r's view, used by one thread.
class InprocPeerGroup {
 public:
  explicit InprocPeerGroup(int size);
  ~InprocPeerGroup();
  InprocPeerGroup(const InprocPeerGroup&) = delete;
  InprocPeerGroup& operator=(const InprocPeerGroup&) = delete;
  std::shared_ptr<Peers> member(int rank);
  // Makes every waiting and later call of the group fail at once with Error(kTransport), as a
  // rank that died would make a real group's calls fail (tests).
  void break_group();

  struct Impl;

 private:
  std::shared_ptr<Impl> impl_;
};

// A key-value store that all ranks of a run reach, for Gloo's rendezvous (the torch backend
// adapts its c10d store to it).
class PeerStore {
 public:
  virtual ~PeerStore() = default;
  virtual void set(const std::string& key, const std::vector<char>& value) = 0;
  // Blocks until the key is set (or the store's own timeout).
  virtual std::vector<char> get(const std::string& key) = 0;
  // Blocks until every key is set; throws when `timeout` passes first.
  virtual void wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) = 0;
};

// Whether this libnetagg was built with Gloo (CMake option NETAGG_GLOO).
bool gloo_built();

// Gloo's TCP transport bound to `address` (an IPv4 address of this host that the other ranks
// reach: the worker's own address in the job), connected to every rank through `store`: "file:DIR",
// a directory every rank sees (Gloo's FileStore; it must be empty or hold only an earlier run's
// files under other prefixes). `prefix` keeps the keys of one run apart from another's in the same
// store. Blocks until all `size` ranks have joined, at most `timeout`. Throws Error(kConfig) for a
// store it cannot use, Error(kTimeout) when the others do not join, Error(kUnsupported) if
// built without Gloo.
std::shared_ptr<Peers> make_gloo_peers(const std::string& store, const std::string& prefix,
                                       const std::string& address, int rank, int size,
                                       std::chrono::milliseconds timeout);
// The same through a store given by the caller.
std::shared_ptr<Peers> make_gloo_peers(std::shared_ptr<PeerStore> store, const std::string& prefix,
                                       const std::string& address, int rank, int size,
                                       std::chrono::milliseconds timeout);

}  // namespace netagg
