// SPDX-License-Identifier: Apache-2.0
// What an aggregator makes of one round, computed on a host: the result of a packet from every
// worker's contribution to it. The host fallback (netagg/fallback.hpp) finishes an all-reduce
// with it when the aggregator stops answering, so the sums are the aggregator's:
//   int32   wrap-around adds (any order gives the same bits), block exponent the max
//           (wire::kExponentNone the identity): what the switch and the FPGA's int32 path give;
//   fp32    IEEE binary32 adds, round to nearest even, in rank order ((c0 + c1) + c2) + ...:
//           what the FPGA aggregator gives when it takes the contributions in rank order;
//   bf16    widened to fp32 exactly, added in rank order as fp32, rounded once to bf16 (round to
//           nearest even, NaN kept quiet): the FPGA's bf16 path in rank order.
//   fp32_exact  each element a 64-bit lane at the scale in the exponent's high byte (equal in
//           every contribution), lanes added, the sum rounded once to fp32 (netagg/exact.hpp);
//           the exponent field's signed max: the FPGA's exact path, in any order.
#pragma once

#include <cstddef>
#include <span>

#include "netagg/wire.hpp"

namespace netagg {

// contributions[r]: rank r's decoded contribution (in rank order). Writes the result's dtype,
// count and exponent into `result` (other fields untouched) and its payload into `payload`
// (at least result.payload_size() bytes). Throws Error(kInvalidArgument) when the
// contributions' dtype or count differ (the workers did not make the same call).
void reduce_round(std::span<const wire::Decoded> contributions, wire::Header& result,
                  std::span<std::byte> payload);

}  // namespace netagg
