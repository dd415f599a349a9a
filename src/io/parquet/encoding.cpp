/// Parquet level and integer encodings: RLE/bit-packed hybrid, DELTA_BINARY_PACKED, INT96.
#include "tug/io/parquet/encoding.hpp"

#include <algorithm>
#include <array>
#include <cstring>
#include <string>
#include <utility>

#include "page_decode.hpp"
#include "rle.hpp"
#include "tug/core/error.hpp"

namespace tug::io::parquet {
namespace {

[[noreturn]] void corrupt(const std::string& what) { throw io_error("corrupt page: " + what); }

inline uint64_t load64(const uint8_t* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}

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
  rle_walk(
      p, end, bw, n, [&](uint32_t v, int64_t k, int64_t at) { std::fill(out + at, out + at + k, v); },
      [&](const uint8_t* q, size_t avail, int64_t k, int64_t at) { unpack32(q, avail, bw, k, out + at); });
}

namespace {

/// Unpacks `groups` groups of 8 values of width BW: each group is BW bytes, and 8 bytes may be read
/// from the start of any value (the caller guarantees the slack).
template <int BW>
void unpack_groups(const uint8_t* in, int64_t groups, uint32_t* out) {
  constexpr uint64_t mask = (uint64_t{1} << BW) - 1;
  for (int64_t g = 0; g < groups; ++g, in += BW, out += 8) {
    [&]<int... J>(std::integer_sequence<int, J...>) {
      ((out[J] = static_cast<uint32_t>((load64(in + (J * BW) / 8) >> ((J * BW) % 8)) & mask)), ...);
    }
    (std::make_integer_sequence<int, 8>{});
  }
}

using unpack_fn = void (*)(const uint8_t*, int64_t, uint32_t*);

template <int... BW>
constexpr std::array<unpack_fn, sizeof...(BW)> unpack_table(std::integer_sequence<int, BW...>) {
  return {&unpack_groups<BW + 1>...};
}

constexpr auto unpackers = unpack_table(std::make_integer_sequence<int, 32>{});

}  // namespace

void unpack32(const uint8_t* p, size_t avail, int bw, int64_t k, uint32_t* out) {
  if (bw == 0) {
    std::fill(out, out + k, 0u);
    return;
  }
  // Group g reads bytes up to g * bw + bw + 8 (a value starts within the group's bw bytes).
  const int64_t slack_groups = avail >= 8 ? static_cast<int64_t>((avail - 8) / static_cast<size_t>(bw)) : 0;
  const int64_t fast = std::min(k / 8, slack_groups);
  unpackers[static_cast<size_t>(bw - 1)](p, fast, out);
  const size_t off = static_cast<size_t>(fast) * static_cast<size_t>(bw);
  unpack(p + off, avail - off, bw, k - fast * 8, out + fast * 8);
}

void set_bits(uint8_t* bm, int64_t off, int64_t n) {
  if (n <= 0) return;
  int64_t i = off;
  const int64_t end = off + n;
  for (; i < end && (i & 7); ++i)
    bm[i >> 3] |= static_cast<uint8_t>(1u << (i & 7));
  const int64_t full = (end - i) >> 3;
  if (full > 0) std::memset(bm + (i >> 3), 0xff, static_cast<size_t>(full));
  for (i += full * 8; i < end; ++i)
    bm[i >> 3] |= static_cast<uint8_t>(1u << (i & 7));
}

void or_bits(uint8_t* dst, int64_t off, const uint8_t* src, int64_t n) {
  if (n <= 0) return;
  const int shift = static_cast<int>(off & 7);
  uint8_t* d = dst + (off >> 3);
  const int64_t nb = n >> 3;
  const int rem = static_cast<int>(n & 7);
  if (shift == 0) {
    for (int64_t b = 0; b < nb; ++b)
      d[b] |= src[b];
    if (rem) d[nb] |= static_cast<uint8_t>(src[nb] & ((1u << rem) - 1));
    return;
  }
  for (int64_t b = 0; b < nb; ++b) {
    d[b] |= static_cast<uint8_t>(src[b] << shift);
    d[b + 1] |= static_cast<uint8_t>(src[b] >> (8 - shift));
  }
  if (rem) {
    const unsigned v = src[nb] & ((1u << rem) - 1);
    d[nb] |= static_cast<uint8_t>(v << shift);
    if (shift + rem > 8) d[nb + 1] |= static_cast<uint8_t>(v >> (8 - shift));
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
  // Deltas wrap around in the physical type's width, but writers may compute them wider: DuckDB
  // subtracts INT32 values as int64, so a delta minus the block's min delta needs up to 33 bits.
  // Unpacked to 64 bits and summed modulo 2^64, the low bits are right either way.
  constexpr int max_bw = sizeof(I) == 4 ? 33 : 64;
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
      if (bw > max_bw)
        corrupt("DELTA_BINARY_PACKED bit width " + std::to_string(bw) + " above " + std::to_string(max_bw) +
                " for " + (sizeof(I) == 4 ? "INT32" : "INT64"));
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

int64_t int96_to_ns(const uint8_t* p) { return gpu::int96_nanos(p); }

}  // namespace tug::io::parquet
