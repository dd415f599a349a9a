// The CSV reader: a sequential pass finds record boundaries (quotes respected) and cuts the data
// into chunks; the chunks are tokenized and converted in parallel, one table each.
#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tug/core/utf8.hpp"
#include "tug/io/csv/csv.hpp"
#include "values.hpp"

namespace tug::io::csv {
namespace {

using namespace detail;

/// The file's first `max_bytes` bytes (all when it is shorter); `complete` tells whether that is the whole
/// file. A partial read ends after its last '\n' (empty when there is none).
std::string read_file_prefix(const std::string& path, int64_t max_bytes, bool& complete) {
  std::unique_ptr<FILE, int (*)(FILE*)> f(std::fopen(path.c_str(), "rb"), &std::fclose);
  if (!f) throw io_error("cannot open CSV file '" + path + "': " + std::strerror(errno));
  std::string data;
  char buf[1 << 16];
  size_t n;
  complete = true;
  while ((n = std::fread(buf, 1, sizeof buf, f.get())) > 0) {
    data.append(buf, n);
    if (static_cast<int64_t>(data.size()) > max_bytes) {
      complete = false;
      break;
    }
  }
  if (std::ferror(f.get())) throw io_error("cannot read CSV file '" + path + "': " + std::strerror(errno));
  if (!complete) data.resize(data.rfind('\n') == std::string::npos ? 0 : data.rfind('\n') + 1);
  return data;
}

/// Options checked and normalized (escape equal to quote means doubling).
csv_options normalized(const csv_options& o) {
  csv_options n = o;
  if (n.escape == n.quote) n.escape = 0;
  if (n.delimiter == '\n' || n.delimiter == '\r' || n.delimiter == 0)
    throw invalid_argument_error("CSV delimiter must not be a newline or NUL");
  if (n.quote == n.delimiter && n.quote != 0) throw invalid_argument_error("CSV quote and delimiter must differ");
  if (n.chunk_bytes <= 0) throw invalid_argument_error("CSV chunk_bytes must be positive");
  if (n.skip_rows < 0) throw invalid_argument_error("CSV skip_rows must not be negative");
  if (n.encoding != "utf8" && n.encoding != "utf8-lossy")
    throw invalid_argument_error("CSV encoding must be \"utf8\" or \"utf8-lossy\", got \"" + n.encoding + "\"");
  return n;
}

/// What is wrong with text whose first invalid UTF-8 byte is at `bad`, and how to read it anyway.
std::string invalid_utf8(std::string_view text, size_t bad) {
  char hex[8];
  std::snprintf(hex, sizeof hex, "0x%02X", static_cast<unsigned>(static_cast<uint8_t>(text[bad])));
  return "invalid UTF-8 (byte " + std::string(hex) + " at byte " + std::to_string(bad) +
         " of the field; set encoding = \"utf8-lossy\" to replace invalid sequences with U+FFFD)";
}

/// One field of a record: its text, whether it was quoted.
struct field_text {
  std::string_view text;
  bool quoted = false;
};

/// Tokenizes records. Fields point into the data, or into `_scratch` when unescaping was needed.
class tokenizer {
 public:
  tokenizer(const csv_options& o) : _o(o) {}

  enum class kind { record, comment, empty, end };

  /// What starts at `p`.
  kind classify(const char* p, const char* end) const {
    if (p >= end) return kind::end;
    if (_o.comment && *p == _o.comment) return kind::comment;
    if (*p == '\n' || (*p == '\r' && (p + 1 == end || p[1] == '\n'))) return kind::empty;
    return kind::record;
  }

  /// First `c` in [p, end), or `end`.
  static const char* find(const char* p, const char* end, char c) {
    if (p >= end) return end;
    const void* r = std::memchr(p, c, static_cast<size_t>(end - p));
    return r ? static_cast<const char*>(r) : end;
  }

  /// Skips one physical line; returns the position after its '\n'.
  static const char* skip_line(const char* p, const char* end) {
    const void* nl = std::memchr(p, '\n', static_cast<size_t>(end - p));
    return nl ? static_cast<const char*>(nl) + 1 : end;
  }

