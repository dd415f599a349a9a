// The speed-anomaly query written as group_by + join (two sync points), checked against the `over`
// form: both must flag the same rows.
#include <iostream>

#include "example_args.hpp"
#include "tug/gen/seed_data.hpp"
#include "seed_queries.hpp"

int main(int argc, char** argv) {
  using namespace tug;
  auto args = seed::parse_args(argc, argv, 1'000'000);
  try {
    data_frame ais = gen::ais(args.rows);
    lazy_frame q = seed::speed_anomaly_join(ais.lazy());
    if (args.explain) std::cout << q.explain(args.options) << "\n";
    query_result joined = q.profile(args.options);
    int64_t over_rows = seed::speed_anomaly(ais.lazy()).collect(args.options).num_rows();
    std::cout << "group_by+join anomalies: " << joined.frame.num_rows() << ", over(): " << over_rows << "\n";
    std::cout << seed::anomalies_by_type(joined.frame.lazy()).collect(args.options).to_string() << "\n";
    std::cout << "statistics:\n" << joined.statistics;
    return joined.frame.num_rows() == over_rows ? 0 : 1;
  } catch (const tug::error& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
}
