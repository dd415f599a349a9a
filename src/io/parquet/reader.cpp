/// Parquet reader: footer, schema mapping, page decoding of flat columns.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <string_view>

#include "tug/core/error.hpp"
#include "tug/io/parquet/codec.hpp"
#include "tug/io/parquet/encoding.hpp"
#include "tug/io/parquet/metadata.hpp"
#include "tug/io/parquet/reader.hpp"

namespace tug::io::parquet {
namespace {

[[noreturn]] void corrupt(const std::string& what) { throw io_error("corrupt page: " + what); }

std::string encoding_name(encoding e) {
  switch (e) {
    case encoding::plain:
      return "PLAIN";
    case encoding::plain_dictionary:
      return "PLAIN_DICTIONARY";
    case encoding::rle:
      return "RLE";
    case encoding::bit_packed:
      return "BIT_PACKED";
    case encoding::delta_binary_packed:
      return "DELTA_BINARY_PACKED";
    case encoding::delta_length_byte_array:
      return "DELTA_LENGTH_BYTE_ARRAY";
    case encoding::delta_byte_array:
      return "DELTA_BYTE_ARRAY";
    case encoding::rle_dictionary:
      return "RLE_DICTIONARY";
    case encoding::byte_stream_split:
      return "BYTE_STREAM_SPLIT";
  }
  return "encoding " + std::to_string(static_cast<int>(e));
}

[[noreturn]] void unsupported_encoding(encoding e, physical_type t) {
  throw not_implemented_error("Parquet encoding " + encoding_name(e) + " is not supported for physical type " +
                              std::to_string(static_cast<int>(t)));
}

/// A file descriptor closed on scope exit.
struct fd_guard {
  int fd = -1;
  ~fd_guard() {
    if (fd >= 0) ::close(fd);
  }
};

void read_at(int fd, uint8_t* out, size_t n, int64_t offset, const std::string& path) {
  size_t done = 0;
  while (done < n) {
    ssize_t r = ::pread(fd, out + done, n - done, static_cast<off_t>(offset + static_cast<int64_t>(done)));
    if (r <= 0) throw io_error(path + ": read failed (file truncated?)");
    done += static_cast<size_t>(r);
  }
}

int open_file(const std::string& path, int64_t& size) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw io_error(path + ": cannot open Parquet file: " + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    ::close(fd);
    throw io_error(path + ": cannot stat Parquet file");
  }
  size = st.st_size;
  return fd;
}

/// The tug type of a flat leaf, or nullopt with `why` set when it has none.
std::optional<data_type> map_type(const schema_element& e, std::string& why) {
  const logical_type& lt = e.logical;
  auto conv = e.converted;
  auto is_conv = [&](converted_type c) { return conv && *conv == c; };
  auto decimal_type = [&]() -> std::optional<data_type> {
    int p = lt.kind == logical_kind::decimal ? lt.precision : e.precision;
    int s = lt.kind == logical_kind::decimal ? lt.scale : e.scale;
    if (p < 1 || p > 38 || s < 0 || s > p) {
      why = "decimal(" + std::to_string(p) + ", " + std::to_string(s) + ") outside decimal128";
      return std::nullopt;
    }
    return decimal(p, s);
  };
  bool is_decimal = lt.kind == logical_kind::decimal || is_conv(converted_type::decimal);
  switch (*e.type) {
    case physical_type::boolean:
      return data_type(type_id::boolean);
    case physical_type::int32:
      if (is_decimal) return decimal_type();
      if (lt.kind == logical_kind::date || is_conv(converted_type::date)) return data_type(type_id::date32);
      if (lt.kind == logical_kind::integer) {
        switch (lt.bit_width) {
          case 8:
            return data_type(lt.is_signed ? type_id::int8 : type_id::uint8);
          case 16:
            return data_type(lt.is_signed ? type_id::int16 : type_id::uint16);
          default:
            return data_type(lt.is_signed ? type_id::int32 : type_id::uint32);
        }
      }
      if (is_conv(converted_type::int_8)) return data_type(type_id::int8);
      if (is_conv(converted_type::int_16)) return data_type(type_id::int16);
      if (is_conv(converted_type::uint_8)) return data_type(type_id::uint8);
      if (is_conv(converted_type::uint_16)) return data_type(type_id::uint16);
      if (is_conv(converted_type::uint_32)) return data_type(type_id::uint32);
      if (lt.kind == logical_kind::time || is_conv(converted_type::time_millis))
        return data_type(type_id::int64);  // TIME(MILLIS): milliseconds of the day, widened to int64
      return data_type(type_id::int32);
    case physical_type::int64:
      if (is_decimal) return decimal_type();
      if (lt.kind == logical_kind::timestamp) {
        time_unit u = lt.unit == logical_unit::millis   ? time_unit::ms
                      : lt.unit == logical_unit::micros ? time_unit::us
                                                        : time_unit::ns;
        return timestamp(u, lt.adjusted_to_utc ? "UTC" : "");
      }
      if (is_conv(converted_type::timestamp_millis)) return timestamp(time_unit::ms, "UTC");
      if (is_conv(converted_type::timestamp_micros)) return timestamp(time_unit::us, "UTC");
      if ((lt.kind == logical_kind::integer && !lt.is_signed) || is_conv(converted_type::uint_64))
        return data_type(type_id::uint64);
      return data_type(type_id::int64);  // also TIME(MICROS/NANOS): ticks of the day as int64
    case physical_type::int96:
      return timestamp(time_unit::ns);
    case physical_type::float_:
      return data_type(type_id::float32);
    case physical_type::double_:
      return data_type(type_id::float64);
    case physical_type::byte_array:
      if (is_decimal) return decimal_type();
      return data_type(type_id::string);  // STRING/UTF8/ENUM/JSON/BSON and plain binary: bytes as a string
    case physical_type::fixed_len_byte_array:
      if (e.type_length < 0) {
        why = "negative type_length";
        return std::nullopt;
      }
      if (is_decimal) {
        if (e.type_length > 16) {
          why = "decimal wider than 16 bytes";
          return std::nullopt;
        }
        return decimal_type();
      }
      if (lt.kind == logical_kind::float16) {
        if (e.type_length != 2) {
          why = "FLOAT16 with type_length != 2";
          return std::nullopt;
        }
        return data_type(type_id::float32);
      }
      return data_type(type_id::string);  // UUID as its 36-character text, other fixed binary as bytes
  }
  why = "unknown physical type " + std::to_string(static_cast<int>(*e.type));
  return std::nullopt;
}

/// How the dense physical values of one column become tug values.
struct leaf_info {
  const schema_element* elem = nullptr;
  data_type type;
  bool optional = false;
};

float half_to_float(uint16_t h) {
  int sign = h >> 15, exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
  float v;
  if (exp == 0)
    v = std::ldexp(static_cast<float>(mant), -24);
  else if (exp == 31)
    v = mant ? std::nanf("") : INFINITY;
  else
    v = std::ldexp(static_cast<float>(mant | 0x400), exp - 25);
  return sign ? -v : v;
}

__int128 big_endian_int(std::string_view b) {
  if (b.size() > 16) corrupt("decimal wider than 16 bytes");
  if (b.empty()) return 0;
  unsigned __int128 v = (static_cast<uint8_t>(b[0]) & 0x80) ? ~static_cast<unsigned __int128>(0) : 0;
  for (char c : b)
    v = (v << 8) | static_cast<uint8_t>(c);
  return static_cast<__int128>(v);
}

std::string uuid_text(std::string_view b) {
  static const char* hex = "0123456789abcdef";
  std::string s;
  s.reserve(36);
  for (size_t i = 0; i < b.size(); ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) s.push_back('-');
    auto c = static_cast<uint8_t>(b[i]);
    s.push_back(hex[c >> 4]);
    s.push_back(hex[c & 15]);
  }
  return s;
}

