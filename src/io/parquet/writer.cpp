/// Parquet writer: flat OPTIONAL columns, PLAIN or dictionary values, RLE definition levels,
/// data pages v1, statistics, one footer. The column chunks of a row group are encoded in parallel on
/// a thread pool, each into memory, and written in order.
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>

#include "core/hash.hpp"
#include "tug/core/error.hpp"
#include "tug/core/utf8.hpp"
#include "tug/io/parquet/codec.hpp"
#include "tug/io/parquet/metadata.hpp"
#include "tug/io/parquet/reader.hpp"
#include "tug/runtime/thread_pool.hpp"

namespace tug::io::parquet {
namespace {

/// Dictionaries larger than this (bytes of PLAIN values) fall back to PLAIN for the chunk.
constexpr size_t dictionary_limit_bytes = 1 << 20;

codec parse_codec(const std::string& name) {
  std::string n;
  for (char c : name)
    n.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  if (n == "none" || n == "uncompressed") return codec::uncompressed;
  if (n == "snappy") return codec::snappy;
  if (n == "zstd") return codec::zstd;
  if (n == "lz4_raw" || n == "lz4") return codec::lz4_raw;
  if (n == "gzip") return codec::gzip;
  throw invalid_argument_error("write_parquet: unknown codec '" + name +
                               "' (supported: none, snappy, zstd, lz4_raw, gzip)");
}

/// The schema element of a tug field.
schema_element element_of(const field& f) {
  schema_element e;
  e.name = f.name;
  e.repetition_type = repetition::optional;
  const data_type& t = f.type;
  auto integer = [&](physical_type p, int bits, bool is_signed, converted_type c) {
    e.type = p;
    e.logical.kind = logical_kind::integer;
    e.logical.bit_width = static_cast<int8_t>(bits);
    e.logical.is_signed = is_signed;
    e.converted = c;
  };
  switch (t.id) {
    case type_id::boolean:
      e.type = physical_type::boolean;
      break;
    case type_id::int8:
      integer(physical_type::int32, 8, true, converted_type::int_8);
      break;
    case type_id::int16:
      integer(physical_type::int32, 16, true, converted_type::int_16);
      break;
    case type_id::int32:
      integer(physical_type::int32, 32, true, converted_type::int_32);
      break;
    case type_id::int64:
      integer(physical_type::int64, 64, true, converted_type::int_64);
      break;
    case type_id::uint8:
      integer(physical_type::int32, 8, false, converted_type::uint_8);
      break;
    case type_id::uint16:
      integer(physical_type::int32, 16, false, converted_type::uint_16);
      break;
    case type_id::uint32:
      integer(physical_type::int32, 32, false, converted_type::uint_32);
      break;
    case type_id::uint64:
      integer(physical_type::int64, 64, false, converted_type::uint_64);
      break;
    case type_id::float32:
      e.type = physical_type::float_;
      break;
    case type_id::float64:
      e.type = physical_type::double_;
      break;
    case type_id::decimal128:
      e.type = t.precision <= 9    ? physical_type::int32
               : t.precision <= 18 ? physical_type::int64
                                   : physical_type::fixed_len_byte_array;
      e.type_length = 16;
      e.converted = converted_type::decimal;
      e.scale = t.scale;
      e.precision = t.precision;
      e.logical.kind = logical_kind::decimal;
      e.logical.scale = t.scale;
      e.logical.precision = t.precision;
      break;
    case type_id::date32:
      e.type = physical_type::int32;
      e.converted = converted_type::date;
      e.logical.kind = logical_kind::date;
      break;
    case type_id::timestamp:
      e.type = physical_type::int64;
      e.logical.kind = logical_kind::timestamp;
      e.logical.adjusted_to_utc = !t.tz.empty();
      e.logical.unit = t.unit == time_unit::ns   ? logical_unit::nanos
                       : t.unit == time_unit::us ? logical_unit::micros
                                                 : logical_unit::millis;  // seconds are written as millis
      break;
    case type_id::duration:
      e.type = physical_type::int64;
      break;  // no Parquet logical type: plain int64
    case type_id::string:
      e.type = physical_type::byte_array;
      e.converted = converted_type::utf8;
      e.logical.kind = logical_kind::string;
      break;
  }
  return e;
}

/// Appends an unsigned LEB128 varint.
void put_uleb(std::string& out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}

/// Appends an RLE/bit-packed hybrid run of `n` values of width `bw`, bit-packed in groups of 8.
void bit_pack(std::string& out, const uint32_t* v, int64_t n, int bw) {
  const int64_t groups = (n + 7) / 8;
  put_uleb(out, (static_cast<uint64_t>(groups) << 1) | 1);
  const size_t start = out.size();
  out.resize(start + static_cast<size_t>(groups) * static_cast<size_t>(bw), '\0');
  auto* p = reinterpret_cast<uint8_t*>(out.data() + start);
  uint64_t acc = 0;  // fewer than 8 pending bits before each value, so at most 40 after it
  int bits = 0;
  for (int64_t i = 0; i < n; ++i) {
    acc |= static_cast<uint64_t>(v[i]) << bits;
    for (bits += bw; bits >= 8; bits -= 8, acc >>= 8)
      *p++ = static_cast<uint8_t>(acc);
  }
  if (bits > 0) *p = static_cast<uint8_t>(acc);
}

/// Non-null values of a column as their Parquet physical values (PV), plus the validity of each row.
template <typename PV>
struct physical_values {
  std::vector<PV> values;
  std::vector<uint8_t> valid;  ///< per row
  int64_t null_count = 0;
};

template <typename PV>
void plain_encode(const PV* v, size_t n, std::string& out) {
  if constexpr (std::is_same_v<PV, uint8_t>) {
    const size_t start = out.size();
    out.resize(start + (n + 7) / 8, '\0');
    for (size_t i = 0; i < n; ++i)
      if (v[i]) out[start + (i >> 3)] = static_cast<char>(out[start + (i >> 3)] | (1 << (i & 7)));
  } else if constexpr (std::is_same_v<PV, std::string_view>) {
    for (size_t i = 0; i < n; ++i) {
      uint32_t len = static_cast<uint32_t>(v[i].size());
      out.append(reinterpret_cast<const char*>(&len), 4);
      out.append(v[i]);
    }
  } else if constexpr (std::is_same_v<PV, __int128>) {
    for (size_t i = 0; i < n; ++i) {
      auto u = static_cast<unsigned __int128>(v[i]);
      char b[16];
      for (int k = 15; k >= 0; --k, u >>= 8)
        b[k] = static_cast<char>(static_cast<uint8_t>(u));
      out.append(b, 16);
    }
  } else {
    out.append(reinterpret_cast<const char*>(v), n * sizeof(PV));
  }
}

/// Bytes of one statistics value (PLAIN without the length prefix of byte arrays).
template <typename PV>
std::string stat_bytes(const PV& v) {
  if constexpr (std::is_same_v<PV, std::string_view>)
    return std::string(v);
  else if constexpr (std::is_same_v<PV, uint8_t>)
    return std::string(1, v ? '\1' : '\0');
  else {
    std::string s;
    plain_encode(&v, 1, s);
    return s;
  }
}

/// Key under which a value is looked up in the dictionary (floats by bit pattern: -0.0 != 0.0).
template <typename PV>
auto dict_key(const PV& v) {
  if constexpr (std::is_same_v<PV, float>)
    return std::bit_cast<uint32_t>(v);
  else if constexpr (std::is_same_v<PV, double>)
    return std::bit_cast<uint64_t>(v);
  else
    return v;
}

/// The dictionary of a column chunk, grown page by page: its values, and their ids in an open-addressing
/// table (linear probing, at most half full) that holds id + 1 (0: empty).
template <typename PV>
struct dictionary_builder {
  std::vector<PV> values;
  size_t bytes = 0;  ///< PLAIN size of `values`

