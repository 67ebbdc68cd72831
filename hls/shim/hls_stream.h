// SPDX-License-Identifier: Apache-2.0
// Stand-in for Xilinx's <hls_stream.h>, used only when the Vitis HLS headers are absent.
//
// hls::stream<T> as Vitis's C simulation has it: an unbounded FIFO (csim does not model depth or
// backpressure), with read/write, the non-blocking read_nb/write_nb, empty/full/size and the
// >> / << operators. Reading an empty stream is a testbench error: Vitis's csim warns and
// returns garbage (or hangs); this shim aborts with a message instead.
#ifndef NETAGG_HLS_SHIM_HLS_STREAM_H
#define NETAGG_HLS_SHIM_HLS_STREAM_H

#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <string>

namespace hls {

template <typename T, int Depth = 0>
class stream {
 public:
  stream() = default;
  explicit stream(const char* name) : name_(name) {}
  stream(const stream&) = delete;
  stream& operator=(const stream&) = delete;

  bool empty() const { return fifo_.empty(); }
  bool full() const { return false; }
  std::size_t size() const { return fifo_.size(); }

  T read() {
    if (fifo_.empty()) {
      std::fprintf(stderr, "hls::stream shim: read from empty stream '%s'\n", name_.c_str());
      std::abort();
    }
    T v = fifo_.front();
    fifo_.pop_front();
    return v;
  }
  void read(T& v) { v = read(); }
  bool read_nb(T& v) {
    if (fifo_.empty()) return false;
    v = read();
    return true;
  }
  void write(const T& v) { fifo_.push_back(v); }
  bool write_nb(const T& v) {
    write(v);
    return true;
  }
  void operator>>(T& v) { read(v); }
  void operator<<(const T& v) { write(v); }

 private:
  std::string name_;
  std::deque<T> fifo_;
};

}  // namespace hls

#endif  // NETAGG_HLS_SHIM_HLS_STREAM_H
