// A tiny program against an installed tug (find_package(tug), tug::tug): writes a frame to Parquet
// with zstd into the directory argv[1] (default: the temporary directory), scans it back lazily,
// aggregates, and checks the result against the same sums computed here. Prints the result and "ok";
// exits 1 when it differs.
#include <cstdint>
#include <filesystem>
#include <iostream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "tug/api/io.hpp"
#include "tug/memory/device.hpp"
#include "tug/version.hpp"

int main(int argc, char** argv) {
  using namespace tug;
  namespace fs = std::filesystem;
  const fs::path dir = argc > 1 ? fs::path(argv[1]) : fs::temp_directory_path();
  const fs::path file = dir / "tug_consumer.parquet";
  try {
    const std::vector<std::string> kinds = {"cargo", "fishing", "tanker"};
    std::vector<std::optional<std::string>> kind;
    std::vector<int64_t> speed;
    std::map<std::string, std::pair<int64_t, int64_t>> expected;  // kind -> (count, sum) where speed > 10
    for (int64_t i = 0; i < 1000; ++i) {
      kind.emplace_back(kinds[static_cast<size_t>(i % 3)]);
      speed.push_back((i * 37) % 31);
      if (speed.back() > 10) {
        expected[*kind.back()].first += 1;
        expected[*kind.back()].second += speed.back();
      }
    }
    data_frame df = data_frame::from_columns(
        {{"kind", make_string_column(kind)}, {"speed", make_column<int64_t>(type_id::int64, speed)}});
    io::parquet::write_options zstd;
    zstd.codec = "zstd";
    sink_parquet(df.lazy(), file.string(), zstd);

    data_frame out = scan_parquet(file.string())
                         .filter(col("speed") > lit(int64_t{10}))
                         .group_by({"kind"})
                         .agg({len().alias("n"), col("speed").sum().alias("total")})
                         .sort("kind")
                         .collect();
    std::ostringstream want;
    want << "kind,n,total\n";
    for (auto& [k, v] : expected) want << k << "," << v.first << "," << v.second << "\n";

    std::cout << "tug " << TUG_VERSION << (gpu_available() ? " (GPU visible)" : " (CPU engine)") << "\n"
              << out.to_string() << "\n";
    if (argc <= 1) fs::remove(file);  // with a directory argument the file stays, for a look at it
    if (out.to_csv() != want.str()) {
      std::cerr << "unexpected result; expected:\n" << want.str() << "got:\n" << out.to_csv();
      return 1;
    }
    std::cout << "ok\n";
  } catch (const tug::error& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
