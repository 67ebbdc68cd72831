// SPDX-License-Identifier: Apache-2.0
// The peer group over Gloo: a full mesh of TCP pairs made through a rendezvous store; byte
// buffers of any size exchanged as Gloo's allgatherv and alltoallv after their sizes.
#include <gloo/allgather.h>
#include <gloo/allgatherv.h>
#include <gloo/alltoallv.h>
#include <gloo/common/error.h>
#include <gloo/common/logging.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/rendezvous/prefix_store.h>
#include <gloo/transport/tcp/device.h>

#include <cstdint>
#include <filesystem>

#include <fmt/format.h>

#include "netagg/error.hpp"
#include "netagg/peers.hpp"

namespace netagg {
namespace {

// A PeerStore as Gloo's rendezvous wants it.
class StoreAdapter final : public gloo::rendezvous::Store {
 public:
  explicit StoreAdapter(std::shared_ptr<PeerStore> store) : store_(std::move(store)) {}
  void set(const std::string& key, const std::vector<char>& data) override {
    store_->set(key, data);
  }
  std::vector<char> get(const std::string& key) override { return store_->get(key); }
  void wait(const std::vector<std::string>& keys) override {
    store_->wait(keys, gloo::rendezvous::Store::kDefaultTimeout);
  }
  void wait(const std::vector<std::string>& keys,
            const std::chrono::milliseconds& timeout) override {
    store_->wait(keys, timeout);
  }

 private:
  std::shared_ptr<PeerStore> store_;
};

// Runs a Gloo call; its failures (a peer gone, a timeout) become netagg errors.
template <typename F>
auto gloo_call(const char* what, std::chrono::milliseconds timeout, F&& f) {
  try {
    return f();
  } catch (const gloo::IoException& e) {
    const std::string text = e.what();
    if (text.find("Connection closed") != std::string::npos ||
        text.find("Connection reset") != std::string::npos)
      throw Error(Errc::kTimeout, fmt::format("peers (gloo): {}: a worker is gone ({})", what,
                                              text.substr(text.find(']') + 1)));
    throw Error(Errc::kTimeout,
                fmt::format("peers (gloo): {} did not complete within {} ms: a worker did not "
                            "join ({})",
                            what, timeout.count(), text));
  } catch (const gloo::EnforceNotMet& e) {
    throw Error(Errc::kTransport, fmt::format("peers (gloo): {} failed: {}", what, e.what()));
  } catch (const gloo::Exception& e) {
    throw Error(Errc::kTransport, fmt::format("peers (gloo): {} failed: {}", what, e.what()));
  }
}

class GlooPeers final : public Peers {
 public:
  GlooPeers(std::shared_ptr<gloo::Context> context, std::string name)
      : context_(std::move(context)), name_(std::move(name)) {}

  int rank() const override { return context_->rank; }
  int size() const override { return context_->size; }
  std::string name() const override { return name_; }

  std::vector<Bytes> allgather(std::span<const std::byte> mine,
                               std::chrono::milliseconds timeout) override {
    const std::vector<std::uint64_t> sizes = gather_sizes({mine.size()}, timeout);
    std::vector<std::size_t> counts(sizes.begin(), sizes.end());
    std::size_t total = 0;
    for (const std::size_t n : counts) total += n;
    std::vector<Bytes> out(counts.size());
    if (total == 0) return out;
    // Gloo takes no null buffer: an empty contribution points at a byte of its own.
    std::byte none{};
    std::vector<std::byte> all(total);
    gloo_call("allgatherv", timeout, [&] {
      gloo::AllgathervOptions o(context_);
      o.setInput(const_cast<std::byte*>(mine.empty() ? &none : mine.data()), mine.size());
      o.setOutput(all.data(), counts);
      o.setTag(next_tag());
      o.setTimeout(timeout);
      gloo::allgatherv(o);
    });
    std::size_t at = 0;
    for (std::size_t r = 0; r < counts.size(); ++r) {
      out[r].assign(all.begin() + static_cast<std::ptrdiff_t>(at),
                    all.begin() + static_cast<std::ptrdiff_t>(at + counts[r]));
      at += counts[r];
    }
    return out;
  }

