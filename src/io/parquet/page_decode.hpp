#pragma once
/// Internal to the GPU Parquet reader: the decoding of one decompressed page into the column's
/// buffers, written once for the device and the host (TUG_HOST_DEVICE). A `Team` runs each step: on
/// the device the threads of one block (one block a page), on the host a team of one (the unit
/// tests run the same functions on the CPU against the CPU reader). Every read of page bytes is
/// bounds-checked; a malformed page sets the chunk's error slot (the first error wins) and the
/// page's outputs are left partly written, never anything outside them.
///
/// The steps of a column chunk (gpu_reader.cu runs each step for every column chunk of a row group in
/// one launch; the tests run them on the host):
///   1. decode_dictionary: the dictionary page, once (fixed width: converted values; byte arrays:
///      a pointer and a length per entry).
///   2. prepare_page: per data page, by one team, what needs a walk through the page: the definition
///      levels (RLE/bit-packed hybrid, width 1) into a dense position per row (-1 null), dictionary
///      indices, the values of length-prefixed and DELTA encodings; the page's page_state.
///   3. decode_row: per row, by any thread (a page's rows are spread over many blocks): the value
///      converted to the column's type, or a string's pointer and length.
///   4. validity_byte (column): the positions -> an LSB-first validity bitmap.
///   5. strings: the lengths -> offsets (an exclusive scan) -> the chars copied (copy_string).
#include <cstdint>
#include <cstring>

#include "exec/host_device.hpp"

