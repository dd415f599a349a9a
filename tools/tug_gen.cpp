// tug_gen: writes generated data sets as Parquet directories (DIR/<table>/part-NNNNN.parquet).
//   tug_gen pdsh --sf 1 --out DIR           PDS-H (TPC-H) tables
//   tug_gen wholesale --scale 0.01 --out DIR  seed-002 wholesale tables of the 4-way join
//   tug_gen ais --rows N --out DIR            AIS-like vessel positions
// Deterministic: the same arguments give the same bytes, whatever --threads is.
#include <cmath>
#include <cstdlib>
#include <iostream>
#include <map>
#include <string>

#include "tug/core/error.hpp"
#include "tug/gen/pdsh.hpp"
#include "tug/gen/seed_data.hpp"

using namespace tug;

namespace {

const char* usage =
    "usage: tug_gen pdsh --sf SF --out DIR [--chunk-rows N] [common options]\n"
    "       tug_gen wholesale --scale S --out DIR [--chunk-rows N] [common options]\n"
    "       tug_gen ais --rows N --out DIR [--chunk-rows N] [common options]\n"
    "  pdsh       PDS-H (TPC-H) tables at scale factor SF (0.001 .. 100000); --chunk-rows: orders per\n"
    "             file (default 150000)\n"
    "  wholesale  seed-002 lineitem/orders/customer/supplier, 95M lineitem rows at scale 1.0\n"
    "  ais        AIS-like vessel positions (table ais), N rows\n"
    "  --chunk-rows N  rows per file (default 1048576 for wholesale and ais); the data depend on it\n"
    "common options:\n"
    "  --seed S   random seed (defaults: pdsh 1, wholesale 7, ais 42)\n"
    "  --threads  worker threads (default: all cores); the output does not depend on it\n"
    "  --codec C  Parquet compression: snappy (default), zstd, lz4_raw, gzip, none\n"
    "  --quiet    no progress on stderr\n";

[[noreturn]] void fail(const std::string& msg) {
  std::cerr << "tug_gen: " << msg << "\n" << usage;
  std::exit(2);
}

double parse_number(const std::string& flag, const std::string& v) {
  try {
    size_t used = 0;
    double d = std::stod(v, &used);
    if (used != v.size()) throw std::invalid_argument(v);
    return d;
  } catch (const std::exception&) {
    fail(flag + " expects a number, got '" + v + "'");
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) fail("missing the data set");
  std::string set = argv[1];
  if (set == "--help" || set == "-h") {
    std::cout << usage;
    return 0;
  }
  std::map<std::string, std::string> flags;
  gen::write_config config;
  for (int i = 2; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--quiet") {
      config.progress = false;
      continue;
    }
    if (a.rfind("--", 0) != 0 || i + 1 >= argc) fail("bad argument '" + a + "'");
    flags[a] = argv[++i];
  }
  auto take = [&](const std::string& flag) -> std::string {
    auto it = flags.find(flag);
    if (it == flags.end()) return "";
    std::string v = it->second;
    flags.erase(it);
    return v;
  };
  config.out = take("--out");
  if (config.out.empty()) fail("--out DIR is required");
  std::string v;
  if (!(v = take("--threads")).empty()) config.threads = static_cast<int>(parse_number("--threads", v));
  if (!(v = take("--codec")).empty()) config.parquet.codec = v;
  std::string seed_flag = take("--seed"), chunk_flag = take("--chunk-rows");
  auto seed_or = [&](uint64_t d) {
    return seed_flag.empty() ? d : static_cast<uint64_t>(parse_number("--seed", seed_flag));
  };
  auto chunk_or = [&](int64_t d) {
    return chunk_flag.empty() ? d : static_cast<int64_t>(parse_number("--chunk-rows", chunk_flag));
  };
  auto required = [&](const std::string& flag) {
    std::string x = take(flag);
    if (x.empty()) fail(set + " needs " + flag);
    return parse_number(flag, x);
  };
  try {
    gen::dataset d;
    if (set == "pdsh") {
      d = gen::pdsh::make_dataset(required("--sf"), seed_or(1), chunk_or(gen::pdsh::default_chunk_rows));
    } else if (set == "wholesale") {
      double scale = required("--scale");
      if (!(scale > 0)) fail("--scale must be positive");
      auto rows = static_cast<int64_t>(std::llround(scale * static_cast<double>(gen::wholesale_full_lineitem_rows)));
      d = gen::wholesale_dataset(rows, seed_or(7), chunk_or(gen::default_seed_chunk_rows));
    } else if (set == "ais") {
      d = gen::ais_dataset(static_cast<int64_t>(required("--rows")), seed_or(42),
                           chunk_or(gen::default_seed_chunk_rows));
    } else {
      fail("unknown data set '" + set + "'");
    }
    if (!flags.empty()) fail("unknown option " + flags.begin()->first + " for " + set);
    gen::write_summary s = gen::write_dataset(d, config);
    for (const auto& [name, t] : s.tables)
      std::cout << name << ": " << t.rows << " rows, " << t.files << " files, " << t.bytes << " bytes\n";
    std::cout << "total: " << s.rows << " rows, " << s.bytes << " bytes in " << s.seconds << " s ("
              << static_cast<double>(s.rows) / s.seconds / 1e6 << "M rows/s, "
              << static_cast<double>(s.bytes) / s.seconds / 1e6 << " MB/s)\n";
  } catch (const tug::error& e) {
    std::cerr << "tug_gen: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