  /// Skips one record starting at `p` without storing fields. Adds the '\n's crossed to `newlines`;
  /// sets `bad_quote` when a quoted field is not terminated.
  const char* skip_record(const char* p, const char* end, int64_t& newlines, bool& bad_quote) const {
    // Only a quote at a field start (record start or after a delimiter) opens a quoted field: jump
    // between newlines and quote chars with memchr instead of visiting every byte.
    const char* record_start = p;
    for (;;) {
      const char* nl = find(p, end, '\n');
      const char* q = _o.quote ? find(p, nl, _o.quote) : nl;
      while (q < nl && q != record_start && q[-1] != _o.delimiter)
        q = find(q + 1, nl, _o.quote);
      if (q < nl) {
        p = skip_quoted(q + 1, end, newlines, bad_quote);
        if (bad_quote) return end;
        continue;
      }
      if (nl == end) return end;
      ++newlines;
      return nl + 1;
    }
  }

  /// Tokenizes one record starting at `p` into `fields`; returns the position after it.
  const char* read_record(const char* p, const char* end, std::vector<field_text>& fields, int64_t& newlines,
                          bool& bad_quote) {
    fields.clear();
    _scratch.clear();
    _spans.clear();
    for (;;) {
      span s;
      if (p < end && _o.quote && *p == _o.quote) {
        s.quoted = true;
        p = read_quoted(p + 1, end, s, newlines, bad_quote);
        if (bad_quote) return end;
      } else {
        s.begin = p;
      }
      const char* q = p;
      while (q < end && *q != _o.delimiter && *q != '\n')
        ++q;
      const char* stop = q;
      if ((q == end || *q == '\n') && stop > p && stop[-1] == '\r') --stop;  // CRLF
      if (s.quoted) {
        if (stop > p) {  // text after the closing quote: kept (lenient)
          s.to_scratch(_scratch);
          _scratch.append(p, static_cast<size_t>(stop - p));
          s.len = _scratch.size() - s.off;
        }
      } else {
        s.len = static_cast<size_t>(stop - p);
      }
      _spans.push_back(s);
      if (q == end) {
        p = end;
        break;
      }
      if (*q == '\n') {
        ++newlines;
        p = q + 1;
        break;
      }
      p = q + 1;
    }
    for (auto& s : _spans)
      fields.push_back(
          {s.in_scratch ? std::string_view(_scratch.data() + s.off, s.len) : std::string_view(s.begin, s.len),
           s.quoted});
    return p;
  }

 private:
  struct span {
    const char* begin = nullptr;
    size_t off = 0;
    size_t len = 0;
    bool quoted = false;
    bool in_scratch = false;
    void to_scratch(std::string& scratch) {
      if (in_scratch) return;
      off = scratch.size();
      scratch.append(begin, len);
      in_scratch = true;
    }
  };

  const char* skip_quoted(const char* p, const char* end, int64_t& newlines, bool& bad_quote) const {
    for (;;) {
      if (p >= end) return bad_quote = true, end;
      char c = *p++;
      if (_o.escape && c == _o.escape) {
        if (p < end) newlines += *p++ == '\n';
        continue;
      }
      if (c == _o.quote) {
        if (!_o.escape && p < end && *p == _o.quote) {
          ++p;
          continue;
        }
        return p;
      }
      newlines += c == '\n';
    }
  }

  /// Reads a quoted field's content (after the opening quote); returns the position after the closing one.
  const char* read_quoted(const char* p, const char* end, span& s, int64_t& newlines, bool& bad_quote) {
    s.begin = p;
    for (;;) {
      if (p >= end) return bad_quote = true, end;
      char c = *p;
      bool escaped = (_o.escape && c == _o.escape) || (!_o.escape && c == _o.quote && p + 1 < end && p[1] == _o.quote);
      if (escaped) {
        if (!s.in_scratch) {
          s.len = static_cast<size_t>(p - s.begin);
          s.to_scratch(_scratch);
        }
        if (p + 1 >= end) return bad_quote = true, end;
        newlines += p[1] == '\n';
        _scratch.push_back(p[1]);
        p += 2;
        continue;
      }
      if (c == _o.quote) {
        if (s.in_scratch)
          s.len = _scratch.size() - s.off;
        else
          s.len = static_cast<size_t>(p - s.begin);
        return p + 1;
      }
      newlines += c == '\n';
      if (s.in_scratch) _scratch.push_back(c);
      ++p;
    }
  }

