// The tug command-line program: file commands over Parquet and CSV files, globs and directories.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "tug/api/data_frame.hpp"
#include "tug/core/scalar.hpp"
#include "tug/api/io.hpp"
#include "tug/io/csv/csv.hpp"
#include "tug/io/files.hpp"
#include "tug/io/parquet/reader.hpp"
#include "tug/version.hpp"

namespace {

namespace csv = tug::io::csv;

constexpr const char* usage_text =
    "usage: tug COMMAND [ARGS] [OPTIONS]\n"
    "commands:\n"
    "  schema FILE            column names and types\n"
    "  head FILE [-n N]       the first N rows (default 10)\n"
    "  count FILE...          number of rows of each file\n"
    "  convert IN OUT         rewrite IN as OUT (formats from the extensions: .parquet, .pq, .csv, .tsv, .txt)\n"
    "  version                the version\n"
    "An input FILE may also be a glob (\"data/*.parquet\", \"logs/*.csv\") or a directory of .parquet\n"
    "(else .csv) part files.\n"
    "options:\n"
    "  --format table|csv|json   output format (default table)\n"
    "  --delimiter C             CSV field delimiter (default ',', '\\t' for .tsv)\n"
    "  --no-header               the CSV input has no header row\n"
    "  --null TEXT               a CSV null value (repeatable; default: the empty field)\n"
    "  --codec NAME              Parquet output codec of convert: snappy (default), zstd, lz4_raw, gzip, none\n"
    "  --infer-rows N            rows sampled for CSV type inference (default 1000)\n"
    "  --skip-unsupported-columns  leave out Parquet columns tug cannot read (nested, decimal256)\n";

/// A usage mistake: printed with the usage text, exit status 2.
struct usage_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

enum class file_format { csv, parquet };

struct options {
  std::string command;
  std::vector<std::string> files;
  std::string format = "table";
  int64_t n = 10;
  std::optional<char> delimiter;
  bool no_header = false;
  std::vector<std::string> nulls;
  std::optional<int64_t> infer_rows;
  std::optional<std::string> codec;  ///< Parquet output only (refused elsewhere)
  tug::io::parquet::read_options parquet;
};

int64_t parse_count(const std::string& flag, const std::string& v) {
  try {
    size_t pos = 0;
    long long n = std::stoll(v, &pos);
    if (pos != v.size() || n < 0) throw std::invalid_argument(v);
    return n;
  } catch (const std::exception&) {
    throw usage_error(flag + " needs a non-negative integer, got '" + v + "'");
  }
}

options parse_args(int argc, char** argv) {
  options o;
  std::vector<std::string> args(argv + 1, argv + argc);
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= args.size()) throw usage_error(a + " needs a value");
      return args[++i];
    };
    if (a == "--format") {
      o.format = value();
      if (o.format != "table" && o.format != "csv" && o.format != "json")
        throw usage_error("--format must be table, csv or json, got '" + o.format + "'");
    } else if (a == "-n" || a == "--rows") {
      o.n = parse_count(a, value());
    } else if (a == "--delimiter") {
      std::string d = value();
      if (d == "\\t" || d == "tab") d = "\t";
      if (d.size() != 1) throw usage_error("--delimiter must be one character, got '" + d + "'");
      o.delimiter = d[0];
    } else if (a == "--no-header") {
      o.no_header = true;
    } else if (a == "--null") {
      o.nulls.push_back(value());
    } else if (a == "--codec") {
      o.codec = value();
    } else if (a == "--skip-unsupported-columns") {
      o.parquet.skip_unsupported_columns = true;
    } else if (a == "--infer-rows") {
      o.infer_rows = parse_count(a, value());
    } else if (a == "-h" || a == "--help") {
      o.command = "help";
    } else if (a == "--version") {
      o.command = "version";
    } else if (a.size() > 1 && a[0] == '-') {
      throw usage_error("unknown option '" + a + "'");
    } else if (o.command.empty()) {
      o.command = a;
    } else {
      o.files.push_back(a);
    }
  }
  return o;
}

bool ends_with(const std::string& s, const std::string& suffix) {
  if (s.size() < suffix.size()) return false;
  for (size_t i = 0; i < suffix.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(s[s.size() - suffix.size() + i])) != suffix[i]) return false;
  return true;
}