  /// Sets `idx` to the ids of `n` values, adding new ones. False, with `values` as before the call,
  /// when the dictionary would pass dictionary_limit_bytes; the builder then takes no more values.
  bool add(const PV* v, size_t n, std::vector<uint32_t>& idx) {
    if (_closed) return false;
    const size_t old_size = values.size(), old_bytes = bytes;
    idx.resize(n);
    for (size_t i = 0; i < n; ++i) {
      if (2 * (values.size() + 1) > _slots.size()) grow();
      const auto key = dict_key(v[i]);
      const size_t mask = _slots.size() - 1;
      size_t h = hash(v[i]) & mask;
      while (_slots[h] != 0 && !(dict_key(values[_slots[h] - 1]) == key))
        h = (h + 1) & mask;
      if (_slots[h] == 0) {
        if constexpr (std::is_same_v<PV, std::string_view>)
          bytes += 4 + v[i].size();
        else
          bytes += sizeof(PV);
        if (bytes > dictionary_limit_bytes) {
          values.resize(old_size);  // the table keeps stale ids: closed
          bytes = old_bytes;
          _closed = true;
          return false;
        }
        values.push_back(v[i]);
        _slots[h] = static_cast<uint32_t>(values.size());
      }
      idx[i] = _slots[h] - 1;
    }
    return true;
  }

