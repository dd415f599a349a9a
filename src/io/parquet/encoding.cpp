/// Parquet level and integer encodings: RLE/bit-packed hybrid, DELTA_BINARY_PACKED, INT96.
#include "tug/io/parquet/encoding.hpp"

#include <algorithm>
#include <cstring>
#include <string>

#include "tug/core/error.hpp"

namespace tug::io::parquet {
namespace {

[[noreturn]] void corrupt(const char* what) { throw io_error(std::string("corrupt page: ") + what); }

/// Unpacks `k` values of width `bw` (0..64), LSB first, from `avail` bytes at `p`; the caller checked
/// that ceil(k * bw / 8) <= avail.
template <typename U>
void unpack(const uint8_t* p, size_t avail, int bw, int64_t k, U* out) {
  if (bw == 0) {
    std::fill(out, out + k, U{0});
    return;
  }
  const uint64_t mask = bw == 64 ? ~uint64_t{0} : (uint64_t{1} << bw) - 1;
  for (int64_t j = 0; j < k; ++j) {
    uint64_t bit = static_cast<uint64_t>(j) * static_cast<uint64_t>(bw);
    size_t byte = bit >> 3;
    int shift = static_cast<int>(bit & 7);
    uint64_t v = 0;
    if (avail - byte >= 8)
      std::memcpy(&v, p + byte, 8);
    else
      std::memcpy(&v, p + byte, avail - byte);
    v >>= shift;
    if (shift + bw > 64) v |= static_cast<uint64_t>(p[byte + 8]) << (64 - shift);
    out[j] = static_cast<U>(v & mask);
  }
}

}  // namespace

uint64_t read_uleb(const uint8_t*& p, const uint8_t* end) {
  uint64_t v = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (p >= end) corrupt("varint past the end");
    uint8_t b = *p++;
    v |= static_cast<uint64_t>(b & 0x7f) << shift;
    if (!(b & 0x80)) return v;
  }
  corrupt("varint too long");
}

void rle_decode(const uint8_t* p, const uint8_t* end, int bw, uint32_t* out, int64_t n) {
  if (bw < 0 || bw > 32) corrupt("RLE bit width above 32");
  int64_t i = 0;
  const int vb = (bw + 7) / 8;
  while (i < n) {
    uint64_t header = read_uleb(p, end);
    size_t avail = static_cast<size_t>(end - p);
    if (header & 1) {
      uint64_t groups = header >> 1;
      uint64_t count = groups > (uint64_t{1} << 60) ? ~uint64_t{0} : groups * 8;
      int64_t k = static_cast<int64_t>(std::min<uint64_t>(count, static_cast<uint64_t>(n - i)));
      size_t need = (static_cast<size_t>(k) * bw + 7) / 8;
      if (need > avail) corrupt("bit-packed run past the end");
      unpack(p, avail, bw, k, out + i);
      size_t run_bytes = groups > avail ? avail : static_cast<size_t>(groups) * bw;
      p += std::min(run_bytes, avail);
      i += k;
    } else {
      uint64_t count = header >> 1;
      if (static_cast<size_t>(vb) > avail) corrupt("RLE run past the end");
      uint32_t v = 0;
      for (int b = 0; b < vb; ++b)
        v |= static_cast<uint32_t>(p[b]) << (8 * b);
      p += vb;
      int64_t k = static_cast<int64_t>(std::min<uint64_t>(count, static_cast<uint64_t>(n - i)));
      std::fill(out + i, out + i + k, v);
      i += k;
    }
  }
}

int64_t rle_count(const uint8_t* p, const uint8_t* end, int bw, int64_t limit) {
  if (bw < 0 || bw > 32) corrupt("RLE bit width above 32");
  const size_t vb = static_cast<size_t>((bw + 7) / 8);
  int64_t i = 0;
  while (i < limit && p < end) {
    uint64_t header = read_uleb(p, end);
    size_t avail = static_cast<size_t>(end - p);
    uint64_t count;
    if (header & 1) {
      const uint64_t groups = std::min<uint64_t>(header >> 1, uint64_t{1} << 60);
      const size_t w = static_cast<size_t>(bw);
      if (w == 0) {
        count = groups * 8;
      } else if (groups <= avail / w) {
        count = groups * 8;
        p += groups * w;
      } else {  // the last bit-packed run may end early: it holds what its bytes hold
        count = avail * 8 / w;
        p = end;
      }
    } else {
      if (vb > avail) break;
      count = header >> 1;
      p += vb;
    }
    i += static_cast<int64_t>(std::min<uint64_t>(count, static_cast<uint64_t>(limit - i)));
  }
  return i;
}