/// Dense (non-null) physical values of a column chunk plus its per-row validity.
template <typename P>
struct chunk_values {
  std::vector<P> dense;
  std::vector<uint8_t> valid;                    ///< one byte per row; empty for required columns
  std::vector<std::unique_ptr<uint8_t[]>> keep;  ///< buffers that string views point into
  int64_t rows = 0;
};

/// Builds the tug column of `n` rows from dense values and validity.
template <typename P>
column materialize(const chunk_values<P>& cv, const leaf_info& leaf, memory_resource* mr) {
  const int64_t n = cv.rows;
  const bool has_valid = !cv.valid.empty();
  return type_dispatch(leaf.type.id, [&]<type_id Id>() -> column {
    using T = storage_t<Id>;
    if constexpr (Id == type_id::string) {
      if constexpr (std::is_same_v<P, std::string_view>) {
        // UUIDs (16-byte FIXED_LEN_BYTE_ARRAY) become their 36-character text; other UUID shapes stay bytes.
        const bool uuid = leaf.elem->logical.kind == logical_kind::uuid &&
                          leaf.elem->type == physical_type::fixed_len_byte_array && leaf.elem->type_length == 16;
        size_t bytes = 0;
        for (auto v : cv.dense)
          bytes += uuid ? 36 : v.size();
        // Offsets, chars and validity written straight into the column's buffers.
        buffer_ptr chars = make_buffer(std::max<size_t>(bytes, 1), mr);
        buffer_ptr offsets = make_buffer(sizeof(int64_t) * static_cast<size_t>(n + 1), mr);
        buffer_ptr validity;
        char* w = chars->as<char>();
        int64_t* o = offsets->as<int64_t>();
        int64_t pos = 0;
        size_t k = 0;
        o[0] = 0;
        if (has_valid) {
          validity = make_buffer(static_cast<size_t>(bits::bytes_for(n)), mr);
          std::memset(validity->data(), 0, validity->size());
        }
        for (int64_t i = 0; i < n; ++i) {
          if (!has_valid || cv.valid[static_cast<size_t>(i)]) {
            if (has_valid) bits::set(validity->as<uint8_t>(), i);
            std::string_view v = cv.dense[k++];
            if (uuid) {
              std::string t = uuid_text(v);
              std::memcpy(w + pos, t.data(), t.size());
              pos += static_cast<int64_t>(t.size());
            } else {
              if (!v.empty()) std::memcpy(w + pos, v.data(), v.size());
              pos += static_cast<int64_t>(v.size());
            }
          }
          o[i + 1] = pos;
        }
        return column(leaf.type, n, std::move(chars), std::move(validity), -1, std::move(offsets));
      } else {
        throw internal_error("parquet: string column from a non-binary physical type");
      }
    } else {
      fixed_width_builder<T> b(leaf.type, n, mr);
      T* out = b.data();
      auto convert = [&](const P& v) -> T {
        if constexpr (std::is_same_v<P, std::string_view>) {
          if constexpr (Id == type_id::decimal128)
            return big_endian_int(v);
          else if constexpr (Id == type_id::float32) {
            uint16_t h;
            std::memcpy(&h, v.data(), 2);
            return half_to_float(h);
          } else {
            throw internal_error("parquet: fixed-width column from a binary physical type");
          }
        } else {
          return static_cast<T>(v);
        }
      };
      if (!has_valid) {
        for (int64_t i = 0; i < n; ++i)
          out[i] = convert(cv.dense[static_cast<size_t>(i)]);
      } else {
        size_t k = 0;
        for (int64_t i = 0; i < n; ++i) {
          if (cv.valid[static_cast<size_t>(i)])
            out[i] = convert(cv.dense[k++]);
          else
            b.set_null(i);
        }
      }
      return b.finish();
    }
  });
}

/// Most PLAIN values of physical type `pt` that `bytes` bytes can hold (booleans are bits; values of
/// zero-length FIXED_LEN_BYTE_ARRAY are counted as bits too, to keep the bound finite).
int64_t max_plain_values(physical_type pt, int32_t type_length, size_t bytes) {
  size_t w = 0;
  switch (pt) {
    case physical_type::boolean:
      return static_cast<int64_t>(std::min<size_t>(bytes, size_t{1} << 59) * 8);
    case physical_type::int32:
    case physical_type::float_:
    case physical_type::byte_array:
      w = 4;
      break;
    case physical_type::int64:
    case physical_type::double_:
      w = 8;
      break;
    case physical_type::int96:
      w = 12;
      break;
    case physical_type::fixed_len_byte_array:
      w = type_length > 0 ? static_cast<size_t>(type_length) : 0;
      break;
  }
  if (w == 0) return static_cast<int64_t>(std::min<size_t>(bytes, size_t{1} << 59) * 8);
  return static_cast<int64_t>(bytes / w);
}

