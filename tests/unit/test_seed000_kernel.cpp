// The seed-000 example's kernel (examples/seed000_cassandra_kernel.hpp) on the generated readings in memory,
// without Cassandra (tests/cassandra/test_cassandra_kernel.cpp runs it between two tables): its host form on
// the CPU engine, and on a GPU its CUDA source on the GPU engine, both against the oracle of
// tests/seed000_reference.hpp.
#include <gtest/gtest.h>

#include "seed000_reference.hpp"
#include "test_util.hpp"
#include "tug/memory/device.hpp"

using namespace tug;

TEST(Seed000Kernel, HostFormEqualsTheOracle) {
  for (int64_t rows : {0, 1, 33, 1024, 5000}) {
    for (int64_t target : {7, 1 << 20}) {
      if (rows > 1024 && target < 1024) continue;
      SCOPED_TRACE("rows=" + std::to_string(rows) + " target=" + std::to_string(target));
      engine_options o = cpu_engine();
      o.target_partition_rows = target;
      data_frame got = seed000::pipeline(seed000::generate(rows).lazy(), 2.0, "").collect(o);
      EXPECT_EQ(got.schema().names(), (std::vector<std::string>{"sensor", "ts", "site", "dew_point_c", "fog"}));
      tug::testing::expect_dew_points(got, rows, 2.0, 0.0);
    }
  }
}

TEST(Seed000Kernel, OtherFogSpreadsReachTheKernelAsPlainScalars) {
  for (double spread : {0.0, 5.0, 100.0}) {
    data_frame got = seed000::pipeline(seed000::generate(500).lazy(), spread, "").collect(cpu_engine());
    tug::testing::expect_dew_points(got, 500, spread, 0.0);
  }
}

TEST(Seed000Kernel, GpuSourceEqualsTheOracle) {
  if (!gpu_available()) GTEST_SKIP() << "no CUDA device";
  for (int64_t rows : {0, 1, 33, 100000}) {
    for (int64_t target : {1000, 1 << 20}) {
      SCOPED_TRACE("rows=" + std::to_string(rows) + " target=" + std::to_string(target));
      auto r = seed000::pipeline(seed000::generate(rows).lazy(), 2.0, "").profile(engine_with(true, target));
      EXPECT_NE(r.physical_plan.find("map_partitions \"dew_point\" (host+cuda source)"), std::string::npos);
      EXPECT_NE(r.physical_plan.find("@cuda"), std::string::npos) << r.physical_plan;
      tug::testing::expect_dew_points(r.frame, rows, 2.0, 1e-12);
    }
  }
}
