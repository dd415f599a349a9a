// Reads every column of a Parquet file (or directory/glob) once untimed, then REPS times with tug, and
// prints one line of JSON: the wall seconds of each timed run (the frame's release included), the CPU
// seconds of the process in each run (all threads) and the rows read. The untimed read and the release
// inside the timing match how bench/parquet_decode.py times pyarrow and Polars.
// MODE (default cpu): `cpu` the CPU engine's scan into host memory; `gpu` a GPU scan with the GPU Parquet
// reader (device columns, nothing copied back); `gpu-host` a GPU scan decoded on the host and copied
// to the device per partition (engine_options::gpu_parquet_reader = false).
// COLUMNS (default all): a comma-separated list of the columns read. The JSON adds the scan's counters of
// the GPU reader (summed over the untimed and timed reads): column chunks decoded on the device and on the
// host, pages decompressed each way, and its threads' seconds reading and planning chunks, queuing work
// and waiting for the device.
#include <time.h>

#include <chrono>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <sstream>

#include "tug/api/io.hpp"
#include "tug/io/parquet_source.hpp"
#include "tug/memory/device.hpp"

int main(int argc, char** argv) {
  if (argc < 3) {
    std::cerr << "usage: parquet_read_bench PATH THREADS [REPS] [cpu|gpu|gpu-host] [COLUMNS]\n";
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
    const std::string mode = argc > 4 ? argv[4] : "cpu";
    if (mode != "cpu" && mode != "gpu" && mode != "gpu-host") throw tug::invalid_argument_error("unknown mode " + mode);
    std::ostringstream wall, cpu;
    // the Parquet source read as a scan does (scan_op::run): into host memory (cpu), or device memory
    std::shared_ptr<tug::memory_resource> device, pinned;
    auto src = std::make_unique<tug::io::parquet_source>(argv[1]);
    auto pool = std::make_unique<tug::thread_pool>(o.num_threads);
    std::vector<std::string> cols;
    if (argc > 5) {
      std::stringstream list(argv[5]);
      for (std::string c; std::getline(list, c, ',');)
        cols.push_back(c);
    } else {
      for (const auto& f : src->schema().fields())
        cols.push_back(f.name);
    }
    if (mode != "cpu") {
      device = tug::make_device_resource(nullptr);
      pinned = tug::make_pinned_resource();
      o.engine = tug::engine_kind::gpu;
      o.gpu_parquet_reader = mode == "gpu";
    }
    auto read = [&]() -> int64_t {
      int64_t n = 0;
      for (const tug::table& t : mode == "cpu" ? src->read(cols, {}, o, *pool, tug::default_host_resource())
                                               : src->read_device(cols, {}, o, *pool, device.get(), pinned.get()))
        n += t.num_rows();
      return n;
    };
    int64_t rows = read();
    for (int r = 0; r < reps; ++r) {
      const double c0 = cpu_now();
      auto t0 = std::chrono::steady_clock::now();
      rows = read();
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      wall << (r ? ", " : "") << s;
      cpu << (r ? ", " : "") << cpu_now() - c0;
    }
    std::cout << "{\"seconds\": [" << wall.str() << "], \"cpu_seconds\": [" << cpu.str() << "], \"rows\": " << rows;
    const tug::io::scan_counters& k = src->counters();
    std::cout << ", \"device_chunks\": " << k.device_chunks << ", \"device_host_chunks\": " << k.device_host_chunks
              << ", \"device_pages\": " << k.device_pages << ", \"host_pages\": " << k.host_pages
              << ", \"device_read_s\": " << static_cast<double>(k.device_read_ns) * 1e-9
              << ", \"device_submit_s\": " << static_cast<double>(k.device_submit_ns) * 1e-9
              << ", \"device_wait_s\": " << static_cast<double>(k.device_wait_ns) * 1e-9;
    std::cout << "}\n";
  } catch (const tug::error& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