/// Decodes `n` PLAIN values from [p, end) into `out`; returns the end of the consumed bytes.
template <typename P>
const uint8_t* decode_plain(const uint8_t* p, const uint8_t* end, int64_t n, P* out, physical_type pt,
                            int32_t type_length) {
  const size_t avail = static_cast<size_t>(end - p);
  if constexpr (std::is_same_v<P, uint8_t>) {  // BOOLEAN, bit-packed LSB first
    if (static_cast<size_t>((n + 7) / 8) > avail) corrupt("PLAIN booleans past the end");
    for (int64_t i = 0; i < n; ++i)
      out[i] = (p[i >> 3] >> (i & 7)) & 1;
    return p + (n + 7) / 8;
  } else if constexpr (std::is_same_v<P, std::string_view>) {
    if (pt == physical_type::fixed_len_byte_array) {
      const size_t w = static_cast<size_t>(type_length);
      if (w && static_cast<size_t>(n) > avail / w) corrupt("PLAIN fixed-length values past the end");
      for (int64_t i = 0; i < n; ++i)
        out[i] = {reinterpret_cast<const char*>(p) + i * w, w};
      return p + n * w;
    }
    for (int64_t i = 0; i < n; ++i) {
      if (end - p < 4) corrupt("PLAIN byte array length past the end");
      uint32_t len;
      std::memcpy(&len, p, 4);
      p += 4;
      if (len > static_cast<size_t>(end - p)) corrupt("PLAIN byte array past the end");
      out[i] = {reinterpret_cast<const char*>(p), len};
      p += len;
    }
    return p;
  } else {
    if (pt == physical_type::int96) {
      if (static_cast<size_t>(n) > avail / 12) corrupt("PLAIN INT96 values past the end");
      for (int64_t i = 0; i < n; ++i)
        out[i] = static_cast<P>(int96_to_ns(p + 12 * i));
      return p + 12 * n;
    }
    if (static_cast<size_t>(n) > avail / sizeof(P)) corrupt("PLAIN values past the end");
    if (n) std::memcpy(out, p, static_cast<size_t>(n) * sizeof(P));
    return p + static_cast<size_t>(n) * sizeof(P);
  }
}

/// Decoder state of one column chunk.
template <typename P>
class chunk_decoder {
 public:
  chunk_decoder(const column_metadata& m, const leaf_info& leaf) : _m(m), _leaf(leaf) {}

  void decode(const uint8_t* data, size_t size, int64_t num_rows, chunk_values<P>& cv) {
    // Declared counts are only trusted once bytes that hold them are seen: the reservation is bounded
    // by the chunk's size (the vectors grow past it as pages prove more rows).
    const int64_t guess =
        std::min<int64_t>(num_rows, static_cast<int64_t>(std::min<size_t>(size, size_t{1} << 40)) * 8);
    if (_leaf.optional) cv.valid.reserve(static_cast<size_t>(guess));
    size_t pos = 0;
    while (cv.rows < num_rows) {
      if (pos >= size)
        corrupt("column chunk ends after " + std::to_string(cv.rows) + " of " + std::to_string(num_rows) + " rows");
      pos = page(data, size, pos, num_rows, cv);
    }
  }

  /// Decodes only the data pages at the given chunk positions, each holding the given rows (from the
  /// offset index), after the dictionary page if the chunk has one before `first_data`.
  void decode_pages(const uint8_t* data, size_t size, size_t first_data,
                    const std::vector<std::pair<size_t, int64_t>>& pages, chunk_values<P>& cv) {
    size_t pos = 0;
    while (pos < first_data)
      pos = page(data, size, pos, 0, cv);  // a data page here holds rows the offset index does not list
    int64_t total = 0;
    for (auto& [at, rows] : pages)
      total += rows;
    for (auto& [at, rows] : pages) {
      const int64_t before = cv.rows;
      if (at >= size) corrupt("offset index points past the column chunk");
      page(data, size, at, total, cv);
      if (cv.rows - before != rows) corrupt("page holds other rows than its offset index says");
    }
  }

 private:
  /// Decodes the page at `pos` (a data page adds rows, up to `num_rows` in all); returns the position
  /// after it.
  size_t page(const uint8_t* data, size_t size, size_t pos, int64_t num_rows, chunk_values<P>& cv) {
    size_t used = 0;
    page_header h = decode_page_header(data + pos, size - pos, used);
    pos += used;
    if (static_cast<size_t>(h.compressed_page_size) > size - pos) corrupt("page past the end of the column chunk");
    const uint8_t* p = data + pos;
    pos += static_cast<size_t>(h.compressed_page_size);
    switch (h.type) {
      case page_type::dictionary_page:
        read_dictionary(h, p, cv);
        break;
      case page_type::data_page:
        read_v1(h, p, num_rows, cv);
        break;
      case page_type::data_page_v2:
        read_v2(h, p, num_rows, cv);
        break;
      default:
        break;  // index pages carry nothing we need
    }
    return pos;
  }

  const uint8_t* inflate(const uint8_t* in, size_t size, size_t out_size, chunk_values<P>& cv) {
    if (_m.compression == codec::uncompressed) {
      if (size != out_size) corrupt("uncompressed page sizes differ");
      return in;
    }
    if (out_size > max_decompressed_size(_m.compression, in, size))
      corrupt("page claims " + std::to_string(out_size) + " bytes uncompressed from " + std::to_string(size) + " " +
              to_string(_m.compression) + " bytes");
    auto buf = std::make_unique_for_overwrite<uint8_t[]>(std::max<size_t>(out_size, 1));
    decompress(_m.compression, in, size, buf.get(), out_size);
    cv.keep.push_back(std::move(buf));
    return cv.keep.back().get();
  }

