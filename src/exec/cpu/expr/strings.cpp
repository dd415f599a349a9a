// String kernels (fn::str_*) of the CPU expression evaluator. Semantics: docs/strings_temporal.md.
#include <array>
#include <optional>
#include <regex>
#include <unordered_map>

#include "exec/case_mapping.hpp"
#include "functions.hpp"
#include "strtemp_util.hpp"
#include "unicode.hpp"

namespace tug::cpu::detail {

namespace {

inline bool is_continuation(char c) { return (static_cast<unsigned char>(c) & 0xC0) == 0x80; }

/// Code points in `s` (bytes that are not UTF-8 continuation bytes).
inline int64_t count_chars(std::string_view s) {
  int64_t n = 0;
  for (char c : s) n += !is_continuation(c);
  return n;
}

/// Byte position `k` code points after byte position `pos` (clamped to the end).
inline size_t advance_chars(std::string_view s, size_t pos, int64_t k) {
  const size_t size = s.size();
  for (; k > 0 && pos < size; --k) {
    ++pos;
    while (pos < size && is_continuation(s[pos])) ++pos;
  }
  return pos;
}

/// Bytes of the rows [0, n) of a (possibly sliced) string column.
inline int64_t char_bytes(const column_view& v) {
  return v.size == 0 ? 0 : v.offsets[v.offset + v.size] - v.offsets[v.offset];
}

/// Writes a string column of `n` rows whose chars fit in `max_bytes`, straight into `mr` buffers.
class string_writer {
 public:
  string_writer(int64_t n, int64_t max_bytes, memory_resource* mr)
      : _offsets(make_buffer(sizeof(int64_t) * static_cast<size_t>(n + 1), mr)),
        _chars(make_buffer(static_cast<size_t>(max_bytes), mr)) {
    _offsets->as<int64_t>()[0] = 0;
  }
  /// Appends bytes to the current row without ending it.
  void write(std::string_view s) {
    if (!s.empty()) std::memcpy(_chars->as<char>() + _pos, s.data(), s.size());
    _pos += static_cast<int64_t>(s.size());
  }
  /// Ends the current row.
  void end_row() { _offsets->as<int64_t>()[++_row] = _pos; }
  void append(std::string_view s) {
    write(s);
    end_row();
  }
  column finish(buffer_ptr validity) {
    return column(type_id::string, _row, std::move(_chars), std::move(validity), -1, std::move(_offsets));
  }

