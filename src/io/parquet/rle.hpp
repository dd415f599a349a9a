#pragma once
/// Internal to the Parquet reader: a run-by-run walk of the RLE/bit-packed hybrid, batch bit-unpacking
/// and the bitmap helpers that turn definition levels into validity bits.
#include <algorithm>
#include <cstdint>

#include "tug/core/error.hpp"
#include "tug/io/parquet/encoding.hpp"

namespace tug::io::parquet {

/// Unpacks `k` values of width `bw` (0..32), LSB first, from the `avail` bytes at `p` (the caller
/// checked that ceil(k * bw / 8) <= avail). Whole groups of 8 values that have 8 bytes of slack behind
/// them in `avail` are unpacked by a loop specialised for the width; the rest value by value.
void unpack32(const uint8_t* p, size_t avail, int bw, int64_t k, uint32_t* out);

/// Sets bits [off, off + n) of `bm`.
void set_bits(uint8_t* bm, int64_t off, int64_t n);

/// ORs the first `n` bits of `src` into `dst` at bit `off`.
void or_bits(uint8_t* dst, int64_t off, const uint8_t* src, int64_t n);

/// Walks the first `n` values of the RLE/bit-packed hybrid stream [p, end) of width `bw` (0..32),
/// calling `repeat(value, count, at)` for each RLE run and `packed(bytes, avail, count, at)` for each
/// bit-packed run (`bytes` its first byte, `avail` the bytes left in the stream, `at` the index of the
/// run's first value). Every run is bounds-checked first. @throws io_error on malformed data.
template <typename Repeat, typename Packed>
void rle_walk(const uint8_t* p, const uint8_t* end, int bw, int64_t n, Repeat&& repeat, Packed&& packed) {
  if (bw < 0 || bw > 32) throw io_error("corrupt page: RLE bit width above 32");
  const size_t vb = static_cast<size_t>((bw + 7) / 8);
  int64_t i = 0;
  while (i < n) {
    const uint64_t header = read_uleb(p, end);
    const size_t avail = static_cast<size_t>(end - p);
    if (header & 1) {
      const uint64_t groups = header >> 1;
      const uint64_t count = groups > (uint64_t{1} << 60) ? ~uint64_t{0} : groups * 8;
      const int64_t k = static_cast<int64_t>(std::min<uint64_t>(count, static_cast<uint64_t>(n - i)));
      const size_t need = (static_cast<size_t>(k) * static_cast<size_t>(bw) + 7) / 8;
      if (need > avail) throw io_error("corrupt page: bit-packed run past the end");
      packed(p, avail, k, i);
      const size_t run_bytes = groups > avail ? avail : static_cast<size_t>(groups) * static_cast<size_t>(bw);
      p += std::min(run_bytes, avail);
      i += k;
    } else {
      if (vb > avail) throw io_error("corrupt page: RLE run past the end");
      uint32_t v = 0;
      for (size_t b = 0; b < vb; ++b)
        v |= static_cast<uint32_t>(p[b]) << (8 * b);
      p += vb;
      const int64_t k = static_cast<int64_t>(std::min<uint64_t>(header >> 1, static_cast<uint64_t>(n - i)));
      repeat(v, k, i);
      i += k;
    }
  }
}

}  // namespace tug::io::parquet