  void read_dictionary(const page_header& h, const uint8_t* page, chunk_values<P>& cv) {
    if (!h.dict) corrupt("dictionary page without its header");
    if (h.dict->enc != encoding::plain && h.dict->enc != encoding::plain_dictionary)
      unsupported_encoding(h.dict->enc, _m.type);
    const size_t usize = static_cast<size_t>(h.uncompressed_page_size);
    const uint8_t* q = inflate(page, static_cast<size_t>(h.compressed_page_size), usize, cv);
    if (h.dict->num_values < 0 || h.dict->num_values > max_plain_values(_m.type, _leaf.elem->type_length, usize))
      corrupt("dictionary of " + std::to_string(h.dict->num_values) + " values does not fit its " +
              std::to_string(usize) + "-byte page");
    _dict.resize(static_cast<size_t>(h.dict->num_values));
    decode_plain<P>(q, q + usize, h.dict->num_values, _dict.data(), _m.type, _leaf.elem->type_length);
    _has_dict = true;
  }

  /// Appends `n` rows' validity from definition levels; returns the number of non-null values.
  int64_t levels(const uint8_t* p, const uint8_t* end, int64_t n, chunk_values<P>& cv) {
    if (rle_count(p, end, 1, n) < n)
      corrupt("page declares " + std::to_string(n) + " values, its definition levels hold fewer");
    _levels.resize(static_cast<size_t>(n));
    rle_decode(p, end, 1, _levels.data(), n);
    // Width 1: every level is 0 (null) or 1 (valid).
    const size_t old = cv.valid.size();
    cv.valid.resize(old + static_cast<size_t>(n));
    uint8_t* v = cv.valid.data() + old;
    const uint32_t* l = _levels.data();
    int64_t nn = 0;
    for (int64_t i = 0; i < n; ++i) {
      v[i] = static_cast<uint8_t>(l[i]);
      nn += l[i];
    }
    return nn;
  }

  void check_rows(int64_t n, int64_t num_rows, const chunk_values<P>& cv) {
    if (n < 0 || n > num_rows - cv.rows) corrupt("page holds more rows than the row group");
  }

  void read_v1(const page_header& h, const uint8_t* page, int64_t num_rows, chunk_values<P>& cv) {
    if (!h.v1) corrupt("data page without its header");
    const int64_t n = h.v1->num_values;
    check_rows(n, num_rows, cv);
    const size_t usize = static_cast<size_t>(h.uncompressed_page_size);
    const uint8_t* q = inflate(page, static_cast<size_t>(h.compressed_page_size), usize, cv);
    const uint8_t* end = q + usize;
    int64_t nn = n;
    if (_leaf.optional) {
      if (h.v1->definition_level_encoding != encoding::rle)
        throw not_implemented_error("Parquet definition levels in " + encoding_name(h.v1->definition_level_encoding) +
                                    " are not supported (only RLE)");
      if (end - q < 4) corrupt("definition levels past the end");
      uint32_t len;
      std::memcpy(&len, q, 4);
      q += 4;
      if (len > static_cast<size_t>(end - q)) corrupt("definition levels past the end");
      nn = levels(q, q + len, n, cv);
      q += len;
    }
    values(h.v1->enc, q, end, nn, cv);
    cv.rows += n;
  }

  void read_v2(const page_header& h, const uint8_t* page, int64_t num_rows, chunk_values<P>& cv) {
    if (!h.v2) corrupt("data page v2 without its header");
    const auto& v2 = *h.v2;
    const int64_t n = v2.num_values;
    check_rows(n, num_rows, cv);
    if (v2.definition_levels_byte_length < 0 || v2.repetition_levels_byte_length < 0) corrupt("negative level length");
    const size_t lv =
        static_cast<size_t>(v2.definition_levels_byte_length) + static_cast<size_t>(v2.repetition_levels_byte_length);
    const size_t csize = static_cast<size_t>(h.compressed_page_size);
    const size_t usize = static_cast<size_t>(h.uncompressed_page_size);
    if (lv > csize || lv > usize) corrupt("levels longer than the page");
    int64_t nn = n;
    const uint8_t* def = page + v2.repetition_levels_byte_length;
    if (_leaf.optional) nn = levels(def, def + v2.definition_levels_byte_length, n, cv);
    if (nn != n - v2.num_nulls) corrupt("null count of data page v2 differs from its levels");
    const uint8_t* q;
    if (v2.is_compressed)
      q = inflate(page + lv, csize - lv, usize - lv, cv);
    else {
      if (csize != usize) corrupt("uncompressed page sizes differ");
      q = page + lv;
    }
    values(v2.enc, q, q + (usize - lv), nn, cv);
    cv.rows += n;
  }

  /// Most values (up to `nn`) that the encoded value bytes [p, end) can hold, from their headers and
  /// sizes, so that nothing is allocated for values a page only declares. Unsupported encodings give
  /// `nn` (they raise not_implemented_error when decoded).
  int64_t value_bound(encoding enc, const uint8_t* p, const uint8_t* end, int64_t nn) const {
    const physical_type pt = _m.type;
    const size_t bytes = static_cast<size_t>(end - p);
    switch (enc) {
      case encoding::plain:
        return max_plain_values(pt, _leaf.elem->type_length, bytes);
      case encoding::plain_dictionary:
      case encoding::rle_dictionary:
        return nn == 0 || p >= end ? 0 : rle_count(p + 1, end, *p, nn);
      case encoding::rle: {
        if (pt != physical_type::boolean) return nn;
        uint32_t len = 0;
        if (bytes < 4) return 0;
        std::memcpy(&len, p, 4);
        return len > bytes - 4 ? 0 : rle_count(p + 4, p + 4 + len, 1, nn);
      }
      case encoding::delta_binary_packed:
        if constexpr (std::is_same_v<P, int32_t> || std::is_same_v<P, int64_t>)
          return nn == 0 || pt == physical_type::int96 ? nn : delta_count(p, end);
        return nn;
      case encoding::delta_length_byte_array:
      case encoding::delta_byte_array:
        if constexpr (std::is_same_v<P, std::string_view>) return nn == 0 ? nn : delta_count(p, end);
        return nn;
      case encoding::byte_stream_split:
        if (pt == physical_type::boolean || pt == physical_type::byte_array) return nn;
        return max_plain_values(pt, _leaf.elem->type_length, bytes);
      default:
        return nn;
    }
  }