  const csv_options& _o;
  std::string _scratch;
  std::vector<span> _spans;
};

/// The file after skip_rows, its header and column count.
struct layout {
  std::unique_ptr<std::string> data;  ///< behind a pointer: moving a layout keeps `body` and `end` valid
  const char* body = nullptr;         ///< first record after the header
  const char* end = nullptr;
  int64_t body_line = 1;  ///< 1-based physical line of `body`
  std::vector<std::string> names;
  bool complete = true;      ///< `data` is the whole file
  bool header_read = false;  ///< the first record was read (else a partial read must read more)
};

/// Reads the file (its first `max_bytes` bytes, cut after a '\n') and finds the header.
layout read_layout(const std::string& path, const csv_options& o, int64_t max_bytes = INT64_MAX) {
  layout l;
  l.data = std::make_unique<std::string>(read_file_prefix(path, max_bytes, l.complete));
  const char* p = l.data->data();
  l.end = p + l.data->size();
  if (l.data->size() >= 3 && std::memcmp(p, "\xEF\xBB\xBF", 3) == 0) p += 3;  // UTF-8 byte order mark
  int64_t line = 1;
  for (int64_t i = 0; i < o.skip_rows && p < l.end; ++i, ++line)
    p = tokenizer::skip_line(p, l.end);
  tokenizer tok(o);
  for (;;) {  // comments and empty lines before the first record
    auto k = tok.classify(p, l.end);
    if (k != tokenizer::kind::comment && k != tokenizer::kind::empty) break;
    p = tokenizer::skip_line(p, l.end);
    ++line;
  }
  if (p < l.end) {
    std::vector<field_text> fields;
    int64_t nl = 0;
    bool bad = false;
    const char* next = tok.read_record(p, l.end, fields, nl, bad);
    if (bad && !l.complete) {  // the quote may close beyond the part read
      l.body = l.end;
      return l;
    }
    l.header_read = true;
    if (bad) throw io_error(path + ": line " + std::to_string(line) + ": unterminated quoted field");
    for (size_t i = 0; i < fields.size(); ++i) {
      std::string name;
      if (o.has_header) {
        const std::string_view text = fields[i].text;
        if (const size_t bad = find_invalid_utf8(text); bad != text.size()) {
          if (o.encoding != "utf8-lossy")
            throw io_error(path + ": line " + std::to_string(line) + ", column " + std::to_string(i + 1) +
                           ": header name: " + invalid_utf8(text, bad));
          append_utf8_lossy(text, name);
        } else {
          name = text;
        }
      }
      if (name.empty()) name = "column_" + std::to_string(i + 1);
      std::string base = name;
      for (int dup = 0; std::find(l.names.begin(), l.names.end(), name) != l.names.end(); ++dup)
        name = base + "_duplicated_" + std::to_string(dup);
      l.names.push_back(std::move(name));
    }
    if (o.has_header) {
      p = next;
      line += nl;
    }
  }
  l.body = p;
  l.body_line = line;
  return l;
}

bool is_null_text(const field_text& f, const csv_options& o) {
  if (f.quoted) return false;
  for (auto& n : o.null_values)
    if (f.text == n) return true;
  return false;
}

/// Candidate types of inference, in order of preference.
enum candidate : unsigned { c_bool = 1, c_int = 2, c_float = 4, c_date = 8, c_ts = 16 };

unsigned candidates_of(std::string_view s) {
  unsigned m = 0;
  bool b;
  int64_t i;
  double d;
  if (parse_bool(s, b)) m |= c_bool;
  if (parse_integer(s, i)) m |= c_int;
  if (parse_floating(s, d)) m |= c_float;
  if (parse_date(s, i)) m |= c_date;
  if (parse_timestamp(s, 1000000, i)) m |= c_ts;
  return m;
}

/// The schema from the header, a sample of records and the overrides. `sample_complete` (optional) tells
/// whether the sample holds infer_schema_rows records or ended at the end of the data.
tug::schema infer_from_layout(const layout& l, const csv_options& o, const std::string& path,
                              bool* sample_complete = nullptr) {
  size_t n = l.names.size();
  std::vector<unsigned> cand(n, c_bool | c_int | c_float | c_date | c_ts);
  std::vector<bool> seen(n, false);
  tokenizer tok(o);
  std::vector<field_text> fields;
  const char* p = l.body;
  int64_t limit = o.infer_schema_rows < 0 ? INT64_MAX : o.infer_schema_rows;
  int64_t rows = 0;
  while (rows < limit) {
    auto k = tok.classify(p, l.end);
    if (k == tokenizer::kind::end) break;
    if (k == tokenizer::kind::comment || (k == tokenizer::kind::empty && n > 1)) {
      p = tokenizer::skip_line(p, l.end);
      continue;
    }
    int64_t nl = 0;
    bool bad = false;
    p = tok.read_record(p, l.end, fields, nl, bad);
    if (bad) break;
    ++rows;
    if (fields.size() != n) continue;  // malformed: reported (or skipped) by the parse
    for (size_t c = 0; c < n; ++c) {
      if (is_null_text(fields[c], o) || !cand[c]) continue;
      seen[c] = true;
      cand[c] &= candidates_of(fields[c].text);
    }
  }
  if (sample_complete) *sample_complete = l.complete || (l.header_read && rows >= limit);
  std::vector<field> fs;
  for (size_t c = 0; c < n; ++c) {
    data_type t = type_id::string;
    if (seen[c] && o.infer_schema_rows != 0) {
      unsigned m = cand[c];
      if (m & c_bool)
        t = type_id::boolean;
      else if (m & c_int)
        t = type_id::int64;
      else if (m & c_float)
        t = type_id::float64;
      else if (m & c_date)
        t = type_id::date32;
      else if (m & c_ts)
        t = timestamp(time_unit::us);
    }
    fs.push_back({l.names[c], t});
  }
  tug::schema s(std::move(fs));
  for (auto& ov : o.schema_overrides) {
    if (!s.contains(ov.name))
      throw column_not_found_error("CSV schema override names column '" + ov.name + "', which " + path +
                                   " does not have; columns: " + s.to_string());
    s.set(ov);
  }
  return s;
}

/// Values of one output column, growable and truncatable (for skipped rows).
class accumulator {
 public:
  explicit accumulator(data_type t) : _type(std::move(t)), _width(_type.id == type_id::string ? 0 : size_of(_type.id)) {
    if (_type.id == type_id::string) _offsets.push_back(0);
  }
  int64_t size() const { return static_cast<int64_t>(_valid.size()); }

