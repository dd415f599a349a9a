/// Parquet column chunk decoding: the pages of a flat column straight into the tug column's buffers.
///
/// Fixed-width values whose physical storage is the column's (int32 -> int32/uint32/date32, int64 ->
/// int64/uint64/timestamp, float, double, boolean) are decoded in place into the column's values;
/// a page with nulls is decoded densely at the page's first row and spread over its rows from the back.
/// Other fixed-width columns (narrow integers, decimals, FLOAT16) go through one page of dense values.
/// Strings are decoded in two passes: each page writes its rows' offsets (the lengths of its values)
/// as it is decoded, and once the chunk is done the chars are allocated at their exact size and copied
/// from the kept pages (PLAIN), the dictionary (by the kept indices) or the views of other encodings.
#include "column_decoder.hpp"

#include <type_traits>

#include "page_decode.hpp"
#include "rle.hpp"
#include "tug/core/error.hpp"
#include "tug/io/parquet/codec.hpp"
#include "tug/io/parquet/encoding.hpp"

namespace tug::io::parquet::detail {

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

namespace {

[[noreturn]] void corrupt(const std::string& what) { throw io_error("corrupt page: " + what); }

[[noreturn]] void unsupported_encoding(encoding e, physical_type t) {
  throw not_implemented_error("Parquet encoding " + encoding_name(e) + " is not supported for physical type " +
                              std::to_string(static_cast<int>(t)));
}

inline uint32_t load32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

/// Copies a value of `len` bytes; up to 64 bytes with fixed-size moves, which may read and write up to
/// 64 bytes (every buffer a value is copied from or to has `slack` bytes behind it).
inline void copy_value(char* dst, const char* src, size_t len) {
  static_assert(slack >= 64);
  if (len <= 16) {
    std::memcpy(dst, src, 16);
  } else if (len <= 32) {
    std::memcpy(dst, src, 32);
  } else if (len <= 64) {
    std::memcpy(dst, src, 64);
  } else {
    std::memcpy(dst, src, len);
  }
}

float half_to_float(uint16_t h) {
  const uint32_t bits = gpu::half_to_float_bits(h);
  float v;
  std::memcpy(&v, &bits, 4);
  return v;
}

__int128 big_endian_int(std::string_view b) {
  if (b.size() > 16) corrupt("decimal wider than 16 bytes");
  uint64_t lo, hi;
  gpu::big_endian_to_int128(reinterpret_cast<const uint8_t*>(b.data()), static_cast<int64_t>(b.size()), lo, hi);
  return static_cast<__int128>((static_cast<unsigned __int128>(hi) << 64) | lo);
}

/// The 36-character text of a 16-byte UUID at `out`.
void uuid_text(std::string_view b, char* out) {
  static const char* hex = "0123456789abcdef";
  for (size_t i = 0; i < b.size(); ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) *out++ = '-';
    auto c = static_cast<uint8_t>(b[i]);
    *out++ = hex[c >> 4];
    *out++ = hex[c & 15];
  }
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
      const uint32_t len = load32(p);
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

/// Whether the dense physical values P are stored as they are by a column of type `id`.
template <typename P>
bool stored_as_is(type_id id) {
  if constexpr (std::is_same_v<P, uint8_t>)
    return id == type_id::boolean;
  else if constexpr (std::is_same_v<P, float>)
    return id == type_id::float32;
  else if constexpr (std::is_same_v<P, double>)
    return id == type_id::float64;
  else if constexpr (std::is_same_v<P, int32_t>)
    return id == type_id::int32 || id == type_id::uint32 || id == type_id::date32;
  else if constexpr (std::is_same_v<P, int64_t>)
    return id == type_id::int64 || id == type_id::uint64 || id == type_id::timestamp;
  else
    return false;
}

/// Spreads the `nn` dense values at the front of `d` over `n` rows by the validity bits (nulls become
/// zero), from the back so that nothing is overwritten before it is moved.
template <typename P>
void spread(P* d, int64_t n, int64_t nn, const uint8_t* valid) {
  int64_t k = nn;
  for (int64_t i = n; i-- > 0;)
    d[i] = bits::get(valid, i) ? d[--k] : P{};
}

/// The tug column being decoded: its buffers come from `mr`, sized for `cap` rows and grown (up to
/// `total`) as pages prove more rows; the validity bitmap is allocated at the first null.
class column_out {
 public:
  column_out(data_type type, int64_t total, int64_t cap, memory_resource* mr)
      : _type(std::move(type)),
        _strings(_type.id == type_id::string),
        _width(_strings ? 8 : size_of(_type.id)),
        _total(total),
        _mr(mr) {
    resize(cap);
    if (_strings) _data->as<int64_t>()[0] = 0;
  }

  int64_t rows() const { return _rows; }

  /// Makes room for `n` more rows (the caller checked that they stay within `total`).
  void reserve(int64_t n) {
    if (_rows + n > _cap) resize(std::min(_total, std::max(_cap * 2, _rows + n)));
  }