namespace tug::io::parquet::gpu {

/// Why a page failed to decode (the chunk's error slot holds the first one).
enum class page_error : int32_t {
  none = 0,
  levels_truncated,        ///< definition levels end before the page's values or are malformed
  level_above_one,         ///< a definition level above 1 in a flat column
  values_truncated,        ///< the values need more bytes than the page holds
  bad_bit_width,           ///< a dictionary index bit width above 32
  no_dictionary,           ///< dictionary-encoded page without a dictionary page
  dictionary_index,        ///< a dictionary index past the dictionary
  decimal_too_wide,        ///< a byte-array decimal longer than 16 bytes
  unsupported_encoding,    ///< an encoding the planner should have sent to the host decoder
};

/// Text of a page_error, for the io_error the host raises.
inline const char* page_error_text(int32_t e) {
  switch (static_cast<page_error>(e)) {
    case page_error::none:
      return "no error";
    case page_error::levels_truncated:
      return "definition levels past the end of the page";
    case page_error::level_above_one:
      return "definition level above 1";
    case page_error::values_truncated:
      return "values past the end of the page";
    case page_error::bad_bit_width:
      return "dictionary index bit width above 32";
    case page_error::no_dictionary:
      return "dictionary-encoded page without a dictionary page";
    case page_error::dictionary_index:
      return "dictionary index out of range";
    case page_error::decimal_too_wide:
      return "decimal wider than 16 bytes";
    case page_error::unsupported_encoding:
      return "unsupported encoding";
  }
  return "unknown error";
}

/// The first error of a column chunk: its code and the page (index among the chunk's pages).
struct error_slot {
  int32_t code = 0;
  int32_t page = -1;
};

TUG_HOST_DEVICE inline void report(error_slot* e, page_error c, int32_t page) {
#ifdef __CUDA_ARCH__
  if (atomicCAS(&e->code, 0, static_cast<int32_t>(c)) == 0) e->page = page;
#else
  if (e->code == 0) {
    e->code = static_cast<int32_t>(c);
    e->page = page;
  }
#endif
}

/// How a physical value becomes the column's value.
enum class conv : uint8_t {
  copy,          ///< stored as it is (out_width bytes)
  narrow,        ///< INT32 -> int8/int16/uint8/uint16 (the low out_width bytes)
  i32_to_i64,    ///< INT32 (TIME millis) -> int64
  i32_to_dec,    ///< INT32 decimal -> decimal128
  i64_to_dec,    ///< INT64 decimal -> decimal128
  int96_ns,      ///< INT96 -> timestamp[ns]
  be_to_dec,     ///< big-endian two's complement bytes (FIXED_LEN_BYTE_ARRAY, BYTE_ARRAY) -> decimal128
  half_to_f32,   ///< FLOAT16 -> float32
  boolean,       ///< BOOLEAN (bit-packed in PLAIN) -> one byte
  string,        ///< bytes -> string (pointer and length per row)
};

/// Encodings as parquet.thrift numbers them (metadata.hpp's `encoding`, repeated here without the
/// host headers).
enum class enc : uint8_t {
  plain = 0,
  plain_dictionary = 2,
  rle = 3,
  delta_binary_packed = 5,
  delta_length_byte_array = 6,
  rle_dictionary = 8,
  byte_stream_split = 9,
};

/// What every page of a column chunk shares: the conversion, the dictionary, the outputs.
struct chunk_params {
  conv cv = conv::copy;
  bool byte_array = false;  ///< physical BYTE_ARRAY (values are length-prefixed)
  bool optional = false;    ///< definition levels precede the values
  int32_t phys_width = 0;   ///< bytes of a PLAIN value (0: BOOLEAN bits, BYTE_ARRAY)
  int32_t out_width = 0;    ///< bytes of an output value (0: strings)
  // dictionary (after decode_dictionary)
  bool has_dict = false;
  int64_t dict_count = 0;
  uint8_t* dict_values = nullptr;     ///< fixed width: dict_count converted values
  const uint8_t** dict_ptr = nullptr; ///< byte arrays: per entry its first byte
  int32_t* dict_len = nullptr;        ///< byte arrays: per entry its length
  // outputs, indexed by the row in the chunk's decoded rows
  int64_t rows = 0;                   ///< the chunk's decoded rows
  uint8_t* out = nullptr;             ///< fixed width: values
  uint8_t* validity = nullptr;        ///< optional columns: the validity bitmap (step 4)
  int32_t* rank = nullptr;            ///< optional columns: dense position in its page, -1 null
  uint32_t* indices = nullptr;        ///< scratch: dictionary indices / RLE booleans, dense, at the page's first row
  uint64_t* dense_values = nullptr;   ///< scratch: DELTA_BINARY_PACKED values or DELTA_LENGTH_BYTE_ARRAY lengths, dense
  const uint8_t** dense_ptr = nullptr;///< scratch (byte arrays): dense values' first bytes, at the page's first row
  int32_t* dense_len = nullptr;       ///< scratch (byte arrays): dense values' lengths
  const uint8_t** str_ptr = nullptr;  ///< strings: per row its first byte (nullptr for null)
  int64_t* str_len = nullptr;         ///< strings: per row its length (0 for null); scanned into offsets
  error_slot* error = nullptr;
};

/// One decompressed page: [rep levels][def levels][values] for v2, [4-byte length + def levels][values] for v1.
struct page_params {
  const uint8_t* data = nullptr;
  int64_t size = 0;
  int64_t first_row = 0;  ///< the page's first row among the chunk's decoded rows
  int32_t rows = 0;       ///< values of a data page (rows of a flat column), entries of a dictionary page
  int32_t index = 0;      ///< the page's position in the column chunk (errors name it)
  int32_t chunk = 0;      ///< the page's column chunk among those decoded together (its chunk_params)
  enc encoding = enc::plain;
  uint8_t version = 1;    ///< 1, 2 (data page v2); 0: dictionary page
  int32_t rep_bytes = 0, def_bytes = 0;  ///< v2: the level lengths
};

/// What prepare_page found in a data page, for decode_row (zeroed before: ok 0 means the page failed
/// and its rows are left alone; its error is in the chunk's slot).
struct page_state {
  int64_t valid = 0;         ///< values stored in the page (its non-null rows)
  int64_t values_at = 0;     ///< offset of the values in the page's bytes
  int32_t ok = 0;
};

/// Bytes of a page that a team holds in shared memory at once while it walks length-prefixed values.
constexpr int64_t kWalkWindow = 8192;

/// Shared state of a team working on one page (shared memory on the device).
struct page_shared {
  // the walk through length-prefixed values (walk_byte_arrays): the window of the page's bytes from
  // walk_pos, the values found so far, and 0 walking, 1 done, 2 malformed
  uint8_t window[kWalkWindow];
  const uint8_t* walk_pos;
  int64_t walk_k;
  uint8_t walk_state;
  // the current run of an RLE/bit-packed hybrid stream, published by the leader
  const uint8_t* run_bytes;
  int64_t run_at, run_count;
  uint32_t run_value;
  uint8_t run_packed, run_state;  ///< state: 0 run, 1 done, 2 malformed
  int32_t warp_totals[32];
};

/// A team of one thread: the host run of the device steps.
struct serial_team {
  TUG_HOST_DEVICE int rank() const { return 0; }
  TUG_HOST_DEVICE int size() const { return 1; }
  TUG_HOST_DEVICE bool leader() const { return true; }
  TUG_HOST_DEVICE void sync() const {}
  /// Exclusive count of `v` over the team (in rank order); `total` receives the team's count.
  TUG_HOST_DEVICE int32_t exclusive_count(bool v, int32_t& total, page_shared&) const {
    total = v ? 1 : 0;
    return 0;
  }
};

TUG_HOST_DEVICE inline uint32_t load_le32(const uint8_t* p) {
  return static_cast<uint32_t>(p[0]) | (static_cast<uint32_t>(p[1]) << 8) | (static_cast<uint32_t>(p[2]) << 16) |
         (static_cast<uint32_t>(p[3]) << 24);
}

/// Copies the `w` bytes of one value: on the device with one load and one store where both are
/// aligned to the width (column buffers are; PLAIN values are where the page's levels end on a multiple).
TUG_HOST_DEVICE inline void copy_value(uint8_t* dst, const uint8_t* src, int32_t w) {
#ifdef __CUDA_ARCH__
  const auto a = reinterpret_cast<uintptr_t>(src) | reinterpret_cast<uintptr_t>(dst);
  if (w == 8 && (a & 7) == 0) {
    *reinterpret_cast<uint64_t*>(dst) = *reinterpret_cast<const uint64_t*>(src);
  } else if (w == 4 && (a & 3) == 0) {
    *reinterpret_cast<uint32_t*>(dst) = *reinterpret_cast<const uint32_t*>(src);
  } else if (w == 16 && (a & 15) == 0) {
    *reinterpret_cast<uint4*>(dst) = *reinterpret_cast<const uint4*>(src);
  } else {
    for (int32_t b = 0; b < w; ++b)
      dst[b] = src[b];
  }
#else
  std::memcpy(dst, src, static_cast<size_t>(w));
#endif
}

/// Value `j` of width `bw` (<= 32) of a bit-packed run at `p` (the caller checked that the run's
/// bytes are there).
TUG_HOST_DEVICE inline uint32_t unpack_one(const uint8_t* p, int64_t j, int bw) {
  if (bw == 0) return 0;
  const uint64_t bit = static_cast<uint64_t>(j) * static_cast<uint64_t>(bw);
  const uint64_t first = bit >> 3, last = (bit + static_cast<uint64_t>(bw) - 1) >> 3;
  uint64_t v = 0;
  for (uint64_t b = first; b <= last; ++b)
    v |= static_cast<uint64_t>(p[b]) << (8 * (b - first));
  v >>= (bit & 7);
  return static_cast<uint32_t>(bw == 32 ? v : v & ((uint64_t{1} << bw) - 1));
}

/// Walks the first `n` values of the RLE/bit-packed hybrid stream [p, end) of width `bw`: the leader
/// reads each run header (bounds-checked) and publishes it, then the whole team calls
/// `repeat(at, count, value)` or `packed(at, count, bytes)` for it. Returns false when the stream is
/// malformed or ends early. Every thread of the team must call it.
template <typename Team, typename Repeat, typename Packed>
TUG_HOST_DEVICE bool rle_expand(const Team& t, page_shared& sh, const uint8_t* p, const uint8_t* end, int bw,
                                int64_t n, Repeat&& repeat, Packed&& packed) {
  const uint8_t* cur = p;  // the leader's position
  int64_t i = 0;
  while (true) {
    if (t.leader()) {
      sh.run_state = 0;
      if (i >= n) {
        sh.run_state = 1;
      } else if (bw < 0 || bw > 32) {
        sh.run_state = 2;
      } else {
        uint64_t header = 0;
        int shift = 0;
        bool ok = false;
        while (cur < end && shift < 64) {
          const uint8_t b = *cur++;
          header |= static_cast<uint64_t>(b & 0x7f) << shift;
          shift += 7;
          if (!(b & 0x80)) {
            ok = true;
            break;
          }
        }
        const uint64_t avail = static_cast<uint64_t>(end - cur);
        const uint64_t left = static_cast<uint64_t>(n - i);
        if (!ok) {
          sh.run_state = 2;
        } else if (header & 1) {
          const uint64_t groups = header >> 1;
          const uint64_t count = groups > (uint64_t{1} << 56) ? ~uint64_t{0} : groups * 8;
          const uint64_t k = count < left ? count : left;
          const uint64_t need = (k * static_cast<uint64_t>(bw) + 7) / 8;
          if (need > avail) {
            sh.run_state = 2;
          } else {
            sh.run_packed = 1;
            sh.run_bytes = cur;
            sh.run_at = i;
            sh.run_count = static_cast<int64_t>(k);
            const uint64_t run_bytes = groups > avail ? avail : groups * static_cast<uint64_t>(bw);
            cur += run_bytes < avail ? run_bytes : avail;
          }
        } else {
          const uint64_t vb = static_cast<uint64_t>((bw + 7) / 8);
          if (vb > avail) {
            sh.run_state = 2;
          } else {
            uint32_t v = 0;
            for (uint64_t b = 0; b < vb; ++b)
              v |= static_cast<uint32_t>(cur[b]) << (8 * b);
            cur += vb;
            const uint64_t k = (header >> 1) < left ? (header >> 1) : left;
            sh.run_packed = 0;
            sh.run_value = v;
            sh.run_at = i;
            sh.run_count = static_cast<int64_t>(k);
          }
        }
      }
    }
    t.sync();
    const uint8_t state = sh.run_state;
    if (state != 0) {
      t.sync();  // nobody reads `sh` any more when the caller reuses it
      return state == 1;
    }
    const int64_t at = sh.run_at, count = sh.run_count;
    if (sh.run_packed)
      packed(at, count, sh.run_bytes);
    else
      repeat(at, count, sh.run_value);
    i = at + count;
    t.sync();  // before the leader publishes the next run
  }
}

/// Nanoseconds since the epoch of an INT96 timestamp (8 bytes nanoseconds of the day, 4 bytes Julian
/// day); unsigned arithmetic, so out-of-range (corrupt) days wrap instead of overflowing.
TUG_HOST_DEVICE inline int64_t int96_nanos(const uint8_t* src) {
  uint64_t nanos = 0;
  for (int b = 0; b < 8; ++b)
    nanos |= static_cast<uint64_t>(src[b]) << (8 * b);
  const auto julian = static_cast<int32_t>(load_le32(src + 8));
  const auto days = static_cast<uint64_t>(static_cast<int64_t>(julian) - 2440588);
  return static_cast<int64_t>(days * 86400000000000ULL + nanos);
}

/// The float32 bits of the IEEE half-precision value `h` (FLOAT16); NaN becomes the quiet NaN.
TUG_HOST_DEVICE inline uint32_t half_to_float_bits(uint32_t h) {
  const uint32_t sign = (h >> 15) & 1, exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
  if (exp == 31) return mant ? 0x7fc00000u : ((sign << 31) | 0x7f800000u);
  if (exp != 0) return (sign << 31) | ((exp + 112) << 23) | (mant << 13);
  if (mant == 0) return sign << 31;
  int e = -1;  // subnormal: normalize
  uint32_t m = mant;
  do {
    ++e;
    m <<= 1;
  } while (!(m & 0x400));
  return (sign << 31) | (static_cast<uint32_t>(127 - 15 - e) << 23) | ((m & 0x3ff) << 13);
}

/// The 128-bit two's complement value of `len` (<= 16) big-endian bytes at `src` (a decimal's unscaled
/// value in FIXED_LEN_BYTE_ARRAY or BYTE_ARRAY), as its low and high 64 bits.
TUG_HOST_DEVICE inline void big_endian_to_int128(const uint8_t* src, int64_t len, uint64_t& lo, uint64_t& hi) {
  lo = hi = len > 0 && (src[0] & 0x80) ? ~uint64_t{0} : 0;
  for (int64_t b = 0; b < len; ++b) {
    hi = (hi << 8) | (lo >> 56);
    lo = (lo << 8) | src[b];
  }
}

/// Reads an unsigned LEB128 varint from [p, end) into `v`; false when it runs past `end`.
TUG_HOST_DEVICE inline bool read_varint(const uint8_t*& p, const uint8_t* end, uint64_t& v) {
  v = 0;
  for (int shift = 0; p < end && shift < 64; shift += 7) {
    const uint8_t b = *p++;
    v |= static_cast<uint64_t>(b & 0x7f) << shift;
    if (!(b & 0x80)) return true;
  }
  return false;
}

/// Value `j` of width `bw` (<= 64) of a bit-packed miniblock at `p` (the caller checked its bytes).
TUG_HOST_DEVICE inline uint64_t unpack_wide(const uint8_t* p, int64_t j, int bw) {
  uint64_t v = 0;
  const uint64_t bit = static_cast<uint64_t>(j) * static_cast<uint64_t>(bw);
  for (int b = 0; b < bw; ++b) {
    const uint64_t at = bit + static_cast<uint64_t>(b);
    v |= static_cast<uint64_t>((p[at >> 3] >> (at & 7)) & 1) << b;
  }
  return v;
}

/// Decodes a DELTA_BINARY_PACKED stream of exactly `n` values from [p, end) into `out` (summed modulo
/// 2^64: the low 32 bits are an INT32 column's values), with miniblock widths up to `max_bw` (33 for
/// INT32: writers may subtract them as int64). The checks of encoding.cpp's delta_decode, serially.
/// Returns the first byte after the stream, or nullptr when it is malformed.
TUG_HOST_DEVICE inline const uint8_t* delta_binary_packed(const uint8_t* p, const uint8_t* end, int64_t n, int max_bw,
                                                          uint64_t* out) {
  uint64_t block, mini, total, zz;
  if (!read_varint(p, end, block) || !read_varint(p, end, mini) || !read_varint(p, end, total) ||
      !read_varint(p, end, zz))
    return nullptr;
  if (block == 0 || mini == 0 || block % mini != 0 || (block / mini) % 8 != 0 || block > (1u << 20)) return nullptr;
  if (total != static_cast<uint64_t>(n)) return nullptr;
  if (n == 0) return p;
  const uint64_t per_mini = block / mini;
  uint64_t last = (zz >> 1) ^ (~(zz & 1) + 1);
  out[0] = last;
  int64_t i = 1;
  while (i < n) {
    uint64_t mz;
    if (!read_varint(p, end, mz)) return nullptr;
    const uint64_t min_delta = (mz >> 1) ^ (~(mz & 1) + 1);
    if (static_cast<uint64_t>(end - p) < mini) return nullptr;
    const uint8_t* widths = p;
    p += mini;
    for (uint64_t m = 0; m < mini && i < n; ++m) {
      const int bw = widths[m];
      if (bw > max_bw) return nullptr;
      const uint64_t left = static_cast<uint64_t>(n - i);
      const int64_t k = static_cast<int64_t>(per_mini < left ? per_mini : left);
      const uint64_t avail = static_cast<uint64_t>(end - p);
      if ((static_cast<uint64_t>(k) * static_cast<uint64_t>(bw) + 7) / 8 > avail) return nullptr;
      for (int64_t j = 0; j < k; ++j) {
        last += min_delta + unpack_wide(p, j, bw);
        out[i + j] = last;
      }
      const uint64_t step = per_mini * static_cast<uint64_t>(bw) / 8;
      p += step < avail ? step : avail;
      i += k;
    }
  }
  return p;
}

/// Converts the physical value at `src` (`len` bytes: byte arrays) to the column's value at `dst`.
/// Returns false when it cannot (a decimal wider than 16 bytes).
TUG_HOST_DEVICE inline bool convert_value(const chunk_params& c, const uint8_t* src, int64_t len, uint8_t* dst) {
  auto store64 = [](uint8_t* d, uint64_t v) {
    for (int b = 0; b < 8; ++b)
      d[b] = static_cast<uint8_t>(v >> (8 * b));
  };
  auto load64 = [](const uint8_t* s) {
    uint64_t v = 0;
    for (int b = 0; b < 8; ++b)
      v |= static_cast<uint64_t>(s[b]) << (8 * b);
    return v;
  };
  switch (c.cv) {
    case conv::copy:
    case conv::narrow:
      copy_value(dst, src, c.out_width);
      return true;
    case conv::i32_to_i64:
    case conv::i32_to_dec: {
      const auto v = static_cast<int64_t>(static_cast<int32_t>(load_le32(src)));
      store64(dst, static_cast<uint64_t>(v));
      if (c.cv == conv::i32_to_dec) store64(dst + 8, v < 0 ? ~uint64_t{0} : 0);
      return true;
    }
    case conv::i64_to_dec: {
      const uint64_t v = load64(src);
      store64(dst, v);
      store64(dst + 8, (v >> 63) ? ~uint64_t{0} : 0);
      return true;
    }
    case conv::int96_ns:
      store64(dst, static_cast<uint64_t>(int96_nanos(src)));
      return true;
    case conv::be_to_dec: {
      if (len > 16) return false;
      uint64_t lo, hi;
      big_endian_to_int128(src, len, lo, hi);
      store64(dst, lo);
      store64(dst + 8, hi);
      return true;
    }
    case conv::half_to_f32: {
      const uint32_t bits = half_to_float_bits(static_cast<uint32_t>(src[0]) | (static_cast<uint32_t>(src[1]) << 8));
      for (int b = 0; b < 4; ++b)
        dst[b] = static_cast<uint8_t>(bits >> (8 * b));
      return true;
    }
    case conv::boolean:
      dst[0] = src[0] != 0;
      return true;
    case conv::string:
      return true;
  }
  return false;
}

/// The `n` length-prefixed values of [p, end) (PLAIN BYTE_ARRAY): their first bytes and lengths. The
/// walk is serial (each length says where the next is): the team copies a window of the page into
/// `sh` and the leader walks it there (a global load per value would be a dependent miss), the next
/// window starting at the first length prefix not in this one. Past a malformed value the error is
/// reported and the rest become empty values at `p`, so that nothing after reads through an unset
/// pointer. Every thread of the team must call it.
template <typename Team>
TUG_HOST_DEVICE void walk_byte_arrays(const Team& t, page_shared& sh, const chunk_params& c, const uint8_t* p,
                                      const uint8_t* end, int64_t n, const uint8_t** ptr, int32_t* len_out,
                                      int32_t page) {
  if (t.leader()) {
    sh.walk_pos = p;
    sh.walk_k = 0;
    sh.walk_state = n > 0 ? 0 : 1;
  }
  t.sync();
  while (sh.walk_state == 0) {
    const uint8_t* base = sh.walk_pos;
    const int64_t avail = end - base;
    const int64_t len = avail < kWalkWindow ? avail : kWalkWindow;
    for (int64_t i = t.rank(); i < len; i += t.size())
      sh.window[i] = base[i];
    t.sync();
    if (t.leader()) {
      int64_t off = 0, k = sh.walk_k;
      uint8_t state = 0;
      while (k < n) {
        if (off + 4 > len) {  // the next length is not in the window: the next window, or past the page
          if (len == avail) state = 2;
          break;
        }
        const uint32_t l = load_le32(sh.window + off);
        if (l > static_cast<uint64_t>(avail - off - 4)) {
          state = 2;
          break;
        }
        ptr[k] = base + off + 4;
        len_out[k] = static_cast<int32_t>(l);
        off += 4 + static_cast<int64_t>(l);
        ++k;
      }
      if (state == 0 && k == n) state = 1;
      sh.walk_pos = base + off;
      sh.walk_k = k;
      sh.walk_state = state;
    }
    t.sync();
  }
  if (t.leader() && sh.walk_state == 2) {
    report(c.error, page_error::values_truncated, page);
    for (int64_t k = sh.walk_k; k < n; ++k) {
      ptr[k] = p;
      len_out[k] = 0;
    }
  }
  t.sync();  // nobody reads `sh` any more when the caller reuses it
}

/// Step 1: the dictionary page of `pg.rows` entries into the chunk's dictionary arrays (sized by the
/// caller for pg.rows entries).
template <typename Team>
TUG_HOST_DEVICE void decode_dictionary(const Team& t, const chunk_params& c, const page_params& pg, page_shared& sh) {
  const uint8_t* p = pg.data;
  const uint8_t* end = p + pg.size;
  const int64_t n = pg.rows;
  if (c.byte_array) {
    walk_byte_arrays(t, sh, c, p, end, n, c.dict_ptr, c.dict_len, pg.index);
    return;
  }
  const int64_t w = c.phys_width;
  if (c.cv == conv::boolean) {
    if ((n + 7) / 8 > pg.size) {
      if (t.leader()) report(c.error, page_error::values_truncated, pg.index);
      return;
    }
    for (int64_t k = t.rank(); k < n; k += t.size())
      c.dict_values[k] = (p[k >> 3] >> (k & 7)) & 1;
    return;
  }
  if (w <= 0 || n > pg.size / w) {
    if (t.leader()) report(c.error, page_error::values_truncated, pg.index);
    return;
  }
  for (int64_t k = t.rank(); k < n; k += t.size()) {
    if (c.cv == conv::string) {
      c.dict_ptr[k] = p + k * w;
      c.dict_len[k] = static_cast<int32_t>(w);
    } else {
      convert_value(c, p + k * w, w, c.dict_values + k * c.out_width);
    }
  }
}

/// Step 2: what one data page needs walked, and its page_state `st` (set last, by the leader). Every
/// thread of the team must call it.
template <typename Team>
TUG_HOST_DEVICE void prepare_page(const Team& t, const chunk_params& c, const page_params& pg, page_shared& sh,
                                  page_state* st) {
  const int64_t n = pg.rows;
  const int64_t first = pg.first_row;
  const uint8_t* p = pg.data;
  const uint8_t* end = p + pg.size;
  auto fail = [&](page_error e) {
    if (t.leader()) report(c.error, e, pg.index);
  };
  // definition levels -> a dense position per row
  int64_t nn = n;
  const uint8_t* vp = p;  // the values
  if (pg.version == 2) vp = p + pg.rep_bytes + pg.def_bytes;  // the planner checked they fit
  if (c.optional) {
    const uint8_t *lp, *lend;
    if (pg.version == 2) {
      lp = p + pg.rep_bytes;
      lend = lp + pg.def_bytes;
    } else {
      if (pg.size < 4) return fail(page_error::levels_truncated);
      const uint32_t len = load_le32(p);
      if (len > static_cast<uint64_t>(pg.size - 4)) return fail(page_error::levels_truncated);
      lp = p + 4;
      lend = lp + len;
      vp = lend;
    }
    int64_t base = 0;  // the valid rows before the current run (the same in every thread)
    bool bad_level = false;
    const bool ok = rle_expand(
        t, sh, lp, lend, 1, n,
        [&](int64_t at, int64_t k, uint32_t v) {
          if (v > 1) {
            bad_level = true;
            return;
          }
          for (int64_t j = t.rank(); j < k; j += t.size())
            c.rank[first + at + j] = v ? static_cast<int32_t>(base + j) : -1;
          base += v ? k : 0;
        },
        [&](int64_t at, int64_t k, const uint8_t* bytes) {
          for (int64_t tile = 0; tile < k; tile += t.size()) {
            const int64_t j = tile + t.rank();
            const bool bit = j < k && ((bytes[j >> 3] >> (j & 7)) & 1);
            int32_t total = 0;
            const int32_t r = t.exclusive_count(bit, total, sh);
            if (j < k) c.rank[first + at + j] = bit ? static_cast<int32_t>(base + r) : -1;
            base += total;
          }
        });
    if (bad_level) return fail(page_error::level_above_one);
    if (!ok) return fail(page_error::levels_truncated);
    nn = base;
  }
  const int64_t vsize = end - vp;
  // dictionary indices (and RLE booleans) expanded into c.indices at the page's first row
  auto expand_indices = [&](const uint8_t* q, const uint8_t* qend, int bw) {
    return rle_expand(
        t, sh, q, qend, bw, nn,
        [&](int64_t at, int64_t k, uint32_t v) {
          for (int64_t j = t.rank(); j < k; j += t.size())
            c.indices[first + at + j] = v;
        },
        [&](int64_t at, int64_t k, const uint8_t* bytes) {
          for (int64_t j = t.rank(); j < k; j += t.size())
            c.indices[first + at + j] = unpack_one(bytes, j, bw);
        });
  };
  const bool dictionary = pg.encoding == enc::plain_dictionary || pg.encoding == enc::rle_dictionary;
  if (dictionary) {
    if (!c.has_dict) return fail(page_error::no_dictionary);
    if (nn > 0) {
      if (vsize < 1) return fail(page_error::values_truncated);
      const int bw = vp[0];
      if (bw > 32) return fail(page_error::bad_bit_width);
      if (!expand_indices(vp + 1, end, bw)) return fail(page_error::values_truncated);
    }
  } else if (pg.encoding == enc::rle) {
    if (c.cv != conv::boolean) return fail(page_error::unsupported_encoding);
    if (nn > 0) {
      if (vsize < 4) return fail(page_error::values_truncated);
      const uint32_t len = load_le32(vp);
      if (len > static_cast<uint64_t>(vsize - 4)) return fail(page_error::values_truncated);
      if (!expand_indices(vp + 4, vp + 4 + len, 1)) return fail(page_error::values_truncated);
    }
  } else if (pg.encoding == enc::plain) {
    if (c.byte_array) {  // length-prefixed: a serial walk
      walk_byte_arrays(t, sh, c, vp, end, nn, c.dense_ptr + first, c.dense_len + first, pg.index);
    } else if (c.cv == conv::boolean) {
      if ((nn + 7) / 8 > vsize) return fail(page_error::values_truncated);
    } else if (c.phys_width <= 0 || nn > vsize / c.phys_width) {
      return fail(page_error::values_truncated);
    }
  } else if (pg.encoding == enc::delta_binary_packed) {
    if (c.byte_array || (c.phys_width != 4 && c.phys_width != 8) || c.cv == conv::int96_ns || c.cv == conv::string)
      return fail(page_error::unsupported_encoding);
    if (t.leader() && !delta_binary_packed(vp, end, nn, c.phys_width == 4 ? 33 : 64, c.dense_values + first))
      report(c.error, page_error::values_truncated, pg.index);
    t.sync();
  } else if (pg.encoding == enc::delta_length_byte_array) {
    if (!c.byte_array) return fail(page_error::unsupported_encoding);
    if (t.leader()) {  // the lengths, then the values one after the other
      const uint8_t* q = delta_binary_packed(vp, end, nn, 33, c.dense_values + first);
      int64_t k = 0;
      for (; q && k < nn; ++k) {
        const auto len = static_cast<int64_t>(static_cast<int32_t>(c.dense_values[first + k]));
        if (len < 0 || len > end - q) break;
        c.dense_ptr[first + k] = q;
        c.dense_len[first + k] = static_cast<int32_t>(len);
        q += len;
      }
      if (k < nn) report(c.error, page_error::values_truncated, pg.index);
      for (; k < nn; ++k) {  // nothing after reads through an unset pointer
        c.dense_ptr[first + k] = vp;
        c.dense_len[first + k] = 0;
      }
    }
    t.sync();
  } else if (pg.encoding == enc::byte_stream_split) {
    if (c.byte_array || c.cv == conv::boolean || c.phys_width <= 0 || c.phys_width > 16 ||
        nn > vsize / c.phys_width)
      return fail(page_error::unsupported_encoding);
  } else {
    return fail(page_error::unsupported_encoding);
  }
  if (t.leader()) {
    st->valid = nn;
    st->values_at = vp - p;
    st->ok = 1;
  }
}

/// Step 3: row `i` of data page `pg` (prepared: `st` ok) into the column's outputs.
TUG_HOST_DEVICE inline void decode_row(const chunk_params& c, const page_params& pg, const page_state& st, int64_t i) {
  const int64_t first = pg.first_row;
  const int64_t nn = st.valid;
  const uint8_t* vp = pg.data + st.values_at;
  const bool dictionary = pg.encoding == enc::plain_dictionary || pg.encoding == enc::rle_dictionary;
  const int64_t w = c.phys_width;
  const int64_t r = c.optional ? c.rank[first + i] : i;
  const int64_t row = first + i;
  if (c.cv == conv::string) {
    const uint8_t* sp = nullptr;
    int64_t len = 0;
    if (r >= 0) {
      if (dictionary) {
        const uint32_t x = c.indices[first + r];
        if (x >= c.dict_count) {
          report(c.error, page_error::dictionary_index, pg.index);
        } else {
          sp = c.dict_ptr[x];
          len = c.dict_len[x];
        }
      } else if (c.byte_array) {
        sp = c.dense_ptr[first + r];
        len = c.dense_len[first + r];
      } else if (pg.encoding == enc::plain) {
        sp = vp + r * w;
        len = w;
      }
    }
    c.str_ptr[row] = sp;
    c.str_len[row] = len;
    return;
  }
  uint8_t* dst = c.out + row * c.out_width;
  if (r < 0) {
    for (int32_t b = 0; b < c.out_width; ++b)
      dst[b] = 0;
    return;
  }
  if (dictionary) {
    const uint32_t x = c.indices[first + r];
    if (x >= c.dict_count) {
      report(c.error, page_error::dictionary_index, pg.index);
      return;
    }
    if (c.byte_array) {  // byte-array decimals: converted from the entry's bytes
      if (!convert_value(c, c.dict_ptr[x], c.dict_len[x], dst)) report(c.error, page_error::decimal_too_wide, pg.index);
    } else {
      copy_value(dst, c.dict_values + static_cast<int64_t>(x) * c.out_width, c.out_width);
    }
  } else if (pg.encoding == enc::rle) {
    dst[0] = c.indices[first + r] != 0;
  } else if (pg.encoding == enc::byte_stream_split) {
    uint8_t v[16];
    for (int64_t b = 0; b < w; ++b)
      v[b] = vp[b * nn + r];
    convert_value(c, v, w, dst);
  } else if (pg.encoding == enc::delta_binary_packed) {
    uint8_t v[8];
    const uint64_t x = c.dense_values[first + r];
    for (int b = 0; b < 8; ++b)
      v[b] = static_cast<uint8_t>(x >> (8 * b));
    convert_value(c, v, w, dst);
  } else if (c.cv == conv::boolean) {
    dst[0] = (vp[r >> 3] >> (r & 7)) & 1;
  } else if (c.byte_array) {
    if (!convert_value(c, c.dense_ptr[first + r], c.dense_len[first + r], dst))
      report(c.error, page_error::decimal_too_wide, pg.index);
  } else {
    convert_value(c, vp + r * w, w, dst);
  }
}

/// Step 4: validity bit `row` (of the decoded rows) for bitmap byte `byte`: bits of rows [8 byte, 8 byte + 8).
TUG_HOST_DEVICE inline uint8_t validity_byte(const int32_t* rank, int64_t rows, int64_t byte) {
  uint8_t b = 0;
  for (int64_t k = 0; k < 8; ++k) {
    const int64_t row = byte * 8 + k;
    if (row < rows && rank[row] >= 0) b |= static_cast<uint8_t>(1u << k);
  }
  return b;
}

/// Step 5: the chars of string row `row` at their offset (`offsets` scanned from c.str_len).
TUG_HOST_DEVICE inline void copy_string(const chunk_params& c, const int64_t* offsets, char* chars, int64_t row) {
  const uint8_t* s = c.str_ptr[row];
  const int64_t len = c.str_len[row];
  char* d = chars + offsets[row];
  for (int64_t b = 0; b < len; ++b)
    d[b] = static_cast<char>(s[b]);
}

}  // namespace tug::io::parquet::gpu