  void values(encoding enc, const uint8_t* p, const uint8_t* end, int64_t nn, chunk_values<P>& cv) {
    if (value_bound(enc, p, end, nn) < nn)
      corrupt("page declares " + std::to_string(nn) + " " + encoding_name(enc) + " values, its bytes hold fewer");
    const size_t old = cv.dense.size();
    cv.dense.resize(old + static_cast<size_t>(nn));
    P* out = cv.dense.data() + old;
    const physical_type pt = _m.type;
    switch (enc) {
      case encoding::plain:
        decode_plain<P>(p, end, nn, out, pt, _leaf.elem->type_length);
        return;
      case encoding::plain_dictionary:
      case encoding::rle_dictionary: {
        if (!_has_dict) corrupt("dictionary-encoded page without a dictionary page");
        if (nn == 0) return;
        if (p >= end) corrupt("dictionary indices past the end");
        int bw = *p++;
        _indices.resize(static_cast<size_t>(nn));
        rle_decode(p, end, bw, _indices.data(), nn);
        const uint32_t dn = static_cast<uint32_t>(_dict.size());
        const P* dict = _dict.data();
        for (int64_t i = 0; i < nn; ++i) {
          uint32_t ix = _indices[static_cast<size_t>(i)];
          if (ix >= dn) corrupt("dictionary index out of range");
          out[i] = dict[ix];
        }
        return;
      }
      case encoding::rle:
        if constexpr (std::is_same_v<P, uint8_t>) {
          if (end - p < 4) corrupt("RLE booleans past the end");
          uint32_t len;
          std::memcpy(&len, p, 4);
          p += 4;
          if (len > static_cast<size_t>(end - p)) corrupt("RLE booleans past the end");
          _indices.resize(static_cast<size_t>(nn));
          rle_decode(p, p + len, 1, _indices.data(), nn);
          for (int64_t i = 0; i < nn; ++i)
            out[i] = static_cast<uint8_t>(_indices[static_cast<size_t>(i)] != 0);
          return;
        }
        break;
      case encoding::delta_binary_packed:
        if constexpr (std::is_same_v<P, int32_t> || std::is_same_v<P, int64_t>) {
          if (pt == physical_type::int96) break;
          delta_decode<P>(p, end, nn, out);
          return;
        }
        break;
      case encoding::delta_length_byte_array:
        if constexpr (std::is_same_v<P, std::string_view>) {
          if (pt != physical_type::byte_array) break;
          std::vector<int32_t> lens(static_cast<size_t>(nn));
          p = delta_decode<int32_t>(p, end, nn, lens.data());
          for (int64_t i = 0; i < nn; ++i) {
            auto len = lens[static_cast<size_t>(i)];
            if (len < 0 || static_cast<size_t>(len) > static_cast<size_t>(end - p))
              corrupt("DELTA_LENGTH_BYTE_ARRAY value past the end");
            out[i] = {reinterpret_cast<const char*>(p), static_cast<size_t>(len)};
            p += len;
          }
          return;
        }
        break;
      case encoding::delta_byte_array:
        if constexpr (std::is_same_v<P, std::string_view>) {
          delta_byte_array(p, end, nn, out, cv);
          return;
        }
        break;
      case encoding::byte_stream_split:
        byte_stream_split(p, end, nn, out, cv);
        return;
      default:
        break;
    }
    unsupported_encoding(enc, pt);
  }

  void delta_byte_array(const uint8_t* p, const uint8_t* end, int64_t nn, P* out, chunk_values<P>& cv) {
    if constexpr (std::is_same_v<P, std::string_view>) {
      std::vector<int32_t> prefix(static_cast<size_t>(nn)), suffix(static_cast<size_t>(nn));
      p = delta_decode<int32_t>(p, end, nn, prefix.data());
      p = delta_decode<int32_t>(p, end, nn, suffix.data());
      size_t total = 0, suffix_bytes = 0;
      int64_t prev = 0;
      for (int64_t i = 0; i < nn; ++i) {
        int32_t pl = prefix[static_cast<size_t>(i)], sl = suffix[static_cast<size_t>(i)];
        if (pl < 0 || sl < 0 || pl > prev) corrupt("bad DELTA_BYTE_ARRAY lengths");
        prev = static_cast<int64_t>(pl) + sl;
        total += static_cast<size_t>(prev);
        suffix_bytes += static_cast<size_t>(sl);
      }
      if (suffix_bytes > static_cast<size_t>(end - p)) corrupt("DELTA_BYTE_ARRAY suffixes past the end");
      auto buf = std::make_unique_for_overwrite<uint8_t[]>(std::max<size_t>(total, 1));
      char* w = reinterpret_cast<char*>(buf.get());
      const char* last = w;
      for (int64_t i = 0; i < nn; ++i) {
        size_t pl = static_cast<size_t>(prefix[static_cast<size_t>(i)]);
        size_t sl = static_cast<size_t>(suffix[static_cast<size_t>(i)]);
        std::memmove(w, last, pl);
        std::memcpy(w + pl, p, sl);
        p += sl;
        out[i] = {w, pl + sl};
        last = w;
        w += pl + sl;
      }
      cv.keep.push_back(std::move(buf));
    }
  }

  void byte_stream_split(const uint8_t* p, const uint8_t* end, int64_t nn, P* out, chunk_values<P>& cv) {
    if constexpr (std::is_same_v<P, uint8_t>) {
      unsupported_encoding(encoding::byte_stream_split, _m.type);
    } else {
      size_t w;
      uint8_t* dst;
      std::unique_ptr<uint8_t[]> buf;
      if constexpr (std::is_same_v<P, std::string_view>) {
        if (_m.type != physical_type::fixed_len_byte_array) unsupported_encoding(encoding::byte_stream_split, _m.type);
        w = static_cast<size_t>(_leaf.elem->type_length);
        buf = std::make_unique_for_overwrite<uint8_t[]>(std::max<size_t>(w * static_cast<size_t>(nn), 1));
        dst = buf.get();
      } else {
        if (_m.type == physical_type::int96) unsupported_encoding(encoding::byte_stream_split, _m.type);
        w = sizeof(P);
        dst = reinterpret_cast<uint8_t*>(out);
      }
      const size_t n = static_cast<size_t>(nn);
      if (w && n > static_cast<size_t>(end - p) / w) corrupt("BYTE_STREAM_SPLIT values past the end");
      for (size_t b = 0; b < w; ++b) {
        const uint8_t* s = p + b * n;
        for (size_t i = 0; i < n; ++i)
          dst[i * w + b] = s[i];
      }
      if constexpr (std::is_same_v<P, std::string_view>) {
        for (size_t i = 0; i < n; ++i)
          out[i] = {reinterpret_cast<const char*>(dst) + i * w, w};
        cv.keep.push_back(std::move(buf));
      }
    }
  }