  /// Records the validity of the next `n` rows: `page_bits` holds them (`nn` set), or is null when all are valid.
  void validity(const uint8_t* page_bits, int64_t n, int64_t nn) {
    if (nn < n) {
      if (!_validity) {
        _validity = make_buffer(static_cast<size_t>(bits::bytes_for(_cap)), _mr);
        std::memset(_validity->data(), 0, _validity->size());
        set_bits(_validity->as<uint8_t>(), 0, _rows);
      }
      or_bits(_validity->as<uint8_t>(), _rows, page_bits, n);
      _nulls += n - nn;
    } else if (_validity) {
      set_bits(_validity->as<uint8_t>(), _rows, n);
    }
  }

  /// Fixed width: the value of the next row.
  uint8_t* values() { return _data->as<uint8_t>() + _rows * _width; }
  /// Strings: the offsets from the next row on; [0] is the end of the rows so far.
  int64_t* offsets() { return _data->as<int64_t>() + _rows; }
  void advance(int64_t n) { _rows += n; }

  /// The column; `chars` for strings.
  column finish(buffer_ptr chars) {
    if (_strings) return column(_type, _rows, std::move(chars), std::move(_validity), _nulls, std::move(_data));
    return column(_type, _rows, std::move(_data), std::move(_validity), _nulls);
  }

 private:
  void resize(int64_t cap) {
    const auto n = static_cast<size_t>(cap + (_strings ? 1 : 0)) * static_cast<size_t>(_width);
    buffer_ptr data = make_buffer(n, _mr);
    if (_data) std::memcpy(data->data(), _data->data(), static_cast<size_t>(_rows + (_strings ? 1 : 0)) * _width);
    _data = std::move(data);
    if (_validity) {
      buffer_ptr v = make_buffer(static_cast<size_t>(bits::bytes_for(cap)), _mr);
      std::memset(v->data(), 0, v->size());
      std::memcpy(v->data(), _validity->data(), static_cast<size_t>(bits::bytes_for(_rows)));
      _validity = std::move(v);
    }
    _cap = cap;
  }

  data_type _type;
  bool _strings;
  size_t _width;
  int64_t _total, _cap = 0, _rows = 0, _nulls = 0;
  memory_resource* _mr;
  buffer_ptr _data;  ///< values, or the string offsets
  buffer_ptr _validity;
};

/// Decoder of one column chunk whose dense physical values are P.
template <typename P>
class chunk_decoder {
  static constexpr bool binary = std::is_same_v<P, std::string_view>;

 public:
  chunk_decoder(physical_type pt, codec compression, const leaf_info& leaf, decode_scratch& s, int64_t total,
                int64_t cap, memory_resource* mr, const std::vector<int64_t>* rows = nullptr, int64_t chunk_rows = 0)
      : _pt(pt),
        _codec(compression),
        _leaf(leaf),
        _s(s),
        _out(leaf.type, total, cap, mr),
        _total(total),
        _strings(leaf.type.id == type_id::string),
        _as_is(stored_as_is<P>(leaf.type.id)),
        _uuid(leaf.elem->logical.kind == logical_kind::uuid && pt == physical_type::fixed_len_byte_array &&
              leaf.elem->type_length == 16) {
    if (_strings && !binary) throw internal_error("parquet: string column from a non-binary physical type");
    _s.kept_used = 0;
    _s.indices.clear();
    _sel = rows;
    _chunk_rows = chunk_rows;
  }

  void decode(const uint8_t* data, size_t size) {
    size_t pos = 0;
    if (_sel) {  // the pages up to the last selected row (`_chunk_rows` rows in all)
      while (_sel_at < _sel->size()) {
        if (pos >= size)
          corrupt("column chunk ends after " + std::to_string(_row) + " rows, before its row " +
                  std::to_string((*_sel)[_sel_at]));
        pos = page(data, size, pos, _chunk_rows);
      }
      return;
    }
    while (_out.rows() < _total) {
      if (pos >= size)
        corrupt("column chunk ends after " + std::to_string(_out.rows()) + " of " + std::to_string(_total) + " rows");
      pos = page(data, size, pos, _total);
    }
  }

  /// Decodes only the data pages at the given chunk positions, each holding the given rows (from the
  /// offset index), after the dictionary page if the chunk has one before `first_data`.
  void decode_pages(const uint8_t* data, size_t size, size_t first_data,
                    const std::vector<std::pair<size_t, int64_t>>& pages) {
    size_t pos = 0;
    while (pos < first_data)
      pos = page(data, size, pos, 0);  // a data page here holds rows the offset index does not list
    for (auto& [at, rows] : pages) {
      const int64_t before = _out.rows();
      if (at >= size) corrupt("offset index points past the column chunk");
      page(data, size, at, _total);
      if (_out.rows() - before != rows) corrupt("page holds other rows than its offset index says");
    }
  }

  /// Data pages passed over (no row selected in them) in selection mode.
  int64_t pages_skipped() const { return _pages_skipped; }

  /// One row from a statistics value: PLAIN bytes, or the bytes themselves for binary values.
  void single(const std::string& bytes) {
    _out.reserve(1);
    _out.validity(nullptr, 1, 1);
    if constexpr (binary) {
      std::string_view v = bytes;
      if (_strings) {
        std::string_view* w = _views.grow(1);
        *w = v;
        if (_uuid) to_uuid_text(w, 1);
        view_values(1, 1, nullptr);
      } else {
        convert(&v, 1, nullptr);
      }
    } else {
      auto p = reinterpret_cast<const uint8_t*>(bytes.data());
      P v;
      decode_plain<P>(p, p + bytes.size(), 1, &v, _pt, _leaf.elem->type_length);
      if (_as_is)
        std::memcpy(_out.values(), &v, sizeof(P));
      else
        convert(&v, 1, nullptr);
    }
    _out.advance(1);
  }

