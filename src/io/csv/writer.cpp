// The CSV writer: partitions are formatted in parallel, then written in order.
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tug/core/scalar.hpp"
#include "tug/io/csv/csv.hpp"

namespace tug::io::csv {
namespace {

/// Appends `v`, quoted when the reader would otherwise read it differently.
void append_field(std::string& out, std::string_view v, bool is_string, bool first, const csv_options& o) {
  bool quote = o.quote && ((is_string && v.empty()) || v.find_first_of("\r\n") != std::string_view::npos ||
                           v.find(o.delimiter) != std::string_view::npos || v.find(o.quote) != std::string_view::npos ||
                           (o.escape && v.find(o.escape) != std::string_view::npos) ||
                           (first && o.comment && !v.empty() && v[0] == o.comment));
  if (o.quote && is_string && !quote)
    for (auto& n : o.null_values)
      if (v == n) quote = true;
  if (!quote) {
    out.append(v);
    return;
  }
  char esc = o.escape && o.escape != o.quote ? o.escape : o.quote;
  out.push_back(o.quote);
  for (char c : v) {
    if (c == o.quote || (c == esc && esc != o.quote)) out.push_back(esc);
    out.push_back(c);
  }
  out.push_back(o.quote);
}

void format_rows(std::string& out, const tug::schema& s, const table& t, const csv_options& o) {
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
      if (is_string) append_field(out, col.string(r), true, c == 0, o);
      else append_field(out, format_value(col, r), false, c == 0, o);
    }
    if (t.num_columns() == 0) continue;
    out.push_back('\n');
  }
}

}  // namespace

std::string to_csv_string(const tug::schema& s, const std::vector<table>& parts, const csv_options& o) {
  if (o.delimiter == '\n' || o.delimiter == '\r' || o.delimiter == 0)
    throw invalid_argument_error("CSV delimiter must not be a newline or NUL");
  for (auto& p : parts)
    if (p.num_columns() != s.size())
      throw invalid_argument_error("write_csv: a partition has " + std::to_string(p.num_columns()) +
                                   " columns, the schema " + std::to_string(s.size()));
  std::string out;
  if (o.has_header && s.size() > 0) {
    for (size_t c = 0; c < s.size(); ++c) {
      if (c) out.push_back(o.delimiter);
      append_field(out, s[c].name, true, c == 0, o);
    }
    out.push_back('\n');
  }
  std::vector<std::string> texts(parts.size());
  global_thread_pool().parallel_for(static_cast<int64_t>(parts.size()), [&](int64_t i) {
    format_rows(texts[static_cast<size_t>(i)], s, parts[static_cast<size_t>(i)], o);
  });
  for (auto& t : texts) out += t;
  return out;
}

void write_csv(const std::string& path, const tug::schema& s, const std::vector<table>& parts, const csv_options& o) {
  std::string text = to_csv_string(s, parts, o);
  std::unique_ptr<FILE, int (*)(FILE*)> f(std::fopen(path.c_str(), "wb"), &std::fclose);
  if (!f) throw io_error("cannot open '" + path + "' for writing: " + std::strerror(errno));
  if (std::fwrite(text.data(), 1, text.size(), f.get()) != text.size() || std::fflush(f.get()) != 0)
    throw io_error("cannot write '" + path + "': " + std::strerror(errno));
}

}  // namespace tug::io::csv