 private:
  static uint64_t hash(const PV& v) {
    if constexpr (std::is_same_v<PV, std::string_view>)
      return hashing::hash_bytes(v.data(), v.size());
    else
      return hashing::mix(static_cast<uint64_t>(dict_key(v)));
  }
  void grow() {
    _slots.assign(std::max<size_t>(1024, 2 * _slots.size()), 0);
    const size_t mask = _slots.size() - 1;
    for (size_t id = 0; id < values.size(); ++id) {
      size_t h = hash(values[id]) & mask;
      while (_slots[h] != 0)
        h = (h + 1) & mask;
      _slots[h] = static_cast<uint32_t>(id + 1);
    }
  }
  std::vector<uint32_t> _slots;
  bool _closed = false;
};

/// Writes the file sequentially, tracking the offset.
class file_sink {
 public:
  explicit file_sink(const std::string& path) : _path(path), _f(std::fopen(path.c_str(), "wb")) {
    if (!_f) throw io_error(path + ": cannot create Parquet file: " + std::strerror(errno));
  }
  ~file_sink() {
    if (_f) std::fclose(_f);
  }
  void write(const void* p, size_t n) {
    if (n && std::fwrite(p, 1, n, _f) != n) throw io_error(_path + ": write failed: " + std::strerror(errno));
    _offset += static_cast<int64_t>(n);
  }
  void write(const std::string& s) { write(s.data(), s.size()); }
  void close() {
    int rc = std::fclose(_f);
    _f = nullptr;
    if (rc != 0) throw io_error(_path + ": write failed on close: " + std::strerror(errno));
  }
  int64_t offset() const { return _offset; }

 private:
  std::string _path;
  std::FILE* _f;
  int64_t _offset = 0;
};

/// A column chunk's bytes, and its metadata with page offsets from the chunk's first byte.
struct encoded_chunk {
  column_metadata meta;
  std::string bytes;
};

/// Encodes column chunks into memory (one writer per thread: it keeps a compression buffer).
class chunk_writer {
 public:
  chunk_writer(codec c, const write_options& o) : _codec(c), _opts(o) {}