  column finish(memory_resource* mr) {
    if constexpr (binary) {
      if (_strings) return _out.finish(copy_chars(mr));
    }
    return _out.finish(nullptr);
  }

 private:
  /// Where the chars of a run of dense string values come from.
  struct segment {
    enum kind_t : uint8_t { plain, indices, views } kind;
    const uint8_t* src;  ///< plain: the first length prefix
    size_t start;        ///< indices: the first in scratch.indices; views: the first in _views
    int64_t count;
    size_t dict;  ///< indices: which dictionary
  };
  /// A dictionary of string values: chars (with slack) and offsets.
  struct string_dict {
    std::unique_ptr<char[]> chars;
    std::vector<int64_t> off;
  };

  /// Decodes the page at `pos` (a data page adds rows, up to `limit` in all); returns the position after it.
  size_t page(const uint8_t* data, size_t size, size_t pos, int64_t limit) {
    size_t used = 0;
    page_header h = decode_page_header(data + pos, size - pos, used);
    pos += used;
    if (static_cast<size_t>(h.compressed_page_size) > size - pos) corrupt("page past the end of the column chunk");
    const uint8_t* p = data + pos;
    pos += static_cast<size_t>(h.compressed_page_size);
    switch (h.type) {
      case page_type::dictionary_page:
        read_dictionary(h, p);
        break;
      case page_type::data_page:
        read_v1(h, p, limit);
        break;
      case page_type::data_page_v2:
        read_v2(h, p, limit);
        break;
      default:
        break;  // index pages carry nothing we need
    }
    return pos;
  }

  /// The page's `out_size` uncompressed bytes (followed by `slack` bytes): the page itself when not
  /// compressed, else a scratch buffer (one kept per page for binary columns, whose values are copied
  /// when the chunk is done).
  const uint8_t* inflate(const uint8_t* in, size_t size, size_t out_size) {
    if (_codec == codec::uncompressed) {
      if (size != out_size) corrupt("uncompressed page sizes differ");
      return in;
    }
    if (out_size > max_decompressed_size(_codec, in, size))
      corrupt("page claims " + std::to_string(out_size) + " bytes uncompressed from " + std::to_string(size) + " " +
              to_string(_codec) + " bytes");
    uint8_t* buf;
    if constexpr (binary) {
      if (_s.kept_used == _s.kept.size()) _s.kept.emplace_back();
      buf = _s.kept[_s.kept_used++].get(out_size);
    } else {
      buf = _s.page.get(out_size);
    }
    decompress(_codec, in, size, buf, out_size);
    return buf;
  }

  void read_dictionary(const page_header& h, const uint8_t* page) {
    if (!h.dict) corrupt("dictionary page without its header");
    if (h.dict->enc != encoding::plain && h.dict->enc != encoding::plain_dictionary)
      unsupported_encoding(h.dict->enc, _pt);
    const size_t usize = static_cast<size_t>(h.uncompressed_page_size);
    const uint8_t* q = inflate(page, static_cast<size_t>(h.compressed_page_size), usize);
    const int64_t dn = h.dict->num_values;
    if (dn < 0 || dn > max_plain_values(_pt, _leaf.elem->type_length, usize))
      corrupt("dictionary of " + std::to_string(dn) + " values does not fit its " + std::to_string(usize) +
              "-byte page");
    _dict.resize(static_cast<size_t>(dn));
    decode_plain<P>(q, q + usize, dn, _dict.data(), _pt, _leaf.elem->type_length);
    if constexpr (binary) {
      if (_strings) {  // the chars in one buffer with slack, for copy_value
        if (_uuid) to_uuid_text(_dict.data(), dn);
        string_dict d;
        d.off.resize(static_cast<size_t>(dn) + 1);
        int64_t total = 0;
        for (int64_t i = 0; i < dn; ++i) {
          d.off[static_cast<size_t>(i)] = total;
          total += static_cast<int64_t>(_dict[static_cast<size_t>(i)].size());
        }
        d.off[static_cast<size_t>(dn)] = total;
        d.chars = std::make_unique_for_overwrite<char[]>(static_cast<size_t>(total) + slack);
        for (int64_t i = 0; i < dn; ++i) {
          const auto& v = _dict[static_cast<size_t>(i)];
          if (!v.empty()) std::memcpy(d.chars.get() + d.off[static_cast<size_t>(i)], v.data(), v.size());
        }
        _sdicts.push_back(std::move(d));
      }
    }
    _has_dict = true;
  }