/// True when the directory `dir` holds files with `extension` (as expand_paths finds them).
bool has_files(const std::string& dir, const std::string& extension) {
  try {
    tug::io::expand_paths(dir, extension);
    return true;
  } catch (const tug::io_error&) {
    return false;
  }
}

/// The one place that maps a path to a file format. An `input` directory of part files (as Spark or
/// Hive write them, beside _SUCCESS and .crc files, which the directory scan skips) is Parquet when it
/// holds .parquet files, else CSV when it holds .csv files; an input that does not exist is named so.
file_format format_of(const std::string& path, bool input = true) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (input && fs::is_directory(path, ec)) {
    fs::directory_iterator list(path, ec);
    if (ec) throw tug::io_error("cannot list directory " + path + ": " + ec.message());
    if (has_files(path, ".parquet")) return file_format::parquet;
    if (has_files(path, ".csv")) return file_format::csv;
    throw tug::io_error("no .parquet or .csv files under directory " + path);
  }
  if (ends_with(path, ".csv") || ends_with(path, ".tsv") || ends_with(path, ".txt")) return file_format::csv;
  if (ends_with(path, ".parquet") || ends_with(path, ".pq")) return file_format::parquet;
  if (input && path.find_first_of("*?[") == std::string::npos && !fs::exists(path, ec))
    throw tug::io_error("'" + path + "': no such file or directory");
  throw tug::invalid_argument_error("'" + path +
                                    "': unknown file format (known extensions: .csv, .tsv, .txt, .parquet, .pq)");
}

csv::csv_options csv_options_for(const std::string& path, const options& o) {
  csv::csv_options c;
  if (ends_with(path, ".tsv")) c.delimiter = '\t';
  if (o.delimiter) c.delimiter = *o.delimiter;
  c.has_header = !o.no_header;
  if (!o.nulls.empty()) c.null_values = o.nulls;
  if (o.infer_rows) c.infer_schema_rows = *o.infer_rows;
  return c;
}

/// A scan of a file, glob or directory (every file with the first file's schema).
tug::lazy_frame scan_of(const std::string& path, const options& o) {
  switch (format_of(path)) {
    case file_format::csv:
      return tug::scan_csv(path, csv_options_for(path, o));
    case file_format::parquet:
      return tug::scan_parquet(path, o.parquet);
  }
  throw tug::internal_error("scan_of: unhandled format");
}

/// The first `n_rows` rows (-1 = all): the limit reaches the scan, which reads only what holds them.
tug::data_frame read_file(const std::string& path, const options& o, int64_t n_rows = -1) {
  tug::lazy_frame scan = scan_of(path, o);
  return (n_rows >= 0 ? scan.limit(n_rows) : scan).collect();
}

tug::schema schema_of(const std::string& path, const options& o) { return scan_of(path, o).schema(); }

int64_t count_of(const std::string& path, const options& o) {
  switch (format_of(path)) {
    case file_format::csv: {
      int64_t n = 0;  // a boundary pass over each file: nothing is parsed
      for (auto& f : tug::io::expand_paths(path, ".csv"))
        n += csv::count_rows(f.path, csv_options_for(path, o));
      return n;
    }
    case file_format::parquet: {
      int64_t n = 0;  // from the footers: no data is read
      for (auto& f : tug::io::expand_paths(path, ".parquet")) n += tug::io::parquet::file_reader::open(f.path).num_rows();
      return n;
    }
  }
  throw tug::internal_error("count_of: unhandled format");
}

void write_file(const std::string& path, const tug::data_frame& df, const options& o) {
  switch (format_of(path, false)) {
    case file_format::csv: {
      csv::csv_options c;
      if (ends_with(path, ".tsv")) c.delimiter = '\t';
      csv::write_csv(path, df.schema(), df.partitions(), c);
      return;
    }
    case file_format::parquet: {
      tug::io::parquet::write_options w;
      if (o.codec) w.codec = *o.codec;
      tug::io::parquet::write_parquet(path, df.schema(), df.partitions(), w);
      return;
    }
  }
  throw tug::internal_error("write_file: unhandled format");
}