int64_t delta_count(const uint8_t* p, const uint8_t* end) {
  uint64_t block = read_uleb(p, end);
  uint64_t mini = read_uleb(p, end);
  uint64_t total = read_uleb(p, end);
  (void)read_uleb(p, end);  // first value
  if (block == 0 || mini == 0 || block % mini != 0 || (block / mini) % 8 != 0 || block > (1u << 20))
    corrupt("bad DELTA_BINARY_PACKED block header");
  if (total > INT64_MAX / 2) corrupt("DELTA_BINARY_PACKED value count out of range");
  const uint64_t blocks = total <= 1 ? 0 : (total - 2) / block + 1;
  if (blocks > static_cast<uint64_t>(end - p) / (1 + mini))
    corrupt("DELTA_BINARY_PACKED declares more values than its bytes hold");
  return static_cast<int64_t>(total);
}

template <typename I>
const uint8_t* delta_decode(const uint8_t* p, const uint8_t* end, int64_t n, I* out) {
  uint64_t block = read_uleb(p, end);
  uint64_t mini = read_uleb(p, end);
  uint64_t total = read_uleb(p, end);
  uint64_t zz = read_uleb(p, end);
  int64_t first = static_cast<int64_t>(zz >> 1) ^ -static_cast<int64_t>(zz & 1);
  if (block == 0 || mini == 0 || block % mini != 0 || (block / mini) % 8 != 0 || block > (1u << 20))
    corrupt("bad DELTA_BINARY_PACKED block header");
  if (total != static_cast<uint64_t>(n)) corrupt("DELTA_BINARY_PACKED value count differs from the page's");
  if (n == 0) return p;
  const uint64_t per_mini = block / mini;
  uint64_t last = static_cast<uint64_t>(first);
  out[0] = static_cast<I>(first);
  int64_t i = 1;
  uint64_t deltas[512];
  while (i < n) {
    uint64_t mz = read_uleb(p, end);
    uint64_t min_delta = static_cast<uint64_t>(static_cast<int64_t>(mz >> 1) ^ -static_cast<int64_t>(mz & 1));
    if (static_cast<uint64_t>(end - p) < mini) corrupt("DELTA_BINARY_PACKED widths past the end");
    const uint8_t* widths = p;
    p += mini;
    for (uint64_t m = 0; m < mini && i < n; ++m) {
      int bw = widths[m];
      if (bw > static_cast<int>(sizeof(I) * 8)) corrupt("DELTA_BINARY_PACKED bit width too large");
      int64_t k = static_cast<int64_t>(std::min<uint64_t>(per_mini, static_cast<uint64_t>(n - i)));
      size_t avail = static_cast<size_t>(end - p);
      size_t need = (static_cast<size_t>(k) * bw + 7) / 8;
      if (need > avail) corrupt("DELTA_BINARY_PACKED miniblock past the end");
      for (int64_t done = 0; done < k; done += 512) {
        int64_t c = std::min<int64_t>(512, k - done);
        // c values starting at value `done` of the miniblock: done * bw is a multiple of 8 bits.
        size_t off = static_cast<size_t>(done) * bw / 8;
        unpack(p + off, avail - off, bw, c, deltas);
        for (int64_t j = 0; j < c; ++j) {
          last += min_delta + deltas[j];
          out[i + done + j] = static_cast<I>(last);
        }
      }
      p += std::min(static_cast<size_t>(per_mini) * bw / 8, avail);
      i += k;
    }
  }
  return p;
}

template const uint8_t* delta_decode<int32_t>(const uint8_t*, const uint8_t*, int64_t, int32_t*);
template const uint8_t* delta_decode<int64_t>(const uint8_t*, const uint8_t*, int64_t, int64_t*);

int64_t int96_to_ns(const uint8_t* p) {
  int64_t nanos;
  int32_t julian;
  std::memcpy(&nanos, p, 8);
  std::memcpy(&julian, p + 8, 4);
  constexpr int64_t unix_epoch_julian = 2440588;
  // Unsigned arithmetic: out-of-range (corrupt) days wrap instead of overflowing.
  uint64_t days = static_cast<uint64_t>(static_cast<int64_t>(julian) - unix_epoch_julian);
  return static_cast<int64_t>(days * 86400000000000ULL + static_cast<uint64_t>(nanos));
}

}  // namespace tug::io::parquet