  /// Appends a field; false when it does not parse as the column type.
  bool append(const field_text& f, const csv_options& o) {
    bool null = is_null_text(f, o) || (f.quoted && f.text.empty() && _type.id != type_id::string);
    _valid.push_back(!null);
    if (null) {
      _any_null = true;
      if (_type.id == type_id::string)
        _offsets.push_back(static_cast<int64_t>(_chars.size()));
      else
        _data.resize(_data.size() + static_cast<size_t>(_width), 0);
      return true;
    }
    std::string_view s = f.text;
    switch (_type.id) {
      case type_id::boolean:
        return put_parsed<bool>([&](bool& v) { return parse_bool(s, v); });
      case type_id::int8:
        return put_parsed<int8_t>([&](int8_t& v) { return parse_integer(s, v); });
      case type_id::int16:
        return put_parsed<int16_t>([&](int16_t& v) { return parse_integer(s, v); });
      case type_id::int32:
        return put_parsed<int32_t>([&](int32_t& v) { return parse_integer(s, v); });
      case type_id::int64:
        return put_parsed<int64_t>([&](int64_t& v) { return parse_integer(s, v); });
      case type_id::uint8:
        return put_parsed<uint8_t>([&](uint8_t& v) { return parse_integer(s, v); });
      case type_id::uint16:
        return put_parsed<uint16_t>([&](uint16_t& v) { return parse_integer(s, v); });
      case type_id::uint32:
        return put_parsed<uint32_t>([&](uint32_t& v) { return parse_integer(s, v); });
      case type_id::uint64:
        return put_parsed<uint64_t>([&](uint64_t& v) { return parse_integer(s, v); });
      case type_id::float32:
        return put_parsed<float>([&](float& v) { return parse_floating(s, v); });
      case type_id::float64:
        return put_parsed<double>([&](double& v) { return parse_floating(s, v); });
      case type_id::decimal128:
        return put_parsed<__int128>([&](__int128& v) { return parse_decimal(s, _type.precision, _type.scale, v); });
      case type_id::date32:
        return put_parsed<int32_t>([&](int32_t& v) {
          int64_t d;
          if (!parse_date(s, d) || d < INT32_MIN || d > INT32_MAX) return false;
          v = static_cast<int32_t>(d);
          return true;
        });
      case type_id::timestamp:
        return put_parsed<int64_t>([&](int64_t& v) { return parse_timestamp(s, ticks_per_second(_type.unit), v); });
      case type_id::duration:
        return put_parsed<int64_t>([&](int64_t& v) { return parse_duration(s, _type.unit, v); });
      case type_id::string:
        _chars.append(s);
        _offsets.push_back(static_cast<int64_t>(_chars.size()));
        return true;
    }
    return false;
  }