  const column_metadata& _m;
  const leaf_info& _leaf;
  std::vector<P> _dict;
  bool _has_dict = false;
  std::vector<uint32_t> _levels, _indices;
};

/// Calls `f.template operator()<P>()` with the dense physical storage of a physical type.
template <typename F>
decltype(auto) physical_dispatch(physical_type t, F&& f) {
  switch (t) {
    case physical_type::boolean:
      return f.template operator()<uint8_t>();
    case physical_type::int32:
      return f.template operator()<int32_t>();
    case physical_type::int64:
    case physical_type::int96:
      return f.template operator()<int64_t>();
    case physical_type::float_:
      return f.template operator()<float>();
    case physical_type::double_:
      return f.template operator()<double>();
    case physical_type::byte_array:
    case physical_type::fixed_len_byte_array:
      return f.template operator()<std::string_view>();
  }
  throw io_error("corrupt metadata: unknown physical type " + std::to_string(static_cast<int>(t)));
}

}  // namespace

file_reader file_reader::open(const std::string& path) {
  file_reader r;
  r._path = path;
  fd_guard fd{open_file(path, r._file_size)};
  if (r._file_size < 12)
    throw io_error(path + ": not a Parquet file (only " + std::to_string(r._file_size) + " bytes)");
  uint8_t head[4], tail[8];
  read_at(fd.fd, head, 4, 0, path);
  read_at(fd.fd, tail, 8, r._file_size - 8, path);
  if (std::memcmp(tail + 4, "PARE", 4) == 0)
    throw not_implemented_error(path + ": encrypted Parquet files are not supported");
  if (std::memcmp(head, "PAR1", 4) != 0 || std::memcmp(tail + 4, "PAR1", 4) != 0)
    throw io_error(path + ": not a Parquet file (wrong magic bytes; truncated?)");
  uint32_t len;
  std::memcpy(&len, tail, 4);
  if (static_cast<int64_t>(len) > r._file_size - 12)
    throw io_error(path + ": corrupt Parquet footer (length " + std::to_string(len) + " exceeds the file)");
  std::vector<uint8_t> footer(len);
  read_at(fd.fd, footer.data(), len, r._file_size - 8 - len, path);
  auto meta = std::make_shared<file_metadata>();
  try {
    *meta = decode_file_metadata(footer.data(), footer.size());
  } catch (const io_error& e) {
    throw io_error(path + ": corrupt Parquet footer: " + e.what());
  }
  // Walk the schema tree: top-level leaves that are not repeated become columns.
  const auto& sch = meta->schema;
  size_t leaf = 0, pos = 1;
  std::vector<field> fields;
  auto fail = [&](const std::string& why) { throw io_error(path + ": corrupt Parquet schema: " + why); };
  // Counts the leaves under element `i` (advancing pos), collecting their dotted names.
  auto walk = [&](auto&& self, const std::string& prefix, int depth) -> void {
    if (pos >= sch.size()) fail("fewer schema elements than num_children says");
    if (depth > 64) fail("nesting too deep");
    const size_t my_elem = pos;
    const schema_element& e = sch[pos++];
    std::string name = prefix.empty() ? e.name : prefix + "." + e.name;
    if (e.num_children < 0) fail("negative num_children");
    if (e.num_children == 0 && !e.type) fail("leaf '" + name + "' without a physical type");
    if (e.num_children > 0) {
      for (int32_t c = 0; c < e.num_children; ++c)
        self(self, name, depth + 1);
      return;
    }
    size_t my_leaf = leaf++;
    bool top = depth == 0;
    auto rep = e.repetition_type.value_or(repetition::required);
    std::string why;
    std::optional<data_type> t;
    const bool duplicate = std::any_of(fields.begin(), fields.end(), [&](const field& f) { return f.name == name; });
    if (top && rep != repetition::repeated && !duplicate) t = map_type(e, why);
    if (!t) {  // nested, repeated, a repeated name, or no tug type
      r._skipped.push_back(name);
      return;
    }
    fields.push_back(field{name, *t});
    r._leaf.push_back(my_leaf);
    r._element.push_back(my_elem);
    r._optional.push_back(rep == repetition::optional);
  };
  if (sch[0].num_children < 0) fail("negative num_children");
  for (int32_t c = 0; c < sch[0].num_children; ++c) {
    if (pos >= sch.size()) fail("fewer schema elements than num_children says");
    // A top-level group: all its leaves are skipped.
    walk(walk, "", sch[pos].num_children > 0 ? 1 : 0);
  }
  if (pos != sch.size()) fail("more schema elements than the tree holds");
  try {
    r._schema = tug::schema(fields);
  } catch (const user_error& e) {
    fail(e.what());
  }
  int64_t total_rows = 0;
  for (size_t g = 0; g < meta->row_groups.size(); ++g) {
    const auto& rg = meta->row_groups[g];
    if (rg.columns.size() != leaf)
      fail("row group " + std::to_string(g) + " has " + std::to_string(rg.columns.size()) + " column chunks for " +
           std::to_string(leaf) + " leaves");
    if (rg.num_rows < 0 || rg.num_rows > INT64_MAX - total_rows) fail("bad row count");
    total_rows += rg.num_rows;
    for (const auto& cc : rg.columns)
      if (!cc.meta)
        throw not_implemented_error(path + ": Parquet column chunks without inline metadata are not supported");
    for (size_t c = 0; c < r._leaf.size(); ++c) {
      const column_metadata& m = *rg.columns[r._leaf[c]].meta;
      const std::string where = "column chunk of '" + r._schema[c].name + "' in row group " + std::to_string(g);
      if (m.type != *sch[r._element[c]].type) fail(where + " has another physical type than the schema");
      auto bad = [&](const std::string& why) { throw io_error(path + ": corrupt Parquet footer: " + where + why); };
      // A flat column holds one value (or null) per row: the row group's row count must agree.
      if (m.num_values != rg.num_rows)
        bad(" holds " + std::to_string(m.num_values) + " values for " + std::to_string(rg.num_rows) + " rows");
      if (rg.num_rows > 0 && m.total_compressed_size <= 0)
        bad(" has " + std::to_string(rg.num_rows) + " rows in " + std::to_string(m.total_compressed_size) + " bytes");
    }
  }
  if (total_rows != meta->num_rows)
    fail("row groups hold " + std::to_string(total_rows) + " rows, the file says " + std::to_string(meta->num_rows));
  r._meta = std::move(meta);
  return r;
}