  /// The validity bits of `n` rows from definition levels, in scratch.bits; returns the number set.
  int64_t levels(const uint8_t* p, const uint8_t* end, int64_t n) {
    if (rle_count(p, end, 1, n) < n)
      corrupt("page declares " + std::to_string(n) + " values, its definition levels hold fewer");
    const auto nb = static_cast<size_t>(bits::bytes_for(n));
    uint8_t* b = _s.bits.get(nb);
    std::memset(b, 0, nb);
    // Width 1: each level is 0 (null) or 1 (valid), so bit-packed runs are the validity bits themselves.
    rle_walk(
        p, end, 1, n,
        [&](uint32_t v, int64_t k, int64_t at) {
          if (v > 1) corrupt("definition level " + std::to_string(v) + " above 1");
          if (v) set_bits(b, at, k);
        },
        [&](const uint8_t* q, size_t, int64_t k, int64_t at) { or_bits(b, at, q, k); });
    _bits = b;
    return bits::count_set(b, 0, n);
  }

  void check_rows(int64_t n, int64_t limit) const {
    if (n < 0 || n > limit - (_sel ? _row : _out.rows())) corrupt("page holds more rows than the row group");
  }

  /// Selection mode: whether no selected row lies in the next `n` rows; if so they are passed over.
  bool pass_over(int64_t n) {
    if (!_sel || (_sel_at < _sel->size() && (*_sel)[_sel_at] < _row + n)) return false;
    _row += n;
    ++_pages_skipped;
    return true;
  }

  void read_v1(const page_header& h, const uint8_t* page, int64_t limit) {
    if (!h.v1) corrupt("data page without its header");
    const int64_t n = h.v1->num_values;
    check_rows(n, limit);
    if (pass_over(n)) return;
    const size_t usize = static_cast<size_t>(h.uncompressed_page_size);
    const uint8_t* q = inflate(page, static_cast<size_t>(h.compressed_page_size), usize);
    const uint8_t* end = q + usize;
    int64_t nn = n;
    if (_leaf.optional) {
      if (h.v1->definition_level_encoding != encoding::rle)
        throw not_implemented_error("Parquet definition levels in " + encoding_name(h.v1->definition_level_encoding) +
                                    " are not supported (only RLE)");
      if (end - q < 4) corrupt("definition levels past the end");
      const uint32_t len = load32(q);
      q += 4;
      if (len > static_cast<size_t>(end - q)) corrupt("definition levels past the end");
      nn = levels(q, q + len, n);
      q += len;
    }
    values(h.v1->enc, q, end, nn, n);
  }

  void read_v2(const page_header& h, const uint8_t* page, int64_t limit) {
    if (!h.v2) corrupt("data page v2 without its header");
    const auto& v2 = *h.v2;
    const int64_t n = v2.num_values;
    check_rows(n, limit);
    if (pass_over(n)) return;
    if (v2.definition_levels_byte_length < 0 || v2.repetition_levels_byte_length < 0) corrupt("negative level length");
    const size_t lv =
        static_cast<size_t>(v2.definition_levels_byte_length) + static_cast<size_t>(v2.repetition_levels_byte_length);
    const size_t csize = static_cast<size_t>(h.compressed_page_size);
    const size_t usize = static_cast<size_t>(h.uncompressed_page_size);
    if (lv > csize || lv > usize) corrupt("levels longer than the page");
    int64_t nn = n;
    const uint8_t* def = page + v2.repetition_levels_byte_length;
    if (_leaf.optional) nn = levels(def, def + v2.definition_levels_byte_length, n);
    if (nn != n - v2.num_nulls) corrupt("null count of data page v2 differs from its levels");
    const uint8_t* q;
    if (v2.is_compressed) {
      q = inflate(page + lv, csize - lv, usize - lv);
    } else {
      if (csize != usize) corrupt("uncompressed page sizes differ");
      q = page + lv;
    }
    values(v2.enc, q, q + (usize - lv), nn, n);
  }

  /// Most values (up to `nn`) that the encoded value bytes [p, end) can hold, from their headers and
  /// sizes, so that nothing is allocated for values a page only declares. Unsupported encodings give
  /// `nn` (they raise not_implemented_error when decoded).
  int64_t value_bound(encoding enc, const uint8_t* p, const uint8_t* end, int64_t nn) const {
    const size_t bytes = static_cast<size_t>(end - p);
    switch (enc) {
      case encoding::plain:
        return max_plain_values(_pt, _leaf.elem->type_length, bytes);
      case encoding::plain_dictionary:
      case encoding::rle_dictionary:
        return nn == 0 || p >= end ? 0 : rle_count(p + 1, end, *p, nn);
      case encoding::rle: {
        if (_pt != physical_type::boolean) return nn;
        if (bytes < 4) return 0;
        const uint32_t len = load32(p);
        return len > bytes - 4 ? 0 : rle_count(p + 4, p + 4 + len, 1, nn);
      }
      case encoding::delta_binary_packed:
        if constexpr (std::is_same_v<P, int32_t> || std::is_same_v<P, int64_t>)
          return nn == 0 || _pt == physical_type::int96 ? nn : delta_count(p, end);
        return nn;
      case encoding::delta_length_byte_array:
      case encoding::delta_byte_array:
        if constexpr (binary) return nn == 0 ? nn : delta_count(p, end);
        return nn;
      case encoding::byte_stream_split:
        if (_pt == physical_type::boolean || _pt == physical_type::byte_array) return nn;
        return max_plain_values(_pt, _leaf.elem->type_length, bytes);
      default:
        return nn;
    }
  }

