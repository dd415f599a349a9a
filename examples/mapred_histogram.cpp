// The CUDA SDK's histogram64 sample, ported in the spirit of seed 001's MapRed class: a generator makes
// the input bytes, a MapRed job reads each partition into its own buffer (process_input, the SDK's host
// array) and bins it into 64 bins by the top 6 bits of each byte (compute, where the SDK launches its
// kernel), emitting bin -> count; a group_by on the bin is the reduce step. The same histogram is then
// computed with a user kernel given as CUDA source (compiled by NVRTC, on the GPU when there is one)
// with a host functor for the CPU engine, and both are checked against a plain count.
//
//   example_mapred_histogram [--rows N] [--engine cpu|gpu|auto] [--threads N] [--explain]
#include <array>
#include <cstdio>
#include <iostream>

#include "example_args.hpp"
#include "tug/api/lazy_frame.hpp"
#include "tug/api/map_reduce.hpp"

namespace {

using namespace tug;

/// The generator: `n` pseudo-random bytes (a 64-bit LCG's top byte), deterministic.
data_frame generate(int64_t n) {
  fixed_width_builder<uint8_t> b(type_id::uint8, n);
  uint64_t s = 0x9e3779b97f4a7c15ULL;
  for (int64_t i = 0; i < n; ++i) {
    s = s * 6364136223846793005ULL + 1442695040888963407ULL;
    b.set(i, static_cast<uint8_t>(s >> 56));
  }
  return data_frame::from_columns({{"data", b.finish()}});
}

/// histogram64 as a MapRed job.
class histogram64_job final : public map_reduce_job {
 public:
  void process_input(const kernel_partition& p) override {
    auto data = p.in<uint8_t>(0);
    _data.resize(static_cast<size_t>(p.rows()));
    for (long long i = 0; i < p.rows(); ++i)
      _data[static_cast<size_t>(i)] = data[i];
  }
  void compute(std::map<std::string, std::string>& out) override {
    std::array<int64_t, 64> bins{};
    for (uint8_t v : _data)
      ++bins[v >> 2];
    char key[16];
    for (int b = 0; b < 64; ++b) {
      std::snprintf(key, sizeof key, "bin_%02d", b);
      out[key] = std::to_string(bins[static_cast<size_t>(b)]);
    }
  }

 private:
  std::vector<uint8_t> _data;
};

/// The per-row bin as CUDA source; the host functor computes the same on the CPU engine.
const char* bin_source = R"(
#include <tug/kernel.cuh>
extern "C" __global__ void bin64(long long rows, tug::in_column<unsigned char> data, tug::out_column<int> bin) {
  for (long long i = tug::first_row(); i < rows; i += tug::row_stride()) bin[i] = data[i] >> 2;
}
)";

void bin_host(kernel_partition& p) {
  auto data = p.in<uint8_t>(0);
  auto bin = p.out<int32_t>(0);
  for (long long i = 0; i < p.rows(); ++i)
    bin[i] = data[i] >> 2;
}

}  // namespace

int main(int argc, char** argv) {
  auto args = seed::parse_args(argc, argv, 4'000'000);
  try {
    data_frame input = generate(args.rows);
    std::array<int64_t, 64> want{};
    {
      table t = input.to_table();
      for (int64_t i = 0; i < t.num_rows(); ++i)
        ++want[t[0].value<uint8_t>(i) >> 2];
    }
    // map: a histogram64 job per partition; reduce: the bins summed over partitions
    lazy_frame mapred = input.lazy()
                            .map_partitions(map_reduce_kernel("histogram64", [] { return std::make_unique<histogram64_job>(); }))
                            .group_by({"key"})
                            .agg({col("value").cast(type_id::int64).sum().alias("count")})
                            .sort("key");
    // the same with a user kernel per row
    user_kernel bin = user_kernel("bin64")
                          .inputs({"data"})
                          .outputs(schema({{"bin", type_id::int32}}))
                          .source({bin_source, "bin64"})
                          .host(bin_host);
    lazy_frame kernel = input.lazy()
                            .map_partitions(bin)
                            .group_by({"bin"})
                            .agg({col("bin").count().cast(type_id::int64).alias("count")})
                            .sort("bin");
    if (args.explain) std::cout << mapred.explain(args.options) << "\n" << kernel.explain(args.options) << "\n";
    query_result a = mapred.profile(args.options);
    query_result b = kernel.profile(args.options);
    table ta = a.frame.to_table(), tb = b.frame.to_table();
    bool ok = ta.num_rows() == 64 && tb.num_rows() == 64;
    for (int64_t i = 0; ok && i < 64; ++i)
      ok = ta[1].value<int64_t>(i) == want[static_cast<size_t>(i)] && tb[0].value<int32_t>(i) == i &&
           tb[1].value<int64_t>(i) == want[static_cast<size_t>(i)];
    std::cout << args.rows << " bytes in " << input.partitions().size() << " partitions; histogram64 (MapRed job):\n"
              << a.frame.to_string(8) << "\nstatistics:\n" << a.statistics << "\nbin64 kernel:\n" << b.physical_plan
              << b.statistics << "\n" << (ok ? "both equal the plain count" : "MISMATCH against the plain count") << "\n";
    return ok ? 0 : 1;
  } catch (const tug::error& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
}