  /// Drops rows from `rows` on.
  void truncate(int64_t rows) {
    _valid.resize(static_cast<size_t>(rows));
    if (_type.id == type_id::string) {
      _offsets.resize(static_cast<size_t>(rows) + 1);
      _chars.resize(static_cast<size_t>(_offsets.back()));
    } else {
      _data.resize(static_cast<size_t>(rows * _width));
    }
  }

  column finish(memory_resource* mr) {
    int64_t n = size();
    buffer_ptr validity;
    if (_any_null) {
      validity = make_buffer(static_cast<size_t>(bits::bytes_for(n)), mr);
      std::memset(validity->data(), 0, validity->size());
      for (int64_t i = 0; i < n; ++i)
        if (_valid[static_cast<size_t>(i)]) bits::set(validity->as<uint8_t>(), i);
    }
    auto copy = [&](const void* src, size_t bytes) {
      auto b = make_buffer(bytes, mr);
      if (bytes) std::memcpy(b->data(), src, bytes);
      return b;
    };
    if (_type.id == type_id::string)
      return column(_type, n, copy(_chars.data(), _chars.size()), std::move(validity), -1,
                    copy(_offsets.data(), _offsets.size() * sizeof(int64_t)));
    return column(_type, n, copy(_data.data(), _data.size()), std::move(validity), -1);
  }

 private:
  template <typename T, typename P>
  bool put_parsed(P&& parse) {
    T v{};
    bool ok = parse(v);
    size_t at = _data.size();
    _data.resize(at + sizeof(T));
    std::memcpy(_data.data() + at, &v, sizeof(T));
    return ok;
  }