  /// The values of a data page of `n` rows, `nn` of them not null (validity bits in `_bits` when nn < n).
  void values(encoding enc, const uint8_t* p, const uint8_t* end, int64_t nn, int64_t n) {
    if (value_bound(enc, p, end, nn) < nn)
      corrupt("page declares " + std::to_string(nn) + " " + encoding_name(enc) + " values, its bytes hold fewer");
    const uint8_t* page_bits = nn < n ? _bits : nullptr;
    if (_sel) return selected_values(enc, p, end, nn, n, page_bits);
    _out.reserve(n);
    _out.validity(page_bits, n, nn);
    if constexpr (binary) {
      if (_strings) {
        string_values(enc, p, end, nn, n, page_bits);
        _out.advance(n);
        return;
      }
    }
    if (_as_is) {
      P* d = reinterpret_cast<P*>(_out.values());
      dense(enc, p, end, nn, d);
      if (page_bits) spread(d, n, nn, page_bits);
    } else {
      P* d = reinterpret_cast<P*>(_s.dense.get(static_cast<size_t>(nn) * sizeof(P)));
      dense(enc, p, end, nn, d);
      convert(d, n, page_bits);
    }
    _out.advance(n);
  }

  /// Selection mode: of the page's `n` rows (`nn` of them not null, by `page_bits`), only the selected
  /// ones, in order. The values not selected are decoded only where the encoding needs it.
  void selected_values(encoding enc, const uint8_t* p, const uint8_t* end, int64_t nn, int64_t n,
                       const uint8_t* page_bits) {
    const std::vector<int64_t>& sel = *_sel;
    size_t e = _sel_at;
    while (e < sel.size() && sel[e] < _row + n)
      ++e;
    const int64_t m = static_cast<int64_t>(e - _sel_at);
    // the selected rows' validity and the dense positions of their values
    _pick.clear();
    uint8_t* bits_out = nullptr;
    if (page_bits) {
      const auto nb = static_cast<size_t>(bits::bytes_for(m));
      bits_out = _s.picked_bits.get(nb);
      std::memset(bits_out, 0, nb);
    }
    int64_t dense_before = 0, prev = 0;
    for (int64_t j = 0; j < m; ++j) {
      const int64_t r = sel[_sel_at + static_cast<size_t>(j)] - _row;
      if (!page_bits) {
        _pick.push_back(r);
        continue;
      }
      dense_before += bits::count_set(page_bits, prev, r - prev);
      prev = r;
      if (bits::get(page_bits, r)) {
        bits::set(bits_out, j);
        _pick.push_back(dense_before);
      }
    }
    const auto mm = static_cast<int64_t>(_pick.size());
    _sel_at = e;
    _row += n;
    _out.reserve(m);
    _out.validity(bits_out, m, mm);
    if constexpr (binary) {
      std::string_view* v = _views.grow(static_cast<size_t>(mm));
      pick(enc, p, end, nn, v);
      if (_strings)
        view_values(mm, m, bits_out);
      else
        convert(v, m, bits_out);
    } else if (_as_is) {
      P* d = reinterpret_cast<P*>(_out.values());
      pick(enc, p, end, nn, d);
      if (bits_out) spread(d, m, mm, bits_out);
    } else {
      P* d = reinterpret_cast<P*>(_s.dense.get(static_cast<size_t>(mm) * sizeof(P)));
      pick(enc, p, end, nn, d);
      convert(d, m, bits_out);
    }
    _out.advance(m);
  }

  /// The dense values at the positions in `_pick` (ascending) of a page's `nn` values of encoding
  /// `enc` in [p, end) (their count checked by value_bound): PLAIN values are read where they lie,
  /// dictionary indices decoded up to the last one picked, other encodings decoded in full.
  void pick(encoding enc, const uint8_t* p, const uint8_t* end, int64_t nn, P* out) {
    const size_t mm = _pick.size();
    if (mm == 0) return;
    const int64_t* at = _pick.data();
    const int64_t count = at[mm - 1] + 1;
    if (enc == encoding::plain) {
      if constexpr (binary) {
        if (_pt == physical_type::byte_array) {
          const uint8_t* q = p;
          size_t j = 0;
          for (int64_t k = 0; k < count; ++k) {
            if (end - q < 4) corrupt("PLAIN byte array length past the end");
            const uint32_t len = load32(q);
            q += 4;
            if (len > static_cast<size_t>(end - q)) corrupt("PLAIN byte array past the end");
            if (k == at[j]) out[j++] = {reinterpret_cast<const char*>(q), len};
            q += len;
          }
        } else {
          const auto w = static_cast<size_t>(_leaf.elem->type_length);
          for (size_t j = 0; j < mm; ++j)
            out[j] = {reinterpret_cast<const char*>(p) + static_cast<size_t>(at[j]) * w, w};
        }
        if (_uuid) to_uuid_text(out, static_cast<int64_t>(mm));
        return;
      } else if constexpr (!std::is_same_v<P, uint8_t>) {  // booleans are bit-packed
        const size_t w = _pt == physical_type::int96 ? 12 : sizeof(P);
        for (size_t j = 0; j < mm; ++j)
          decode_plain<P>(p + static_cast<size_t>(at[j]) * w, end, 1, out + j, _pt, _leaf.elem->type_length);
        return;
      }
    }
    if (enc == encoding::plain_dictionary || enc == encoding::rle_dictionary) {
      if (!_has_dict) corrupt("dictionary-encoded page without a dictionary page");
      if (p >= end) corrupt("dictionary indices past the end");
      const int bw = *p++;
      _s.indices.clear();
      uint32_t* ix = _s.indices.grow(static_cast<size_t>(count));
      rle_decode(p, end, bw, ix, count);
      for (size_t j = 0; j < mm; ++j) {
        const uint32_t x = ix[at[j]];
        if (x >= _dict.size()) corrupt("dictionary index out of range");
        out[j] = _dict[x];
      }
      return;
    }
    _all.clear();
    P* all = _all.grow(static_cast<size_t>(nn));
    dense(enc, p, end, nn, all);
    for (size_t j = 0; j < mm; ++j)
      out[j] = all[at[j]];
    if constexpr (binary) {
      if (_uuid) to_uuid_text(out, static_cast<int64_t>(mm));
    }
  }

