// SPDX-License-Identifier: Apache-2.0
// The message of the netagg::Error a call throws, for tests that check both.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "netagg/error.hpp"

namespace netagg::testing {

// Calls f() and returns the message of the Error it throws, after checking its code; a test
// failure and "" if f() throws no netagg::Error.
template <class F>
std::string error_of(F&& f, Errc code = Errc::kConfig) {
  try {
    f();
  } catch (const Error& e) {
    EXPECT_EQ(static_cast<int>(e.code()), static_cast<int>(code)) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "no netagg::Error thrown";
  return "";
}

}  // namespace netagg::testing