 private:
  buffer_ptr _offsets, _chars;
  int64_t _pos = 0, _row = 0;
};

/// Applies `f(std::string_view) -> std::string_view` (a substring of its argument) to every row.
template <typename F>
column map_substrings(const column& s, memory_resource* mr, F&& f) {
  const column_view v = s.view();
  string_writer w(v.size, char_bytes(v), mr);
  for (int64_t i = 0; i < v.size; ++i) w.append(v.is_valid(i) ? f(v.string(i)) : std::string_view{});
  return w.finish(and_validity({&s}, v.size, mr));
}

// ---- lengths --------------------------------------------------------------------------------------

column lengths(const column& s, bool chars, memory_resource* mr) {
  const column_view v = s.view();
  const int64_t* o = v.offsets + v.offset;
  if (!chars) return map_rows<int64_t>(type_id::int64, v.size, {&s}, mr, [&](int64_t i) { return o[i + 1] - o[i]; });
  return map_rows<int64_t>(type_id::int64, v.size, {&s}, mr, [&](int64_t i) { return count_chars(v.string(i)); });
}

// ---- matching ---------------------------------------------------------------------------------------

/// The compiled ECMAScript regex of `pattern`, cached per thread (partitions reuse it).
/// @throws compute_error naming the pattern when it does not compile.
const std::regex& compiled_regex(std::string_view pattern) {
  thread_local std::unordered_map<std::string, std::regex> cache;
  std::string key(pattern);
  auto it = cache.find(key);
  if (it != cache.end()) return it->second;
  if (cache.size() >= 64) cache.clear();
  try {
    return cache.emplace(key, std::regex(key, std::regex::ECMAScript | std::regex::optimize)).first->second;
  } catch (const std::regex_error& e) {
    throw compute_error("str.contains: invalid regular expression \"" + key + "\": " + e.what());
  }
}

/// The literal pieces of a pattern made only of literal text joined by `.*` ("special.*requests"), or
/// nullopt for any other pattern. Such a pattern matches a string without line terminators exactly when
/// the pieces occur in order without overlapping, which a left-to-right `find` decides (no regex).
std::optional<std::vector<std::string_view>> dot_star_pieces(std::string_view pattern) {
  constexpr std::string_view meta = "\\^$.|?*+()[]{}";
  std::vector<std::string_view> pieces;
  size_t start = 0;
  for (size_t i = 0; i < pattern.size();) {
    if (pattern.substr(i, 2) == ".*") {
      if (i > start) pieces.push_back(pattern.substr(start, i - start));
      start = i += 2;
    } else if (meta.find(pattern[i]) != std::string_view::npos) {
      return std::nullopt;
    } else {
      ++i;
    }
  }
  if (pattern.size() > start) pieces.push_back(pattern.substr(start));
  return pieces;
}

/// Whether `x` contains the pieces in order (see dot_star_pieces); nullopt when `x` has a line terminator
/// (`.` matches any byte but '\n' and '\r'), left to the regex.
std::optional<bool> match_pieces(std::string_view x, const std::vector<std::string_view>& pieces) {
  if (x.find('\n') != std::string_view::npos || x.find('\r') != std::string_view::npos) return std::nullopt;
  size_t pos = 0;
  for (std::string_view piece : pieces) {
    pos = x.find(piece, pos);
    if (pos == std::string_view::npos) return false;
    pos += piece.size();
  }
  return true;
}

column match(const expr_node& n, const column& s, const column& p, memory_resource* mr) {
  const column_view sv = s.view(), pv = p.view();
  const int64_t rows = sv.size;
  switch (n.func) {
    case fn::str_starts_with:
      return map_rows<bool>(type_id::boolean, rows, {&s, &p}, mr,
                            [&](int64_t i) { return sv.string(i).starts_with(pv.string(i)); });
    case fn::str_ends_with:
      return map_rows<bool>(type_id::boolean, rows, {&s, &p}, mr,
                            [&](int64_t i) { return sv.string(i).ends_with(pv.string(i)); });
    default: break;
  }
  if (n.flag)
    return map_rows<bool>(type_id::boolean, rows, {&s, &p}, mr,
                          [&](int64_t i) { return sv.string(i).find(pv.string(i)) != std::string_view::npos; });
  // a constant pattern is compiled (and checked) even when there are no rows to match
  std::optional<std::vector<std::string_view>> pieces;
  if (n.args.size() > 1 && n.args[1]->kind == expr_kind::literal && n.args[1]->value.is_valid()) {
    compiled_regex(n.args[1]->value.as_string());
    pieces = dot_star_pieces(n.args[1]->value.as_string());
  }
  const std::regex* re = nullptr;
  std::string_view last;
  return map_rows<bool>(type_id::boolean, rows, {&s, &p}, mr, [&](int64_t i) {
    if (sv.is_null(i) || pv.is_null(i)) return false;
    std::string_view x = sv.string(i);
    if (pieces)
      if (std::optional<bool> m = match_pieces(x, *pieces)) return *m;
    std::string_view pat = pv.string(i);
    if (!re || pat != last) {
      re = &compiled_regex(pat);
      last = pat;
    }
    return std::regex_search(x.data(), x.data() + x.size(), *re);
  });
}

// ---- slice ------------------------------------------------------------------------------------------

/// Characters [offset, offset+length) of `s` (Polars str.slice): a negative offset counts from the
/// end, and a window starting before the string keeps only its part inside; length < 0 = to the end.
std::string_view utf8_slice(std::string_view s, int64_t offset, int64_t length) {
  if (offset < 0) {
    offset += count_chars(s);
    if (offset < 0) {
      if (length >= 0) length = std::max<int64_t>(0, length + offset);
      offset = 0;
    }
  }
  const size_t begin = advance_chars(s, 0, offset);
  const size_t end = length < 0 ? s.size() : advance_chars(s, begin, length);
  return s.substr(begin, end - begin);
}

// ---- case mapping -----------------------------------------------------------------------------------

/// Each row case-mapped by unicode::map_case (the CUDA evaluator's function too): full mappings, so a
/// row may grow ("ß" -> "SS"); lengths first, then the bytes.
column change_case(const column& s, unicode::case_kind kind, memory_resource* mr) {
  const unicode::case_table& table = unicode::host_case_table(kind);
  const column_view v = s.view();
  const int64_t n = v.size;
  const int64_t* in = v.offsets + v.offset;
  const auto* src = static_cast<const char*>(v.data);
  auto offsets = make_buffer(sizeof(int64_t) * static_cast<size_t>(n + 1), mr);
  int64_t* o = offsets->as<int64_t>();
  o[0] = 0;
  for (int64_t i = 0; i < n; ++i)
    o[i + 1] = o[i] + unicode::map_case(src + in[i], in[i + 1] - in[i], nullptr, table);
  auto chars = make_buffer(static_cast<size_t>(o[n]), mr);
  for (int64_t i = 0; i < n; ++i)
    unicode::map_case(src + in[i], in[i + 1] - in[i], chars->as<char>() + o[i], table);
  return column(type_id::string, n, std::move(chars), and_validity({&s}, n, mr), -1, std::move(offsets));
}

// ---- strip ------------------------------------------------------------------------------------------

/// A set of code points to strip: ASCII ones in a table, others as their UTF-8 bytes.
class strip_set {
 public:
  explicit strip_set(std::string_view chars) {
    if (chars.empty()) chars = unicode_white_space;  // Polars strip_chars without characters
    for (size_t i = 0; i < chars.size();) {
      const size_t next = advance_chars(chars, i, 1);
      if (next - i == 1 && static_cast<unsigned char>(chars[i]) < 0x80) _ascii[static_cast<unsigned char>(chars[i])] = true;
      else _multi.emplace_back(chars.substr(i, next - i));
      i = next;
    }
  }