  /// The `n` rows of `d` (dense) converted to the column's type.
  void convert(const P* d, int64_t n, const uint8_t* page_bits) {
    uint8_t* dst = _out.values();
    auto go = [&]<typename T>(auto f) {
      T* o = reinterpret_cast<T*>(dst);
      if (!page_bits) {
        for (int64_t i = 0; i < n; ++i)
          o[i] = f(d[i]);
      } else {
        int64_t k = 0;
        for (int64_t i = 0; i < n; ++i)
          o[i] = bits::get(page_bits, i) ? f(d[k++]) : T{};
      }
    };
    const type_id id = _leaf.type.id;
    if constexpr (binary) {
      if (id == type_id::decimal128) return go.template operator()<__int128>(big_endian_int);
      if (id == type_id::float32)
        return go.template operator()<float>([](std::string_view v) {
          uint16_t h;
          std::memcpy(&h, v.data(), 2);
          return half_to_float(h);
        });
    } else if constexpr (std::is_same_v<P, int32_t> || std::is_same_v<P, int64_t>) {
      auto to = [](auto t) { return [](P v) { return static_cast<decltype(t)>(v); }; };
      switch (id) {
        case type_id::int8:
          return go.template operator()<int8_t>(to(int8_t{}));
        case type_id::int16:
          return go.template operator()<int16_t>(to(int16_t{}));
        case type_id::uint8:
          return go.template operator()<uint8_t>(to(uint8_t{}));
        case type_id::uint16:
          return go.template operator()<uint16_t>(to(uint16_t{}));
        case type_id::int64:
          return go.template operator()<int64_t>(to(int64_t{}));
        case type_id::decimal128:
          return go.template operator()<__int128>(to(__int128{}));
        default:
          break;
      }
    }
    throw internal_error("parquet: no conversion of physical type " + std::to_string(static_cast<int>(_pt)) + " to " +
                         to_string(_leaf.type));
  }

  /// Writes the offsets of `n` rows; `len()` gives the length of the next of the page's dense values.
  template <typename Len>
  void write_offsets(int64_t n, const uint8_t* page_bits, Len&& len) {
    int64_t* o = _out.offsets();
    int64_t pos = o[0];
    if (!page_bits) {
      for (int64_t i = 0; i < n; ++i) {
        pos += static_cast<int64_t>(len());
        o[i + 1] = pos;
      }
    } else {
      for (int64_t i = 0; i < n; ++i) {
        if (bits::get(page_bits, i)) pos += static_cast<int64_t>(len());
        o[i + 1] = pos;
      }
    }
  }

  /// Offsets of a string page now; its chars are copied by copy_chars once the chunk is done.
  void string_values(encoding enc, const uint8_t* p, const uint8_t* end, int64_t nn, int64_t n,
                     const uint8_t* page_bits) {
    if constexpr (binary) {
      if (enc == encoding::plain && _pt == physical_type::byte_array) {
        const uint8_t* q = p;
        write_offsets(n, page_bits, [&] {
          if (end - q < 4) corrupt("PLAIN byte array length past the end");
          const uint32_t len = load32(q);
          q += 4;
          if (len > static_cast<size_t>(end - q)) corrupt("PLAIN byte array past the end");
          q += len;
          return len;
        });
        _segments.push_back({segment::plain, p, 0, nn, 0});
        return;
      }
      if (enc == encoding::plain_dictionary || enc == encoding::rle_dictionary) {
        if (!_has_dict) corrupt("dictionary-encoded page without a dictionary page");
        if (nn == 0) {
          write_offsets(n, page_bits, [] { return 0; });
          return;
        }
        if (p >= end) corrupt("dictionary indices past the end");
        const int bw = *p++;
        const size_t start = _s.indices.size();
        uint32_t* ix = _s.indices.grow(static_cast<size_t>(nn));
        rle_decode(p, end, bw, ix, nn);
        const string_dict& d = _sdicts.back();
        uint32_t top = 0;
        for (int64_t k = 0; k < nn; ++k)
          top = std::max(top, ix[k]);
        if (top >= d.off.size() - 1) corrupt("dictionary index out of range");
        const int64_t* off = d.off.data();
        int64_t k = 0;
        write_offsets(n, page_bits, [&] {
          const uint32_t x = ix[k++];
          return off[x + 1] - off[x];
        });
        _segments.push_back({segment::indices, nullptr, start, nn, _sdicts.size() - 1});
        return;
      }
      std::string_view* v = _views.grow(static_cast<size_t>(nn));
      dense(enc, p, end, nn, v);
      if (_uuid) to_uuid_text(v, nn);
      view_values(nn, n, page_bits);
    }
  }

