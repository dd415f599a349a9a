// Reads every column of a Parquet file (or directory/glob) REPS times with tug and prints one line
// of JSON: the seconds of each run and the rows read. Used by bench/parquet_decode.py.
#include <chrono>
#include <cstdlib>
#include <iostream>

#include "tug/api/io.hpp"

int main(int argc, char** argv) {
  if (argc < 3) {
    std::cerr << "usage: parquet_read_bench PATH THREADS [REPS]\n";
    return 2;
  }
  try {
    tug::engine_options o;
    o.engine = tug::engine_kind::cpu;
    o.num_threads = std::atoi(argv[2]);
    int reps = argc > 3 ? std::atoi(argv[3]) : 5;
    std::cout << "{\"seconds\": [";
    int64_t rows = 0;
    for (int r = 0; r < reps; ++r) {
      auto t0 = std::chrono::steady_clock::now();
      tug::data_frame df = tug::scan_parquet(argv[1]).collect(o);
      double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      rows = df.num_rows();
      std::cout << (r ? ", " : "") << s;
    }
    std::cout << "], \"rows\": " << rows << "}\n";
  } catch (const tug::error& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