const schema_element& file_reader::element(size_t c) const { return _meta->schema[_element[c]]; }

int64_t file_reader::num_rows() const { return _meta->num_rows; }
int file_reader::num_row_groups() const { return static_cast<int>(_meta->row_groups.size()); }

void file_reader::check_rg(int rg) const {
  if (rg < 0 || rg >= num_row_groups())
    throw invalid_argument_error(_path + ": row group " + std::to_string(rg) + " out of range (file has " +
                                 std::to_string(num_row_groups()) + ")");
}
void file_reader::check_column(size_t c) const {
  if (c >= _schema.size())
    throw invalid_argument_error(_path + ": column index " + std::to_string(c) + " out of range (file has " +
                                 std::to_string(_schema.size()) + " readable columns)");
}

int64_t file_reader::row_group_num_rows(int rg) const {
  check_rg(rg);
  return _meta->row_groups[static_cast<size_t>(rg)].num_rows;
}

int64_t file_reader::row_group_uncompressed_bytes(int rg, const std::vector<size_t>& columns) const {
  check_rg(rg);
  int64_t total = 0;
  for (size_t c : columns) {
    check_column(c);
    total += _meta->row_groups[static_cast<size_t>(rg)].columns[_leaf[c]].meta->total_uncompressed_size;
  }
  return total;
}

std::optional<scalar> file_reader::stat_value(size_t c, const std::string* bytes) const {
  if (!bytes) return std::nullopt;
  const schema_element& e = element(c);
  const leaf_info leaf{&e, _schema[c].type, false};
  return physical_dispatch(*e.type, [&]<typename P>() -> std::optional<scalar> {
    chunk_values<P> cv;
    cv.rows = 1;
    cv.dense.resize(1);
    auto p = reinterpret_cast<const uint8_t*>(bytes->data());
    try {
      if constexpr (std::is_same_v<P, std::string_view>) {
        if (*e.type == physical_type::fixed_len_byte_array && bytes->size() != static_cast<size_t>(e.type_length))
          return std::nullopt;
        cv.dense[0] = *bytes;
      } else if constexpr (std::is_same_v<P, uint8_t>) {
        if (bytes->empty()) return std::nullopt;
        cv.dense[0] = p[0] & 1;
      } else {
        decode_plain<P>(p, p + bytes->size(), 1, cv.dense.data(), *e.type, e.type_length);
      }
      return get_scalar(materialize(cv, leaf, default_host_resource()), 0);
    } catch (const io_error&) {
      return std::nullopt;  // malformed statistics are ignored, as if absent
    }
  });
}

column_statistics file_reader::statistics(int rg, size_t c) const {
  check_rg(rg);
  check_column(c);
  const column_metadata& m = *_meta->row_groups[static_cast<size_t>(rg)].columns[_leaf[c]].meta;
  column_statistics out;
  if (!m.stats) return out;
  const auto& s = *m.stats;
  out.null_count = s.null_count;
  const data_type& t = _schema[c].type;
  bool signed_order = m.type != physical_type::byte_array && m.type != physical_type::fixed_len_byte_array &&
                      m.type != physical_type::int96 && !is_unsigned_integer(t.id);
  auto pick = [&](const std::optional<std::string>& v, const std::optional<std::string>& legacy) {
    return v ? &*v : (legacy && signed_order ? &*legacy : nullptr);
  };
  out.min = stat_value(c, pick(s.min_value, s.min));
  out.max = stat_value(c, pick(s.max_value, s.max));
  return out;
}

namespace {
/// Reads `length` bytes at `offset` of an index structure, or nothing when they lie outside the file.
std::optional<std::vector<uint8_t>> read_index_bytes(const std::string& path, int64_t file_size,
                                                     std::optional<int64_t> offset, std::optional<int32_t> length) {
  if (!offset || !length || *offset < 4 || *length <= 0 || *offset > file_size - 8 - *length) return std::nullopt;
  int64_t size = 0;
  fd_guard fd{open_file(path, size)};
  std::vector<uint8_t> buf(static_cast<size_t>(*length));
  read_at(fd.fd, buf.data(), buf.size(), *offset, path);
  return buf;
}
}  // namespace

std::vector<page_location> file_reader::offset_index(int rg, size_t c) const {
  const row_group& g = _meta->row_groups[static_cast<size_t>(rg)];
  const column_chunk& cc = g.columns[_leaf[c]];
  const column_metadata& m = *cc.meta;
  auto bytes = read_index_bytes(_path, _file_size, cc.offset_index_offset, cc.offset_index_length);
  if (!bytes) return {};
  std::vector<page_location> pages;
  try {
    pages = decode_offset_index(bytes->data(), bytes->size());
  } catch (const io_error&) {
    return {};  // a malformed page index is ignored, as if absent
  }
  // Usable only when the pages tile the row group's rows and lie inside the column chunk, in order.
  const int64_t start = chunk_start(m), end = start + m.total_compressed_size;
  int64_t last_offset = start - 1;
  for (size_t i = 0; i < pages.size(); ++i) {
    const auto& p = pages[i];
    const bool rows_ok = i == 0 ? p.first_row_index == 0 : p.first_row_index > pages[i - 1].first_row_index;
    if (!rows_ok || p.first_row_index >= g.num_rows || p.offset <= last_offset || p.offset >= end) return {};
    last_offset = p.offset;
  }
  return pages;
}