  /// Offsets of `n` rows whose `nn` dense values are the last `nn` views of _views.
  void view_values(int64_t nn, int64_t n, const uint8_t* page_bits) {
    const std::string_view* v = _views.data() + (_views.size() - static_cast<size_t>(nn));
    int64_t k = 0;
    write_offsets(n, page_bits, [&] { return v[k++].size(); });
    _segments.push_back({segment::views, nullptr, _views.size() - static_cast<size_t>(nn), nn, 0});
  }

  /// Replaces 16-byte UUID views by views of their text, in a buffer the decoder keeps.
  void to_uuid_text(std::string_view* v, int64_t nn) {
    _owned.push_back(std::make_unique_for_overwrite<uint8_t[]>(std::max<size_t>(36 * static_cast<size_t>(nn), 1)));
    char* w = reinterpret_cast<char*>(_owned.back().get());
    for (int64_t i = 0; i < nn; ++i, w += 36) {
      uuid_text(v[i], w);
      v[i] = {w, 36};
    }
  }

  /// The chars of a string chunk, at their exact size (plus slack), from its segments.
  buffer_ptr copy_chars(memory_resource* mr) {
    const int64_t total = _out.offsets()[0];
    buffer_ptr chars = make_buffer(static_cast<size_t>(total) + slack, mr);
    char* const begin = chars->as<char>();
    char* w = begin;
    for (const segment& s : _segments) {
      switch (s.kind) {
        case segment::plain: {
          const uint8_t* q = s.src;
          for (int64_t c = 0; c < s.count; ++c) {
            const uint32_t len = load32(q);
            copy_value(w, reinterpret_cast<const char*>(q + 4), len);
            q += 4 + static_cast<size_t>(len);
            w += len;
          }
          break;
        }
        case segment::indices: {
          const string_dict& d = _sdicts[s.dict];
          const uint32_t* ix = _s.indices.data() + s.start;
          const int64_t* off = d.off.data();
          const char* dc = d.chars.get();
          for (int64_t c = 0; c < s.count; ++c) {
            const int64_t b = off[ix[c]], len = off[ix[c] + 1] - b;
            copy_value(w, dc + b, static_cast<size_t>(len));
            w += len;
          }
          break;
        }
        case segment::views: {
          const std::string_view* v = _views.data() + s.start;
          for (int64_t c = 0; c < s.count; ++c) {
            if (!v[c].empty()) std::memcpy(w, v[c].data(), v[c].size());
            w += v[c].size();
          }
          break;
        }
      }
    }
    if (w - begin != total) throw internal_error("parquet: string chars differ from their offsets");
    return chars;
  }

