#include "tug/api/data_frame.hpp"

#include <algorithm>

#include "tug/api/lazy_frame.hpp"
#include "tug/core/scalar.hpp"
#include "tug/io/csv/csv.hpp"

namespace tug {

namespace {
// Display width: UTF-8 code points (continuation bytes do not count).
size_t display_width(const std::string& s) {
  size_t w = 0;
  for (unsigned char c : s) w += (c & 0xC0) != 0x80;
  return w;
}
}  // namespace

data_frame::data_frame(tug::schema s, std::vector<table> partitions) : _schema(std::move(s)), _partitions(std::move(partitions)) {
  for (auto& p : _partitions) {
    TUG_EXPECTS(p.num_columns() == _schema.size() || (_schema.size() == 0),
                "data_frame partition has " + std::to_string(p.num_columns()) + " columns, schema has " +
                    std::to_string(_schema.size()));
    for (size_t i = 0; i < p.num_columns(); ++i)
      TUG_EXPECTS(p[i].type() == _schema[i].type, "data_frame column \"" + _schema[i].name + "\" has type " +
                                                      tug::to_string(p[i].type()) + ", schema says " +
                                                      tug::to_string(_schema[i].type));
  }
}

data_frame data_frame::from_columns(std::vector<std::pair<std::string, column>> columns) {
  tug::schema s;
  std::vector<column> cols;
  for (auto& [name, c] : columns) {
    if (!cols.empty() && c.size() != cols[0].size())
      throw invalid_argument_error("column \"" + name + "\" has " + std::to_string(c.size()) + " rows, but \"" +
                                   s[0].name + "\" has " + std::to_string(cols[0].size()));
    s.push_back({name, c.type()});
    cols.push_back(c);
  }
  std::vector<table> parts;
  if (!cols.empty()) parts.emplace_back(std::move(cols));
  return data_frame(std::move(s), std::move(parts));
}

table data_frame::to_table() const {
  if (_partitions.empty()) {
    std::vector<column> cols;
    for (auto& f : _schema) cols.push_back(make_empty_column(f.type));
    return cols.empty() ? table() : table(std::move(cols));
  }
  return concatenate(_partitions);
}

column data_frame::operator[](const std::string& name) const {
  size_t i = _schema.index_of(name);
  if (_partitions.empty()) return make_empty_column(_schema[i].type);
  std::vector<column> parts;
  for (auto& p : _partitions) parts.push_back(p[i]);
  return concatenate(parts);
}

data_frame data_frame::repartition(int64_t rows) const {
  if (rows <= 0) throw invalid_argument_error("repartition: rows must be positive");
  table t = to_table();
  std::vector<table> parts;
  for (int64_t off = 0; off < t.num_rows(); off += rows) parts.push_back(t.slice(off, std::min(rows, t.num_rows() - off)));
  return data_frame(_schema, std::move(parts));
}

lazy_frame data_frame::lazy() const {
  return lazy_frame(plan::scan(std::make_shared<memory_source>(_schema, _partitions)));
}

std::string data_frame::to_string(int64_t max_rows) const {
  table t = to_table();
  int64_t n = t.num_rows();
  std::vector<int64_t> rows;
  bool ellipsis = n > max_rows;
  if (!ellipsis) {
    for (int64_t i = 0; i < n; ++i) rows.push_back(i);
  } else {
    for (int64_t i = 0; i < (max_rows + 1) / 2; ++i) rows.push_back(i);
    for (int64_t i = n - max_rows / 2; i < n; ++i) rows.push_back(i);
  }
  size_t nc = _schema.size();
  std::vector<std::vector<std::string>> cells(nc);
  std::vector<size_t> width(nc);
  for (size_t c = 0; c < nc; ++c) {
    width[c] = std::max(display_width(_schema[c].name), tug::to_string(_schema[c].type).size());
    for (auto r : rows) {
      std::string v = format_value(t[c], r);
      if (_schema[c].type.id == type_id::string && t[c].is_valid(r)) v = "\"" + v + "\"";
      if (display_width(v) > 40) {
        size_t cut = 0, seen = 0;  // cut after 37 code points
        while (cut < v.size() && seen < 37) {
          ++cut;
          while (cut < v.size() && (static_cast<unsigned char>(v[cut]) & 0xC0) == 0x80) ++cut;
          ++seen;
        }
        v = v.substr(0, cut) + "…";
      }
      width[c] = std::max(width[c], display_width(v));
      cells[c].push_back(std::move(v));
    }
  }
  auto line = [&](const char* l, const char* m, const char* r) {
    std::string s = l;
    for (size_t c = 0; c < nc; ++c) {
      for (size_t i = 0; i < width[c] + 2; ++i) s += "─";
      s += c + 1 < nc ? m : r;
    }
    return s + "\n";
  };
  auto row = [&](auto get) {
    std::string s = "│";
    for (size_t c = 0; c < nc; ++c) {
      std::string v = get(c);
      s += " " + v + std::string(width[c] - display_width(v), ' ') + " │";
    }
    return s + "\n";
  };
  std::string out = "shape: (" + std::to_string(n) + ", " + std::to_string(nc) + ")\n";
  if (nc == 0) return out;
  out += line("┌", "┬", "┐");
  out += row([&](size_t c) { return _schema[c].name; });
  out += row([&](size_t c) { return tug::to_string(_schema[c].type); });
  out += line("╞", "╪", "╡");
  for (size_t i = 0; i < rows.size(); ++i) {
    if (ellipsis && i == static_cast<size_t>((max_rows + 1) / 2)) out += row([&](size_t) { return std::string("…"); });
    out += row([&](size_t c) { return cells[c][i]; });
  }
  out += line("└", "┴", "┘");
  return out;
}

std::string data_frame::to_csv() const { return io::csv::to_csv_string(_schema, _partitions); }

}  // namespace tug