  /// Encodes one column chunk.
  template <typename PV>
  encoded_chunk write(const physical_values<PV>& pv, const schema_element& e, bool unsigned_order) {
    encoded_chunk out;
    column_metadata& m = out.meta;
    m.type = *e.type;
    m.path_in_schema = {e.name};
    m.compression = _codec;
    const int64_t rows = static_cast<int64_t>(pv.valid.size());
    m.num_values = rows;
    const size_t nn = pv.values.size();

    // Pages of about page_bytes of values.
    size_t value_bytes;
    if constexpr (std::is_same_v<PV, std::string_view>) {
      value_bytes = 0;
      for (auto v : pv.values)
        value_bytes += 4 + v.size();
    } else {
      value_bytes = nn * sizeof(PV);
    }
    const int64_t per_row = std::max<int64_t>(1, static_cast<int64_t>(value_bytes) / std::max<int64_t>(rows, 1));
    const int64_t page_rows = std::max<int64_t>(1, _opts.page_bytes / per_row);

    // Pages are dictionary-encoded until the dictionary would pass its limit; that page and the
    // following ones are PLAIN. The pages are kept until the dictionary page, which comes first, is known.
    constexpr bool dictionary_type = !std::is_same_v<PV, uint8_t> && !std::is_same_v<PV, __int128>;
    bool dictionary_on = dictionary_type && _opts.dictionary;
    dictionary_builder<PV> dict;
    int dictionary_pages = 0;
    std::vector<uint32_t> levels, indices;
    std::string pages, body;
    size_t v0 = 0;
    for (int64_t r0 = 0; r0 < rows || (rows == 0 && r0 == 0); r0 += page_rows) {
      const int64_t r1 = std::min(rows, r0 + page_rows);
      body.clear();
      // Definition levels: 4-byte length, then one bit-packed run (or one RLE run of 1s without nulls).
      size_t nvals = static_cast<size_t>(r1 - r0);
      if (pv.null_count > 0) {
        levels.assign(pv.valid.begin() + r0, pv.valid.begin() + r1);
        nvals = static_cast<size_t>(std::count(pv.valid.begin() + r0, pv.valid.begin() + r1, uint8_t{1}));
      }
      body.resize(4);
      if (nvals == static_cast<size_t>(r1 - r0)) {
        put_uleb(body, static_cast<uint64_t>(r1 - r0) << 1);
        body.push_back('\1');
      } else {
        bit_pack(body, levels.data(), static_cast<int64_t>(levels.size()), 1);
      }
      uint32_t len = static_cast<uint32_t>(body.size() - 4);
      std::memcpy(body.data(), &len, 4);
      if constexpr (dictionary_type) dictionary_on = dictionary_on && dict.add(pv.values.data() + v0, nvals, indices);
      const bool page_dictionary = dictionary_on && nvals > 0;  // pages of nulls only are PLAIN
      if (page_dictionary) {
        const int bw = std::max(1, static_cast<int>(std::bit_width(dict.values.size() - 1)));
        body.push_back(static_cast<char>(bw));
        if (nvals) bit_pack(body, indices.data(), static_cast<int64_t>(nvals), bw);
        ++dictionary_pages;
      } else {
        plain_encode(pv.values.data() + v0, nvals, body);
      }
      v0 += nvals;
      page_header h;
      h.type = page_type::data_page;
      h.v1 =
          data_page_header{static_cast<int32_t>(r1 - r0), page_dictionary ? encoding::rle_dictionary : encoding::plain,
                           encoding::rle, encoding::rle};
      serialize(h, body, m, pages);
      if (rows == 0) break;
    }

    if (dictionary_pages > 0) {
      m.dictionary_page_offset = 0;
      body.clear();
      plain_encode(dict.values.data(), dict.values.size(), body);
      page_header h;
      h.type = page_type::dictionary_page;
      h.dict = dictionary_page_header{static_cast<int32_t>(dict.values.size()), encoding::plain};
      serialize(h, body, m, out.bytes);
    }
    m.data_page_offset = static_cast<int64_t>(out.bytes.size());
    out.bytes += pages;
    m.encodings = dictionary_pages ? std::vector<encoding>{encoding::plain, encoding::rle, encoding::rle_dictionary}
                                   : std::vector<encoding>{encoding::plain, encoding::rle};
    m.total_compressed_size = static_cast<int64_t>(out.bytes.size());

    if (_opts.statistics) {
      statistics s;
      s.null_count = pv.null_count;
      if constexpr (std::is_same_v<PV, float> || std::is_same_v<PV, double>) {
        minmax(
            pv.values, s, [](PV a, PV b) { return a < b; }, [](PV v) { return !std::isnan(v); });
      } else if constexpr (std::is_same_v<PV, int32_t> || std::is_same_v<PV, int64_t>) {
        using U = std::make_unsigned_t<PV>;
        if (unsigned_order)
          minmax(
              pv.values, s, [](PV a, PV b) { return U(a) < U(b); }, [](PV) { return true; });
        else
          minmax(
              pv.values, s, [](PV a, PV b) { return a < b; }, [](PV) { return true; });
      } else {
        minmax(
            pv.values, s, [](const PV& a, const PV& b) { return a < b; }, [](const PV&) { return true; });
      }
      m.stats = std::move(s);
    }
    return out;
  }

