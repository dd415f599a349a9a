// Seed 002's 4-way join: lineitem x orders x customer x supplier with three derived columns. Prints the
// result and the statistics (what spilled where), or with --sink PATH writes it as Parquet and counts it
// back; exits 1 when the join does not keep every lineitem row.
#include <chrono>
#include <iostream>

#include "example_args.hpp"
#include "tug/api/io.hpp"
#include "tug/gen/seed_data.hpp"
#include "seed_queries.hpp"

int main(int argc, char** argv) {
  using namespace tug;
  auto args = seed::parse_args(argc, argv, 1'000'000);
  try {
    auto t0 = std::chrono::steady_clock::now();
    auto seconds = [&] {
      const auto t1 = std::chrono::steady_clock::now();
      const double s = std::chrono::duration<double>(t1 - t0).count();
      t0 = t1;
      return s;
    };
    auto w = gen::wholesale_tables(args.rows);
    std::cout << "generated " << w.lineitem.num_rows() << " lineitem rows in " << seconds() << " s" << std::endl;
    lazy_frame q = seed::four_way_join(w.lineitem.lazy(), w.orders.lazy(), w.customer.lazy(), w.supplier.lazy());
    if (args.explain) std::cout << q.explain(args.options) << "\n";
    if (!args.sink.empty()) {
      // the joined rows written as Parquet as they are made (a directory: one file per partition, each
      // rank its own share on several ranks), then counted back from the files
      sink_parquet(q, args.sink, {}, args.options);
      std::cout << "joined and written in " << seconds() << " s" << std::endl;
      const int64_t written = scan_parquet(args.sink).collect(args.options).num_rows();
      std::cout << "wrote " << written << " joined rows to " << args.sink << " (lineitem " << w.lineitem.num_rows() << ")\n";
      return written == w.lineitem.num_rows() ? 0 : 1;
    }
    query_result r = q.profile(args.options);
    std::cout << "joined in " << seconds() << " s" << std::endl;
    std::cout << "joined rows: " << r.frame.num_rows() << " (lineitem " << w.lineitem.num_rows() << ")\n";
    std::cout << r.frame.to_string(6) << "\nstatistics:\n" << r.statistics;
    return r.frame.num_rows() == w.lineitem.num_rows() ? 0 : 1;
  } catch (const tug::error& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
}
