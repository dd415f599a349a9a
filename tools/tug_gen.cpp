// tug_gen: writes generated data sets as Parquet directories (DIR/<table>/part-NNNNN.parquet).
//   tug_gen pdsh --sf 1 --out DIR [--seed S] [--threads N] [--quiet]
// Deterministic: the same arguments give the same bytes, whatever --threads is.
#include <cstdlib>
#include <iostream>
#include <map>
#include <string>

#include "tug/core/error.hpp"
#include "tug/gen/pdsh.hpp"

using namespace tug;

namespace {

const char* usage =
    "usage: tug_gen pdsh --sf SF --out DIR [--seed S] [--chunk-rows N] [--threads N] [--codec C] [--quiet]\n"
    "  pdsh       PDS-H (TPC-H) tables at scale factor SF (0.001 .. 100000)\n"
    "  --seed S   random seed (default 1)\n"
    "  --chunk-rows N  orders per file (default 150000); the data depend on it\n"
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
  uint64_t seed = 1;
  if (!(v = take("--seed")).empty()) seed = static_cast<uint64_t>(parse_number("--seed", v));
  try {
    gen::dataset d;
    if (set == "pdsh") {
      std::string sf = take("--sf");
      if (sf.empty()) fail("pdsh needs --sf");
      int64_t chunk = gen::pdsh::default_chunk_rows;
      if (!(v = take("--chunk-rows")).empty()) chunk = static_cast<int64_t>(parse_number("--chunk-rows", v));
      d = gen::pdsh::make_dataset(parse_number("--sf", sf), seed, chunk);
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
