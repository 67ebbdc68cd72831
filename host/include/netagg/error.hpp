// SPDX-License-Identifier: Apache-2.0
// Errors the host runtime reports to its caller.
#pragma once

#include <stdexcept>
#include <string>

namespace netagg {

enum class Errc {
  kConfig,       // bad configuration or job description; message names the field
  kTimeout,      // an all-reduce did not complete in time; message names the missing slots
  kTransport,    // the network transport failed (socket error, ...)
  kUnsupported,  // asked for something not built in or not supported by the target
  kInvalidArgument,
  kRejected,  // the aggregator drops the job's packets and said why (a notice); message names it
};

class Error : public std::runtime_error {
 public:
  Error(Errc code, const std::string& what) : std::runtime_error(what), code_(code) {}
  Errc code() const { return code_; }

 private:
  Errc code_;
};

}  // namespace netagg