  data_type _type;
  int _width;
  std::vector<uint8_t> _data;
  std::vector<uint8_t> _valid;
  std::vector<int64_t> _offsets;
  std::string _chars;
  bool _any_null = false;
};

/// A run of whole records.
struct chunk {
  const char* begin;
  const char* end;
  int64_t line;  ///< 1-based physical line of `begin`
};

/// Result of the boundary pass.
struct split_result {
  std::vector<chunk> chunks;
  int64_t records = 0;
  int64_t skipped = 0;      ///< an unterminated quote skipped (skip_malformed)
  bool needs_more = false;  ///< a partial read ended before n_rows records: read more of the file
};

std::string at(const std::string& path, int64_t line) { return path + ": line " + std::to_string(line); }

/// Walks records from `l.body`, cutting chunks of about `chunk_bytes` at record boundaries.
split_result split_records(const layout& l, const csv_options& o, const std::string& path, int64_t chunk_bytes) {
  split_result r;
  tokenizer tok(o);
  const char* p = l.body;
  const char* chunk_begin = p;
  int64_t line = l.body_line, chunk_line = line;
  size_t ncols = l.names.size();
  int64_t limit = o.n_rows < 0 ? INT64_MAX : o.n_rows;
  while (p < l.end && r.records < limit) {
    auto k = tok.classify(p, l.end);
    if (k == tokenizer::kind::comment || (k == tokenizer::kind::empty && ncols > 1)) {
      p = tokenizer::skip_line(p, l.end);
      ++line;
    } else {
      int64_t nl = 0;
      bool bad = false;
      const char* next = tok.skip_record(p, l.end, nl, bad);
      if (bad && !l.complete) break;  // the quote may close beyond the part read
      if (bad) {
        if (!o.skip_malformed)
          throw io_error(at(path, line) + ": unterminated quoted field (the quote runs to the end of the file)");
        r.skipped = 1;
        break;  // the rest of the file is inside the quote
      }
      p = next;
      line += nl;
      ++r.records;
    }
    if (p - chunk_begin >= chunk_bytes) {
      r.chunks.push_back({chunk_begin, p, chunk_line});
      chunk_begin = p;
      chunk_line = line;
    }
  }
  if (p > chunk_begin) r.chunks.push_back({chunk_begin, p, chunk_line});
  r.needs_more = !l.complete && r.records < limit;
  return r;
}

/// Converted rows of one chunk, or its first error.
struct chunk_result {
  table t;
  int64_t skipped = 0;
  std::string error;
};

chunk_result parse_chunk(const chunk& ch, const layout& l, const csv_options& o, const std::string& path,
                         const std::vector<int64_t>& out_of_file, const tug::schema& out_schema,
                         const std::vector<bool>& inferred, memory_resource* mr) {
  chunk_result r;
  std::vector<accumulator> acc;
  for (auto& f : out_schema)
    acc.emplace_back(f.type);
  tokenizer tok(o);
  std::vector<field_text> fields;
  size_t ncols = l.names.size();
  int64_t rows = 0, line = ch.line;
  const char* p = ch.begin;
  // String fields are split at ASCII bytes, which never occur inside a UTF-8 sequence: when the whole
  // chunk is valid UTF-8 so is every field, and only a chunk that is not checks its string fields.
  const bool lossy = o.encoding == "utf8-lossy";
  std::vector<bool> check_utf8(acc.size(), false);
  if (!is_valid_utf8(std::string_view(ch.begin, static_cast<size_t>(ch.end - ch.begin))))
    for (size_t c = 0; c < acc.size(); ++c)
      check_utf8[c] = out_schema[c].type.id == type_id::string;
  std::string repaired;
  auto malformed = [&](int64_t rec_line, size_t col, const std::string& what) {
    if (o.skip_malformed) {
      ++r.skipped;
      for (auto& a : acc)
        a.truncate(rows);
      return true;
    }
    std::string loc = at(path, rec_line) + ", column " + std::to_string(col + 1);
    if (col < ncols) loc += " ('" + l.names[col] + "')";
    r.error = loc + ": " + what;
    return false;
  };
  while (p < ch.end) {
    auto k = tok.classify(p, ch.end);
    if (k == tokenizer::kind::comment || (k == tokenizer::kind::empty && ncols > 1)) {
      p = tokenizer::skip_line(p, ch.end);
      ++line;
      continue;
    }
    int64_t rec_line = line, nl = 0;
    bool bad = false;
    p = tok.read_record(p, ch.end, fields, nl, bad);
    line += nl;
    if (bad) {  // the boundary pass already cut an unterminated quote off
      if (!malformed(rec_line, 0, "unterminated quoted field")) return r;
      break;
    }
    if (fields.size() != ncols) {
      if (!malformed(rec_line, std::min(fields.size(), ncols),
                     "expected " + std::to_string(ncols) + " fields, found " + std::to_string(fields.size())))
        return r;
      continue;
    }
    bool ok = true;
    for (size_t c = 0; c < acc.size() && ok; ++c) {
      size_t fc = static_cast<size_t>(out_of_file[c]);
      if (check_utf8[c] && !is_null_text(fields[fc], o)) {
        const std::string_view text = fields[fc].text;
        if (const size_t bad = find_invalid_utf8(text); bad != text.size()) {
          if (lossy) {
            repaired.clear();
            append_utf8_lossy(text, repaired);
            acc[c].append({repaired, fields[fc].quoted}, o);
            continue;
          }
          ok = false;
          if (!malformed(rec_line, fc, invalid_utf8(text, bad))) return r;
          continue;
        }
      }
      if (acc[c].append(fields[fc], o)) continue;
      ok = false;
      std::string what = "cannot parse '" + std::string(fields[fc].text) + "' as " + to_string(out_schema[c].type);
      if (inferred[c])
        what += " (types are inferred from the first " + std::to_string(o.infer_schema_rows) +
                " rows: set schema_overrides or a larger infer_schema_rows)";
      if (!malformed(rec_line, fc, what)) return r;
    }
    if (ok) ++rows;
  }
  std::vector<column> cols;
  for (auto& a : acc)
    cols.push_back(a.finish(mr));
  r.t = cols.empty() ? table::empty_with_rows(rows) : table(std::move(cols));
  return r;
}

}  // namespace

tug::schema infer_schema(const std::string& path, const csv_options& opts) {
  csv_options o = normalized(opts);
  // read a prefix large enough for the header and the sample, not the whole file
  for (int64_t bytes = 1 << 20;; bytes *= 4) {
    bool done = false;
    tug::schema s = infer_from_layout(read_layout(path, o, bytes), o, path, &done);
    if (done) return s;
  }
}

int64_t count_rows(const std::string& path, const csv_options& opts) {
  csv_options o = normalized(opts);
  layout l = read_layout(path, o);
  return split_records(l, o, path, INT64_MAX).records;
}

read_result read_csv(const std::string& path, const csv_options& opts, const std::vector<std::string>& columns,
                     thread_pool* pool, memory_resource* mr) {
  csv_options o = normalized(opts);
  // With n_rows, read a growing prefix until it holds the sample and n_rows records; else the whole file.
  layout l;
  tug::schema full;
  split_result sp;
  for (int64_t bytes = o.n_rows >= 0 ? std::max<int64_t>(1 << 20, o.n_rows * 64) : INT64_MAX;;
       bytes = bytes > INT64_MAX / 4 ? INT64_MAX : bytes * 4) {
    l = read_layout(path, o, bytes);
    bool sample_done = false;
    full = infer_from_layout(l, o, path, &sample_done);
    if (!sample_done) continue;
    sp = split_records(l, o, path, o.chunk_bytes);
    if (!sp.needs_more) break;
  }
  std::vector<int64_t> out_of_file;
  std::vector<field> out_fields;
  if (columns.empty()) {
    for (size_t i = 0; i < full.size(); ++i)
      out_of_file.push_back(static_cast<int64_t>(i));
  } else {
    for (auto& c : columns)
      out_of_file.push_back(static_cast<int64_t>(full.index_of(c)));
  }
  for (int64_t i : out_of_file)
    out_fields.push_back(full[static_cast<size_t>(i)]);
  read_result res;
  res.schema = tug::schema(std::move(out_fields));
  std::vector<bool> inferred;
  for (auto& f : res.schema)
    inferred.push_back(std::none_of(o.schema_overrides.begin(), o.schema_overrides.end(),
                                    [&](const field& ov) { return ov.name == f.name; }));

  std::vector<chunk_result> parts(sp.chunks.size());
  thread_pool& tp = pool ? *pool : global_thread_pool();
  tp.parallel_for(static_cast<int64_t>(sp.chunks.size()), [&](int64_t i) {
    parts[static_cast<size_t>(i)] =
        parse_chunk(sp.chunks[static_cast<size_t>(i)], l, o, path, out_of_file, res.schema, inferred, mr);
  });
  res.skipped_rows = sp.skipped;
  for (auto& p : parts) {
    if (!p.error.empty()) throw io_error(p.error);
    res.skipped_rows += p.skipped;
    if (p.t.num_rows() > 0) res.partitions.push_back(std::move(p.t));
  }
  if (res.partitions.empty()) {
    std::vector<column> cols;
    for (auto& f : res.schema)
      cols.push_back(make_empty_column(f.type));
    res.partitions.push_back(cols.empty() ? table::empty_with_rows(0) : table(std::move(cols)));
  }
  return res;
}

}  // namespace tug::io::csv