  std::string_view strip(std::string_view s) const {
    size_t b = 0, e = s.size();
    while (b < e) {
      size_t len = match(s.substr(b, advance_chars(s, b, 1) - b));
      if (!len) break;
      b += len;
    }
    while (e > b) {
      size_t start = e - 1;
      while (start > b && is_continuation(s[start])) --start;
      if (!match(s.substr(start, e - start))) break;
      e = start;
    }
    return s.substr(b, e - b);
  }

 private:
  /// Length of `c` (one code point) when it is in the set, else 0.
  size_t match(std::string_view c) const {
    if (c.size() == 1 && static_cast<unsigned char>(c[0]) < 0x80) return _ascii[static_cast<unsigned char>(c[0])];
    for (const auto& m : _multi)
      if (m == c) return c.size();
    return 0;
  }

  std::array<bool, 128> _ascii{};
  std::vector<std::string_view> _multi;
};

// ---- concat -----------------------------------------------------------------------------------------

column concat(const std::string& sep, const std::vector<column>& args, memory_resource* mr) {
  const int64_t n = args.empty() ? 0 : args[0].size();
  std::vector<column_view> views;
  std::vector<const column*> cols;
  int64_t bytes = static_cast<int64_t>(sep.size()) * n * std::max<int64_t>(0, static_cast<int64_t>(args.size()) - 1);
  for (const auto& a : args) {
    TUG_EXPECTS(a.type().id == type_id::string && a.size() == n, "concat_str: arguments must be string columns of one length");
    views.push_back(a.view());
    cols.push_back(&a);
    bytes += char_bytes(views.back());
  }
  buffer_ptr validity = and_validity(cols, n, mr);
  const uint8_t* valid = validity ? validity->as<uint8_t>() : nullptr;
  string_writer w(n, bytes, mr);
  for (int64_t i = 0; i < n; ++i) {
    if (!valid || bits::get(valid, i)) {
      for (size_t k = 0; k < views.size(); ++k) {
        if (k) w.write(sep);
        w.write(views[k].string(i));
      }
    }
    w.end_row();
  }
  return w.finish(std::move(validity));
}

}  // namespace

column eval_string_function(const expr_node& n, const std::vector<column>& args, memory_resource* mr) {
  if (n.func == fn::str_concat) return concat(n.s0, args, mr);
  TUG_EXPECTS(!args.empty() && args[0].type().id == type_id::string,
              std::string(to_string(n.func)) + ": the subject must be a string column");
  const column& s = args[0];
  switch (n.func) {
    case fn::str_len_chars: return lengths(s, true, mr);
    case fn::str_len_bytes: return lengths(s, false, mr);
    case fn::str_starts_with:
    case fn::str_ends_with:
    case fn::str_contains:
      TUG_EXPECTS(args.size() == 2 && args[1].type().id == type_id::string && args[1].size() == s.size(),
                  std::string(to_string(n.func)) + ": the pattern must be a string column of the subject's length");
      return match(n, s, args[1], mr);
    case fn::str_slice:
      return map_substrings(s, mr, [&](std::string_view x) { return utf8_slice(x, n.i0, n.i1); });
    case fn::str_to_upper: return change_case(s, unicode::case_kind::upper, mr);
    case fn::str_to_lower: return change_case(s, unicode::case_kind::lower, mr);
    case fn::str_to_title: return change_case(s, unicode::case_kind::title, mr);
    case fn::str_strip: {
      const strip_set set(n.s0);
      return map_substrings(s, mr, [&](std::string_view x) { return set.strip(x); });
    }
    default: break;
  }
  throw internal_error(std::string("eval_string_function: ") + to_string(n.func) + " is not a string function");
}

}  // namespace tug::cpu::detail