std::string json_string(std::string_view s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out.push_back(static_cast<char>(c));
        }
    }
  }
  return out + "\"";
}

std::string json_value(const tug::column& c, int64_t r) {
  if (c.is_null(r)) return "null";
  tug::type_id id = c.type().id;
  if (id == tug::type_id::string) return json_string(c.string(r));
  std::string v = tug::format_value(c, r);
  if (id == tug::type_id::boolean || tug::is_integer(id)) return v;
  if (tug::is_floating(id)) {
    double d = id == tug::type_id::float32 ? c.value<float>(r) : c.value<double>(r);
    return std::isfinite(d) ? v : json_string(v);
  }
  return json_string(v);  // decimals, dates, timestamps, durations: exact text
}

/// A frame in the requested output format.
std::string render(const tug::data_frame& df, const std::string& format, int64_t max_rows) {
  if (format == "csv") return csv::to_csv_string(df.schema(), df.partitions());
  if (format == "json") {
    std::string out = "[";
    bool first_row = true;
    for (auto& p : df.partitions()) {
      for (int64_t r = 0; r < p.num_rows(); ++r) {
        out += first_row ? "\n  {" : ",\n  {";
        first_row = false;
        for (size_t c = 0; c < p.num_columns(); ++c)
          out += (c ? ", " : "") + json_string(df.schema()[c].name) + ": " + json_value(p[c], r);
        out += "}";
      }
    }
    return out + (first_row ? "]\n" : "\n]\n");
  }
  return df.to_string(max_rows) + "\n";
}

tug::data_frame string_frame(std::vector<std::pair<std::string, tug::column>> cols) {
  return tug::data_frame::from_columns(std::move(cols));
}

int run(const options& o) {
  auto need_files = [&](size_t min, size_t max) {
    if (o.files.size() < min || o.files.size() > max)
      throw usage_error("'" + o.command + "' takes " +
                        (min == max ? std::to_string(min) : std::to_string(min) + " or more") + " file argument(s)");
  };
  if (o.command == "version") {
    std::cout << "tug " << TUG_VERSION << "\n";
    return 0;
  }
  if (o.command == "help" || o.command.empty()) {
    std::cout << usage_text;
    return 0;
  }
  if (o.codec && o.command != "convert") throw usage_error("--codec applies to convert with a Parquet output only");
  if (o.command == "schema") {
    need_files(1, 1);
    tug::schema s = schema_of(o.files[0], o);
    std::vector<std::optional<std::string>> names, types;
    for (auto& f : s) {
      names.push_back(f.name);
      types.push_back(tug::to_string(f.type));
    }
    auto df = string_frame({{"name", tug::make_string_column(names)}, {"type", tug::make_string_column(types)}});
    std::cout << render(df, o.format, static_cast<int64_t>(s.size()) + 1);
    return 0;
  }
  if (o.command == "head") {
    need_files(1, 1);
    auto df = read_file(o.files[0], o, o.n);
    std::cout << render(df, o.format, std::max<int64_t>(o.n, 1));
    return 0;
  }
  if (o.command == "count") {
    need_files(1, SIZE_MAX);
    std::vector<std::optional<std::string>> files;
    std::vector<std::optional<int64_t>> rows;
    for (auto& f : o.files) {
      rows.push_back(count_of(f, o));
      files.push_back(f);
    }
    auto df = string_frame(
        {{"file", tug::make_string_column(files)}, {"rows", tug::make_column<int64_t>(tug::type_id::int64, rows)}});
    std::cout << render(df, o.format, static_cast<int64_t>(files.size()) + 1);
    return 0;
  }
  if (o.command == "convert") {
    need_files(2, 2);
    // an unsupported output fails before reading
    if (format_of(o.files[1], false) != file_format::parquet && o.codec)
      throw usage_error("--codec applies to Parquet output only, and " + o.files[1] + " is CSV");
    auto df = read_file(o.files[0], o);
    write_file(o.files[1], df, o);
    return 0;
  }
  throw usage_error("unknown command '" + o.command + "'");
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(parse_args(argc, argv));
  } catch (const usage_error& e) {
    std::cerr << "tug: " << e.what() << "\n" << usage_text;
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "tug: error: " << e.what() << "\n";
    return 1;
  }
}