  std::vector<Bytes> alltoall(const std::vector<Bytes>& to,
                              std::chrono::milliseconds timeout) override {
    const auto n = static_cast<std::size_t>(size());
    if (to.size() != n)
      throw Error(Errc::kInvalidArgument, "peers: alltoall needs one buffer per rank");
    // Every rank's row of sizes, so each knows what it receives from whom.
    std::vector<std::uint64_t> row(n);
    for (std::size_t r = 0; r < n; ++r) row[r] = to[r].size();
    const std::vector<std::uint64_t> matrix = gather_sizes(row, timeout);
    std::vector<std::int64_t> send_counts(n), recv_counts(n);
    std::size_t send_total = 0, recv_total = 0;
    for (std::size_t r = 0; r < n; ++r) {
      send_counts[r] = static_cast<std::int64_t>(to[r].size());
      recv_counts[r] = static_cast<std::int64_t>(matrix[r * n + static_cast<std::size_t>(rank())]);
      send_total += to[r].size();
      recv_total += static_cast<std::size_t>(recv_counts[r]);
    }
    std::vector<Bytes> out(n);
    std::size_t everyone = 0;
    for (const std::uint64_t v : matrix) everyone += v;
    if (everyone == 0) return out;
    std::vector<std::byte> send(std::max<std::size_t>(send_total, 1)),
        recv(std::max<std::size_t>(recv_total, 1));
    std::size_t at = 0;
    for (const Bytes& b : to) {
      std::copy(b.begin(), b.end(), send.begin() + static_cast<std::ptrdiff_t>(at));
      at += b.size();
    }
    gloo_call("alltoallv", timeout, [&] {
      gloo::AlltoallvOptions o(context_);
      o.setInput(send.data(), send_counts);
      o.setOutput(recv.data(), recv_counts);
      o.setTag(next_tag());
      o.setTimeout(timeout);
      gloo::alltoallv(o);
    });
    at = 0;
    for (std::size_t r = 0; r < n; ++r) {
      const auto len = static_cast<std::size_t>(recv_counts[r]);
      out[r].assign(recv.begin() + static_cast<std::ptrdiff_t>(at),
                    recv.begin() + static_cast<std::ptrdiff_t>(at + len));
      at += len;
    }
    return out;
  }

 private:
  // Every rank's `mine` (the same length on all ranks), concatenated in rank order.
  std::vector<std::uint64_t> gather_sizes(const std::vector<std::uint64_t>& mine,
                                          std::chrono::milliseconds timeout) {
    std::vector<std::uint64_t> in(mine), out(mine.size() * static_cast<std::size_t>(size()));
    gloo_call("allgather", timeout, [&] {
      gloo::AllgatherOptions o(context_);
      o.setInput(in.data(), in.size());
      o.setOutput(out.data(), out.size());
      o.setTag(next_tag());
      o.setTimeout(timeout);
      gloo::allgather(o);
    });
    return out;
  }
  std::uint32_t next_tag() { return tag_++; }

  std::shared_ptr<gloo::Context> context_;
  std::string name_;
  std::uint32_t tag_ = 1;
};

std::shared_ptr<Peers> connect(gloo::rendezvous::Store& store, const std::string& prefix,
                               const std::string& address, int rank, int size,
                               std::chrono::milliseconds timeout, std::string name) {
  if (rank < 0 || rank >= size)
    throw Error(Errc::kInvalidArgument, fmt::format("peers: rank {} of {}", rank, size));
  return gloo_call("the rendezvous", timeout, [&] {
    gloo::transport::tcp::attr attr;
    attr.hostname = address;
    attr.ai_family = AF_INET;
    auto device = gloo::transport::tcp::CreateDevice(attr);
    gloo::rendezvous::PrefixStore prefixed(prefix, store);
    auto context = std::make_shared<gloo::rendezvous::Context>(rank, size);
    context->setTimeout(timeout);
    context->connectFullMesh(prefixed, device);
    return std::static_pointer_cast<Peers>(
        std::make_shared<GlooPeers>(std::move(context), std::move(name)));
  });
}

}  // namespace

bool gloo_built() { return true; }

std::shared_ptr<Peers> make_gloo_peers(const std::string& store, const std::string& prefix,
                                       const std::string& address, int rank, int size,
                                       std::chrono::milliseconds timeout) {
  if (!store.starts_with("file:") || store.size() == 5)
    throw Error(Errc::kConfig,
                fmt::format("store: '{}' is not file:DIR (a directory every rank sees)", store));
  const std::filesystem::path dir = store.substr(5);
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec || !std::filesystem::is_directory(dir))
    throw Error(Errc::kConfig, fmt::format("store: cannot use directory {}: {}", dir.string(),
                                           ec ? ec.message() : "not a directory"));
  gloo::rendezvous::FileStore files(dir.string());
  return connect(files, prefix, address, rank, size, timeout, fmt::format("gloo ({})", store));
}

std::shared_ptr<Peers> make_gloo_peers(std::shared_ptr<PeerStore> store, const std::string& prefix,
                                       const std::string& address, int rank, int size,
                                       std::chrono::milliseconds timeout) {
  StoreAdapter adapter(std::move(store));
  return connect(adapter, prefix, address, rank, size, timeout, "gloo");
}

}  // namespace netagg
