// Reads every column of a Parquet file (or directory/glob) once untimed, then REPS times with tug, and
// prints one line of JSON: the wall seconds of each timed run (the frame's release included), the CPU
// seconds of the process in each run (all threads) and the rows read. The untimed read and the release
// inside the timing match how bench/parquet_decode.py times pyarrow and Polars.
#include <time.h>

#include <chrono>
#include <cstdlib>
#include <iostream>
#include <sstream>

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
    auto cpu_now = [] {
      timespec ts{};
      clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
      return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
    };
    std::ostringstream wall, cpu;
    int64_t rows = tug::scan_parquet(argv[1]).collect(o).num_rows();
    for (int r = 0; r < reps; ++r) {
      const double c0 = cpu_now();
      auto t0 = std::chrono::steady_clock::now();
      {
        tug::data_frame df = tug::scan_parquet(argv[1]).collect(o);
        rows = df.num_rows();
      }
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      wall << (r ? ", " : "") << s;
      cpu << (r ? ", " : "") << cpu_now() - c0;
    }
    std::cout << "{\"seconds\": [" << wall.str() << "], \"cpu_seconds\": [" << cpu.str() << "], \"rows\": " << rows
              << "}\n";
  } catch (const tug::error& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
