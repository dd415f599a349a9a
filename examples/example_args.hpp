#pragma once
// Tiny argument parsing shared by the examples: --rows N, --engine cpu|gpu|auto, --threads N, --explain,
// --no-late-materialization (the optimizer pass off, for A/B timings), --gpus N|all (the query on N ranks
// forked from this process, one GPU each: engine_options::gpus), --sink PATH (examples that can write
// their result as Parquet do so instead of printing it). Every other engine option comes from its TUG_*
// environment variable (TUG_MEMORY_LIMIT=64MiB, TUG_SPILL_DEVICE_LIMIT=16GiB, TUG_PINNED_MEMORY=0, ...:
// docs/options.md).
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>

#include "tug/runtime/options.hpp"

namespace tug::seed {

struct example_args {
  int64_t rows = 1000000;
  engine_options options;
  bool explain = false;
  std::string sink;  ///< --sink PATH: where the example writes its result (empty: it prints it)
};

inline example_args parse_args(int argc, char** argv, int64_t default_rows) {
  example_args a;
  a.rows = default_rows;
  for (int i = 1; i < argc; ++i) {
    std::string s = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::cerr << "missing value after " << s << "\n";
        std::exit(2);
      }
      return argv[++i];
    };
    if (s == "--rows") a.rows = std::atoll(next().c_str());
    else if (s == "--engine") {
      std::string e = next();
      if (e == "cpu") a.options.engine = engine_kind::cpu;
      else if (e == "gpu") a.options.engine = engine_kind::gpu;
      else if (e == "auto") a.options.engine = engine_kind::automatic;
      else {
        std::cerr << "unknown engine '" << e << "' (cpu, gpu, auto)\n";
        std::exit(2);
      }
    } else if (s == "--threads") a.options.num_threads = std::atoi(next().c_str());
    else if (s == "--gpus") {
      const std::string g = next();
      a.options.gpus = g == "all" ? -1 : std::atoi(g.c_str());
    } else if (s == "--sink") a.sink = next();
    else if (s == "--explain") a.explain = true;
    else if (s == "--no-late-materialization") a.options.optimizer.late_materialization = false;
    else {
      std::cerr << "usage: " << argv[0] << " [--rows N] [--engine cpu|gpu|auto] [--threads N] [--explain]"
                   " [--no-late-materialization] [--gpus N|all] [--sink PATH]\n"
                   "(other engine options from TUG_* environment variables: docs/options.md)\n";
      std::exit(s == "--help" ? 0 : 2);
    }
  }
  return a;
}

}  // namespace tug::seed