  /// Decodes `nn` dense values of encoding `enc` from [p, end) into `out`.
  void dense(encoding enc, const uint8_t* p, const uint8_t* end, int64_t nn, P* out) {
    switch (enc) {
      case encoding::plain:
        decode_plain<P>(p, end, nn, out, _pt, _leaf.elem->type_length);
        return;
      case encoding::plain_dictionary:
      case encoding::rle_dictionary: {
        if (!_has_dict) corrupt("dictionary-encoded page without a dictionary page");
        if (nn == 0) return;
        if (p >= end) corrupt("dictionary indices past the end");
        const int bw = *p++;
        _s.indices.clear();
        uint32_t* ix = _s.indices.grow(static_cast<size_t>(nn));
        rle_decode(p, end, bw, ix, nn);
        uint32_t top = 0;
        for (int64_t i = 0; i < nn; ++i)
          top = std::max(top, ix[i]);
        if (top >= _dict.size()) corrupt("dictionary index out of range");
        const P* dict = _dict.data();
        for (int64_t i = 0; i < nn; ++i)
          out[i] = dict[ix[i]];
        return;
      }
      case encoding::rle:
        if constexpr (std::is_same_v<P, uint8_t>) {
          if (end - p < 4) corrupt("RLE booleans past the end");
          const uint32_t len = load32(p);
          p += 4;
          if (len > static_cast<size_t>(end - p)) corrupt("RLE booleans past the end");
          rle_walk(
              p, p + len, 1, nn,
              [&](uint32_t v, int64_t k, int64_t at) { std::memset(out + at, v != 0, static_cast<size_t>(k)); },
              [&](const uint8_t* q, size_t, int64_t k, int64_t at) {
                for (int64_t j = 0; j < k; ++j)
                  out[at + j] = (q[j >> 3] >> (j & 7)) & 1;
              });
          return;
        }
        break;
      case encoding::delta_binary_packed:
        if constexpr (std::is_same_v<P, int32_t> || std::is_same_v<P, int64_t>) {
          if (_pt == physical_type::int96) break;
          delta_decode<P>(p, end, nn, out);
          return;
        }
        break;
      case encoding::delta_length_byte_array:
        if constexpr (binary) {
          if (_pt != physical_type::byte_array) break;
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
        if constexpr (binary) {
          delta_byte_array(p, end, nn, out);
          return;
        }
        break;
      case encoding::byte_stream_split:
        byte_stream_split(p, end, nn, out);
        return;
      default:
        break;
    }
    unsupported_encoding(enc, _pt);
  }

  void delta_byte_array(const uint8_t* p, const uint8_t* end, int64_t nn, P* out) {
    if constexpr (binary) {
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
      _owned.push_back(std::make_unique_for_overwrite<uint8_t[]>(std::max<size_t>(total, 1)));
      char* w = reinterpret_cast<char*>(_owned.back().get());
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
    }
  }

  void byte_stream_split(const uint8_t* p, const uint8_t* end, int64_t nn, P* out) {
    if constexpr (std::is_same_v<P, uint8_t>) {
      unsupported_encoding(encoding::byte_stream_split, _pt);
    } else {
      size_t w;
      uint8_t* dst;
      if constexpr (binary) {
        if (_pt != physical_type::fixed_len_byte_array) unsupported_encoding(encoding::byte_stream_split, _pt);
        w = static_cast<size_t>(_leaf.elem->type_length);
        _owned.push_back(std::make_unique_for_overwrite<uint8_t[]>(std::max<size_t>(w * static_cast<size_t>(nn), 1)));
        dst = _owned.back().get();
      } else {
        if (_pt == physical_type::int96) unsupported_encoding(encoding::byte_stream_split, _pt);
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
      if constexpr (binary) {
        for (size_t i = 0; i < n; ++i)
          out[i] = {reinterpret_cast<const char*>(dst) + i * w, w};
      }
    }
  }

  const physical_type _pt;
  const codec _codec;
  const leaf_info& _leaf;
  decode_scratch& _s;
  column_out _out;
  const int64_t _total;
  const bool _strings, _as_is, _uuid;
  std::vector<P> _dict;
  bool _has_dict = false;
  const uint8_t* _bits = nullptr;  ///< validity bits of the current page (scratch.bits)
  // strings
  std::vector<string_dict> _sdicts;
  std::vector<segment> _segments;
  pod_vector<std::string_view> _views;
  std::vector<std::unique_ptr<uint8_t[]>> _owned;  ///< buffers views point into (DELTA_BYTE_ARRAY, UUID text, ...)
  // selection mode (decode_chunk_rows)
  const std::vector<int64_t>* _sel = nullptr;  ///< the rows to keep, ascending, below _chunk_rows
  size_t _sel_at = 0;                          ///< the first of them not yet reached
  int64_t _row = 0;                            ///< the chunk's rows passed so far
  int64_t _chunk_rows = 0;  ///< rows of the column chunk
  int64_t _pages_skipped = 0;
  std::vector<int64_t> _pick;  ///< dense positions of a page's selected values
  pod_vector<P> _all;          ///< a page's dense values, for encodings read in full
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

column decode_chunk(const column_metadata& m, const leaf_info& leaf, const uint8_t* data, size_t size, int64_t num_rows,
                    const std::vector<std::pair<size_t, int64_t>>* pages, size_t first_data, decode_scratch& scratch,
                    memory_resource* mr) {
  // Declared counts are only trusted once bytes that hold them are seen: the first allocation is
  // bounded by the chunk's size (the column grows past it as pages prove more rows).
  const int64_t cap = std::min<int64_t>(num_rows, static_cast<int64_t>(std::min<size_t>(size, size_t{1} << 40)) * 8);
  return physical_dispatch(m.type, [&]<typename P>() {
    chunk_decoder<P> dec(m.type, m.compression, leaf, scratch, num_rows, cap, mr);
    if (pages)
      dec.decode_pages(data, size, first_data, *pages);
    else
      dec.decode(data, size);
    return dec.finish(mr);
  });
}

column decode_chunk_rows(const column_metadata& m, const leaf_info& leaf, const uint8_t* data, size_t size,
                         int64_t num_rows, const std::vector<int64_t>& rows, decode_scratch& scratch,
                         memory_resource* mr, int64_t* pages_skipped) {
  const auto total = static_cast<int64_t>(rows.size());
  const int64_t cap = std::min<int64_t>(total, static_cast<int64_t>(std::min<size_t>(size, size_t{1} << 40)) * 8);
  return physical_dispatch(m.type, [&]<typename P>() {
    chunk_decoder<P> dec(m.type, m.compression, leaf, scratch, total, cap, mr, &rows, num_rows);
    dec.decode(data, size);
    if (pages_skipped) *pages_skipped += dec.pages_skipped();
    return dec.finish(mr);
  });
}

column decode_stat_value(const leaf_info& leaf, physical_type pt, const std::string& bytes, memory_resource* mr) {
  decode_scratch scratch;
  return physical_dispatch(pt, [&]<typename P>() {
    chunk_decoder<P> dec(pt, codec::uncompressed, leaf, scratch, 1, 1, mr);
    dec.single(bytes);
    return dec.finish(mr);
  });
}

}  // namespace tug::io::parquet::detail