 private:
  template <typename PV, typename Less, typename Keep>
  static void minmax(const std::vector<PV>& v, statistics& s, Less less, Keep keep) {
    const PV* lo = nullptr;
    const PV* hi = nullptr;
    for (const PV& x : v) {
      if (!keep(x)) continue;
      if (!lo || less(x, *lo)) lo = &x;
      if (!hi || less(*hi, x)) hi = &x;
    }
    if (lo) {
      s.min_value = stat_bytes(*lo);
      s.max_value = stat_bytes(*hi);
    }
  }

  /// Appends the page header and the compressed body to `out`; counts the uncompressed size.
  void serialize(page_header& h, const std::string& body, column_metadata& m, std::string& out) {
    compress(_codec, reinterpret_cast<const uint8_t*>(body.data()), body.size(), _buf);
    if (body.size() > INT32_MAX || _buf.size() > INT32_MAX)
      throw invalid_argument_error("write_parquet: a page exceeds 2 GiB; lower write_options.page_bytes");
    h.uncompressed_page_size = static_cast<int32_t>(body.size());
    h.compressed_page_size = static_cast<int32_t>(_buf.size());
    if (_opts.page_checksums) h.crc = static_cast<int32_t>(page_crc(reinterpret_cast<const uint8_t*>(_buf.data()), _buf.size()));
    const size_t start = out.size();
    encode_page_header(h, out);
    m.total_uncompressed_size += static_cast<int64_t>(out.size() - start + body.size());
    out += _buf;
  }

