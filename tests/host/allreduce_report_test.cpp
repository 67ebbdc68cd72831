// SPDX-License-Identifier: Apache-2.0
// netagg-allreduce's verification message: an int32 sum in all its digits, an fp32 one in 9.
#include "allreduce_report.hpp"

#include <gtest/gtest.h>

namespace netagg::report {
namespace {

TEST(AllreduceReport, AnInt32MismatchIsPrintedExactly) {
  EXPECT_EQ(mismatch_text({7, 138598323.0, -1171016230.0, 0}),
            "verification: FAILED at index 7: got 138598323, want -1171016230, bound 0");
}

TEST(AllreduceReport, AnFp32MismatchHasNineSignificantDigits) {
  EXPECT_EQ(mismatch_text({3, 0.5, 0.1f, 1e-7}),
            "verification: FAILED at index 3: got 0.5, want 0.100000001, bound 1e-07");
}

}  // namespace
}  // namespace netagg::report
