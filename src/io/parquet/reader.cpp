/// Parquet reader: footer, schema mapping, page decoding of flat columns.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <string_view>

#include "column_decoder.hpp"
#include "tug/core/error.hpp"
#include "tug/io/parquet/metadata.hpp"
#include "tug/io/parquet/reader.hpp"
#include "tug/runtime/thread_pool.hpp"

namespace tug::io::parquet {
namespace {

using detail::leaf_info;

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
      why = "decimal(" + std::to_string(p) + ", " + std::to_string(s) + ")" +
            (p > 38 ? ": precision above 38, beyond decimal128" : ": not a valid decimal128 precision and scale");
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
        auto t = decimal_type();
        if (t && e.type_length > 16) {
          why = to_string(*t) + " stored in " + std::to_string(e.type_length) + " bytes, wider than decimal128";
          return std::nullopt;
        }
        return t;
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

/// Why a top-level group is unsupported: the kind of nesting it is.
std::string nested_kind(const schema_element& e) {
  const auto conv = e.converted;
  if (e.logical.kind == logical_kind::list || conv == converted_type::list) return "nested list";
  if (e.logical.kind == logical_kind::map || conv == converted_type::map || conv == converted_type::map_key_value)
    return "nested map";
  return "nested struct";
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
    if (depth > 0) return;  // a leaf of a top-level group, which open() listed as unsupported
    auto rep = e.repetition_type.value_or(repetition::required);
    std::string why;
    std::optional<data_type> t;
    if (rep == repetition::repeated)
      why = "repeated field (a list)";
    else if (std::any_of(fields.begin(), fields.end(), [&](const field& f) { return f.name == name; }))
      why = "a second column of that name";
    else
      t = map_type(e, why);
    if (!t) {
      r._unsupported.push_back({name, why});
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
    // A top-level group (struct, list, map) is one unsupported column; its leaves are passed over.
    const bool group = sch[pos].num_children > 0;
    if (group) r._unsupported.push_back({sch[pos].name, nested_kind(sch[pos])});
    walk(walk, "", group ? 1 : 0);
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

int64_t file_reader::row_group_decoded_bytes(int rg, const std::vector<size_t>& columns) const {
  check_rg(rg);
  const row_group& g = _meta->row_groups[static_cast<size_t>(rg)];
  int64_t total = 0;
  for (size_t c : columns) {
    check_column(c);
    const int w = size_of(_schema[c].type.id);
    total += w > 0 ? g.num_rows * w : g.columns[_leaf[c]].meta->total_uncompressed_size + g.num_rows * 8;
    if (_optional[c]) total += (g.num_rows + 7) / 8;
  }
  return total;
}

std::optional<scalar> file_reader::stat_value(size_t c, const std::string* bytes) const {
  if (!bytes) return std::nullopt;
  const schema_element& e = element(c);
  if (*e.type == physical_type::fixed_len_byte_array && bytes->size() != static_cast<size_t>(e.type_length))
    return std::nullopt;
  try {
    return get_scalar(detail::decode_stat_value({&e, _schema[c].type, false}, *e.type, *bytes, default_host_resource()),
                      0);
  } catch (const io_error&) {
    return std::nullopt;  // malformed statistics are ignored, as if absent
  }
}

column_statistics file_reader::statistics(int rg, size_t c, bool dictionary_size) const {
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
  out.distinct_count = s.distinct_count;
  if (!out.distinct_count && dictionary_size && m.dictionary_page_offset && *m.dictionary_page_offset >= 4 &&
      *m.dictionary_page_offset < _file_size) {
    // the dictionary page's header: a few dozen bytes of Thrift at the chunk's start
    std::vector<uint8_t> head(static_cast<size_t>(std::min<int64_t>(256, _file_size - *m.dictionary_page_offset)));
    int64_t size = 0;
    fd_guard fd{open_file(_path, size)};
    read_at(fd.fd, head.data(), head.size(), *m.dictionary_page_offset, _path);
    try {
      size_t used = 0;
      page_header h = decode_page_header(head.data(), head.size(), used);
      if (h.dict && h.dict->num_values >= 0) out.distinct_count = h.dict->num_values;
    } catch (const io_error&) {
      // a header longer than read, or malformed: no count, as if absent
    }
  }
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

std::vector<row_range> sub_ranges(const std::vector<row_range>& ranges, int64_t lo, int64_t hi) {
  if (ranges.empty()) return lo < hi ? std::vector<row_range>{{lo, hi}} : std::vector<row_range>{};
  std::vector<row_range> out;
  int64_t at = 0;  // selected rows before range r
  for (const row_range& r : ranges) {
    const int64_t n = r.end - r.begin;
    const int64_t b = std::max(lo, at), e = std::min(hi, at + n);
    if (b < e) out.push_back({r.begin + b - at, r.begin + e - at});
    at += n;
  }
  return out;
}

int64_t file_reader::chunk_start(const column_metadata& m) {
  int64_t start = m.data_page_offset;
  if (m.dictionary_page_offset && *m.dictionary_page_offset > 0 && *m.dictionary_page_offset < start)
    start = *m.dictionary_page_offset;
  return start;
}

file_reader::chunk_info file_reader::chunk(int rg, size_t column) const {
  check_rg(rg);
  check_column(column);
  const column_metadata& m = *_meta->row_groups[static_cast<size_t>(rg)].columns[_leaf[column]].meta;
  chunk_info out{chunk_start(m), m.total_compressed_size, &m, &element(column), _optional[column]};
  if (_meta->row_groups[static_cast<size_t>(rg)].num_rows > 0 &&
      (out.offset < 4 || out.size < 0 || out.size > _file_size - 8 - out.offset))
    throw io_error(_path + ": column '" + _schema[column].name + "' row group " + std::to_string(rg) +
                   ": corrupt metadata: column chunk outside the file");
  return out;
}

void file_reader::read_bytes(int64_t offset, size_t n, uint8_t* out) const {
  int64_t size = 0;
  fd_guard fd{open_file(_path, size)};
  if (size != _file_size)
    throw io_error(_path + ": the file changed since its footer was read (" + std::to_string(size) + " bytes, was " +
                   std::to_string(_file_size) + ")");
  read_at(fd.fd, out, n, offset, _path);
}

table file_reader::read_row_group(int rg, const std::vector<size_t>& columns, memory_resource* mr) const {
  return read_row_group_ranges(rg, columns, {}, mr, nullptr);
}

std::vector<column> file_reader::decode_columns(int rg, const std::vector<size_t>& columns, thread_pool* pool,
                                                const chunk_decode& decode) const {
  const row_group& g = _meta->row_groups[static_cast<size_t>(rg)];
  int64_t size = 0;
  fd_guard fd{open_file(_path, size)};
  if (size != _file_size)
    throw io_error(_path + ": the file changed since its footer was read (" + std::to_string(size) + " bytes, was " +
                   std::to_string(_file_size) + ")");
  std::vector<column> out(columns.size());
  auto decode_column = [&](size_t k, detail::decode_scratch& scratch) {
    const size_t c = columns[k];
    const column_metadata& m = *g.columns[_leaf[c]].meta;
    const std::string where = _path + ": column '" + _schema[c].name + "' row group " + std::to_string(rg) + ": ";
    try {
      if (g.num_rows == 0) {  // writers emit empty chunks at offset 0
        out[k] = make_empty_column(_schema[c].type);
        return;
      }
      const int64_t start = chunk_start(m);
      if (start < 4 || m.total_compressed_size < 0 || m.total_compressed_size > size - 8 - start)
        throw io_error("corrupt metadata: column chunk outside the file");
      detail::leaf_info leaf{&element(c), _schema[c].type, _optional[c]};
      if (m.type != *leaf.elem->type) throw io_error("corrupt metadata: column chunk type differs from the schema");
      const size_t chunk_size = static_cast<size_t>(m.total_compressed_size);
      uint8_t* chunk = scratch.chunk.get(chunk_size);  // followed by detail::slack bytes
      read_at(fd.fd, chunk, chunk_size, start, _path);
      out[k] = decode(k, m, leaf, chunk, chunk_size, start, scratch);
    } catch (const io_error& e) {
      throw io_error(where + e.what());
    } catch (const not_implemented_error& e) {
      throw not_implemented_error(where + e.what());
    }
  };
  if (pool && columns.size() > 1) {
    // a chunk a task, each with its own scratch buffers
    pool->parallel_for(static_cast<int64_t>(columns.size()), [&](int64_t k) {
      detail::decode_scratch scratch;
      decode_column(static_cast<size_t>(k), scratch);
    });
  } else {
    detail::decode_scratch scratch;  // transient buffers reused column after column
    for (size_t k = 0; k < columns.size(); ++k)
      decode_column(k, scratch);
  }
  return out;
}

table file_reader::read_row_group_ranges(int rg, const std::vector<size_t>& columns,
                                         const std::vector<row_range>& ranges, memory_resource* mr,
                                         int64_t* pages_skipped, thread_pool* pool) const {
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
  std::vector<int64_t> skipped(columns.size(), 0);
  std::vector<column> out = decode_columns(rg, columns, pool, [&](size_t k, const column_metadata& m,
                                                                 const detail::leaf_info& leaf, const uint8_t* chunk,
                                                                 size_t chunk_size, int64_t start,
                                                                 detail::decode_scratch& scratch) -> column {
    if (ranges.empty()) return detail::decode_chunk(m, leaf, chunk, chunk_size, g.num_rows, nullptr, 0, scratch, mr);
    // Only the rows in `ranges`: the data pages that overlap them (by the offset index), then the
    // ranges sliced out of the decoded rows. Without an offset index the pages are walked in order up
    // to the last wanted row, picking the wanted rows (a limit reads a prefix: the pages after it are
    // never decompressed).
    auto index = offset_index(rg, columns[k]);
    if (index.empty()) {
      std::vector<int64_t> rows;
      rows.reserve(static_cast<size_t>(wanted_rows));
      for (const row_range& r : ranges)
        for (int64_t i = r.begin; i < r.end; ++i)
          rows.push_back(i);
      return detail::decode_chunk_rows(m, leaf, chunk, chunk_size, g.num_rows, rows, scratch, mr, &skipped[k]);
    }
    std::vector<row_range> spans;  // rows of the decoded pages, in order
    std::vector<std::pair<size_t, int64_t>> pages;
    int64_t page_rows = 0;
    for (size_t i = 0; i < index.size(); ++i) {
      const row_range span{index[i].first_row_index, i + 1 < index.size() ? index[i + 1].first_row_index : g.num_rows};
      const bool wanted = std::any_of(ranges.begin(), ranges.end(),
                                      [&](const row_range& r) { return r.begin < span.end && span.begin < r.end; });
      if (!wanted) continue;
      spans.push_back(span);
      pages.emplace_back(static_cast<size_t>(index[i].offset - start), span.end - span.begin);
      page_rows += span.end - span.begin;
    }
    skipped[k] = static_cast<int64_t>(index.size() - spans.size());
    column decoded = detail::decode_chunk(m, leaf, chunk, chunk_size, page_rows, &pages,
                                          static_cast<size_t>(index[0].offset - start), scratch, mr);
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
    return pieces.size() == 1 ? pieces[0] : concatenate(pieces, mr);
  });
  if (pages_skipped)
    for (int64_t n : skipped)
      *pages_skipped += n;
  return table(std::move(out));
}

table file_reader::read_row_group_rows(int rg, const std::vector<size_t>& columns, const std::vector<int64_t>& rows,
                                       memory_resource* mr, int64_t* pages_skipped, thread_pool* pool) const {
  check_rg(rg);
  for (size_t c : columns)
    check_column(c);
  const int64_t num_rows = _meta->row_groups[static_cast<size_t>(rg)].num_rows;
  for (size_t i = 0; i < rows.size(); ++i)
    if (rows[i] < (i ? rows[i - 1] + 1 : 0) || rows[i] >= num_rows)
      throw invalid_argument_error(_path + ": rows of row group " + std::to_string(rg) +
                                   " must be ascending, unique and within its " + std::to_string(num_rows) + " rows");
  if (columns.empty()) return table::empty_with_rows(static_cast<int64_t>(rows.size()));
  std::vector<int64_t> skipped(columns.size(), 0);
  std::vector<column> out = decode_columns(
      rg, columns, pool,
      [&](size_t k, const column_metadata& m, const detail::leaf_info& leaf, const uint8_t* chunk, size_t chunk_size,
          int64_t, detail::decode_scratch& scratch) {
        return detail::decode_chunk_rows(m, leaf, chunk, chunk_size, num_rows, rows, scratch, mr, &skipped[k]);
      });
  if (pages_skipped)
    for (int64_t n : skipped)
      *pages_skipped += n;
  return table(std::move(out));
}

}  // namespace tug::io::parquet
