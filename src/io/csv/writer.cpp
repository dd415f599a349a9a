// The CSV writer: partitions are formatted in parallel, then written in order.
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "exec/float_text.hpp"
#include "tug/core/scalar.hpp"
#include "tug/io/csv/csv.hpp"

namespace tug::io::csv {
namespace {

/// Appends `v`, quoted when the reader would otherwise read it differently.
void append_field(std::string& out, std::string_view v, bool is_string, bool first, const csv_options& o) {
  bool quote = (is_string && v.empty()) || v.find_first_of("\r\n") != std::string_view::npos ||
               v.find(o.delimiter) != std::string_view::npos ||
               (o.quote && v.find(o.quote) != std::string_view::npos) ||
               (first && o.comment && !v.empty() && v[0] == o.comment);
  if (is_string && !quote)
    for (auto& n : o.null_values)
      if (v == n) quote = true;
  if (!quote) {
    out.append(v);
    return;
  }
  if (!o.quote)
    throw invalid_argument_error("write_csv: the value '" + std::string(v) +
                                 "' needs quoting (it is empty, a null value, or holds the delimiter, a newline or a "
                                 "leading comment char) but the quote char is disabled (0)");
  char esc = o.escape && o.escape != o.quote ? o.escape : o.quote;
  out.push_back(o.quote);
  for (char c : v) {
    if (c == o.quote || (c == esc && esc != o.quote)) out.push_back(esc);
    out.push_back(c);
  }
  out.push_back(o.quote);
}

/// Text of a valid value, as format_value writes it; integers, booleans and floats without allocating
/// (the common cases), the rest through format_value.
std::string_view value_text(const column& col, int64_t r, char* buf, size_t cap, std::string& slow) {
  auto chars = [&](auto v) {
    auto res = std::to_chars(buf, buf + cap, v);
    return std::string_view(buf, static_cast<size_t>(res.ptr - buf));
  };
  // format_value's text (exec/float_text.hpp), without allocating. In the plain range std::to_chars's
  // shortest fixed text is the same (FloatText.ToCharsMatchesInThePlainRange) and 2 to 4 times faster.
  auto floating = [&](auto v) {
    const double a = std::fabs(static_cast<double>(v));
    if (std::isfinite(a) && (a == 0 || (a >= 1e-4 && a < 1e16))) {
      auto res = std::to_chars(buf, buf + cap - 2, v, std::chars_format::fixed);
      if (std::string_view(buf, static_cast<size_t>(res.ptr - buf)).find('.') == std::string_view::npos) {
        *res.ptr++ = '.';
        *res.ptr++ = '0';
      }
      return std::string_view(buf, static_cast<size_t>(res.ptr - buf));
    }
    return std::string_view(buf, static_cast<size_t>(float_text::format_float(v, buf)));
  };
  switch (col.type().id) {
    case type_id::boolean:
      return col.value<bool>(r) ? "true" : "false";
    case type_id::int8:
      return chars(static_cast<int>(col.value<int8_t>(r)));
    case type_id::int16:
      return chars(col.value<int16_t>(r));
    case type_id::int32:
      return chars(col.value<int32_t>(r));
    case type_id::int64:
      return chars(col.value<int64_t>(r));
    case type_id::uint8:
      return chars(static_cast<unsigned>(col.value<uint8_t>(r)));
    case type_id::uint16:
      return chars(col.value<uint16_t>(r));
    case type_id::uint32:
      return chars(col.value<uint32_t>(r));
    case type_id::uint64:
      return chars(col.value<uint64_t>(r));
    case type_id::float32:
      return floating(col.value<float>(r));
    case type_id::float64:
      return floating(col.value<double>(r));
    default:
      break;
  }
  slow = format_value(col, r);
  return slow;
}

void format_rows(std::string& out, const tug::schema& s, const table& t, const csv_options& o) {
  char buf[400];
  std::string slow;
  std::string_view null_text = o.null_values.empty() ? std::string_view() : std::string_view(o.null_values.front());
  for (int64_t r = 0; r < t.num_rows(); ++r) {
    for (size_t c = 0; c < t.num_columns(); ++c) {
      if (c) out.push_back(o.delimiter);
      const column& col = t[c];
      if (col.is_null(r)) {
        out.append(null_text);
        continue;
      }
      bool is_string = s[c].type.id == type_id::string;
      if (is_string)
        append_field(out, col.string(r), true, c == 0, o);
      else
        append_field(out, value_text(col, r, buf, sizeof buf, slow), false, c == 0, o);
    }
    if (t.num_columns() == 0) continue;
    out.push_back('\n');
  }
}

/// The header and the rows of each partition, formatted in parallel.
std::vector<std::string> format_all(const tug::schema& s, const std::vector<table>& parts, const csv_options& o) {
  if (o.delimiter == '\n' || o.delimiter == '\r' || o.delimiter == 0)
    throw invalid_argument_error("CSV delimiter must not be a newline or NUL");
  for (auto& p : parts)
    if (p.num_columns() != s.size())
      throw invalid_argument_error("write_csv: a partition has " + std::to_string(p.num_columns()) +
                                   " columns, the schema " + std::to_string(s.size()));
  std::vector<std::string> texts(parts.size() + 1);
  if (o.has_header && s.size() > 0) {
    for (size_t c = 0; c < s.size(); ++c) {
      if (c) texts[0].push_back(o.delimiter);
      append_field(texts[0], s[c].name, true, c == 0, o);
    }
    texts[0].push_back('\n');
  }
  global_thread_pool().parallel_for(static_cast<int64_t>(parts.size()), [&](int64_t i) {
    format_rows(texts[static_cast<size_t>(i) + 1], s, parts[static_cast<size_t>(i)], o);
  });
  return texts;
}

}  // namespace

std::string to_csv_string(const tug::schema& s, const std::vector<table>& parts, const csv_options& o) {
  std::string out;
  for (auto& t : format_all(s, parts, o))
    out += t;
  return out;
}

void write_csv(const std::string& path, const tug::schema& s, const std::vector<table>& parts, const csv_options& o) {
  std::vector<std::string> texts = format_all(s, parts, o);
  std::unique_ptr<FILE, int (*)(FILE*)> f(std::fopen(path.c_str(), "wb"), &std::fclose);
  if (!f) throw io_error("cannot open '" + path + "' for writing: " + std::strerror(errno));
  for (auto& t : texts)
    if (std::fwrite(t.data(), 1, t.size(), f.get()) != t.size())
      throw io_error("cannot write '" + path + "': " + std::strerror(errno));
  if (std::fflush(f.get()) != 0) throw io_error("cannot write '" + path + "': " + std::strerror(errno));
}

}  // namespace tug::io::csv
