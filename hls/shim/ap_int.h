// SPDX-License-Identifier: Apache-2.0
// Stand-in for Xilinx's <ap_int.h>, used only when the Vitis HLS headers are absent (CMake puts
// hls/shim/ on the include path then; with Vitis the real header is found instead).
//
// It is a small subset, exactly what hls/ uses: ap_uint<W> of 1..4096 bits, zero on
// construction, built from an integer (truncated to W bits) or another ap_uint, with
//   x.range(hi, lo)      read (to_uint/to_uint64) and write (= integer) of up to 64 bits
//   x[i]                 read and write of one bit
//   x.to_uint(), x.to_uint64()   the low 32 / 64 bits
//   an implicit conversion to unsigned long long for W <= 64 (as ap_uint<1> tests as a bool)
//   == and !=
// No arithmetic, no shifts, no ap_int (signed), no ranges wider than 64 bits or reversed: the
// kernel converts to native integers for those, which Vitis synthesizes the same way. Out of
// range bit indices are a programming error and abort, where Vitis's csim would read garbage.
#ifndef NETAGG_HLS_SHIM_AP_INT_H
#define NETAGG_HLS_SHIM_AP_INT_H

#include <cstdint>
#include <cstdio>
#include <cstdlib>

#define NETAGG_HLS_SHIM 1

namespace netagg_hls_shim {
inline void check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "ap_int shim: %s\n", what);
    std::abort();
  }
}
}  // namespace netagg_hls_shim

template <int W>
class ap_uint {
  static_assert(W >= 1 && W <= 4096, "ap_uint shim: width 1..4096");
  static constexpr int kWords = (W + 63) / 64;

 public:
  ap_uint() : word_{} {}
  ap_uint(unsigned long long v) : word_{} {  // NOLINT: implicit, as Xilinx's
    word_[0] = v;
    mask_top();
  }
  ap_uint(unsigned long v) : ap_uint(static_cast<unsigned long long>(v)) {}                // NOLINT
  ap_uint(unsigned int v) : ap_uint(static_cast<unsigned long long>(v)) {}                 // NOLINT
  ap_uint(int v) : ap_uint(static_cast<unsigned long long>(static_cast<long long>(v))) {}  // NOLINT
  ap_uint(long v)
      : ap_uint(static_cast<unsigned long long>(static_cast<long long>(v))) {}  // NOLINT
  ap_uint(long long v) : ap_uint(static_cast<unsigned long long>(v)) {}         // NOLINT
  ap_uint(bool v) : ap_uint(static_cast<unsigned long long>(v)) {}              // NOLINT
  template <int W2>
  ap_uint(const ap_uint<W2>& other) : word_{} {  // NOLINT: truncates or zero-extends
    for (int i = 0; i < kWords && i < ap_uint<W2>::words(); ++i) word_[i] = other.word(i);
    mask_top();
  }

  // The low 32 / 64 bits.
  unsigned to_uint() const { return static_cast<unsigned>(word_[0]); }
  unsigned long long to_uint64() const { return word_[0]; }
  // Only for W <= 64, like a native unsigned of that width.
  operator unsigned long long() const {  // NOLINT
    static_assert(W <= 64, "ap_uint shim: convert wide values with range() or to_uint64()");
    return word_[0];
  }

  class range_ref {
   public:
    range_ref(ap_uint* owner, int hi, int lo) : owner_(owner), hi_(hi), lo_(lo) {}
    range_ref(const range_ref&) = default;
    range_ref& operator=(unsigned long long v) {
      owner_->set_bits(hi_, lo_, v);
      return *this;
    }
    range_ref& operator=(const range_ref& other) { return *this = other.to_uint64(); }
    unsigned long long to_uint64() const { return owner_->get_bits(hi_, lo_); }
    unsigned to_uint() const { return static_cast<unsigned>(to_uint64()); }
    operator unsigned long long() const { return to_uint64(); }  // NOLINT

   private:
    ap_uint* owner_;
    int hi_, lo_;
  };
  class const_range {
   public:
    const_range(const ap_uint* owner, int hi, int lo) : owner_(owner), hi_(hi), lo_(lo) {}
    unsigned long long to_uint64() const { return owner_->get_bits(hi_, lo_); }
    unsigned to_uint() const { return static_cast<unsigned>(to_uint64()); }
    operator unsigned long long() const { return to_uint64(); }  // NOLINT

   private:
    const ap_uint* owner_;
    int hi_, lo_;
  };
  class bit_ref {
   public:
    bit_ref(ap_uint* owner, int i) : owner_(owner), i_(i) {}
    bit_ref& operator=(bool v) {
      owner_->set_bits(i_, i_, v ? 1u : 0u);
      return *this;
    }
    operator bool() const { return owner_->get_bits(i_, i_) != 0; }  // NOLINT

   private:
    ap_uint* owner_;
    int i_;
  };

  range_ref range(int hi, int lo) { return range_ref(this, hi, lo); }
  const_range range(int hi, int lo) const { return const_range(this, hi, lo); }
  range_ref operator()(int hi, int lo) { return range(hi, lo); }
  const_range operator()(int hi, int lo) const { return range(hi, lo); }
  bit_ref operator[](int i) { return bit_ref(this, i); }
  bool operator[](int i) const { return get_bits(i, i) != 0; }

  friend bool operator==(const ap_uint& a, const ap_uint& b) {
    for (int i = 0; i < kWords; ++i)
      if (a.word_[i] != b.word_[i]) return false;
    return true;
  }
  friend bool operator!=(const ap_uint& a, const ap_uint& b) { return !(a == b); }

  // For the converting constructor; not part of Xilinx's interface.
  static constexpr int words() { return kWords; }
  unsigned long long word(int i) const { return word_[i]; }

 private:
  void mask_top() {
    if (W % 64) word_[kWords - 1] &= (1ULL << (W % 64)) - 1;
  }
  static void check_range(int hi, int lo) {
    netagg_hls_shim::check(lo >= 0 && hi >= lo && hi < W && hi - lo < 64,
                           "range out of bounds, reversed or wider than 64 bits");
  }
  unsigned long long get_bits(int hi, int lo) const {
    check_range(hi, lo);
    const int width = hi - lo + 1;
    const int w = lo / 64, b = lo % 64;
    unsigned long long v = word_[w] >> b;
    if (b != 0 && b + width > 64) v |= word_[w + 1] << (64 - b);
    return width == 64 ? v : v & ((1ULL << width) - 1);
  }
  void set_bits(int hi, int lo, unsigned long long v) {
    check_range(hi, lo);
    const int width = hi - lo + 1;
    const unsigned long long mask = width == 64 ? ~0ULL : (1ULL << width) - 1;
    v &= mask;
    const int w = lo / 64, b = lo % 64;
    word_[w] = (word_[w] & ~(mask << b)) | (v << b);
    if (b != 0 && b + width > 64) {
      const int spill = 64 - b;  // bits that went into word w
      word_[w + 1] = (word_[w + 1] & ~(mask >> spill)) | (v >> spill);
    }
  }

  unsigned long long word_[kWords];
};

#endif  // NETAGG_HLS_SHIM_AP_INT_H