  codec _codec;
  const write_options& _opts;
  std::string _buf;
};

/// Converts a tug column to its physical values and encodes the chunk.
encoded_chunk write_column(chunk_writer& w, const column& c, const schema_element& e) {
  const int64_t n = c.size();
  const column_view v = c.view();
  return type_dispatch(c.type().id, [&]<type_id Id>() -> encoded_chunk {
    using T = storage_t<Id>;
    auto run = [&]<typename PV>(auto convert) {
      physical_values<PV> pv;
      pv.valid.assign(static_cast<size_t>(n), 1);
      pv.values.resize(static_cast<size_t>(n - v.null_count));
      size_t k = 0;
      if (v.null_count == 0) {
        for (int64_t i = 0; i < n; ++i)
          pv.values[k++] = convert(v.value<T>(i));
      } else {
        for (int64_t i = 0; i < n; ++i) {
          if (v.is_valid(i)) {
            pv.values[k++] = convert(v.value<T>(i));
          } else {
            pv.valid[static_cast<size_t>(i)] = 0;
            ++pv.null_count;
          }
        }
      }
      return w.write(pv, e, is_unsigned_integer(Id));
    };
    if constexpr (Id == type_id::boolean)
      return run.template operator()<uint8_t>([](bool x) { return static_cast<uint8_t>(x); });
    else if constexpr (Id == type_id::string)
      return run.template operator()<std::string_view>([](std::string_view x) { return x; });
    else if constexpr (Id == type_id::float32)
      return run.template operator()<float>([](float x) { return x; });
    else if constexpr (Id == type_id::float64)
      return run.template operator()<double>([](double x) { return x; });
    else if constexpr (Id == type_id::decimal128) {
      if (e.type == physical_type::int32)
        return run.template operator()<int32_t>([](__int128 x) { return static_cast<int32_t>(x); });
      if (e.type == physical_type::int64)
        return run.template operator()<int64_t>([](__int128 x) { return static_cast<int64_t>(x); });
      return run.template operator()<__int128>([](__int128 x) { return x; });
    } else if constexpr (Id == type_id::timestamp) {
      const bool seconds = c.type().unit == time_unit::s;
      return run.template operator()<int64_t>([&](int64_t x) {
        if (!seconds) return x;
        if (x > INT64_MAX / 1000 || x < INT64_MIN / 1000)
          throw invalid_argument_error("write_parquet: column '" + e.name +
                                       "': a timestamp in seconds overflows milliseconds");
        return x * 1000;
      });
    } else if constexpr (sizeof(T) <= 4) {
      return run.template operator()<int32_t>([](T x) { return static_cast<int32_t>(x); });
    } else {
      return run.template operator()<int64_t>([](T x) { return static_cast<int64_t>(x); });
    }
  });
}

}  // namespace

namespace {

/// Checks that every partition has the columns and types of `s`. @throws invalid_argument_error.
void check_schema(const tug::schema& s, const table& p) {
  if (p.num_columns() != s.size())
    throw invalid_argument_error("write_parquet: a partition has " + std::to_string(p.num_columns()) +
                                 " columns, the schema " + std::to_string(s.size()));
  for (size_t i = 0; i < s.size(); ++i)
    if (!(p[i].type() == s[i].type))
      throw invalid_argument_error("write_parquet: column '" + s[i].name + "' is " + to_string(p[i].type()) +
                                   " in a partition, " + to_string(s[i].type) + " in the schema");
}

/// STRING columns must hold UTF-8 (DuckDB, pyarrow and Polars refuse files whose strings do not):
/// checked in parallel over partitions and columns; `first_row` is the row number of parts[0]'s first row.
void check_utf8(const std::string& path, const tug::schema& s, const std::vector<table>& parts, int64_t first_row,
                thread_pool* pool) {
  std::vector<std::pair<size_t, size_t>> strings;  // (partition, column)
  for (size_t p = 0; p < parts.size(); ++p)
    for (size_t i = 0; i < s.size(); ++i)
      if (s[i].type.id == type_id::string) strings.emplace_back(p, i);
  auto check = [&](int64_t k) {
    const auto [p, i] = strings[static_cast<size_t>(k)];
    const int64_t row = first_invalid_utf8_row(parts[p][i].view());
    if (row < 0) return;
    int64_t before = first_row;
    for (size_t q = 0; q < p; ++q)
      before += parts[q].num_rows();
    throw invalid_argument_error("write_parquet: " + path + ": column '" + s[i].name + "' row " +
                                 std::to_string(before + row) +
                                 " is not valid UTF-8; a Parquet STRING column must hold UTF-8 (DuckDB, pyarrow and "
                                 "Polars refuse other bytes), and tug has no binary type: binary Parquet columns "
                                 "read as strings of their bytes");
  };
  if (pool)
    pool->parallel_for(static_cast<int64_t>(strings.size()), check);
  else
    for (size_t k = 0; k < strings.size(); ++k) check(static_cast<int64_t>(k));
}

}  // namespace

struct file_writer::impl {
  std::string path;
  tug::schema s;
  write_options opts;
  thread_pool* pool;
  codec c;
  file_metadata meta;
  std::unique_ptr<file_sink> sink;
  std::vector<table> pending;
  int64_t pending_rows = 0;
  int64_t rows_appended = 0;
  bool closed = false;

