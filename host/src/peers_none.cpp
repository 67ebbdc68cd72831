// SPDX-License-Identifier: Apache-2.0
// libnetagg built without Gloo: the host fallback has no peer group, and says so.
#include "netagg/error.hpp"
#include "netagg/peers.hpp"

namespace netagg {
namespace {
[[noreturn]] void not_built() {
  throw Error(Errc::kUnsupported,
              "fallback: this libnetagg was built without Gloo (libgloo-dev; CMake option "
              "NETAGG_GLOO), so the workers cannot finish an all-reduce among themselves: set "
              "fallback to off, or rebuild with Gloo");
}
}  // namespace

bool gloo_built() { return false; }

std::shared_ptr<Peers> make_gloo_peers(const std::string&, const std::string&, const std::string&,
                                       int, int, std::chrono::milliseconds) {
  not_built();
}
std::shared_ptr<Peers> make_gloo_peers(std::shared_ptr<PeerStore>, const std::string&,
                                       const std::string&, int, int, std::chrono::milliseconds) {
  not_built();
}

}  // namespace netagg
