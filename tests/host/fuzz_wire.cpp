// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: the packet and frame decoders must never read out of bounds, and whatever
// they accept must re-encode to the same bytes.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "netagg/wire.hpp"

using namespace netagg::wire;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::span<const std::byte> in(reinterpret_cast<const std::byte*>(data), size);
  const Decoded d = decode(in);
  if (d) {
    if (d.payload.size() != d.header.payload_size() || size != d.header.packet_size()) std::abort();
    std::vector<std::byte> again(size);
    if (!encode_header(d.header, again)) std::abort();
    std::memcpy(again.data() + kHeaderSize, d.payload.data(), d.payload.size());
    if (std::memcmp(again.data(), data, size) != 0) std::abort();
  }
  const DecodedFrame f = decode_frame(in, 0);
  if (f && f.packet.payload.size() != f.packet.header.payload_size()) std::abort();
  return 0;
}