  // Row groups of row_group_rows rows, cut across the appended tables; a row group's chunks are
  // encoded in parallel and written in column order.
  void flush() {
    if (pending_rows == 0) return;
    table t = pending.size() == 1 ? pending[0] : concatenate(pending);
    row_group rg;
    rg.num_rows = t.num_rows();
    std::vector<encoded_chunk> chunks(s.size());
    auto encode = [&](int64_t i) {
      chunk_writer w(c, opts);
      chunks[i] = write_column(w, t[i], meta.schema[i + 1]);
    };
    if (pool)
      pool->parallel_for(static_cast<int64_t>(s.size()), encode);
    else
      for (size_t i = 0; i < s.size(); ++i) encode(static_cast<int64_t>(i));
    for (encoded_chunk& chunk : chunks) {
      column_chunk cc;
      const int64_t base = sink->offset();
      sink->write(chunk.bytes);
      chunk.bytes = std::string();
      cc.meta = std::move(chunk.meta);
      if (cc.meta->dictionary_page_offset) *cc.meta->dictionary_page_offset += base;
      cc.meta->data_page_offset += base;
      cc.file_offset = cc.meta->dictionary_page_offset.value_or(cc.meta->data_page_offset);
      rg.total_byte_size += cc.meta->total_uncompressed_size;
      rg.columns.push_back(std::move(cc));
    }
    meta.num_rows += rg.num_rows;
    meta.row_groups.push_back(std::move(rg));
    pending.clear();
    pending_rows = 0;
  }
};

file_writer::file_writer(const std::string& path, const tug::schema& s, const write_options& opts, thread_pool* pool)
    : _impl(std::make_unique<impl>()) {
  _impl->c = parse_codec(opts.codec);
  if (opts.row_group_rows <= 0 || opts.page_bytes <= 0)
    throw invalid_argument_error("write_parquet: row_group_rows and page_bytes must be positive");
  _impl->path = path;
  _impl->s = s;
  _impl->opts = opts;
  _impl->pool = pool;
  file_metadata& meta = _impl->meta;
  meta.version = 1;
  meta.created_by = "tug version 0.1.0";
  schema_element root;
  root.name = "schema";
  root.num_children = static_cast<int32_t>(s.size());
  meta.schema.push_back(root);
  for (const auto& f : s)
    meta.schema.push_back(element_of(f));
  _impl->sink = std::make_unique<file_sink>(path);
  _impl->sink->write("PAR1", 4);
}

file_writer::~file_writer() {
  if (_impl && !_impl->closed) {  // an unfinished file is not a Parquet file: remove it
    _impl->sink.reset();
    std::remove(_impl->path.c_str());
  }
}

void file_writer::append(const table& t) {
  if (_impl->closed) throw internal_error("file_writer::append after close: " + _impl->path);
  check_schema(_impl->s, t);
  check_utf8(_impl->path, _impl->s, {t}, _impl->rows_appended, _impl->pool);
  _impl->rows_appended += t.num_rows();
  append_checked(t);
}

void file_writer::append_checked(const table& p) {
  impl& m = *_impl;
  for (int64_t off = 0; off < p.num_rows();) {
    int64_t take = std::min(p.num_rows() - off, m.opts.row_group_rows - m.pending_rows);
    m.pending.push_back(p.slice(off, take));
    m.pending_rows += take;
    off += take;
    if (m.pending_rows == m.opts.row_group_rows) m.flush();
  }
}

int64_t file_writer::rows() const { return _impl->rows_appended; }

void file_writer::close() {
  impl& m = *_impl;
  if (m.closed) return;
  m.flush();
  std::string footer;
  encode_file_metadata(m.meta, footer);
  m.sink->write(footer);
  uint32_t len = static_cast<uint32_t>(footer.size());
  m.sink->write(&len, 4);
  m.sink->write("PAR1", 4);
  m.sink->close();
  m.closed = true;
}

void write_parquet(const std::string& path, const tug::schema& s, const std::vector<table>& parts,
                   const write_options& opts, thread_pool* pool) {
  parse_codec(opts.codec);
  if (opts.row_group_rows <= 0 || opts.page_bytes <= 0)
    throw invalid_argument_error("write_parquet: row_group_rows and page_bytes must be positive");
  // checked before the file is created
  for (const auto& p : parts)
    check_schema(s, p);
  check_utf8(path, s, parts, 0, pool);
  file_writer w(path, s, opts, pool);
  for (const auto& p : parts)
    w.append_checked(p);
  w.close();
}

}  // namespace tug::io::parquet