std::vector<page_stats> file_reader::page_index(int rg, size_t c) const {
  check_rg(rg);
  check_column(c);
  const row_group& g = _meta->row_groups[static_cast<size_t>(rg)];
  const column_chunk& cc = g.columns[_leaf[c]];
  auto pages = offset_index(rg, c);
  auto bytes = read_index_bytes(_path, _file_size, cc.column_index_offset, cc.column_index_length);
  if (pages.empty() || !bytes) return {};
  column_index ci;
  try {
    ci = decode_column_index(bytes->data(), bytes->size());
  } catch (const io_error&) {
    return {};
  }
  const size_t n = pages.size();
  if (ci.null_pages.size() != n || ci.min_values.size() != n || ci.max_values.size() != n ||
      (!ci.null_counts.empty() && ci.null_counts.size() != n))
    return {};
  std::vector<page_stats> out(n);
  for (size_t i = 0; i < n; ++i) {
    auto& o = out[i];
    o.rows = {pages[i].first_row_index, i + 1 < n ? pages[i + 1].first_row_index : g.num_rows};
    if (!ci.null_counts.empty()) o.stats.null_count = ci.null_counts[i];
    if (ci.null_pages[i]) {
      o.stats.null_count = o.rows.end - o.rows.begin;
      continue;
    }
    o.stats.min = stat_value(c, &ci.min_values[i]);
    o.stats.max = stat_value(c, &ci.max_values[i]);
  }
  return out;
}

int64_t file_reader::chunk_start(const column_metadata& m) {
  int64_t start = m.data_page_offset;
  if (m.dictionary_page_offset && *m.dictionary_page_offset > 0 && *m.dictionary_page_offset < start)
    start = *m.dictionary_page_offset;
  return start;
}

table file_reader::read_row_group(int rg, const std::vector<size_t>& columns, memory_resource* mr) const {
  return read_row_group_ranges(rg, columns, {}, mr, nullptr);
}

table file_reader::read_row_group_ranges(int rg, const std::vector<size_t>& columns,
                                         const std::vector<row_range>& ranges, memory_resource* mr,
                                         int64_t* pages_skipped) const {
  check_rg(rg);
  for (size_t c : columns)
    check_column(c);
  const row_group& g = _meta->row_groups[static_cast<size_t>(rg)];
  int64_t wanted_rows = 0;
  for (size_t i = 0; i < ranges.size(); ++i) {
    const row_range& r = ranges[i];
    if (r.begin < (i ? ranges[i - 1].end : 0) || r.end <= r.begin || r.end > g.num_rows)
      throw invalid_argument_error(_path + ": row ranges of row group " + std::to_string(rg) +
                                   " must be sorted, disjoint, non-empty and within its rows");
    wanted_rows += r.end - r.begin;
  }
  if (columns.empty()) return table::empty_with_rows(ranges.empty() ? g.num_rows : wanted_rows);
  int64_t size = 0;
  fd_guard fd{open_file(_path, size)};
  std::vector<column> out;
  out.reserve(columns.size());
  for (size_t c : columns) {
    const column_metadata& m = *g.columns[_leaf[c]].meta;
    const std::string where = _path + ": column '" + _schema[c].name + "' row group " + std::to_string(rg) + ": ";
    try {
      if (g.num_rows == 0) {  // writers emit empty chunks at offset 0
        out.push_back(make_empty_column(_schema[c].type));
        continue;
      }
      const int64_t start = chunk_start(m);
      if (start < 4 || m.total_compressed_size < 0 || m.total_compressed_size > size - 8 - start)
        throw io_error("corrupt metadata: column chunk outside the file");
      leaf_info leaf{&element(c), _schema[c].type, _optional[c]};
      if (m.type != *leaf.elem->type) throw io_error("corrupt metadata: column chunk type differs from the schema");
      const size_t chunk_size = static_cast<size_t>(m.total_compressed_size);
      auto chunk = std::make_unique_for_overwrite<uint8_t[]>(std::max<size_t>(chunk_size, 1));
      read_at(fd.fd, chunk.get(), chunk_size, start, _path);
      if (ranges.empty()) {
        out.push_back(physical_dispatch(m.type, [&]<typename P>() {
          chunk_values<P> cv;
          chunk_decoder<P>(m, leaf).decode(chunk.get(), chunk_size, g.num_rows, cv);
          return materialize(cv, leaf, mr);
        }));
        continue;
      }
      // Only the rows in `ranges`: the data pages that overlap them (by the offset index; all pages
      // when there is none), then the ranges sliced out of the decoded rows.
      auto index = offset_index(rg, c);
      std::vector<row_range> spans;  // rows of the decoded pages, in order
      std::vector<std::pair<size_t, int64_t>> pages;
      for (size_t i = 0; i < index.size(); ++i) {
        const row_range span{index[i].first_row_index,
                             i + 1 < index.size() ? index[i + 1].first_row_index : g.num_rows};
        const bool wanted = std::any_of(ranges.begin(), ranges.end(),
                                        [&](const row_range& r) { return r.begin < span.end && span.begin < r.end; });
        if (!wanted) continue;
        spans.push_back(span);
        pages.emplace_back(static_cast<size_t>(index[i].offset - start), span.end - span.begin);
      }
      if (pages_skipped) *pages_skipped += static_cast<int64_t>(index.size() - spans.size());
      column decoded = physical_dispatch(m.type, [&]<typename P>() {
        chunk_values<P> cv;
        chunk_decoder<P> dec(m, leaf);
        if (index.empty())
          dec.decode(chunk.get(), chunk_size, g.num_rows, cv);
        else
          dec.decode_pages(chunk.get(), chunk_size, static_cast<size_t>(index[0].offset - start), pages, cv);
        return materialize(cv, leaf, mr);
      });
      if (index.empty()) spans = {{0, g.num_rows}};
      std::vector<column> pieces;
      for (const row_range& r : ranges) {
        // the decoded position of row r.begin: rows of earlier decoded spans, then its offset in its span
        int64_t at = 0;
        size_t i = 0;
        for (; i < spans.size() && spans[i].end <= r.begin; ++i)
          at += spans[i].end - spans[i].begin;
        if (i == spans.size() || spans[i].begin > r.begin) throw internal_error("parquet: row range not decoded");
        pieces.push_back(decoded.slice(at + r.begin - spans[i].begin, r.end - r.begin));
      }
      out.push_back(pieces.size() == 1 ? pieces[0] : concatenate(pieces, mr));
    } catch (const io_error& e) {
      throw io_error(where + e.what());
    } catch (const not_implemented_error& e) {
      throw not_implemented_error(where + e.what());
    }
  }
  return table(std::move(out));
}

}  // namespace tug::io::parquet
